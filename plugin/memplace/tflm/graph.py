"""A TFLite model as TensorFlow Lite Micro's memory planner sees it.

TFLite Micro counts time in allocation scopes: scope 0 holds the graph's inputs, operator
`i` runs in scope `i + 1`. A tensor lives from the scope of the operator that writes it to
the scope of the last operator that reads it, inclusive; an input from scope 0, an output
to the last scope. The runtime places a tensor in its arena when the model carries no data
for it, it is not a variable (state kept between invocations lives in the persistent part
of the arena) and it has bytes; it rounds every size up to 16 bytes
(`MicroArenaBufferAlignment`). These rules are those of `micro_allocation_info.cc` and
`micro_allocator.cc` in TFLite Micro; this module restates them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import prod
from typing import Any

import tflite

from memplace.errors import InputError
from memplace.importers.tflite import CORRUPT, ELEMENT_BYTES, IDENTIFIER

ARENA_ALIGN = 16
"""TFLite Micro's `MicroArenaBufferAlignment()`: sizes and offsets in the arena."""

OFFLINE_METADATA = "OfflineMemoryAllocation"


def round_up(size: int, align: int = ARENA_ALIGN) -> int:
    return -(-size // align) * align


@dataclass(frozen=True)
class Tensor:
    """One tensor of the graph. `bytes` is TFLite Micro's byte length (not rounded);
    `first` and `last` are scopes, -1 when no operator or graph edge touches it."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    bytes: int
    variable: bool
    constant: bool
    first: int
    last: int

    @property
    def in_arena(self) -> bool:
        """Whether the runtime's planner places it (it has no data, keeps no state)."""
        return not self.constant and not self.variable and self.bytes > 0

    @property
    def arena_bytes(self) -> int:
        return round_up(self.bytes)


@dataclass(frozen=True)
class Operator:
    """Operator `index` of the graph, running in scope `index + 1`."""

    index: int
    kind: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Any  # the flatbuffer table of its builtin options, or None

    @property
    def scope(self) -> int:
        return self.index + 1


@dataclass(frozen=True)
class Graph:
    """The model's one subgraph, and the offline plan it already carries (if any)."""

    source: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    offline: tuple[int, ...] | None

    @property
    def last_scope(self) -> int:
        return len(self.operators)

    def step_names(self) -> list[str]:
        return ["inputs", *(f"{op.kind.lower()}_{op.index}" for op in self.operators)]


def read_graph(data: bytes, source: str) -> Graph:
    """The graph of a `.tflite` model's bytes; a model TFLite Micro cannot plan is an
    InputError naming the file."""
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise InputError(
            "not a TFLite model (a .tflite flatbuffer carries 'TFL3' at byte 4)", key=source
        )
    try:
        return _read(tflite.Model.GetRootAs(data, 0), source)
    except CORRUPT as exc:
        raise InputError(f"the model is damaged: {exc}", key=source) from exc


def _read(root: Any, source: str) -> Graph:
    if root.SubgraphsLength() != 1:
        raise InputError(
            f"the model has {root.SubgraphsLength()} subgraphs; memplace tflm plans models "
            "with one (no control flow operators such as WHILE or IF)",
            key=source,
        )
    for index in range(root.BuffersLength()):
        if root.Buffers(index).Offset() > 1:
            raise InputError(
                "the model keeps its weights outside the flatbuffer (a model over 2 GB); "
                "TFLite Micro does not read such models",
                key=source,
            )
    graph = root.Subgraphs(0)
    kinds = _enum_names(tflite.BuiltinOperator)
    operators = tuple(
        _operator(root, graph.Operators(i), i, kinds) for i in range(graph.OperatorsLength())
    )
    if not operators:
        raise InputError("the model has no operators", key=source)
    first, last = _lifetimes(graph, operators)
    types = _enum_names(tflite.TensorType)
    tensors = tuple(
        _tensor(root, graph.Tensors(i), i, types, first.get(i, -1), last.get(i, -1), source)
        for i in range(graph.TensorsLength())
    )
    return Graph(source, tensors, operators, _offline(root, source))


def _operator(root: Any, op: Any, index: int, kinds: dict[int, str]) -> Operator:
    code = root.OperatorCodes(op.OpcodeIndex())
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    kind = kinds.get(builtin, f"OP{builtin}")
    if kind == "CUSTOM" and code.CustomCode():
        kind = code.CustomCode().decode("utf-8", "replace")
    return Operator(
        index,
        kind,
        tuple(int(op.Inputs(k)) for k in range(op.InputsLength())),
        tuple(int(op.Outputs(k)) for k in range(op.OutputsLength())),
        op.BuiltinOptions(),
    )


def _lifetimes(graph: Any, operators: Iterable[Operator]) -> tuple[dict[int, int], dict[int, int]]:
    first: dict[int, int] = {}
    last: dict[int, int] = {}

    def mark(tensor: int, scope: int, created: bool) -> None:
        if created:
            first.setdefault(tensor, scope)
        last[tensor] = scope

    for k in range(graph.InputsLength()):
        mark(int(graph.Inputs(k)), 0, created=True)
    end = 0
    for op in operators:
        for tensor in op.outputs:
            first.setdefault(tensor, op.scope)
        for tensor in op.inputs:
            if tensor >= 0:
                last[tensor] = op.scope
        for tensor in op.outputs:
            last[tensor] = op.scope
        end = op.scope
    for k in range(graph.OutputsLength()):
        mark(int(graph.Outputs(k)), end, created=True)
    return first, last


def _tensor(
    root: Any,
    spec: Any,
    index: int,
    types: dict[int, str],
    first: int,
    last: int,
    source: str,
) -> Tensor:
    raw = spec.Name()
    name = raw.decode("utf-8", "replace") if raw else ""
    dtype = types.get(spec.Type(), f"TYPE_{spec.Type()}")
    shape = tuple(int(spec.Shape(k)) for k in range(spec.ShapeLength()))
    buffer = root.Buffers(spec.Buffer()) if 0 < spec.Buffer() < root.BuffersLength() else None
    constant = buffer is not None and buffer.DataLength() > 0
    if any(dim < 0 for dim in shape) and not constant:
        raise InputError(
            f"tensor {index} ({name}) has an unknown dimension {list(shape)}; TFLite Micro "
            "plans tensors of fixed shape",
            key=source,
        )
    if dtype == "INT4":
        size = (prod(shape) + 1) // 2
    elif dtype in ELEMENT_BYTES:
        size = prod(shape) * ELEMENT_BYTES[dtype]
    elif constant or spec.IsVariable():
        size = 0
    else:
        raise InputError(
            f"tensor {index} ({name}) is of type {dtype}, which has no fixed size", key=source
        )
    return Tensor(index, name, dtype, shape, size, bool(spec.IsVariable()), constant, first, last)


def _offline(root: Any, source: str) -> tuple[int, ...] | None:
    """The offsets of an `OfflineMemoryAllocation` entry the model already carries."""
    for index in range(root.MetadataLength()):
        entry = root.Metadata(index)
        if (entry.Name() or b"").decode("utf-8", "replace") != OFFLINE_METADATA:
            continue
        data = root.Buffers(entry.Buffer()).DataAsNumpy()
        words = data.view("<i4") if len(data) % 4 == 0 else None
        if words is None or len(words) < 3 or len(words) != 3 + int(words[2]):
            raise InputError(f"its {OFFLINE_METADATA} entry is damaged", key=source)
        return tuple(int(word) for word in words[3:])
    return None


def _enum_names(enum: type) -> dict[int, str]:
    return {
        value: key
        for key, value in vars(enum).items()
        if not key.startswith("_") and isinstance(value, int)
    }
