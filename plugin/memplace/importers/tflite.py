"""TFLite models (`.tflite` flatbuffers): the one reader of their graph, and the workload.

The graph, as TensorFlow Lite Micro's memory planner sees it (`read_graph`). TFLite Micro
counts time in allocation scopes. It walks the main subgraph (subgraph 0): scope 0 holds
its inputs and each operator opens the next scope. A control flow operator (IF, WHILE,
CALL_ONCE) then walks each subgraph it calls, in the order of its options (then and else;
cond and body; init): entering a subgraph opens a scope, where its inputs are created, and
each of its operators opens one more, recursively. A tensor lives from the scope of the
operator that writes it to the scope where the last operator that reads it ends,
inclusive; an operator that calls subgraphs ends after them, so its inputs and outputs
live through them. A subgraph's outputs live to the end of its walk. A subgraph called
twice keeps its tensors from the first call to the end of the last; the tensors of one no
operator calls have no scope (-1). With one subgraph, operator `i` runs in scope `i + 1`,
the graph's inputs are created in scope 0 and its outputs live to the last.

The runtime numbers tensors across subgraphs, all of subgraph 0's, then all of subgraph
1's, and so on, and an offline plan holds one offset per tensor in that order. It places a
tensor in its arena when the model carries no data for it, it is not a variable (state kept
between invocations lives in the persistent part of the arena) and it has bytes; it rounds
every size up to 16 bytes (`MicroArenaBufferAlignment`). These rules are those of
`micro_allocation_info.cc` and `micro_allocator.cc` in TFLite Micro; this module restates
them, and both `memplace tflm` and the import below read models through it.

The workload (`Model`, what a WORKLOAD argument naming a `.tflite` file and `memplace
import` read): a model of one subgraph, each operator one step named after its operator
and position (`conv_2d_0`, `depthwise_conv_2d_1`, ...). Each tensor the runtime plans
becomes a buffer living over the scopes TFLite Micro gives it, scope 0 (the graph's inputs)
counted as the first operator's step, so the graph's inputs live from the first operator
and its outputs to the last. Variable tensors (state kept between invocations) live for
the whole timeline. Each weight buffer that an operator reads becomes one constant
carrying its real bytes; tensors that share a buffer share the constant. Everything is
16-byte aligned, as TFLite Micro aligns its arena.

The flatbuffer is read with the `tflite` package, the schema's generated Python, which
(with numpy) loads only when a model is read.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from memplace.errors import InputError
from memplace.files import read_input
from memplace.importers.registry import Importer
from memplace.workload import DEFAULT_ALIGN, VERSION, Workload, WorkloadBuilder

if TYPE_CHECKING:
    from memplace.board import Board

IDENTIFIER = b"TFL3"
# Bytes per element of each TensorType; INT4 packs two elements into a byte.
ELEMENT_BYTES = {
    "FLOAT32": 4,
    "FLOAT16": 2,
    "INT32": 4,
    "UINT8": 1,
    "INT64": 8,
    "BOOL": 1,
    "INT16": 2,
    "COMPLEX64": 8,
    "INT8": 1,
    "FLOAT64": 8,
    "COMPLEX128": 16,
    "UINT64": 8,
    "UINT32": 4,
    "UINT16": 2,
    "BFLOAT16": 2,
}
# Path parts of converter-made tensor names that tell nothing about the tensor.
_DULL_PARTS = {"ReadVariableOp", "resource"}
_NAME_PART = re.compile(r"[^A-Za-z0-9_]+")
# A corrupt flatbuffer shows up as one of these while reading it.
CORRUPT = (struct.error, IndexError, ValueError, TypeError, OverflowError)


def schema() -> Any:
    """The `tflite` package (the flatbuffer schema's Python), loaded on first use."""
    import tflite

    return tflite


MAX_ELEMENTS = 2**31 - 1
"""Elements and bytes of one tensor at most: TFLite (Micro) counts them in an `int`."""


def shape_problem(shape: tuple[int, ...], count: int, size: int) -> str | None:
    """What is wrong with a tensor of this shape, element count and bytes, or None."""
    if max(count, size) > MAX_ELEMENTS:
        return (
            f"of shape {list(shape)} holds {count} elements in {size} bytes; TFLite counts "
            f"both in 32-bit integers (at most {MAX_ELEMENTS})"
        )
    return None


# -- the graph ---------------------------------------------------------------------------

ARENA_ALIGN = 16
"""TFLite Micro's `MicroArenaBufferAlignment()`: sizes and offsets in the arena."""

OFFLINE_METADATA = "OfflineMemoryAllocation"

RESOURCE_BYTES = 4
"""TFLite Micro sizes a RESOURCE tensor (a resource variable's id) as one `int32_t`."""
MAX_SCOPES = 100_000
"""Allocation scopes memplace plans at most: a subgraph called from n places is walked n
times, so IFs that call IFs can ask for 2**depth scopes; counted first, in linear time."""
MAX_NESTING = 100
"""How deep subgraphs may call subgraphs (TFLite Micro follows them recursively)."""


def round_up(size: int, align: int = ARENA_ALIGN) -> int:
    return -(-size // align) * align


@dataclass(frozen=True)
class Tensor:
    """One tensor of the model. `index` counts across subgraphs as the runtime does,
    `local` within its subgraph. `bytes` is TFLite Micro's byte length (not rounded);
    `first` and `last` are scopes, -1 when no walk of the graph touches it."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    bytes: int
    variable: bool
    constant: bool
    first: int
    last: int
    subgraph: int = 0
    local: int = 0
    channels: int = 0  # quantisation scales (with zero points) the runtime copies
    held: bool = False  # a kernel points it at its own data (VAR_HANDLE's resource id)
    buffer: int = 0  # the model's buffer holding its data (0: none)

    @property
    def in_arena(self) -> bool:
        """Whether the runtime's planner places it (it has no data, keeps no state, and no
        kernel gave it data while preparing)."""
        return not self.constant and not self.variable and not self.held and self.bytes > 0

    @property
    def arena_bytes(self) -> int:
        return round_up(self.bytes)


@dataclass(frozen=True)
class Operator:
    """Operator `index` of the model, counted across subgraphs in the order the runtime
    prepares them: operator `local` of `subgraph`. Its tensors are model-wide indices.
    It runs from scope `first` (its first run) to `last` (the end of its last run, after
    the subgraphs it `calls`); both -1 when no walk reaches it."""

    index: int
    kind: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Any  # the flatbuffer table of its builtin options, or None
    subgraph: int = 0
    local: int = 0
    first: int = -1
    last: int = -1
    calls: tuple[int, ...] = ()
    custom: bytes = b""  # a custom operator's options (a flexbuffer)

    @property
    def scope(self) -> int:
        return self.first

    @property
    def label(self) -> str:
        """How messages name it: `operator 3 (ADD)`, `operator 0 of subgraph 2 (MUL)`."""
        where = f" of subgraph {self.subgraph}" if self.subgraph else ""
        return f"operator {self.local}{where} ({self.kind})"


@dataclass(frozen=True)
class Graph:
    """The model's tensors and operators over all its subgraphs, one name per scope, and
    the offline plan the model already carries (if any)."""

    source: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    offline: tuple[int, ...] | None
    scopes: tuple[str, ...]  # one name per scope: inputs, add_0, enter_sg1, sg1_mul_0, ...
    subgraphs: int
    main_ends: tuple[int, ...]  # subgraph 0's inputs and outputs
    main_inputs: tuple[int, ...] = ()
    main_outputs: tuple[int, ...] = ()
    data: bytes = field(default=b"", repr=False, compare=False)  # the model's bytes
    external: bool = False  # some weights lie after the flatbuffer (a model over 2 GB)

    @property
    def last_scope(self) -> int:
        return len(self.scopes) - 1

    def step_names(self) -> list[str]:
        return list(self.scopes)


def read_graph(data: bytes, source: str) -> Graph:
    """The graph of a `.tflite` model's bytes; a damaged model, or one whose tensors have
    no size, is an InputError naming the file."""
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise InputError(
            "not a TFLite model (a .tflite flatbuffer carries 'TFL3' at byte 4)", key=source
        )
    try:
        return _read(schema().Model.GetRootAs(data, 0), data, source)
    except CORRUPT as exc:
        raise InputError(f"the model is damaged: {exc}", key=source) from exc


def _read(root: Any, data: bytes, source: str) -> Graph:
    external = any(root.Buffers(k).Offset() > 1 for k in range(root.BuffersLength()))
    subgraphs = [root.Subgraphs(k) for k in range(root.SubgraphsLength())]
    if not subgraphs or subgraphs[0].OperatorsLength() == 0:
        raise InputError("the model has no operators", key=source)
    bases = [0]
    for sub in subgraphs:
        bases.append(bases[-1] + sub.TensorsLength())
    kinds = _enum_names(schema().BuiltinOperator)
    operators: list[Operator] = []
    for k, sub in enumerate(subgraphs):
        for i in range(sub.OperatorsLength()):
            operator = _operator(root, sub.Operators(i), len(operators), k, i, bases, kinds, source)
            operators.append(operator)
    _check_calls(len(subgraphs), operators, source)
    walk = _Walk(subgraphs, bases, operators, source)
    walk.subgraph(0, ())
    types = _enum_names(schema().TensorType)
    # VAR_HANDLE's kernel points its output at the resource id in its own data while
    # preparing, so the runtime's planner leaves that tensor out.
    held = {t for op in operators if op.kind == "VAR_HANDLE" for t in op.outputs if t >= 0}
    tensors = tuple(
        replace(tensor, held=tensor.index in held)
        for tensor in (
            _tensor(root, sub.Tensors(i), bases[k] + i, types, walk, source, k, i)
            for k, sub in enumerate(subgraphs)
            for i in range(sub.TensorsLength())
        )
    )
    ran = tuple(
        replace(op, first=walk.op_first.get(op.index, -1), last=walk.op_last.get(op.index, -1))
        for op in operators
    )
    main = subgraphs[0]
    inputs = tuple(int(main.Inputs(k)) for k in range(main.InputsLength()))
    outputs = tuple(int(main.Outputs(k)) for k in range(main.OutputsLength()))
    ends = [*inputs, *outputs]
    return Graph(
        source,
        tensors,
        ran,
        _offline(root, source, len(tensors)),
        tuple(walk.names),
        len(subgraphs),
        tuple(dict.fromkeys(ends)),
        inputs,
        outputs,
        data,
        external,
    )


# Control flow operators: their options table and the fields naming the subgraphs they
# run, in the order the runtime walks them (`MarkSubgraphLifetimesIfNecessary`).
_CALLS = {
    "IF": ("IfOptions", ("ThenSubgraphIndex", "ElseSubgraphIndex")),
    "WHILE": ("WhileOptions", ("CondSubgraphIndex", "BodySubgraphIndex")),
    "CALL_ONCE": ("CallOnceOptions", ("InitSubgraphIndex",)),
}


def _operator(
    root: Any,
    op: Any,
    index: int,
    subgraph: int,
    local: int,
    bases: list[int],
    kinds: dict[int, str],
    source: str,
) -> Operator:
    code = root.OperatorCodes(op.OpcodeIndex())
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    kind = kinds.get(builtin, f"OP{builtin}")
    if kind == "CUSTOM" and code.CustomCode():
        kind = code.CustomCode().decode("utf-8", "replace")
    base, size = bases[subgraph], bases[subgraph + 1] - bases[subgraph]
    where = f"operator {local}" + (f" of subgraph {subgraph}" if subgraph else "")

    def tensor(local_index: int) -> int:
        if local_index >= size:
            raise InputError(
                f"{where} ({kind}) names tensor {local_index}; its subgraph has {size}",
                key=source,
            )
        return base + local_index if local_index >= 0 else -1

    calls: tuple[int, ...] = ()
    options = op.BuiltinOptions()
    if kind in _CALLS and options is not None:
        table_name, fields = _CALLS[kind]
        table = getattr(schema(), table_name)()
        table.Init(options.Bytes, options.Pos)
        calls = tuple(int(getattr(table, name)()) for name in fields)
    custom = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() > 0 else b""
    return Operator(
        index,
        kind,
        tuple(tensor(int(op.Inputs(k))) for k in range(op.InputsLength())),
        tuple(tensor(int(op.Outputs(k))) for k in range(op.OutputsLength())),
        options,
        subgraph,
        local,
        calls=calls,
        custom=custom,
    )


def _check_calls(count: int, operators: list[Operator], source: str) -> None:
    """Refuse, before walking, calls to no subgraph, recursion, calls nested deeper than
    MAX_NESTING and a walk of more than MAX_SCOPES scopes: each subgraph's scopes are
    counted once (depth first, without recursion in Python) and reused by every call."""
    own = [0] * count
    calls: list[list[Operator]] = [[] for _ in range(count)]
    for op in operators:
        own[op.subgraph] += 1
        if op.calls:
            calls[op.subgraph].append(op)
    scopes: dict[int, int] = {}
    running = [0]
    pending = [iter([(op, c) for op in calls[0] for c in op.calls])]
    while pending:
        step = next(pending[-1], None)
        if step is None:
            k = running.pop()
            pending.pop()
            inner = sum(1 + scopes[c] for op in calls[k] for c in op.calls)
            scopes[k] = min(own[k] + inner, MAX_SCOPES + 1)
            continue
        op, called = step
        if not 0 <= called < count:
            raise InputError(
                f"{op.label} calls subgraph {called}; the model has {count}", key=source
            )
        if called in running:
            raise InputError(
                f"{op.label} calls subgraph {called}, which is running: TFLite Micro plans no "
                "recursion",
                key=source,
            )
        if called in scopes:
            continue
        if len(running) >= MAX_NESTING:
            raise InputError(
                f"{op.label} calls subgraph {called}, nesting calls {len(running)} deep; "
                "memplace follows "
                f"subgraph calls at most {MAX_NESTING} deep",
                key=source,
            )
        running.append(called)
        pending.append(iter([(o, c) for o in calls[called] for c in o.calls]))
    if 1 + scopes[0] > MAX_SCOPES:
        raise InputError(
            f"walking its subgraphs as TFLite Micro does opens more than {MAX_SCOPES} allocation "
            "scopes (a subgraph is walked once per call, so calls that fan out multiply); "
            f"memplace plans at most {MAX_SCOPES}",
            key=source,
        )


@dataclass
class _Walk:
    """The runtime's walk over the subgraphs (`MarkAllocationLifetimes`): scopes counted
    as it counts them, first and last scope per tensor and per operator."""

    subgraphs: list[Any]
    bases: list[int]
    operators: list[Operator]
    source: str
    names: list[str] = field(default_factory=lambda: ["inputs"])
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    op_first: dict[int, int] = field(default_factory=dict)
    op_last: dict[int, int] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    first_op: list[int] = field(default_factory=list)  # subgraph k's operators' index range

    def __post_init__(self) -> None:
        self.first_op = [0] * (len(self.subgraphs) + 1)
        for op in self.operators:
            self.first_op[op.subgraph + 1] += 1
        for k in range(len(self.subgraphs)):
            self.first_op[k + 1] += self.first_op[k]

    @property
    def scope(self) -> int:
        return len(self.names) - 1

    def _open(self, name: str) -> None:
        runs = self.runs.get(name, 0) + 1  # a subgraph run twice counts its scopes twice
        self.runs[name] = runs
        self.names.append(name if runs == 1 else f"{name}_run{runs}")

    def _use(self, tensor: int, created: bool = False) -> None:
        if created:
            self.first.setdefault(tensor, self.scope)
        self.last[tensor] = self.scope

    def subgraph(self, k: int, calling: tuple[int, ...]) -> None:
        sub, base = self.subgraphs[k], self.bases[k]
        size = self.bases[k + 1] - base
        ops = self.operators[self.first_op[k] : self.first_op[k + 1]]
        for n in range(sub.InputsLength()):
            self._use(base + self._local(sub.Inputs(n), size, f"input {n} of subgraph {k}"), True)
        for op in ops:
            prefix = f"sg{k}_" if k else ""
            self._open(f"{prefix}{op.kind.lower()}_{op.local}")
            for t in op.outputs:
                self.first.setdefault(t, self.scope)
            start = self.scope
            if op.kind in _CALLS and not op.calls:
                raise InputError(f"{op.label} has no options naming its subgraphs", key=self.source)
            for called in op.calls:
                if not 0 <= called < len(self.subgraphs):
                    raise InputError(
                        f"{op.label} calls subgraph {called}; the model has {len(self.subgraphs)}",
                        key=self.source,
                    )
                if called in (*calling, k):
                    raise InputError(
                        f"{op.label} calls subgraph {called}, which is running: TFLite Micro "
                        "plans no recursion",
                        key=self.source,
                    )
                self._open(f"enter_sg{called}")
                self.subgraph(called, (*calling, k))
            for t in op.inputs:
                if t >= 0:
                    self.last[t] = self.scope
            for t in op.outputs:
                self.last[t] = self.scope
            self.op_first.setdefault(op.index, start)
            self.op_last[op.index] = self.scope
        for n in range(sub.OutputsLength()):
            self._use(base + self._local(sub.Outputs(n), size, f"output {n} of subgraph {k}"), True)

    def _local(self, index: int, size: int, what: str) -> int:
        if not 0 <= index < size:
            raise InputError(f"{what} is tensor {index}, which the subgraph lacks", key=self.source)
        return int(index)


def _tensor(
    root: Any,
    spec: Any,
    index: int,
    types: dict[int, str],
    walk: _Walk,
    source: str,
    subgraph: int,
    local: int,
) -> Tensor:
    raw = spec.Name()
    name = raw.decode("utf-8", "replace") if raw else ""
    if subgraph:
        name = f"{name}, subgraph {subgraph} tensor {local}"
    dtype = types.get(spec.Type(), f"TYPE_{spec.Type()}")
    shape = tuple(int(spec.Shape(k)) for k in range(spec.ShapeLength()))
    if not 0 <= spec.Buffer() < root.BuffersLength():
        raise InputError(
            f"tensor {index} ({name}) names buffer {spec.Buffer()}; the model has "
            f"{root.BuffersLength()}",
            key=source,
        )
    buffer = root.Buffers(spec.Buffer()) if spec.Buffer() > 0 else None
    # Its data is in the flatbuffer, or (a model over 2 GB) after it, at an offset.
    constant = buffer is not None and (buffer.DataLength() > 0 or buffer.Offset() > 1)
    if any(dim < 0 for dim in shape) and not constant:
        raise InputError(
            f"tensor {index} ({name}) has an unknown dimension {list(shape)}; memplace "
            "places tensors of fixed shape, as TFLite Micro plans them",
            key=source,
        )
    if dtype == "INT4":
        size = (prod(shape) + 1) // 2
    elif dtype == "RESOURCE":
        size = prod(shape) * RESOURCE_BYTES
    elif dtype in ELEMENT_BYTES:
        size = prod(shape) * ELEMENT_BYTES[dtype]
    elif constant or spec.IsVariable():
        size = 0
    else:
        raise InputError(
            f"tensor {index} ({name}) is of type {dtype}, which has no fixed size", key=source
        )
    if not constant and (problem := shape_problem(shape, prod(shape), size)):
        raise InputError(f"tensor {index} ({name}) {problem}", key=source)
    first, last = walk.first.get(index, -1), walk.last.get(index, -1)
    variable = bool(spec.IsVariable())
    quantization = spec.Quantization()
    channels = 0
    if quantization is not None and quantization.ZeroPointLength() > 0:
        channels = quantization.ScaleLength()
    return Tensor(
        index,
        name,
        dtype,
        shape,
        size,
        variable,
        constant,
        first,
        last,
        subgraph,
        local,
        channels,
        buffer=int(spec.Buffer()),
    )


def _offline(root: Any, source: str, tensors: int) -> tuple[int, ...] | None:
    """The offsets of an `OfflineMemoryAllocation` entry the model already carries; one
    whose count is not the model's number of tensors (all subgraphs') the runtime
    refuses, and so does memplace."""
    for index in range(root.MetadataLength()):
        entry = root.Metadata(index)
        if (entry.Name() or b"").decode("utf-8", "replace") != OFFLINE_METADATA:
            continue
        data = root.Buffers(entry.Buffer()).DataAsNumpy()
        words = data.view("<i4") if len(data) % 4 == 0 else None
        if words is None or len(words) < 3 or len(words) != 3 + int(words[2]):
            raise InputError(f"its {OFFLINE_METADATA} entry is damaged", key=source)
        if int(words[2]) != tensors:
            raise InputError(
                f"its {OFFLINE_METADATA} entry holds {int(words[2])} offsets for {tensors} "
                "tensors (of all subgraphs), so TFLite Micro refuses the model",
                key=source,
            )
        return tuple(int(word) for word in words[3:])
    return None


def _enum_names(enum: type) -> dict[int, str]:
    return {
        value: key
        for key, value in vars(enum).items()
        if not key.startswith("_") and isinstance(value, int)
    }


# -- the workload ------------------------------------------------------------------------


@dataclass(frozen=True)
class Activation:
    """A tensor the model computes: a buffer living from step `first` to `last`."""

    name: str
    tensor: int
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    size: int
    first: int
    last: int


@dataclass(frozen=True)
class Weight:
    """A buffer of the model's data, read by one or more tensors."""

    name: str
    tensors: tuple[int, ...]
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class Model:
    """What memplace takes from a model: the steps, the activations and the weights."""

    name: str
    source: str
    steps: tuple[str, ...]
    activations: tuple[Activation, ...]
    weights: tuple[Weight, ...]
    graph: Graph | None = field(default=None, repr=False, compare=False)  # read from

    def workload(self, base_dir: Path | None = None) -> Workload:
        builder = WorkloadBuilder(
            self.name, self.steps, base_dir=base_dir, source=self.source, origin=self
        )
        for act in self.activations:
            builder.buffer(act.name, act.size, (act.first, act.last), align=DEFAULT_ALIGN)
        for weight in self.weights:
            builder.constant(weight.name, data=weight.data, align=DEFAULT_ALIGN)
        return builder.build()

    def yaml(self, data_dir: str) -> str:
        """The workload file; each weight's `data_file` is `data_dir/<name>.bin`."""
        model = Path(self.source).name
        lines = [
            f"# Imported by memplace from {_comment(model)}: {len(self.steps)} operators,",
            f"# {len(self.activations)} activations and {len(self.weights)} weights "
            f"({sum(len(w.data) for w in self.weights)} bytes, in {_comment(data_dir)}/).",
            "# Activations live from the operator that writes them to the last that reads",
            "# them; the graph's inputs from the first operator, its outputs to the last.",
            "# Scopes are left at 'global': activations take the fastest workspace pool",
            "# with room and weights the fastest constant pool, spilling to slower ones.",
            f"memplace: {VERSION}",
            f"name: {_scalar(self.name)}",
            "steps:",
            *(f"  - {_scalar(step)}" for step in self.steps),
        ]
        if self.activations:
            lines.append("buffers:")
        for act in self.activations:
            live = f"[{_scalar(self.steps[act.first])}, {_scalar(self.steps[act.last])}]"
            lines.append(
                f"  - {{name: {act.name}, size: {act.size}, live: {live}}}"
                f"  # {_describe(act.tensor, act.tensor_name, act.dtype, act.shape)}"
            )
        if self.weights:
            lines.append("constants:")
        for weight in self.weights:
            file = _scalar(f"{data_dir}/{weight.name}.bin")
            about = _describe(weight.tensors[0], weight.tensor_name, weight.dtype, weight.shape)
            lines.append(
                f"  - {{name: {weight.name}, size: {len(weight.data)}, data_file: {file}}}"
                f"  # {about}"
            )
        return "\n".join(lines) + "\n"


def read_tflite(path: Path) -> Model:
    """Read a `.tflite` file; every problem with it is an InputError naming the file."""
    data = read_input(path, key="MODEL")
    return parse_tflite(data, str(path), workload_name(path))


def parse_tflite(data: bytes, source: str, name: str) -> Model:
    return model_of(read_graph(data, source), name)


def model_of(graph: Graph, name: str) -> Model:
    """The workload's view of a model of one subgraph: TFLite Micro's scopes as steps."""
    if graph.subgraphs != 1:
        raise InputError(
            f"the model has {graph.subgraphs} subgraphs; memplace imports models with one "
            "(no control flow operators such as WHILE or IF)",
            key=graph.source,
        )
    steps = tuple(f"{_slug(op.kind).lower() or 'custom'}_{op.local}" for op in graph.operators)
    end = len(steps) - 1
    activations = []
    for tensor in graph.tensors:
        if tensor.variable and tensor.last >= 0 and tensor.bytes:
            first, last = 0, end
        elif tensor.in_arena and tensor.last >= 0:
            # Scope s is operator s - 1's; scope 0 (the inputs) and a tensor no operator
            # writes (-1: the runtime's planner has it live from the start) count as step 0.
            first, last = max(tensor.first - 1, 0), max(tensor.last - 1, 0)
        else:
            continue
        activations.append(
            Activation(
                _buffer_name(tensor.index, tensor.name),
                tensor.index,
                tensor.name,
                tensor.dtype,
                tensor.shape,
                tensor.bytes,
                first,
                last,
            )
        )
    weights = _weights(graph)
    if not activations and not weights:
        raise InputError(
            "none of its tensors holds a byte (every shape has a dimension of 0): nothing to place",
            key=graph.source,
        )
    return Model(name, graph.source, steps, tuple(activations), tuple(weights), graph)


def _weights(graph: Graph) -> list[Weight]:
    """One constant per model buffer that an operator reads, named after its first tensor."""
    readers: dict[int, list[int]] = {}
    for op in graph.operators:
        for index in op.inputs:
            tensor = graph.tensors[index] if index >= 0 else None
            if tensor is not None and tensor.constant and not tensor.variable:
                users = readers.setdefault(tensor.buffer, [])
                if index not in users:
                    users.append(index)
    weights = []
    root = schema().Model.GetRootAs(graph.data, 0) if readers else None
    for buffer_index, tensors in sorted(readers.items(), key=lambda item: min(item[1])):
        tensors.sort()
        first = graph.tensors[tensors[0]]
        data = _bytes(root, graph, buffer_index)
        weights.append(
            Weight(
                _buffer_name(first.index, first.name),
                tuple(tensors),
                first.name,
                first.dtype,
                first.shape,
                data,
            )
        )
    return weights


def _bytes(root: Any, graph: Graph, index: int) -> bytes:
    buffer = root.Buffers(index)
    if buffer.Offset() > 1:
        # Large models keep buffers after the flatbuffer, at an offset into the file.
        start, size = buffer.Offset(), buffer.Size()
        if start + size > len(graph.data):
            raise InputError(f"buffer {index} lies past the end of the file", key=graph.source)
        return graph.data[start : start + size]
    return bytes(buffer.DataAsNumpy().tobytes())


def workload_name(path: Path) -> str:
    """A C identifier from the model's file name."""
    name = _NAME_PART.sub("_", path.stem).strip("_") or "model"
    return name if not name[0].isdigit() else f"m_{name}"


def _import(path: Path, board: Board | None, data_root: Path | None) -> Workload:
    if not path.is_file():
        raise InputError(f"no workload file at {path}", key="WORKLOAD")
    return read_tflite(path).workload(base_dir=path.parent)


IMPORTER = Importer(
    name="tflite",
    suffixes=(".tflite",),
    describes="a TFLite model",
    read=_import,
)


def _buffer_name(tensor: int, tensor_name: str) -> str:
    """`t<index>_<slug>`: unique by the index, readable by the slug.

    Converters join the names of fused ops with ';'; the first is the most telling, and
    its last two telling path parts ("conv2d/Relu", "dense/BiasAdd") say enough."""
    head = tensor_name.split(";")[0]
    parts = [part for part in head.split("/") if part not in _DULL_PARTS]
    slug = _slug("_".join(parts[-2:]))[:40].strip("_")
    return f"t{tensor}_{slug}" if slug else f"t{tensor}"


def _slug(text: str) -> str:
    return _NAME_PART.sub("_", text).strip("_")


def _describe(tensor: int, name: str, dtype: str, shape: tuple[int, ...]) -> str:
    head = name.split(";")[0]
    shown = head if len(head) <= 60 else head[:57] + "..."
    return _comment(f"tensor {tensor} {shown}: {dtype.lower()}{list(shape)}")


def _comment(text: str) -> str:
    """Text safe inside a YAML comment: one line, printable."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _scalar(text: str) -> str:
    """`text` as a YAML scalar that reads back as the same string."""
    try:
        plain_ok = yaml.safe_load(f"[{text}]") == [text]
    except yaml.YAMLError:
        plain_ok = False
    return text if plain_ok and "#" not in text else json.dumps(text)
