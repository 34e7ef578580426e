"""`memplace tflm` on models of several subgraphs (IF, WHILE, CALL_ONCE), run on the
`tflite-micro` host runtime.

The models are written here with the flatbuffers builder: a main subgraph whose IF runs one
of two branch subgraphs, one whose WHILE runs a cond and a body subgraph after a CALL_ONCE
of an init subgraph, and an IF whose branch holds a variable tensor. Each is planned by
the command, as a user runs it, and the planned model is checked against the runtime: the
same outputs, memplace's activation area, a printed arena near the smallest that works.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import pytest
import tflite

from conftest import cli_error
from memplace.importers.tflite import read_graph
from memplace.tflm.metadata import with_offline_plan
from test_tflm import BOARD, TIME_LIMIT, _accepts, _json, _offline, _smallest_arena, _usage

micro = pytest.importorskip("tflite_micro", reason="the tflite-micro package is not installed")

F32 = tflite.TensorType.FLOAT32
BOOL = tflite.TensorType.BOOL
B = tflite.BuiltinOperator
UNIT = 32  # floats


@dataclass
class T:
    """A tensor; constant when it has `data`."""

    name: str
    shape: Sequence[int]
    dtype: int = F32
    data: bytes | None = None
    variable: bool = False
    scale: float = 0.0  # int8: quantised with this scale and zero point 0


@dataclass
class Op:
    """An operator; `calls` names the subgraphs of IF (then, else), WHILE (cond, body) or
    CALL_ONCE (init); `pool` a pooling's window and stride; `shared` a VAR_HANDLE's
    resource variable."""

    code: int
    inputs: Sequence[int]
    outputs: Sequence[int]
    calls: Sequence[int] = ()
    pool: int = 0
    shared: str = ""


@dataclass
class Sub:
    tensors: list[T]
    ops: list[Op]
    inputs: list[int]
    outputs: list[int] = field(default_factory=list)


_CALLS: dict[int, tuple[int, Callable[..., Any], Sequence[Callable[..., Any]], Callable[..., Any]]]
_CALLS = {
    B.IF: (
        tflite.BuiltinOptions.IfOptions,
        tflite.IfOptionsStart,
        (tflite.IfOptionsAddThenSubgraphIndex, tflite.IfOptionsAddElseSubgraphIndex),
        tflite.IfOptionsEnd,
    ),
    B.WHILE: (
        tflite.BuiltinOptions.WhileOptions,
        tflite.WhileOptionsStart,
        (tflite.WhileOptionsAddCondSubgraphIndex, tflite.WhileOptionsAddBodySubgraphIndex),
        tflite.WhileOptionsEnd,
    ),
    B.CALL_ONCE: (
        tflite.BuiltinOptions.CallOnceOptions,
        tflite.CallOnceOptionsStart,
        (tflite.CallOnceOptionsAddInitSubgraphIndex,),
        tflite.CallOnceOptionsEnd,
    ),
}


def build(subgraphs: Sequence[Sub]) -> bytes:
    """A .tflite flatbuffer of these subgraphs (subgraph 0 is the main one); every tensor
    has a buffer of its own, constants' data 16-byte aligned as converters write it."""
    b = flatbuffers.Builder(4096)

    def tables(items: Sequence[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return int(b.EndVector())

    def ints(items: Sequence[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependInt32(item)
        return int(b.EndVector())

    contents = [b""] + [t.data or b"" for sub in subgraphs for t in sub.tensors]
    buffers = []
    for data in contents:
        vector = None
        if data:
            b.StartVector(1, len(data), 16)
            b.head = b.head - len(data)
            b.Bytes[b.head : b.head + len(data)] = data
            vector = b.EndVector()
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffers.append(tflite.BufferEnd(b))
    codes = list(dict.fromkeys(op.code for sub in subgraphs for op in sub.ops))
    graphs, buffer = [], 1
    for k, sub in enumerate(subgraphs):
        tensors = []
        for t in sub.tensors:
            name, shape = b.CreateString(t.name), ints(t.shape)
            quantization = _quantization(b, t.scale) if t.scale else None
            tflite.TensorStart(b)
            if quantization is not None:
                tflite.TensorAddQuantization(b, quantization)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, t.dtype)
            tflite.TensorAddBuffer(b, buffer)
            tflite.TensorAddName(b, name)
            tflite.TensorAddIsVariable(b, t.variable)
            tensors.append(tflite.TensorEnd(b))
            buffer += 1
        ops = []
        for op in sub.ops:
            options = None
            if op.code in _CALLS:
                kind, start, fields, end = _CALLS[op.code]
                start(b)
                for add, called in zip(fields, op.calls, strict=True):
                    add(b, called)
                options = end(b)
            elif op.pool:
                kind = tflite.BuiltinOptions.Pool2DOptions
                tflite.Pool2DOptionsStart(b)
                tflite.Pool2DOptionsAddPadding(b, tflite.Padding.VALID)
                for add in (
                    tflite.Pool2DOptionsAddStrideW,
                    tflite.Pool2DOptionsAddStrideH,
                    tflite.Pool2DOptionsAddFilterWidth,
                    tflite.Pool2DOptionsAddFilterHeight,
                ):
                    add(b, op.pool)
                options = tflite.Pool2DOptionsEnd(b)
            elif op.shared:
                kind = tflite.BuiltinOptions.VarHandleOptions
                shared = b.CreateString(op.shared)
                tflite.VarHandleOptionsStart(b)
                tflite.VarHandleOptionsAddSharedName(b, shared)
                options = tflite.VarHandleOptionsEnd(b)
            inputs, outputs = ints(op.inputs), ints(op.outputs)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, codes.index(op.code))
            tflite.OperatorAddInputs(b, inputs)
            tflite.OperatorAddOutputs(b, outputs)
            if options is not None:
                tflite.OperatorAddBuiltinOptionsType(b, kind)
                tflite.OperatorAddBuiltinOptions(b, options)
            ops.append(tflite.OperatorEnd(b))
        vectors = (tables(tensors), ints(sub.inputs), ints(sub.outputs), tables(ops))
        name = b.CreateString(f"subgraph{k}")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, vectors[0])
        tflite.SubGraphAddInputs(b, vectors[1])
        tflite.SubGraphAddOutputs(b, vectors[2])
        tflite.SubGraphAddOperators(b, vectors[3])
        tflite.SubGraphAddName(b, name)
        graphs.append(tflite.SubGraphEnd(b))
    built_codes = []
    for code in codes:
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        built_codes.append(tflite.OperatorCodeEnd(b))
    model = (tables(built_codes), tables(graphs), tables(buffers))
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, model[0])
    tflite.ModelAddSubgraphs(b, model[1])
    tflite.ModelAddBuffers(b, model[2])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _quantization(b: flatbuffers.Builder, scale: float) -> int:
    tflite.QuantizationParametersStartScaleVector(b, 1)
    b.PrependFloat32(scale)
    scales = b.EndVector()
    tflite.QuantizationParametersStartZeroPointVector(b, 1)
    b.PrependInt64(0)
    zero_points = b.EndVector()
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scales)
    tflite.QuantizationParametersAddZeroPoint(b, zero_points)
    return int(tflite.QuantizationParametersEnd(b))


def _floats(value: float, shape: Sequence[int]) -> bytes:
    return np.full(shape, value, dtype="<f4").tobytes()


def _weights(rows: int, columns: int, seed: int) -> T:
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal((rows, columns)) / np.sqrt(columns)).astype("<f4")
    return T(f"w{seed}", [rows, columns], data=values.tobytes())


def if_model() -> bytes:
    """y = IF(flag, x): the then branch widens x through fully connected layers of 6, 3,
    3, 1, 3, 3, 5 units with a residual ADD, the else branch is one layer; z = y * x.
    TFLite Micro's greedy planner packs the branch's tensors badly."""
    fc = B.FULLY_CONNECTED
    main = Sub(
        [T("x", [1, UNIT]), T("flag", [1], BOOL), T("y", [1, UNIT]), T("z", [1, UNIT])],
        [Op(B.IF, [1, 0], [2], [1, 2]), Op(B.MUL, [2, 0], [3])],
        [0, 1],
        [3],
    )
    widths = [6, 3, 3, 1, 3, 3, 5]
    tensors = [T("in", [1, UNIT])] + [T(f"t{k}", [1, w * UNIT]) for k, w in enumerate(widths)]
    tensors.append(T("out", [1, UNIT]))
    ops = []

    def layer(source: int, target: int, rows: int, columns: int) -> None:
        ops.append(Op(fc, [source, len(tensors), -1], [target]))
        tensors.append(_weights(rows, columns, len(tensors)))

    layer(0, 1, widths[0] * UNIT, UNIT)
    for k in range(1, len(widths)):
        if k == 5:
            ops.append(Op(B.ADD, [k, 3], [k + 1]))  # t4 + t2, the residual
        else:
            layer(k, k + 1, widths[k] * UNIT, widths[k - 1] * UNIT)
    layer(len(widths), len(widths) + 1, UNIT, widths[-1] * UNIT)
    branch = Sub(tensors, ops, [0], [len(widths) + 1])
    other = Sub(
        [T("in", [1, UNIT]), _weights(UNIT, UNIT, 99), T("out", [1, UNIT])],
        [Op(fc, [0, 1, -1], [2])],
        [0],
        [2],
    )
    return build([main, branch, other])


def while_model() -> bytes:
    """CALL_ONCE of an init subgraph, then a = x + x; WHILE (i < 3) { i += 1;
    a = a * 0.5 + a } over (i = 0, a); z = a + x."""
    n = 2 * UNIT
    main = Sub(
        [
            T("x", [1, n]),
            T("i0", [1], data=_floats(0.0, [1])),
            T("a", [1, n]),
            T("i_out", [1]),
            T("a_out", [1, n]),
            T("z", [1, n]),
        ],
        [
            Op(B.CALL_ONCE, [], [], [3]),
            Op(B.ADD, [0, 0], [2]),
            Op(B.WHILE, [1, 2], [3, 4], [1, 2]),
            Op(B.ADD, [4, 0], [5]),
        ],
        [0],
        [5],
    )
    cond = Sub(
        [T("i", [1]), T("a", [1, n]), T("limit", [1], data=_floats(3.0, [1])), T("go", [1], BOOL)],
        [Op(B.LESS, [0, 2], [3])],
        [0, 1],
        [3],
    )
    body = Sub(
        [
            T("i", [1]),
            T("a", [1, n]),
            T("one", [1], data=_floats(1.0, [1])),
            T("i_next", [1]),
            T("half", [1, n], data=_floats(0.5, [1, n])),
            T("t", [1, n]),
            T("a_next", [1, n]),
        ],
        [Op(B.ADD, [0, 2], [3]), Op(B.MUL, [1, 4], [5]), Op(B.ADD, [5, 1], [6])],
        [0, 1],
        [3, 6],
    )
    init = Sub(
        [
            T("c1", [1, 16], data=_floats(1.0, [1, 16])),
            T("c2", [1, 16], data=_floats(2.0, [1, 16])),
            T("s", [1, 16]),
        ],
        [Op(B.ADD, [0, 1], [2])],
        [],
    )
    return build([main, cond, body, init])


def variable_model() -> bytes:
    """y = IF(flag, x) whose then branch adds a variable tensor (state, kept by the
    runtime) at index 0 of its subgraph: out = in * in + state."""
    n = 2 * UNIT
    main = Sub(
        [T("x", [1, n]), T("flag", [1], BOOL), T("a", [1, n]), T("y", [1, n]), T("z", [1, n])],
        [Op(B.ADD, [0, 0], [2]), Op(B.IF, [1, 2], [3], [1, 2]), Op(B.MUL, [3, 0], [4])],
        [0, 1],
        [4],
    )
    branch = Sub(
        [T("state", [1, n], variable=True), T("in", [1, n]), T("m", [1, n]), T("out", [1, n])],
        [Op(B.MUL, [1, 1], [2]), Op(B.ADD, [2, 0], [3])],
        [1],
        [3],
    )
    other = Sub(
        [
            T("in", [1, n]),
            T("c", [1, n], data=_floats(0.25, [1, n])),
            T("p", [1, n]),
            T("q", [1, n]),
            T("out", [1, n]),
        ],
        [Op(B.ADD, [0, 1], [2]), Op(B.MUL, [2, 2], [3]), Op(B.ADD, [3, 0], [4])],
        [0],
        [4],
    )
    return build([main, branch, other])


def twice_model() -> bytes:
    """Two IFs run the same two branches: c = IF(flag, x + x) * x; z = IF(flag, c). A
    fourth subgraph nothing calls holds tensors of no scope."""
    n = 2 * UNIT
    main = Sub(
        [T("x", [1, n]), T("flag", [1], BOOL), *(T(name, [1, n]) for name in "abcz")],
        [
            Op(B.ADD, [0, 0], [2]),
            Op(B.IF, [1, 2], [3], [1, 2]),
            Op(B.MUL, [3, 0], [4]),
            Op(B.IF, [1, 4], [5], [1, 2]),
        ],
        [0, 1],
        [5],
    )
    square = Sub(
        [T("in", [1, n]), T("m", [1, n]), T("out", [1, n])],
        [Op(B.MUL, [0, 0], [1]), Op(B.ADD, [1, 0], [2])],
        [0],
        [2],
    )
    double = Sub([T("in", [1, n]), T("out", [1, n])], [Op(B.ADD, [0, 0], [1])], [0], [1])
    unused = Sub(
        [T("in", [1, 4 * n]), T("p", [1, 4 * n]), T("out", [1, 4 * n])],
        [Op(B.ADD, [0, 0], [1]), Op(B.MUL, [1, 1], [2])],
        [0],
        [2],
    )
    return build([main, square, double, unused])


def pool_model() -> bytes:
    """int8: y = IF(flag, x), the then branch an average pool of 2x2, the else branch a
    max pool; with CMSIS-NN on a DSP core the average pool asks int32 sums per channel."""
    int8 = tflite.TensorType.INT8

    def q(name: str, shape: list[int]) -> T:
        return T(name, shape, int8, scale=0.05)

    main = Sub(
        [q("x", [1, 8, 8, 16]), T("flag", [1], BOOL), q("y", [1, 4, 4, 16])],
        [Op(B.IF, [1, 0], [2], [1, 2])],
        [0, 1],
        [2],
    )
    average = Sub(
        [q("in", [1, 8, 8, 16]), q("out", [1, 4, 4, 16])],
        [Op(B.AVERAGE_POOL_2D, [0], [1], pool=2)],
        [0],
        [1],
    )
    largest = Sub(
        [q("in", [1, 8, 8, 16]), q("out", [1, 4, 4, 16])],
        [Op(B.MAX_POOL_2D, [0], [1], pool=2)],
        [0],
        [1],
    )
    return build([main, average, largest])


MODELS = {
    "if": if_model,
    "while": while_model,
    "variable": variable_model,
    "twice": twice_model,
    "pool": pool_model,
}


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Any]]:
    """Each model written to a file and planned by the command: (model, planned, JSON)."""
    folder = tmp_path_factory.mktemp("subgraphs")
    results = {}
    for name, make in MODELS.items():
        model, out = folder / f"{name}.tflite", folder / f"{name}.planned.tflite"
        model.write_bytes(make())
        argv = ["tflm", str(model), "--board", BOARD, "--out", str(out), "--json"]
        results[name] = (model, out, _json([*argv, "--time-limit", TIME_LIMIT]))
    return results


def _outputs(data: bytes, seed: int) -> list[np.ndarray]:
    """Outputs of four invocations on seeded random inputs, a boolean input (the IF's
    condition) true, false, true, false."""
    interpreter = micro.runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    graph = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    rng = np.random.default_rng(seed)
    results = []
    for run in range(4):
        for k in range(graph.InputsLength()):
            details = interpreter.get_input_details(k)
            if details["dtype"] == np.bool_:
                values = np.full(details["shape"], run % 2 == 0)
            elif details["dtype"] == np.int8:
                values = rng.integers(-128, 127, details["shape"], np.int8, endpoint=True)
            else:
                values = rng.standard_normal(details["shape"]).astype(details["dtype"])
            interpreter.set_input(values, k)
        interpreter.invoke()
        results += [interpreter.get_output(k).copy() for k in range(graph.OutputsLength())]
    return results


@pytest.mark.parametrize("name", sorted(MODELS))
def test_planned_model_runs_bit_identical(name: str, planned: dict[str, Any]) -> None:
    model, out, _ = planned[name]
    for seed in (0, 1):
        want, got = _outputs(model.read_bytes(), seed), _outputs(out.read_bytes(), seed)
        assert len(want) == len(got) == 4
        for a, b in zip(want, got, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    if name in ("if", "twice", "pool"):  # both branches ran, and gave different values
        assert not np.array_equal(want[0], want[1])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_runtime_uses_memplaces_arena(name: str, planned: dict[str, Any]) -> None:
    model, out, result = planned[name]
    head, tail = _usage(out)
    assert head == result["activations"], "the runtime's planned part is memplace's"
    assert _usage(model)[0] == result["tflm_activations"], "the runtime's own walk, restated"
    assert result["lower_bound"] <= result["activations"] <= result["tflm_activations"]
    assert (result["host"]["activations"], result["host"]["persistent"]) == (head, tail)


def test_memplace_packs_the_branch_better(planned: dict[str, Any]) -> None:
    """The IF's then branch: TFLite Micro's greedy planner needs 2064 bytes, memplace's
    plan 1424, its lower bound; the runtime ran it above (same outputs, 1424 used)."""
    _, _, result = planned["if"]
    assert result["tflm_activations"] == 2064
    assert result["activations"] == 1424 and result["optimal"]
    assert result["layout"] == "memplace"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_printed_arena_works_and_is_near_the_smallest(name: str, planned: dict[str, Any]) -> None:
    _, out, result = planned[name]
    data = out.read_bytes()
    smallest = _smallest_arena(data)
    arena = result["host"]["arena"]
    assert _accepts(data, arena)
    assert smallest <= arena <= smallest + 64
    host = result["host"]
    assert host["arena"] <= host["arena_by_rule"] <= host["arena"] + 256
    assert result["arena"] >= result["activations"] + result["persistent"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_offsets_cover_every_subgraphs_tensors(name: str, planned: dict[str, Any]) -> None:
    """One offset per tensor of every subgraph, in the runtime's order; -1 for those the
    runtime keeps (constants, variables) and for the tensors memplace leaves to it."""
    model, out, result = planned[name]
    root = tflite.Model.GetRootAs(model.read_bytes(), 0)
    tensors = [
        root.Subgraphs(k).Tensors(i)
        for k in range(root.SubgraphsLength())
        for i in range(root.Subgraphs(k).TensorsLength())
    ]
    (words,) = _offline(out.read_bytes())
    assert words[:3] == [1, 0, len(tensors)] and len(words) == 3 + len(tensors)
    offsets = words[3:]
    assert all(o == -1 or (o >= 0 and o % 16 == 0) for o in offsets)
    for tensor, offset in zip(tensors, offsets, strict=True):
        if tensor.IsVariable() or root.Buffers(tensor.Buffer()).DataLength():
            assert offset == -1
    assert sum(o >= 0 for o in offsets) == result["planned_tensors"]
    graph = read_graph(model.read_bytes(), str(model))
    spared = 1 if name == "variable" else 0  # see the next test
    placed = sum(t.in_arena and t.first >= 0 for t in graph.tensors)
    assert result["planned_tensors"] == placed - spared


def test_a_variable_of_a_branch_keeps_its_memory(planned: dict[str, Any], tmp_path: Path) -> None:
    """The runtime looks up a variable tensor of subgraph k > 0 by its index within the
    subgraph (here 0, the main subgraph's input x): memplace leaves that offset -1. With
    an offset there the variable gets no memory and the runtime crashes."""
    model, out, _ = planned["variable"]
    (words,) = _offline(out.read_bytes())
    offsets = words[3:]
    assert offsets[0] == -1, "x is left to the runtime"
    assert all(o >= 0 for o in offsets[1:5]), "the main subgraph's other tensors are placed"
    broken = list(offsets)
    broken[0] = 4096
    data = with_offline_plan(model.read_bytes(), broken)
    assert not _runs(data), "the runtime needs that -1"
    assert _runs(out.read_bytes())


def _runs(data: bytes) -> bool:
    """Whether one invocation (then branch) finishes; in a child, as the runtime may crash."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        import faulthandler

        faulthandler.disable()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            interpreter = micro.runtime.Interpreter.from_bytes(data, arena_size=1 << 16)
            interpreter.set_input(np.ones((1, 2 * UNIT), np.float32), 0)
            interpreter.set_input(np.array([True]), 1)
            interpreter.invoke()
        except RuntimeError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# -- models the runtime cannot walk ------------------------------------------------------------


def _stale_plan() -> bytes:
    """A model of three subgraphs whose plan counts only the main subgraph's tensors (the
    runtime refuses it: "Nbr of offline buffer offsets (5) in metadata not equal nbr
    tensors (14)")."""
    data = variable_model()
    main = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    return with_offline_plan(data, [-1] * main.TensorsLength())


def _branch(*ops: Op) -> Sub:
    return Sub([T("in", [1, 4]), T("out", [1, 4])], list(ops), [0], [1])


def _calling(then: int) -> bytes:
    main = Sub(
        [T("x", [1, 4]), T("flag", [1], BOOL), T("y", [1, 4])],
        [Op(B.IF, [1, 0], [2], [then, 2])],
        [0, 1],
        [2],
    )
    flag_branch = Sub(
        [T("in", [1, 4]), T("flag", [1], BOOL), T("out", [1, 4])],
        [Op(B.IF, [1, 0], [2], [1, 2])],
        [0],
        [2],
    )
    return build([main, flag_branch, _branch(Op(B.ADD, [0, 0], [1]))])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_calling(7), "operator 0 (IF) calls subgraph 7; the model has 3"),
        (
            _calling(1),
            "operator 0 of subgraph 1 (IF) calls subgraph 1, which is running: TFLite Micro "
            "plans no recursion",
        ),
        (
            build(
                [
                    Sub([T("x", [1, 4]), T("y", [1, 4])], [Op(B.ADD, [0, 0], [1])], [0], [1]),
                    _branch(Op(B.ADD, [0, 5], [1])),
                ]
            ),
            "operator 0 of subgraph 1 (ADD) names tensor 5; its subgraph has 2",
        ),
        (
            _stale_plan(),
            "its OfflineMemoryAllocation entry holds 5 offsets for 14 tensors (of all "
            "subgraphs), so TFLite Micro refuses the model",
        ),
    ],
)
def test_models_it_refuses(
    data: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(data)
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", tmp_path / "x.tflite")
    assert line.startswith(f"memplace: error: {model}: ") and message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]


def test_cmsis_nn_scratch_of_a_branch_lives_in_its_scope(tmp_path: Path) -> None:
    """Scopes of the pool model: 0 inputs, 1 if_0, 2 enter_sg1, 3 sg1_average_pool_2d_0,
    4 enter_sg2, 5 sg2_max_pool_2d_0. On a Cortex-M4 (DSP) the branch's average pool asks
    16 channels x 4 bytes in scope 3, where x (1024 bytes), flag (16), y (256) and the
    branch's input (1024) and output (256) live: 2576 bytes grow to 2640."""
    model = tmp_path / "pool.tflite"
    model.write_bytes(pool_model())
    base = ["tflm", str(model), "--board", "qemu-mps2-an386", "--out", str(tmp_path / "p.tflite")]
    cmsis = _json([*base, "--kernels", "cmsis-nn", "--json", "--time-limit", TIME_LIMIT])
    assert cmsis["extension"] == "dsp"
    assert cmsis["scratch"] == [{"step": 3, "bytes": 64, "why": "int32 sums per channel"}]
    assert cmsis["activations"] == cmsis["tflm_activations"] == 2640
    reference = _json([*base, "--json", "--time-limit", TIME_LIMIT])
    assert reference["scratch"] == [] and reference["activations"] == 2576


def test_a_plan_that_takes_a_variables_slot_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import memplace.tflm as tflm

    monkeypatch.setattr(tflm, "_spare_variables", lambda graph, offsets: tuple(offsets))
    model, out = tmp_path / "variable.tflite", tmp_path / "planned.tflite"
    model.write_bytes(variable_model())
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", out, code=3)
    assert "memplace's plan breaks TFLite Micro's rules, so no model was written: " in line
    assert "at index 0 would leave variable tensor 5 (state, subgraph 1 tensor 0) without " in line
    assert not out.exists()


def test_without_the_runtime_a_model_of_subgraphs_gets_the_same_target_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: dict[str, Any]
) -> None:
    from memplace.tflm import runtime

    monkeypatch.setattr(runtime, "available", lambda: False)
    model, _, measured = planned["while"]
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(tmp_path / "w.tflite"), "--json"]
    result = _json([*argv, "--time-limit", TIME_LIMIT])
    assert result["host"] is None
    assert result["target"]["basis"] == "from TFLite Micro's allocator rules"
    for key in ("activations", "persistent", "arena"):
        assert result[key] == measured[key]
