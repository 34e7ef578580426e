"""TFLite import: models the tests build with the flatbuffers builder, the sine model of
the tflite-micro wheel, and the MLPerf Tiny models in ../shared (skipped when absent).

On the default board the activations must need no more workspace than TFLite Micro's own
planner, and reach the lower bound on the first four MLPerf Tiny models."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import flatbuffers
import pytest
import tflite

from memplace import workflow
from memplace.board import Board
from memplace.cli import main
from memplace.errors import InputError
from memplace.importers import import_model, import_to_file, load_workload, read_model
from memplace.importers.tflite import parse_tflite, workload_name
from memplace.planner import plan

REPO = Path(__file__).resolve().parent.parent
MLPERF = REPO.parent / "shared" / "models" / "mlperf-tiny"

INT8 = tflite.TensorType.INT8
INT32 = tflite.TensorType.INT32
CONV_2D = tflite.BuiltinOperator.CONV_2D
ADD = tflite.BuiltinOperator.ADD
RESHAPE = tflite.BuiltinOperator.RESHAPE
CUSTOM = tflite.BuiltinOperator.CUSTOM


@dataclass
class T:
    """A tensor of a model to build: constant when it has `data` (or shares `same_as`'s)."""

    name: str
    shape: Sequence[int]
    dtype: int = INT8
    data: bytes | None = None
    same_as: int | None = None
    variable: bool = False


@dataclass
class Op:
    code: int
    inputs: Sequence[int]
    outputs: Sequence[int]
    custom: str | None = None


def build_tflite(
    tensors: Sequence[T],
    operators: Sequence[Op],
    inputs: Sequence[int],
    outputs: Sequence[int],
    subgraphs: int = 1,
) -> bytes:
    """A .tflite flatbuffer, written with the schema's generated builder functions."""
    b = flatbuffers.Builder(1024)

    def offsets(start: object, items: Sequence[int]) -> int:
        start(b, len(items))  # type: ignore[operator]
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return int(b.EndVector())

    def ints(items: Sequence[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependInt32(item)
        return int(b.EndVector())

    # Buffer 0 is the empty sentinel; every tensor gets a buffer of its own unless it
    # shares one, as converters write them.
    buffer_of: list[int] = []
    contents: list[bytes] = [b""]
    for tensor in tensors:
        if tensor.same_as is not None:
            buffer_of.append(buffer_of[tensor.same_as])
        else:
            buffer_of.append(len(contents))
            contents.append(tensor.data or b"")
    buffers = []
    for data in contents:
        vector = b.CreateByteVector(data) if data else None
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffers.append(tflite.BufferEnd(b))

    built_tensors = []
    for tensor, buffer in zip(tensors, buffer_of, strict=True):
        name = b.CreateString(tensor.name)
        shape = ints(tensor.shape)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, tensor.dtype)
        tflite.TensorAddBuffer(b, buffer)
        tflite.TensorAddName(b, name)
        tflite.TensorAddIsVariable(b, tensor.variable)
        built_tensors.append(tflite.TensorEnd(b))

    codes: list[tuple[int, str | None]] = []
    for op in operators:
        if (op.code, op.custom) not in codes:
            codes.append((op.code, op.custom))
    built_ops = []
    for op in operators:
        op_inputs, op_outputs = ints(op.inputs), ints(op.outputs)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index((op.code, op.custom)))
        tflite.OperatorAddInputs(b, op_inputs)
        tflite.OperatorAddOutputs(b, op_outputs)
        built_ops.append(tflite.OperatorEnd(b))

    graphs = []
    for _ in range(subgraphs):
        graph_tensors = offsets(tflite.SubGraphStartTensorsVector, built_tensors)
        graph_inputs, graph_outputs = ints(inputs), ints(outputs)
        graph_ops = offsets(tflite.SubGraphStartOperatorsVector, built_ops)
        graph_name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, graph_tensors)
        tflite.SubGraphAddInputs(b, graph_inputs)
        tflite.SubGraphAddOutputs(b, graph_outputs)
        tflite.SubGraphAddOperators(b, graph_ops)
        tflite.SubGraphAddName(b, graph_name)
        graphs.append(tflite.SubGraphEnd(b))

    built_codes = []
    for code, custom in codes:
        custom_name = b.CreateString(custom) if custom else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        if custom_name is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_name)
        built_codes.append(tflite.OperatorCodeEnd(b))

    model_codes = offsets(tflite.ModelStartOperatorCodesVector, built_codes)
    model_graphs = offsets(tflite.ModelStartSubgraphsVector, graphs)
    model_buffers = offsets(tflite.ModelStartBuffersVector, buffers)
    description = b.CreateString("built by memplace's tests")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, model_codes)
    tflite.ModelAddSubgraphs(b, model_graphs)
    tflite.ModelAddBuffers(b, model_buffers)
    tflite.ModelAddDescription(b, description)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


WEIGHTS = bytes(range(72))


def small_model() -> bytes:
    """conv -> add(with the input) -> reshape, with a weight two tensors share, a bias, a
    side output written by the first operator, a variable tensor and an optional input."""
    tensors = [
        T("serving_default_input:0", [1, 4, 4, 2]),  # 0: graph input, 32 bytes
        T("model/conv/Conv2D", [4, 3, 3, 2], data=WEIGHTS),  # 1: weight
        T("model/conv/BiasAdd/ReadVariableOp/resource", [4], INT32, data=bytes(16)),  # 2
        T("model/conv/Relu;model/conv/BiasAdd", [1, 4, 4, 4]),  # 3: 64 bytes
        T("model/add/add", [1, 4, 4, 4]),  # 4: 64 bytes
        T("model/flatten/Const", [2], INT32, data=bytes([1, 0, 0, 0, 64, 0, 0, 0])),  # 5
        T("Identity", [1, 64]),  # 6: graph output
        T("model/conv/Conv2D_again", [4, 3, 3, 2], same_as=1),  # 7: shares the weight
        T("side", [1, 2]),  # 8: written by op 0, a graph output
        T("state", [1, 16], variable=True),  # 9: variable
        T("empty", [0, 4]),  # 10: takes no bytes
    ]
    operators = [
        Op(CONV_2D, [0, 1, 2], [3, 8]),
        Op(ADD, [3, 0, -1, 9], [4]),  # -1: an optional input left out
        Op(RESHAPE, [4, 5, 7, 10], [6]),
    ]
    return build_tflite(tensors, operators, inputs=[0], outputs=[6, 8])


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "small model.tflite"
    path.write_bytes(small_model())
    return path


def test_steps_buffers_and_lifetimes(model_file: Path) -> None:
    model = read_model(model_file)
    assert model.name == "small_model"
    assert model.steps == ("conv_2d_0", "add_1", "reshape_2")
    lives = {a.tensor: (a.name, a.size, a.first, a.last) for a in model.activations}
    assert lives == {
        0: ("t0_serving_default_input_0", 32, 0, 1),  # graph input: from the first operator
        3: ("t3_conv_Relu", 64, 0, 1),
        4: ("t4_add_add", 64, 1, 2),
        6: ("t6_Identity", 64, 2, 2),
        8: ("t8_side", 2, 0, 2),  # graph output: to the last operator
        9: ("t9_state", 16, 0, 2),  # variable: the whole timeline
    }


def test_weights_carry_their_bytes_once_per_buffer(model_file: Path) -> None:
    model = read_model(model_file)
    weights = {w.name: (w.tensors, w.data) for w in model.weights}
    assert weights == {
        "t1_conv_Conv2D": ((1, 7), WEIGHTS),
        "t2_conv_BiasAdd": ((2,), bytes(16)),
        "t5_flatten_Const": ((5,), bytes([1, 0, 0, 0, 64, 0, 0, 0])),
    }


def test_a_model_is_a_workload(model_file: Path, board: Board) -> None:
    workload = load_workload(model_file)
    assert workload == import_model(model_file)
    assert workload.buffer("t1_conv_Conv2D").data == WEIGHTS
    assert workload.buffer("t1_conv_Conv2D").kind == "constant"
    assert {b.align for b in workload.buffers} == {16}
    result = plan(board, workload)
    assert result.placement("t3_conv_Relu").pool == "dtcm_ws"
    assert result.placement("t1_conv_Conv2D").pool == "itcm_const"
    assert result.placement("t1_conv_Conv2D").contents == WEIGHTS


def test_import_writes_the_workload_and_its_weights(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.yaml"
    done = import_to_file(model_file, out)
    assert done.data_dir == tmp_path / "w.data"
    assert sorted(p.name for p in done.data_dir.iterdir()) == [
        "t1_conv_Conv2D.bin",
        "t2_conv_BiasAdd.bin",
        "t5_flatten_Const.bin",
    ]
    text = out.read_text()
    assert text.startswith("# Imported by memplace from small model.tflite: 3 operators,")
    assert "  - {name: t0_serving_default_input_0, size: 32, live: [conv_2d_0, add_1]}" in text
    assert "data_file: w.data/t1_conv_Conv2D.bin}  # tensor 1 model/conv/Conv2D" in text
    from_file = load_workload(out)
    in_memory = import_model(model_file)
    assert (from_file.steps, from_file.buffers) == (in_memory.steps, in_memory.buffers)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_import_refuses_to_overwrite_without_force(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "w.yaml"
    import_to_file(model_file, out)
    (out.parent / "w.data" / "t2_conv_BiasAdd.bin").write_bytes(b"edited")
    with pytest.raises(InputError, match=r"--out: .*w.yaml exists; pass --force to replace it"):
        import_to_file(model_file, out)
    out.unlink()
    with pytest.raises(InputError, match=r"w.data exists; pass --force"):
        import_to_file(model_file, out)
    import_to_file(model_file, out, force=True)
    assert (out.parent / "w.data" / "t2_conv_BiasAdd.bin").read_bytes() == bytes(16)


def test_a_failed_write_leaves_nothing(
    model_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out" / "w.yaml"
    out.parent.mkdir()
    calls = {"n": 0}
    write_bytes = Path.write_bytes

    def failing(self: Path, data: bytes) -> int:  # type: ignore[override]
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    with pytest.raises(InputError, match=r"--out: cannot write .*w.yaml: No space left on device"):
        import_to_file(model_file, out)
    assert list(out.parent.iterdir()) == []


def test_a_failed_replace_keeps_the_old_files(
    model_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "w.yaml"
    import_to_file(model_file, out)
    out.write_text(out.read_text() + "# mine\n")
    old_weights = sorted(p.name for p in (tmp_path / "w.data").iterdir())

    def failing(src: object, dst: object) -> None:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(InputError, match=r"Permission denied"):
        import_to_file(model_file, out, force=True)
    assert out.read_text().endswith("# mine\n")
    assert sorted(p.name for p in (tmp_path / "w.data").iterdir()) == old_weights
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small model.tflite", "w.data", "w.yaml"]


def _model_error(data: bytes) -> str:
    with pytest.raises(InputError) as caught:
        parse_tflite(data, "m.tflite", "m")
    return str(caught.value)


def test_not_a_tflite_file() -> None:
    assert _model_error(b"memplace: workload/v1\n") == (
        "m.tflite: not a TFLite model (a .tflite flatbuffer carries 'TFL3' at byte 4)"
    )


def test_a_damaged_model() -> None:
    data = small_model()
    assert _model_error(data[:200]).startswith("m.tflite: the model is damaged: ")


def test_several_subgraphs() -> None:
    data = build_tflite([T("a", [4]), T("b", [4])], [Op(ADD, [0, 0], [1])], [0], [1], 2)
    assert "the model has 2 subgraphs; memplace imports models with one" in _model_error(data)


def test_no_operators() -> None:
    data = build_tflite([T("a", [4])], [], [0], [0])
    assert _model_error(data) == "m.tflite: the model has no operators"


def test_unknown_dimension() -> None:
    data = build_tflite([T("a", [-1, 4]), T("b", [4])], [Op(ADD, [0], [1])], [0], [1])
    assert _model_error(data) == (
        "m.tflite: tensor 0 (a) has an unknown dimension [-1, 4]; "
        "memplace places tensors of fixed shape, as TFLite Micro plans them"
    )


def test_a_string_tensor() -> None:
    string = tflite.TensorType.STRING
    data = build_tflite([T("s", [4], string), T("b", [4])], [Op(ADD, [0], [1])], [0], [1])
    assert "tensor 0 (s) is of type STRING, which has no fixed size" in _model_error(data)


def test_custom_operators_and_int4() -> None:
    tensors = [T("a", [5], tflite.TensorType.INT4), T("b", [3], tflite.TensorType.FLOAT32)]
    data = build_tflite(tensors, [Op(CUSTOM, [0], [1], custom="Ethos-U")], [0], [1])
    model = parse_tflite(data, "m.tflite", "m")
    assert model.steps == ("ethos_u_0",)
    assert [(a.name, a.size) for a in model.activations] == [("t0_a", 3), ("t1_b", 12)]


def test_workload_names_are_c_identifiers() -> None:
    assert workload_name(Path("models/2kws-v1.2.tflite")) == "m_2kws_v1_2"
    assert workload_name(Path("---.tflite")) == "model"


def test_model_files_that_are_not_there(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"MODEL: no model file at"):
        read_model(tmp_path / "none.tflite")
    with pytest.raises(InputError, match=r"memplace imports .tflite models, not '.onnx'"):
        read_model(tmp_path / "m.onnx")


def test_unreadable_model(tmp_path: Path) -> None:
    folder = tmp_path / "dir.tflite"
    folder.mkdir()
    with pytest.raises(InputError, match=r"no model file at"):
        read_model(folder)


def test_cli_import_and_plan_a_model(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.yaml"
    assert main(["import", str(model_file), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 operators, 6 activation buffers, 3 weights (96 bytes)" in printed
    assert f"wrote {out} and {tmp_path / 'w.data'}/" in printed
    assert main(["plan", "qemu-mps3-an547", str(model_file)]) == 0
    assert "dtcm_ws" in capsys.readouterr().out
    assert main(["plan", "qemu-mps3-an547", str(out), "--explain"]) == 0
    assert "t3_conv_Relu: scope global, users main" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "{model}", "--out", "{tmp}/w.yaml"], "w.yaml exists; pass --force"),
        (["import", "{tmp}/none.tflite", "--out", "{tmp}/x.yaml"], "MODEL: no model file"),
        (["import", "{model}", "--out", "{tmp}/no/x.yaml"], "--out: no folder"),
        (["import", "{model}", "--out", "{tmp}"], "is a folder; name the workload file"),
        (["import", "{tmp}/w.yaml", "--out", "{tmp}/y.yaml"], "imports .tflite models, not"),
        (["import", "{model}"], "the following arguments are required: --out"),
        (["import", "{tmp}/bad.tflite", "--out", "{tmp}/z.yaml"], "not a TFLite model"),
        (["plan", "qemu-mps3-an547", "{tmp}/bad.tflite"], "bad.tflite: not a TFLite model"),
    ],
)
def test_cli_import_errors(
    model_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    import_to_file(model_file, tmp_path / "w.yaml")
    (tmp_path / "bad.tflite").write_bytes(b"\x00" * 64)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    argv = [a.format(model=model_file, tmp=tmp_path) for a in args]
    assert main(argv) == 2
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "an error wrote files"


def test_the_sine_model_of_tflite_micro(board: Board) -> None:
    spec = importlib.util.find_spec("tflite_micro")
    if spec is None or spec.submodule_search_locations is None:
        pytest.skip("the tflite-micro package is not installed")
    path = (
        Path(next(iter(spec.submodule_search_locations))) / "python/tflite_micro/sine_float.tflite"
    )
    if not path.is_file():
        pytest.skip("this tflite-micro carries no sine model")
    model = read_model(path)
    assert model.steps == ("fully_connected_0", "fully_connected_1", "fully_connected_2")
    assert [a.dtype for a in model.activations] == ["FLOAT32"] * 4
    assert len(model.weights) == 6
    result = plan(board, model.workload())
    assert result.pool("dtcm_ws").used == result.pool("dtcm_ws").lower_bound == 128


# What TFLite Micro's own greedy planner needs for the activations (../shared/models).
TFLM = {
    "ad01_int8": 768,
    "kws_ref_model": 16000,
    "pretrainedResnet_quant": 49152,
    "str_ww_ref_model": 6656,
    "vww_96_int8": 73728,
}
REACH_LOWER_BOUND = {"ad01_int8", "kws_ref_model", "pretrainedResnet_quant", "str_ww_ref_model"}


@pytest.mark.skipif(not MLPERF.is_dir(), reason="../shared/models/mlperf-tiny is absent")
@pytest.mark.parametrize("name", sorted(TFLM))
def test_mlperf_tiny_needs_no_more_than_tflite_micro(board: Board, name: str) -> None:
    model = read_model(MLPERF / f"{name}.tflite")
    result = plan(board, model.workload())
    pools = {result.placement(a.name).pool for a in model.activations}
    assert pools == {"dtcm_ws"}, "the activations share the fastest workspace pool"
    arena = result.pool("dtcm_ws")
    assert arena.used <= TFLM[name]
    if name in REACH_LOWER_BOUND:
        assert arena.used == arena.lower_bound
    constants = [result.placement(w.name) for w in model.weights]
    assert {p.pool for p in constants} <= {"itcm_const", "ddr_const"}
    assert all(p.contents == w.data for p, w in zip(constants, model.weights, strict=True))


def test_import_and_tflm_read_one_graph_with_one_lifetime_rule(model_file: Path) -> None:
    """The import's buffers are the tensors TFLite Micro's planner places, over the scopes
    it gives them (scope 0, the inputs', counted as the first operator's step); variables,
    which the runtime keeps apart, live over the whole run."""
    model = read_model(model_file)
    graph = model.graph
    assert graph is not None
    end = len(model.steps) - 1
    for act in model.activations:
        tensor = graph.tensors[act.tensor]
        assert act.size == tensor.bytes
        if tensor.variable:
            assert (act.first, act.last) == (0, end)
        else:
            assert (act.first, act.last) == (max(tensor.first - 1, 0), max(tensor.last - 1, 0))
    planned = {t.index for t in graph.tensors if t.in_arena and t.last >= 0}
    assert {a.tensor for a in model.activations if not graph.tensors[a.tensor].variable} == planned


@pytest.mark.skipif(not MLPERF.is_dir(), reason="../shared/models/mlperf-tiny is absent")
def test_plan_and_tflm_agree_on_the_arena_of_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memplace plan MODEL` and `memplace tflm MODEL` read the model through one reader: the
    activations of the keyword spotter take the same bytes in both (it asks for no kernel
    scratch)."""
    kws = MLPERF / "kws_ref_model.tflite"
    assert main(["plan", "qemu-mps3-an547", str(kws), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    used = {pool["name"]: pool["used"] for pool in planned["pools"]}
    out = tmp_path / "planned.tflite"
    args = ["--board", "qemu-mps3-an547", "--pool", "dtcm_ws", "--out", str(out), "--json"]
    assert main(["tflm", str(kws), *args]) == 0
    arena = json.loads(capsys.readouterr().out)
    assert used["dtcm_ws"] == arena["activations"] == arena["tflm_activations"] == 16000


@pytest.mark.qemu
def test_a_model_runs_under_qemu(model_file: Path, tmp_path: Path, board: Board) -> None:
    """The weights' real bytes reach the image: the firmware checks their checksums."""
    request = workflow.ProjectRequest(board, load_workload(model_file), tmp_path / "project")
    result = workflow.check(request)
    assert result.run is not None and result.run.passed
    assert result.report.ok, result.report.table()
