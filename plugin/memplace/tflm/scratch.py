"""Scratch buffers that TFLite Micro's kernels ask the runtime for while preparing.

A kernel asks for scratch with `RequestScratchBufferInArena`; the runtime places it in the
arena's planned part, live for its operator's scope only, and places it itself (an offline
plan has no entry for it). How much a kernel asks depends on the kernel library and, for
CMSIS-NN, on the core's extensions: `none` (Cortex-M0/M0+/M3), `dsp` (M4, M7, M33, M35P)
or `mve` (M55, M85). The sizes restate CMSIS-NN's `*_get_buffer_size` functions and the
TFLite Micro kernels that call them, as built with GCC and the default
`KERNELS_OPTIMIZED_FOR_SPEED` (see docs/workloads.md for the operators covered).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Any

import tflite
from flatbuffers import flexbuffers

from memplace.errors import InputError
from memplace.importers.tflite import ELEMENT_BYTES, Graph, Operator, Tensor

KERNELS = ("reference", "cmsis-nn")
EXTENSIONS = ("none", "dsp", "mve")

_MVE_CPUS = {"cortex-m55", "cortex-m85", "cortex-m52"}
_DSP_CPUS = {"cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p"}

# Operators whose kernels ask for scratch in a case memplace does not model: it warns.
_UNMODELLED = {
    "reference": {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "ADD_N", "MIRROR_PAD"},
    "cmsis-nn": {
        "MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "ADD_N", "MIRROR_PAD",
        "BATCH_MATMUL", "TRANSPOSE_CONV", "UNIDIRECTIONAL_SEQUENCE_LSTM",
    },
}  # fmt: skip


# The signal library's custom operators that ask for no scratch (SignalRfft's is modelled).
SIGNAL_NO_SCRATCH = frozenset({
    "SignalDelay", "SignalEnergy", "SignalFftAutoScale", "SignalFilterBank",
    "SignalFilterBankLog", "SignalFilterBankSpectralSubtraction",
    "SignalFilterBankSquareRoot", "SignalFramer", "SignalIrfft", "SignalOverlapAdd",
    "SignalPCAN", "SignalStacker", "SignalWindow",
})  # fmt: skip
_BUILTINS = frozenset(k for k in vars(tflite.BuiltinOperator) if not k.startswith("_"))


def known_kernel(kind: str) -> bool:
    """Whether TFLite Micro's own kernels cover the operator: builtins and the signal
    library's (SignalRfft's scratch is modelled; the others ask none)."""
    return kind in _BUILTINS or kind in SIGNAL_NO_SCRATCH or kind == "SignalRfft"


@dataclass(frozen=True)
class Scratch:
    """A scratch buffer operator `op` (its model-wide index) asks for: `bytes` as asked
    (the runtime rounds them), live from the operator's first scope to its last."""

    op: int
    bytes: int
    why: str
    first: int
    last: int


@dataclass(frozen=True)
class Scratches:
    buffers: tuple[Scratch, ...]
    unmodelled: tuple[str, ...]  # step names of operators that may ask for more


def extension(cpu: str) -> str:
    """The CMSIS-NN code path a core takes: none, dsp or mve."""
    if cpu in _MVE_CPUS:
        return "mve"
    return "dsp" if cpu in _DSP_CPUS else "none"


def scratches(graph: Graph, kernels: str, ext: str) -> Scratches:
    """Every scratch buffer the kernels ask for, in the order the runtime records them."""
    if kernels not in KERNELS:
        raise InputError(f"no kernels {kernels!r}; choose {' or '.join(KERNELS)}", key="--kernels")
    rules = _CMSIS_NN if kernels == "cmsis-nn" else _REFERENCE
    buffers: list[Scratch] = []
    unmodelled = []
    names = graph.step_names()
    for op in graph.operators:
        rule = rules.get(op.kind)
        if rule is not None:
            try:
                asks = rule(graph, op, ext)
            except (IndexError, ValueError) as exc:
                raise InputError(
                    f"{op.label} lacks the inputs or shapes its kernel reads: {exc}",
                    key=graph.source,
                ) from exc
            buffers += [
                Scratch(op.index, size, why, op.first, op.last) for size, why in asks if size > 0
            ]
        elif op.kind in _UNMODELLED[kernels] or not known_kernel(op.kind):
            unmodelled.append(names[op.first] if op.first >= 0 else op.label)
    return Scratches(tuple(buffers), tuple(unmodelled))


Rule = Callable[[Graph, Operator, str], list[tuple[int, str]]]


def _t(graph: Graph, op: Operator, k: int) -> Tensor:
    return graph.tensors[op.inputs[k]]


def _out(graph: Graph, op: Operator) -> Tensor:
    return graph.tensors[op.outputs[0]]


def _options(op: Operator, kind: Any) -> Any:
    table = kind()
    if op.options is None:
        raise InputError(f"{op.label} has no options")
    table.Init(op.options.Bytes, op.options.Pos)
    return table


def _padding(padding: int, stride: int, dilation: int, size: int, kernel: int, out: int) -> int:
    """TFLite's `ComputePaddingHeightWidth` for one dimension."""
    if padding != tflite.Padding.SAME:
        return 0
    effective = (kernel - 1) * dilation + 1
    return max((out - 1) * stride + effective - size, 0) // 2


def _int4_filter(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    weights = _t(graph, op, 1)
    if weights.dtype != "INT4":
        return []
    return [(prod(weights.shape), "unpacked int4 filter")]


# -- reference kernels --------------------------------------------------------------------


def _svdf(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    batch = _t(graph, op, 0).shape[0]
    filters = _t(graph, op, 1).shape[0]
    rank = _options(op, tflite.SVDFOptions).Rank()
    if _t(graph, op, 0).dtype == "FLOAT32":
        return [(batch * filters * 4, "svdf state products")]
    units = filters // rank
    return [(batch * filters * 4, "svdf state products"), (batch * units * 4, "svdf output sums")]


def _lstm(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    options = _options(op, tflite.UnidirectionalSequenceLSTMOptions)
    shape = _t(graph, op, 0).shape
    batch = shape[1] if options.TimeMajor() else shape[0]
    hidden, cell = _t(graph, op, 18), _t(graph, op, 19)
    size = batch * hidden.shape[1] * (2 if cell.dtype == "INT16" else 4)
    return [(size, "lstm gate")] * 4


def _transpose_conv(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data = _t(graph, op, 2)
    count = prod(_out(graph, op).shape)
    if data.dtype == "INT8":
        return [(count * 4, "transpose conv int32 sums")]
    if data.dtype == "INT16":
        asks = [(count * 8, "transpose conv int64 sums")]
        if len(op.inputs) > 3 and op.inputs[3] >= 0 and _t(graph, op, 3).dtype == "INT16":
            asks.insert(0, (prod(_t(graph, op, 3).shape) * 8, "transpose conv int64 bias"))
        return asks
    return []


def _signal_rfft(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    """The signal library's SignalRfft: fft_length elements of its input's type."""
    data = _t(graph, op, 0)
    length = custom_int(graph, op, "fft_length")
    return [(length * ELEMENT_BYTES.get(data.dtype, 4), "rfft work area")]


def custom_int(graph: Graph, op: Operator, name: str) -> int:
    """An integer of a custom operator's options (a flexbuffer map), as its kernel reads
    it; a model without it, or with damaged options, is refused naming the file."""
    try:
        found = flexbuffers.Loads(op.custom) if op.custom else {}
    except (IndexError, ValueError, TypeError, struct.error) as exc:
        message = f"{op.label} has damaged custom options: {exc}"
        raise InputError(message, key=graph.source) from exc
    if not isinstance(found, dict):
        raise InputError(f"{op.label} has damaged custom options: not a map", key=graph.source)
    value = found.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(
            f"{op.label} lacks the custom option {name!r} its kernel reads", key=graph.source
        )
    return value


def _ethos_u(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    """TFLite Micro's ethos-u kernel: a base address (uint64) and a size (size_t, 4 bytes
    on the target) per input and output of the operator, for the NPU driver."""
    count = len(op.inputs) + len(op.outputs)
    return [(count * 8, "npu base addresses"), (count * 4, "npu base address sizes")]


_REFERENCE: dict[str, Rule] = {
    "SignalRfft": _signal_rfft,
    "ethos-u": _ethos_u,
    "CONV_2D": _int4_filter,
    "DEPTHWISE_CONV_2D": _int4_filter,
    "FULLY_CONNECTED": _int4_filter,
    "SVDF": _svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
    "TRANSPOSE_CONV": _transpose_conv,
}


# -- CMSIS-NN kernels ---------------------------------------------------------------------


def _im2col_s8(columns: int, ext: str) -> int:
    """`arm_convolve_s8_get_buffer_size`: two im2col columns of int16 (MVE: int8, padded)."""
    if ext == "mve":
        return 4 * -(-columns // 16) * 16
    return 2 * (-(-columns // 4) * 4) * 2


def _cmsis_conv(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data, weights, out = _t(graph, op, 0), _t(graph, op, 1), _out(graph, op)
    options = _options(op, tflite.Conv2DOptions)
    _, in_h, in_w, in_c = data.shape
    _, f_h, f_w, f_c = weights.shape
    out_w = out.shape[2]
    stride_w, stride_h = options.StrideW(), options.StrideH()
    dil_w, dil_h = options.DilationWFactor(), options.DilationHFactor()
    pad_h = _padding(options.Padding(), stride_h, dil_h, in_h, f_h, out.shape[1])
    pad_w = _padding(options.Padding(), stride_w, dil_w, in_w, f_w, out_w)
    columns = in_c * f_h * f_w
    if data.dtype == "INT16":
        if ext == "mve":
            return [(4 * -(-columns // 8) * 8 * 2, "im2col")]
        return [(2 * columns * 2, "im2col")]
    if data.dtype != "INT8" or weights.dtype not in ("INT8", "INT4"):
        return []
    one_by_one = (pad_w, pad_h, f_w, f_h, dil_w, dil_h) == (0, 0, 1, 1, 1, 1) and in_c == f_c
    if one_by_one:
        return []  # GCC builds of the 1x1 kernels ask for none
    one_by_n = in_h == 1 and dil_w == 1 and f_h == 1 and (stride_w * in_c) % 4 == 0 and in_c == f_c
    if one_by_n and ext == "mve" and weights.dtype == "INT8":
        return [(_one_by_n_mve(pad_w, stride_w, in_w, in_c, f_w, out_w, columns), "1xN im2col")]
    if weights.dtype == "INT4":
        return [(columns * 4 if ext != "mve" else 4 * -(-columns // 16) * 16, "im2col")]
    return [(_im2col_s8(columns, ext), "im2col")]


def _one_by_n_mve(
    pad_x: int, stride_x: int, in_x: int, in_c: int, kernel_x: int, out_x: int, columns: int
) -> int:
    total_pad = (out_x - 1) * stride_x + kernel_x - in_x
    asym = total_pad % 2
    right = max(1, (pad_x + asym + stride_x - 1) // stride_x) if pad_x + asym else 0
    left = max(1, (pad_x + stride_x - 1) // stride_x) if pad_x else 0
    if right + max(out_x - (right + left), 0) + left != out_x:
        return _im2col_s8(columns, "mve")
    pad_left = pad_x * in_c
    pad_right = right * in_c if asym else pad_left
    elems_left = kernel_x * in_c
    return max(elems_left + pad_left, elems_left - in_c + pad_right)


def _cmsis_depthwise(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data, weights, out = _t(graph, op, 0), _t(graph, op, 1), _out(graph, op)
    if data.dtype != "INT8":
        return _cmsis_depthwise_s16(graph, op, ext) if data.dtype == "INT16" else []
    options = _options(op, tflite.DepthwiseConv2DOptions)
    batch, in_h, in_w, in_c = data.shape
    _, f_h, f_w, _ = weights.shape
    out_c = out.shape[3]
    dilated = options.DilationWFactor() != 1 or options.DilationHFactor() != 1
    pad_h = _padding(
        options.Padding(), options.StrideH(), options.DilationHFactor(), in_h, f_h, out.shape[1]
    )
    pad_w = _padding(
        options.Padding(), options.StrideW(), options.DilationWFactor(), in_w, f_w, out.shape[2]
    )
    if ext == "mve" and in_c == 1 and out_c > 1:
        conv = _im2col_s8(f_h * f_w, "mve") if (pad_w, pad_h, f_w, f_h) != (0, 0, 1, 1) else 0
        return [(conv + out_c * f_h * f_w, "depthwise as convolution, transposed filter")]
    if in_c != out_c or batch != 1 or dilated:
        return []
    if ext == "mve":
        return [(4 * 124 * f_w * f_h, "depthwise input block")]
    if ext == "dsp" and not (f_w == 3 and f_h == 3 and pad_h <= 1 and pad_w <= 1):
        return [(in_c * f_w * f_h * 2, "depthwise im2col")]
    return []


def _cmsis_depthwise_s16(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data, weights = _t(graph, op, 0), _t(graph, op, 1)
    options = _options(op, tflite.DepthwiseConv2DOptions)
    _, _, _, in_c = data.shape
    _, f_h, f_w, _ = weights.shape
    fast = (
        options.DepthMultiplier() == 1
        and options.DilationWFactor() == 1
        and options.DilationHFactor() == 1
        and f_w * f_h < 512
    )
    if not fast or ext == "none":
        return []
    if ext == "mve":
        return [(4 * in_c * f_w * f_h * 2 + 8, "depthwise im2col")]
    return [(in_c * f_w * f_h * 2, "depthwise im2col")]


def _cmsis_fully_connected(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data, weights, out = _t(graph, op, 0), _t(graph, op, 1), _out(graph, op)
    if data.dtype != "INT8" or weights.dtype == "INT4":
        return []
    accum_depth = weights.shape[-1]
    if len(out.shape) > 2 and accum_depth % 4 == 0:
        return [(out.shape[-1] * 8, "per-channel quantisation for the 1x1 path")]
    return []  # MVE's kernel sums are persistent in a speed build


def _cmsis_average_pool(graph: Graph, op: Operator, ext: str) -> list[tuple[int, str]]:
    data, out = _t(graph, op, 0), _out(graph, op)
    if data.dtype not in ("INT8", "INT16") or ext != "dsp":
        return []
    return [(out.shape[3] * 4, "int32 sums per channel")]


_CMSIS_NN: dict[str, Rule] = {
    "SignalRfft": _signal_rfft,
    "ethos-u": _ethos_u,
    "CONV_2D": _cmsis_conv,
    "DEPTHWISE_CONV_2D": _cmsis_depthwise,
    "FULLY_CONNECTED": _cmsis_fully_connected,
    "AVERAGE_POOL_2D": _cmsis_average_pool,
    "SVDF": _svdf,
}
