"""`memplace tflm`: memplace's plan inside a TFLite model, for TensorFlow Lite Micro.

TFLite Micro has one arena. Its planned part holds the activation tensors and the kernels'
scratch buffers, each live for some allocation scopes (`graph.py`); its persistent part holds
the runtime's records, the kernels' data and the variable tensors. memplace plans the
activation tensors and scratch buffers into one pool of the board, checks the offsets under
the runtime's own rules, and writes them into a copy of the model as its
`OfflineMemoryAllocation` metadata (`metadata.py`). The runtime then keeps memplace's
offsets and places the scratch buffers itself, around them, with its greedy planner
(`greedy.py` says where). Variable tensors stay with the runtime (offset -1): their state
must outlive every scope.

Sizes: `activations` is the planned part with memplace's plan; `tflm_activations` what the
runtime's own planner uses on the original model; `persistent` and `arena` are for a 32-bit
Cortex-M target, estimated (see docs/workloads.md); `host` holds what the `tflite-micro`
package's 64-bit host runtime measured with the planned model, when it is installed.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace.board import Board
from memplace.errors import InputError, MemplaceError, PlanningError
from memplace.files import read_input
from memplace.importers.tflite import ARENA_ALIGN, Graph, Tensor, read_graph, round_up
from memplace.planner import DEFAULT_TIME_LIMIT, plan
from memplace.tflm import runtime
from memplace.tflm.allocator import UNKNOWN_MARGIN, need
from memplace.tflm.greedy import ONLINE, Request, conflicts, simulate
from memplace.tflm.metadata import ModelLayoutError, with_offline_plan
from memplace.tflm.scratch import KERNELS, Scratches, extension, known_kernel, scratches
from memplace.tflm.target import Persistent, estimate_arena
from memplace.workload import WorkloadBuilder

__all__ = [
    "KERNELS",
    "TflmPlan",
    "check_out",
    "fit_model",
    "margin_note",
    "place_model",
    "summary",
    "write_model",
]


@dataclass(frozen=True)
class TflmPlan:
    """memplace's plan for a model's arena, and the model bytes that carry it."""

    model: str
    pool: str
    kernels: str
    extension: str
    activations: int
    lower_bound: int
    optimal: bool
    tflm_activations: int
    offsets: tuple[int, ...]  # per tensor, ONLINE for the runtime to place
    offsets_by: str  # whose offsets the model carries: memplace, tflite-micro or vela
    scratch: Scratches
    persistent: Persistent
    arena: int
    host: runtime.Measured | None
    host_rule: int | None  # the arena rule with the host's word size, to check it there
    planned: bytes
    host_lacks: tuple[str, ...] = ()  # custom operators the host runtime has no kernel for

    def to_json(self) -> dict[str, Any]:
        host = None
        if self.host is not None:
            host = {
                "runtime": f"tflite-micro {self.host.version}",
                "kernels": "reference",
                "word_bits": 64,
                "activations": self.host.head,
                "persistent": self.host.tail,
                "arena": self.host.arena,
                "measured": True,
                "arena_by_rule": self.host_rule,
            }
        return {
            "model": self.model,
            "pool": self.pool,
            "kernels": self.kernels,
            "extension": self.extension,
            "activations": self.activations,
            "lower_bound": self.lower_bound,
            "optimal": self.optimal,
            "tflm_activations": self.tflm_activations,
            "persistent": self.persistent.bytes,
            "arena": self.arena,
            "target": {
                "word_bits": 32,
                "estimated": bool(self.persistent.margin),
                "basis": self.persistent.basis,
                "margin": self.persistent.margin,
            },
            "host": host,
            "layout": self.offsets_by,
            "scratch": [
                {"step": s.first, "bytes": s.bytes, "why": s.why} for s in self.scratch.buffers
            ],
            "unmodelled": list(self.scratch.unmodelled),
            "unknown_data": list(self.persistent.unknown),
            "planned_tensors": sum(1 for offset in self.offsets if offset != ONLINE),
        }


def place_model(
    board: Board,
    model: Path | Graph,
    pool: str | None = None,
    kernels: str = "reference",
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    measure: bool = True,
) -> TflmPlan:
    """Plan the arena of `model` (a `.tflite` file, or the graph read from one) on `board`,
    in `pool` or else the fastest workspace pool that holds it; nothing is written.
    `measure` runs the host runtime on the planned model when the `tflite-micro` package is
    installed."""
    if not isinstance(model, Graph):
        model = read_graph(read_input(model, key="MODEL"), str(model))
    graph = model
    fitted, shortfalls = _fit(board, graph, _pools(board, pool), kernels, time_limit, measure)
    if fitted is not None:
        return fitted
    lacks = ", ".join(
        f"{name} lacks {lack} bytes" if lack >= 0 else f"{name} cannot hold the activations"
        for name, lack in shortfalls.items()
    )
    raise PlanningError(f"no workspace pool holds the model's arena: {lacks}", "arena", shortfalls)


def fit_model(
    board: Board, graph: Graph, pool: str, time_limit: float | None = DEFAULT_TIME_LIMIT
) -> TflmPlan | None:
    """The model's arena in `pool` of `board`, with reference kernels and not measured;
    None when the pool cannot hold it."""
    return _fit(board, graph, _pools(board, pool), "reference", time_limit, False)[0]


def _fit(
    board: Board,
    graph: Graph,
    pools: list[str],
    kernels: str,
    time_limit: float | None,
    measure: bool,
) -> tuple[TflmPlan | None, dict[str, int]]:
    """The plan in the first of `pools` that holds the arena, and what each pool before it
    lacks (-1: it cannot hold the activations)."""
    _check_plannable(graph)
    data, source = graph.data, graph.source
    ext = extension(_cpu(board))
    asked = scratches(graph, kernels, ext)
    scratch = _scratch_requests(graph, asked)
    own = [_request(graph, t, graph.offline[t] if graph.offline else ONLINE) for t in _arena(graph)]
    tflm = simulate(own + scratch)
    pinned = _vela_pinned(graph)
    shortfalls: dict[str, int] = {}
    for name in pools:
        chosen = (
            _vela_offsets(graph, scratch, pinned)
            if pinned
            else _try_pool(board, graph, scratch, tflm.offsets[: len(own)], name, time_limit)
        )
        if chosen is None:
            shortfalls[name] = -1
            continue
        offsets, offsets_by, lower_bound, proven = chosen
        activations = simulate(_requests(graph, offsets) + scratch).used
        planned = _planned(data, graph, offsets)
        target = need(graph, asked, activations, kernels, ext)
        margin = target.margin + UNKNOWN_MARGIN * len(asked.unmodelled)
        basis = "from TFLite Micro's allocator rules"
        if margin:
            basis += f", with a margin of {margin} bytes for what memplace does not know"
        persistent = Persistent(target.persistent, basis, target.unknown, margin)
        host, host_rule = None, None
        if measure and runtime.available() and not _host_lacks(graph):
            host = _measure(planned, data, source)
            reference = scratches(graph, "reference", ext)  # what the host build asks
            host_rule = estimate_arena(graph, reference, host.head, host.tail, word_bits=64)
        arena = target.arena + UNKNOWN_MARGIN * len(asked.unmodelled)
        capacity = board.pools[name].size
        if arena > capacity:
            shortfalls[name] = arena - capacity
            continue
        return TflmPlan(
            source,
            name,
            kernels,
            ext,
            activations,
            lower_bound,
            proven and activations == lower_bound and not margin,
            tflm.used,
            offsets,
            offsets_by,
            asked,
            persistent,
            arena,
            host,
            host_rule,
            planned,
            _host_lacks(graph),
        ), shortfalls
    return None, shortfalls


def _check_plannable(graph: Graph) -> None:
    """Refuse a model TFLite Micro cannot plan an arena for."""
    if graph.external:
        raise InputError(
            "the model keeps its weights outside the flatbuffer (a model over 2 GB); "
            "TFLite Micro does not read such models",
            key=graph.source,
        )
    if not any(t.in_arena for t in graph.tensors):
        raise InputError(
            "none of its tensors takes arena memory (each is a constant, a variable or "
            "empty, of a dimension of 0): nothing to plan",
            key=graph.source,
        )


def check_out(source: Path, out: Path) -> None:
    """Refuse an `--out` that cannot take the planned model, before any planning."""
    if out.exists() and out.resolve() == source.resolve():
        raise InputError("--out names the input model; memplace never modifies it", key="--out")
    if out.is_dir():
        raise InputError(f"{out} is a folder; name the model file to write", key="--out")
    if not out.parent.is_dir():
        raise InputError(f"no folder {out.parent} to write the model into", key="--out")


def write_model(result: TflmPlan, source: Path, out: Path) -> None:
    """Write the planned model to `out`, whole or not at all; never over `source`."""
    check_out(source, out)
    fd, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(result.planned)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _cpu(board: Board) -> str:
    context = next(iter(board.contexts.values()), None)
    core = board.cores[context.core] if context is not None else next(iter(board.cores.values()))
    return core.cpu


def _pools(board: Board, pool: str | None) -> list[str]:
    workspace = [name for name, p in board.pools.items() if p.kind == "workspace"]
    if pool is None:
        order = {name: i for i, name in enumerate(board.pools)}
        return sorted(
            workspace, key=lambda n: (board.memories[board.pools[n].memory].latency, order[n])
        )
    if pool not in workspace:
        raise InputError(
            f"no workspace pool {pool!r} on board {board.name}; choose from "
            f"{', '.join(workspace) or 'none'}",
            key="--pool",
        )
    return [pool]


def _arena(graph: Graph) -> list[int]:
    """The tensors the runtime's planner places, in tensor order."""
    return [t.index for t in graph.tensors if t.in_arena]


def _request(graph: Graph, tensor: int, offline: int) -> Request:
    spec = graph.tensors[tensor]
    return Request(f"tensor {tensor}", spec.arena_bytes, spec.first, spec.last, offline)


def _requests(graph: Graph, offsets: tuple[int, ...]) -> list[Request]:
    return [_request(graph, t, offsets[t]) for t in _arena(graph)]


def _scratch_requests(graph: Graph, asked: Scratches) -> list[Request]:
    return [
        Request(f"scratch {k} of {graph.operators[s.op].label}", round_up(s.bytes), s.first, s.last)
        for k, s in enumerate(asked.buffers)
    ]


def _try_pool(
    board: Board,
    graph: Graph,
    scratch: list[Request],
    own: tuple[int, ...],
    pool: str,
    time_limit: float | None,
) -> tuple[tuple[int, ...], str, int, bool] | None:
    """memplace's offsets in `pool`, or the runtime's own where those need less."""
    builder = WorkloadBuilder("tflm", graph.step_names(), source=graph.source)
    placed = [t for t in _arena(graph) if graph.tensors[t].first >= 0]
    for t in placed:
        spec = graph.tensors[t]
        live = (spec.first, spec.last)
        builder.buffer(f"t{t}", spec.arena_bytes, live, align=ARENA_ALIGN, scope=f"global.{pool}")
    for k, request in enumerate(scratch):
        if request.first < 0:
            continue  # an operator no walk reaches: its scratch shares no scope with these
        live = (request.first, request.last)
        builder.buffer(f"s{k}", request.size, live, align=ARENA_ALIGN, scope=f"global.{pool}")
    try:
        result = plan(board, builder.build(), time_limit=time_limit)
    except PlanningError:
        return None
    mine = [ONLINE] * len(graph.tensors)
    for t in placed:
        mine[t] = result.placement(f"t{t}").offset
    theirs = [ONLINE] * len(graph.tensors)
    for t, offset in zip(_arena(graph), own, strict=True):
        theirs[t] = offset
    candidates = [(_spare_variables(graph, mine), "memplace")]
    runtime_offsets = _spare_variables(graph, theirs)
    if not _problems(graph, runtime_offsets, scratch):  # a plan the model carries may break them
        candidates.append((runtime_offsets, "tflite-micro"))
    offsets, offsets_by = min(
        candidates, key=lambda c: simulate(_requests(graph, c[0]) + scratch).used
    )
    _check(graph, offsets, scratch)
    usage = result.pool(pool)
    optimal = usage.optimal and simulate(_requests(graph, offsets) + scratch).used == usage.used
    return offsets, offsets_by, usage.lower_bound, optimal


ETHOS_U = "ethos-u"
"""The custom operator of a model Vela compiled for an Arm Ethos-U NPU."""


def _host_lacks(graph: Graph) -> tuple[str, ...]:
    """The model's custom operators the host runtime has no kernel for (it has the
    builtin ones and the signal library's): Vela's ethos-u, a user's own."""
    return tuple(dict.fromkeys(op.kind for op in graph.operators if not known_kernel(op.kind)))


def _vela_pinned(graph: Graph) -> frozenset[int]:
    """The tensors of Vela's `ethos-u` operators that Vela laid out in the arena (its
    offline plan): the NPU's command stream addresses them there, so they keep their
    offsets; Vela lets them share bytes (the scratch area holds the operator's input and
    output), which the runtime allows for offline offsets."""
    if graph.offline is None:
        return frozenset()
    return frozenset(
        t
        for op in graph.operators
        if op.kind == ETHOS_U
        for t in (*op.inputs, *op.outputs)
        if t >= 0 and graph.offline[t] != ONLINE and graph.tensors[t].in_arena
    )


def _vela_offsets(
    graph: Graph, scratch: list[Request], pinned: frozenset[int]
) -> tuple[tuple[int, ...], str, int, bool]:
    """Vela's offsets for the NPU's tensors; every other tensor as Vela placed it, or left
    to the runtime's planner around them, whichever needs less."""
    assert graph.offline is not None
    as_laid = graph.offline
    around = tuple(o if t in pinned else ONLINE for t, o in enumerate(graph.offline))
    offsets = min(
        (_spare_variables(graph, list(as_laid)), _spare_variables(graph, list(around))),
        key=lambda c: simulate(_requests(graph, c) + scratch).used,
    )
    _check(graph, offsets, scratch, pinned)
    return offsets, "vela", simulate(_requests(graph, offsets) + scratch).used, False


def _variable_slots(graph: Graph) -> dict[int, Tensor]:
    """Offsets the runtime reads for variable tensors of subgraphs after the first.

    TFLite Micro decides whether it keeps a variable tensor in the persistent part by the
    offline offset at the tensor's index within its own subgraph, not at its index in the
    model (`MicroAllocator::AllocateVariables`); when that slot holds an offset, the
    variable gets no memory at all. So that slot must stay -1."""
    return {t.local: t for t in graph.tensors if t.variable and t.subgraph > 0}


def _spare_variables(graph: Graph, offsets: list[int]) -> tuple[int, ...]:
    """`offsets` with the slots the runtime reads for variables left to the runtime."""
    spared = list(offsets)
    for slot in _variable_slots(graph):
        spared[slot] = ONLINE
    return tuple(spared)


def _check(
    graph: Graph,
    offsets: tuple[int, ...],
    scratch: list[Request],
    shared: frozenset[int] = frozenset(),
) -> None:
    """The offsets hold under the runtime's rules, with the scratch where it will put it;
    tensors in `shared` (Vela's) may share bytes with each other, as Vela laid them."""
    problems = _problems(graph, offsets, scratch, shared)
    if problems:
        raise MemplaceError(
            f"memplace's plan breaks TFLite Micro's rules, so no model was written: {problems[0]}"
        )


def _problems(
    graph: Graph,
    offsets: tuple[int, ...],
    scratch: list[Request],
    shared: frozenset[int] = frozenset(),
) -> list[str]:
    requests = _requests(graph, offsets) + scratch
    runtime = simulate(requests)
    names = {f"tensor {t}" for t in shared}
    problems = conflicts(requests, runtime.offsets, ARENA_ALIGN, names)
    problems += [
        f"offset {offsets[slot]} at index {slot} would leave variable tensor {t.index} "
        f"({t.name}) without memory: the runtime reads that index for it"
        for slot, t in _variable_slots(graph).items()
        if offsets[slot] != ONLINE
    ]
    return problems


def _planned(data: bytes, graph: Graph, offsets: tuple[int, ...]) -> bytes:
    try:
        planned = with_offline_plan(data, offsets)
    except ModelLayoutError as exc:
        raise InputError(str(exc), key=graph.source) from exc
    except struct.error as exc:
        raise InputError(f"the model is damaged: {exc}", key=graph.source) from exc
    if read_graph(planned, graph.source).offline != offsets:
        raise MemplaceError("the planned model does not read back with memplace's offsets")
    return planned


def _measure(planned: bytes, data: bytes, model: str) -> runtime.Measured:
    """The host runtime's measure of the planned model. If it cannot run it, it is asked to
    run the model as given: failing that too, the model is at fault (an input error naming
    it); else memplace's plan is (exit 3)."""
    with tempfile.TemporaryDirectory(prefix="memplace-tflm-") as folder:
        path = Path(folder) / "planned.tflite"
        path.write_bytes(planned)
        try:
            return runtime.measure(path)
        except runtime.RuntimeFailed as exc:
            failed = exc
        path.write_bytes(data)
        try:
            runtime.measure(path)
        except runtime.RuntimeFailed as exc:
            raise InputError(
                f"TFLite Micro's host runtime cannot run the model: {exc.reason}", key=str(model)
            ) from None
    raise MemplaceError(
        f"the tflite-micro runtime runs {model} but not memplace's planned copy of it: "
        f"{failed.reason}"
    )


def margin_note(result: TflmPlan) -> str:
    """What a figure with a margin says about it ("" when it has none)."""
    if not result.persistent.margin:
        return ""
    unknown = sorted({*result.persistent.unknown, *result.scratch.unmodelled})
    return (
        f"{result.persistent.margin} bytes of it are a margin for what memplace does not "
        f"know of these operators' kernels: {', '.join(unknown)}"
    )


def summary(result: TflmPlan) -> str:
    """The result for people: the arena to give the interpreter, and where it comes from."""
    margin = result.persistent.margin
    lines = [
        f"model {result.model}: arena in pool {result.pool}, {result.kernels} kernels "
        f"(core extension: {result.extension})",
        f"activations {result.activations} bytes (lower bound {result.lower_bound}, "
        f"{'optimal' if result.optimal else 'not proven optimal'}); TFLite Micro's own "
        f"planner: {result.tflm_activations}",
        f"persistent {result.persistent.bytes} bytes (32-bit target, {result.persistent.basis})",
        f"arena {result.arena} bytes: give this to the MicroInterpreter (32-bit target"
        + (f", {margin} bytes of it a margin)" if margin else ")"),
    ]
    if result.host is None and result.host_lacks:
        lines.append(f"host runtime: not run (it has no kernel for {', '.join(result.host_lacks)})")
    if result.host is not None:
        lines.append(
            f"host runtime (tflite-micro {result.host.version}, 64-bit, reference kernels, "
            f"measured): activations {result.host.head}, persistent {result.host.tail}, "
            f"smallest arena {result.host.arena}"
        )
    if result.scratch.buffers:
        total = sum(s.bytes for s in result.scratch.buffers)
        lines.append(f"kernel scratch: {len(result.scratch.buffers)} buffers, {total} bytes asked")
    if result.scratch.unmodelled:
        lines.append(
            "warning: these operators may ask for scratch memplace does not model: "
            + ", ".join(result.scratch.unmodelled)
        )
    if result.persistent.unknown:
        lines.append(
            "warning: these operators' kernels keep data memplace does not know: "
            + ", ".join(result.persistent.unknown)
        )
    if result.offsets_by == "vela":
        lines.append(
            "Vela's layout of the ethos-u operators' tensors is kept (the NPU's command "
            "stream addresses them); the model carries it"
        )
    elif result.offsets_by != "memplace":
        lines.append("TFLite Micro's own layout needs less here; the model carries it")
    return "\n".join(lines)
