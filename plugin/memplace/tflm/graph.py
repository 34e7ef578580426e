"""A TFLite model as TensorFlow Lite Micro's memory planner sees it.

TFLite Micro counts time in allocation scopes. It walks the main subgraph (subgraph 0):
scope 0 holds its inputs and each operator opens the next scope. A control flow operator
(IF, WHILE, CALL_ONCE) then walks each subgraph it calls, in the order of its options
(then and else; cond and body; init): entering a subgraph opens a scope, where its inputs
are created, and each of its operators opens one more, recursively. A tensor lives from
the scope of the operator that writes it to the scope where the last operator that reads
it ends, inclusive; an operator that calls subgraphs ends after them, so its inputs and
outputs live through them. A subgraph's outputs live to the end of its walk. A subgraph
called twice keeps its tensors from the first call to the end of the last; the tensors of
one no operator calls have no scope (-1). With one subgraph, operator `i` runs in scope
`i + 1`, the graph's inputs are created in scope 0 and its outputs live to the last.

The runtime numbers tensors across subgraphs, all of subgraph 0's, then all of subgraph
1's, and so on, and an offline plan holds one offset per tensor in that order. It places a
tensor in its arena when the model carries no data for it, it is not a variable (state kept
between invocations lives in the persistent part of the arena) and it has bytes; it rounds
every size up to 16 bytes (`MicroArenaBufferAlignment`). These rules are those of
`micro_allocation_info.cc` and `micro_allocator.cc` in TFLite Micro; this module restates
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Any

import tflite

from memplace.errors import InputError
from memplace.importers.tflite import CORRUPT, ELEMENT_BYTES, IDENTIFIER, shape_problem

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

    @property
    def last_scope(self) -> int:
        return len(self.scopes) - 1

    def step_names(self) -> list[str]:
        return list(self.scopes)


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
    for index in range(root.BuffersLength()):
        if root.Buffers(index).Offset() > 1:
            raise InputError(
                "the model keeps its weights outside the flatbuffer (a model over 2 GB); "
                "TFLite Micro does not read such models",
                key=source,
            )
    subgraphs = [root.Subgraphs(k) for k in range(root.SubgraphsLength())]
    if not subgraphs or subgraphs[0].OperatorsLength() == 0:
        raise InputError("the model has no operators", key=source)
    bases = [0]
    for sub in subgraphs:
        bases.append(bases[-1] + sub.TensorsLength())
    kinds = _enum_names(tflite.BuiltinOperator)
    operators: list[Operator] = []
    for k, sub in enumerate(subgraphs):
        for i in range(sub.OperatorsLength()):
            operator = _operator(root, sub.Operators(i), len(operators), k, i, bases, kinds, source)
            operators.append(operator)
    _check_calls(len(subgraphs), operators, source)
    walk = _Walk(subgraphs, bases, operators, source)
    walk.subgraph(0, ())
    types = _enum_names(tflite.TensorType)
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
    if not any(t.in_arena for t in tensors):
        raise InputError(
            "none of its tensors takes arena memory (each is a constant, a variable or "
            "empty, of a dimension of 0): nothing to plan",
            key=source,
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
        table = getattr(tflite, table_name)()
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
    constant = buffer is not None and buffer.DataLength() > 0
    if any(dim < 0 for dim in shape) and not constant:
        raise InputError(
            f"tensor {index} ({name}) has an unknown dimension {list(shape)}; TFLite Micro "
            "plans tensors of fixed shape",
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
        index, name, dtype, shape, size, variable, constant, first, last, subgraph, local, channels
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
