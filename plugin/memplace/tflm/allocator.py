"""The arena a 32-bit Cortex-M target needs, from TensorFlow Lite Micro's allocator rules.

TFLite Micro's `SingleArenaBufferAllocator` hands out one arena from both ends. Its tail
(the persistent part) grows down from the arena's end: every record is placed at the next
address below, aligned down to the record's own alignment, so the order of allocations sets
the padding between them. Its head (the planned part) grows up from the arena's 16-aligned
start and, while the model is prepared, holds temporary data: the kernels' scratch requests,
the tensor records kernels read while preparing, the planner's records. The smallest arena
is the largest of what each step needs at once, head and tail together.

`need` replays `MicroInterpreter::AllocateTensors()` for a model: the allocator's own
objects, one `SubgraphAllocations` per subgraph, a `TfLiteEvalTensor` per tensor, a
`NodeAndRegistration` per operator, each operator's builtin parameters, each kernel's data
(`Init`) and what its `Prepare` keeps (per-channel multipliers and shifts, tables), the
scratch buffer handles, the variable tensors, and the full tensor records of the main
subgraph's inputs and outputs. The sizes are those of GCC for Arm (32-bit pointers, 8-byte
`int64_t` and `double` alignment, enums of one byte as arm-none-eabi builds them), of TFLite
Micro built with `TF_LITE_STATIC_MEMORY` and without compression, kept here as data per
record, per operator and per kernel library (see docs/workloads.md for how they were read).
A kernel memplace does not know keeps data it cannot size: it is named in `unknown` and the
arena carries a stated margin for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tflite

from memplace.errors import InputError
from memplace.importers.tflite import ARENA_ALIGN, Graph, Operator, round_up
from memplace.tflm.scratch import Scratches, custom_int

# Records of the runtime on a 32-bit Arm target: (bytes, alignment).
SINGLE_ARENA_ALLOCATOR = (36, 4)
GREEDY_PLANNER = (44, 4)
MICRO_ALLOCATOR = (36, 4)
BUILTIN_DATA_ALLOCATOR = (8, 4)
SUBGRAPH_ALLOCATIONS = (8, 4)
EVAL_TENSOR = (12, 4)  # TfLiteEvalTensor
NODE_AND_REGISTRATION = (32, 4)  # TfLiteNode (28) and the registration's pointer
TFLITE_TENSOR = (32, 4)  # TfLiteTensor under TF_LITE_STATIC_MEMORY
AFFINE_QUANTIZATION = (12, 4)
SCRATCH_HANDLE = (4, 4)  # ScratchBufferHandle
SCRATCH_REQUEST = 12  # internal::ScratchBufferRequest, in the head while preparing
MAX_SCRATCH_PER_OP = 12  # kMaxScratchBuffersPerOp: the head keeps room for as many more
ALLOCATION_INFO = 24  # AllocationInfo, one per tensor and scratch buffer while planning
SUBGRAPH_OFFSET = 4  # size_t per subgraph while planning
PLANNER_PER_BUFFER = 40  # GreedyMemoryPlanner::per_buffer_size()
RESOURCE_VARIABLES = 12  # MicroResourceVariables
RESOURCE_VARIABLE = 20  # one MicroResourceVariables::MicroResourceVariable
UNKNOWN_MARGIN = 512  # bytes the arena carries for each kernel whose data memplace does not know

# Builtin parameters the op resolver's parser allocates per operator: (bytes, alignment).
PARAMS: dict[str, tuple[int, int]] = {
    "ADD": (2, 1), "ARG_MAX": (1, 1), "ARG_MIN": (1, 1), "AVERAGE_POOL_2D": (40, 4),
    "BATCH_MATMUL": (3, 1), "CALL_ONCE": (4, 4), "CAST": (2, 1), "CONCATENATION": (8, 4),
    "CONV_2D": (28, 4), "CUMSUM": (2, 1), "DEPTH_TO_SPACE": (4, 4),
    "DEPTHWISE_CONV_2D": (28, 4), "DIV": (1, 1), "FULLY_CONNECTED": (5, 1), "GATHER": (8, 4),
    "IF": (8, 4), "L2_POOL_2D": (40, 4), "LEAKY_RELU": (4, 4), "MAX_POOL_2D": (40, 4),
    "MEAN": (1, 1), "MIRROR_PAD": (1, 1), "MUL": (1, 1), "PACK": (8, 4), "REDUCE_ALL": (1, 1),
    "REDUCE_MAX": (1, 1), "REDUCE_MIN": (1, 1), "RESHAPE": (36, 4),
    "RESIZE_BILINEAR": (2, 1), "RESIZE_NEAREST_NEIGHBOR": (2, 1), "SHAPE": (1, 1),
    "SOFTMAX": (4, 4), "SPACE_TO_DEPTH": (4, 4), "SPLIT": (4, 4), "SPLIT_V": (4, 4),
    "SQUEEZE": (36, 4), "STRIDED_SLICE": (24, 4), "SUB": (2, 1), "SUM": (1, 1),
    "SVDF": (8, 4), "TRANSPOSE_CONV": (16, 4), "UNIDIRECTIONAL_SEQUENCE_LSTM": (16, 4),
    "UNPACK": (8, 4), "VAR_HANDLE": (8, 4), "WHILE": (8, 4),
}  # fmt: skip

# Each reference kernel's data from `Init` (bytes; the runtime aligns them to 16). An
# operator listed in neither this table nor `NO_DATA` keeps data memplace does not know.
REFERENCE_INIT: dict[str, int] = {
    "ABS": 28, "ADD": 60, "ADD_N": 40, "AVERAGE_POOL_2D": 32, "CALL_ONCE": 8,
    "CIRCULAR_BUFFER": 8, "CONCATENATION": 24, "CONV_2D": 56, "COS": 28, "CUMSUM": 36,
    "DEPTHWISE_CONV_2D": 56, "DEQUANTIZE": 32, "DIV": 28, "ELU": 256, "EMBEDDING_LOOKUP": 8,
    "EQUAL": 32, "FULLY_CONNECTED": 48, "GREATER": 32, "GREATER_EQUAL": 32, "HARD_SWISH": 20,
    "IF": 8, "L2_NORMALIZATION": 4, "LEAKY_RELU": 24, "LESS": 32, "LESS_EQUAL": 32,
    "LOG": 28, "LOG_SOFTMAX": 28, "LOGISTIC": 16, "MAX_POOL_2D": 32, "MEAN": 44,
    "MIRROR_PAD": 20, "MUL": 36, "NOT_EQUAL": 32, "PAD": 56, "PADV2": 56, "PRELU": 28,
    "QUANTIZE": 32, "REDUCE_MAX": 44, "REDUCE_MIN": 44, "RELU": 28, "RELU6": 8, "RSQRT": 28,
    "SELECT_V2": 1, "SIN": 28, "SOFTMAX": 56, "SPACE_TO_BATCH_ND": 4, "SQRT": 28,
    "SQUARE": 28, "SQUARED_DIFFERENCE": 112, "STRIDED_SLICE": 84, "SUB": 52, "SUM": 44,
    "SVDF": 36, "TANH": 16, "TRANSPOSE_CONV": 72, "UNIDIRECTIONAL_SEQUENCE_LSTM": 688,
    "VAR_HANDLE": 4, "WHILE": 8,
    "ethos-u": 12,  # kernels/ethos_u: the command stream's size and two scratch indices
}  # fmt: skip

# Operators whose kernels keep no data of their own.
NO_DATA = frozenset({
    "ASSIGN_VARIABLE", "BATCH_TO_SPACE_ND", "BROADCAST_ARGS", "BROADCAST_TO", "CAST",
    "CEIL", "DEPTH_TO_SPACE", "EXP", "EXPAND_DIMS", "FILL", "FLOOR", "FLOOR_DIV",
    "FLOOR_MOD", "GATHER", "GATHER_ND", "LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR",
    "MAXIMUM", "MINIMUM", "NEG", "PACK", "READ_VARIABLE", "RESHAPE", "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR", "ROUND", "SHAPE", "SLICE", "SPACE_TO_DEPTH", "SPLIT",
    "SPLIT_V", "SQUEEZE", "TRANSPOSE", "UNPACK", "ZEROS_LIKE",
    "SignalFftAutoScale", "SignalFilterBankSquareRoot",
})  # fmt: skip

Keeps = Callable[[Graph, Operator], list[int]]


# The signal library's kernels (TFLite Micro's `signal/micro/kernels`): what `Init` keeps,
# read from each operator's custom options.
KISS_FFT_STATE = 264  # kiss_fft_state: nfft, inverse, factors[64], then the twiddles
KISS_FFTR_STATE = 12  # kiss_fftr_state: three pointers


def _kiss_fftr(length: int, complex_bytes: int) -> int:
    """kiss_fftr_alloc's memory (kissfft 1.3.0) for a real FFT of `length` points."""
    half = length // 2
    sub = KISS_FFT_STATE + complex_bytes * half  # the complex FFT's state and twiddles
    return KISS_FFTR_STATE + sub + complex_bytes * (half * 3 // 2)


def _signal_fft(graph: Graph, op: Operator) -> list[int]:
    data = graph.tensors[op.inputs[0]]
    complex_bytes = 4 if data.dtype == "INT16" else 8
    return [32, _kiss_fftr(custom_int(graph, op, "fft_length"), complex_bytes)]


def _signal_channels(params: int, per_channel: int, extra: int = 0) -> Keeps:
    def keeps(graph: Graph, op: Operator) -> list[int]:
        channels = custom_int(graph, op, "num_channels")
        return [params, per_channel * (channels + extra)]

    return keeps


def _fixed(*sizes: int) -> Keeps:
    def keeps(graph: Graph, op: Operator) -> list[int]:
        return list(sizes)

    return keeps


SIGNAL_INIT: dict[str, Keeps] = {
    "SignalWindow": _fixed(8),
    "SignalRfft": _signal_fft,
    "SignalIrfft": _signal_fft,
    "SignalEnergy": _fixed(8),
    "SignalFilterBank": _signal_channels(36, 8, 1),  # uint64 work area, one more channel
    "SignalFilterBankSpectralSubtraction": _signal_channels(44, 4),  # the noise estimate
    "SignalPCAN": _fixed(4),
    "SignalFilterBankLog": _fixed(8),
}


def _per_channel(dimension: int) -> Keeps:
    """A multiplier and a shift (int32) per output channel, read from the filter's shape."""

    def keeps(graph: Graph, op: Operator) -> list[int]:
        channels = graph.tensors[op.inputs[1]].shape[dimension]
        return [4 * channels, 4 * channels]

    return keeps


def _fully_connected(graph: Graph, op: Operator) -> list[int]:
    data, weights = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if data.dtype == "FLOAT32" or weights.channels <= 1:
        return []
    return [4 * weights.channels, 4 * weights.channels]


def _softmax(graph: Graph, op: Operator) -> list[int]:
    if graph.tensors[op.inputs[0]].dtype != "INT16":
        return []
    return [513 * 2, 513 * 2]  # the exp and 1/(1+x) lookup tables


# What each reference kernel's `Prepare` keeps in the persistent part (bytes, 16-aligned).
REFERENCE_PREPARE: dict[str, Keeps] = {
    "CONV_2D": _per_channel(0),
    "DEPTHWISE_CONV_2D": _per_channel(3),
    "TRANSPOSE_CONV": _per_channel(0),
    "FULLY_CONNECTED": _fully_connected,
    "SOFTMAX": _softmax,
}


# CMSIS-NN's kernels keep the reference kernel's data and their own beside it.
CMSIS_NN_INIT = REFERENCE_INIT | {
    "CONV_2D": 60, "DEPTHWISE_CONV_2D": 60, "FULLY_CONNECTED": 72, "AVERAGE_POOL_2D": 36,
    "MAX_POOL_2D": 36, "SOFTMAX": 64,
}  # fmt: skip
# CMSIS-NN kernels whose data memplace has not sized: named as unknown with that library.
CMSIS_NN_UNSIZED = frozenset({
    "ADD", "BATCH_MATMUL", "MAXIMUM", "MINIMUM", "MUL", "PAD", "SVDF", "TRANSPOSE",
    "TRANSPOSE_CONV", "UNIDIRECTIONAL_SEQUENCE_LSTM",
})  # fmt: skip


def _cmsis_per_channel(dimension: int) -> Keeps:
    plain = _per_channel(dimension)

    def keeps(graph: Graph, op: Operator) -> list[int]:
        if graph.tensors[op.inputs[0]].dtype not in ("INT8", "INT16"):
            return []
        return plain(graph, op)

    return keeps


def _cmsis_fully_connected(ext: str) -> Keeps:
    def keeps(graph: Graph, op: Operator) -> list[int]:
        kept = _fully_connected(graph, op)
        data, weights = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        bias = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        constant = weights.constant and (bias is None or bias.constant)
        if ext == "mve" and data.dtype == "INT8" and weights.dtype == "INT8" and constant:
            kept.append(4 * weights.shape[0])  # kernel sums, kept in a speed build
        return kept

    return keeps


def _prepare(kernels: str, ext: str) -> dict[str, Keeps]:
    if kernels != "cmsis-nn":
        return REFERENCE_PREPARE
    return REFERENCE_PREPARE | {
        "CONV_2D": _cmsis_per_channel(0),
        "DEPTHWISE_CONV_2D": _cmsis_per_channel(3),
        "FULLY_CONNECTED": _cmsis_fully_connected(ext),
    }


@dataclass(frozen=True)
class Need:
    """What AllocateTensors() needs on a 32-bit target: the persistent part it leaves, the
    smallest arena (a multiple of 16, with the arena's start 16-aligned), which of the
    model's operators keep data memplace does not know, and the margin added for them."""

    persistent: int
    arena: int
    unknown: tuple[str, ...]
    margin: int


@dataclass
class _Arena:
    tail: int = 0  # bytes used from the arena's end
    smallest: int = 0  # the largest head + tail seen at once

    def keep(self, size: int, align: int = ARENA_ALIGN) -> None:
        self.tail = round_up(self.tail + size, align)

    def fits(self, head: int) -> None:
        self.smallest = max(self.smallest, head + self.tail)


def need(
    graph: Graph,
    asked: Scratches,
    activations: int,
    kernels: str = "reference",
    ext: str = "none",
    resource_variables: int | None = None,
) -> Need:
    """Replay AllocateTensors() for `graph` with `activations` bytes in the planned part,
    the scratch buffers `asked` and the data of `kernels` on a core of extension `ext`."""
    init = CMSIS_NN_INIT if kernels == "cmsis-nn" else REFERENCE_INIT
    unsized = CMSIS_NN_UNSIZED if kernels == "cmsis-nn" else frozenset()
    prepare = _prepare(kernels, ext)
    arena = _Arena()
    for size, align in (SINGLE_ARENA_ALLOCATOR, GREEDY_PLANNER, MICRO_ALLOCATOR):
        arena.keep(size, align)
    names = resource_names(graph)
    variables = len(set(names.values())) if resource_variables is None else resource_variables
    if variables:  # MicroResourceVariables::Create, on the same allocator
        arena.keep(RESOURCE_VARIABLES)
        arena.keep(RESOURCE_VARIABLE * variables)
    arena.keep(*BUILTIN_DATA_ALLOCATOR)
    arena.fits(SCRATCH_REQUEST * MAX_SCRATCH_PER_OP)
    arena.keep(SUBGRAPH_ALLOCATIONS[0] * graph.subgraphs, SUBGRAPH_ALLOCATIONS[1])
    for k in range(graph.subgraphs):
        count = sum(1 for t in graph.tensors if t.subgraph == k)
        arena.keep(EVAL_TENSOR[0] * count, EVAL_TENSOR[1])
    for k in range(graph.subgraphs):
        count = sum(1 for op in graph.operators if op.subgraph == k)
        arena.keep(NODE_AND_REGISTRATION[0] * count, NODE_AND_REGISTRATION[1])
    for op in graph.operators:
        if op.kind in PARAMS:
            arena.keep(*PARAMS[op.kind])
    unknown: list[str] = []
    steps = graph.step_names()
    for op in graph.operators:
        if op.kind in SIGNAL_INIT:
            for size in _kept(SIGNAL_INIT[op.kind], graph, op):
                arena.keep(size)
        elif op.kind in init and op.kind not in unsized:
            arena.keep(init[op.kind])
        elif op.kind not in NO_DATA or op.kind in unsized:
            unknown.append(steps[op.first] if op.first >= 0 else op.label)
    requests = 0
    assigned: set[str] = set()
    for op in graph.operators:
        head = SCRATCH_REQUEST * (requests + MAX_SCRATCH_PER_OP)
        for t in (*op.inputs, *op.outputs):
            if t >= 0:
                head += _temp_tensor(graph, t)
        for size in _kept(prepare.get(op.kind, _nothing), graph, op):
            arena.keep(size)
        if op.kind == "ASSIGN_VARIABLE" and names.get(op.inputs[0]) not in (None, *assigned):
            # The first assignment of a resource variable gives it its buffer.
            assigned.add(names[op.inputs[0]])
            arena.keep(graph.tensors[op.inputs[1]].bytes)
        arena.fits(head)
        requests += sum(1 for s in asked.buffers if s.op == op.index)
    if requests:
        arena.keep(SCRATCH_HANDLE[0] * requests, SCRATCH_HANDLE[1])
    head = SCRATCH_REQUEST * (requests + MAX_SCRATCH_PER_OP)
    head += SUBGRAPH_OFFSET * graph.subgraphs
    head += ALLOCATION_INFO * (len(graph.tensors) + requests)
    for tensor in graph.tensors:
        if tensor.variable:
            arena.keep(tensor.bytes)
    planned = sum(1 for tensor in graph.tensors if tensor.in_arena) + requests
    arena.fits(round_up(head) + PLANNER_PER_BUFFER * planned + (-arena.tail) % ARENA_ALIGN)
    arena.fits(activations)
    main_ends = _main_ends(graph)
    for ends in main_ends:
        arena.keep(4 * len(ends))
        for t in ends:
            arena.keep(*TFLITE_TENSOR)
            if graph.tensors[t].channels:
                arena.keep(*AFFINE_QUANTIZATION)
                arena.keep(4 + 4 * graph.tensors[t].channels, 4)
    arena.fits(activations)
    margin = UNKNOWN_MARGIN * len(unknown)
    return Need(arena.tail, round_up(arena.smallest + margin), tuple(unknown), margin)


def resource_names(graph: Graph) -> dict[int, str]:
    """The resource variable each VAR_HANDLE's output names: its shared name (TFLite
    Micro's Python runtime counts variables by shared name)."""
    names = {}
    for op in graph.operators:
        if op.kind == "VAR_HANDLE" and op.outputs and op.options is not None:
            options = tflite.VarHandleOptions()
            options.Init(op.options.Bytes, op.options.Pos)
            shared = (options.SharedName() or b"").decode("utf-8", "replace")
            names[op.outputs[0]] = shared
    return names


def _kept(keeps: Keeps, graph: Graph, op: Operator) -> list[int]:
    """What a kernel keeps for `op`; an operator without the tensors or shapes its kernel
    reads is refused, naming the file."""
    try:
        return keeps(graph, op)
    except (IndexError, KeyError, ValueError) as exc:
        raise InputError(
            f"{op.label} lacks the inputs or shapes its kernel reads: {exc}", key=graph.source
        ) from exc


def _nothing(graph: Graph, op: Operator) -> list[int]:
    return []


def _temp_tensor(graph: Graph, index: int) -> int:
    """Head bytes of a temporary tensor record a kernel reads while preparing."""
    size = TFLITE_TENSOR[0]
    channels = graph.tensors[index].channels
    if channels:
        size += AFFINE_QUANTIZATION[0] + 4 + 4 * channels
    return size


def _main_ends(graph: Graph) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return graph.main_inputs, graph.main_outputs
