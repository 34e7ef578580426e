"""Relax models (`--frontend tvm`, `importers.relax`): what TVM's lowering gives memplace to
plan, and what is refused. The runs under QEMU are in test_relax_run.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

from conftest import cli_error, run_cli
from memplace.board import load_board
from memplace.errors import InputError
from memplace.importers.relax import from_relax, read_relax
from memplace.planner import plan
from relax_models import (
    KWS,
    QUANTIZE,
    SCALE,
    STR_WW,
    WEIGHTS,
    needs_kws,
    needs_models,
    scoped_module,
)

BOARD = "qemu-mps3-an547"


def _saved(tmp_path: Path, scope: str = "global.sram_ws") -> Path:
    """The scoped model as TVMScript, `w` an input."""
    path = tmp_path / "scoped.py"
    path.write_text(scoped_module(scope).script())
    return path


def test_a_module_saved_with_save_json_is_planned_as_its_tvmscript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tvm.ir.save_json` (with the FFI memplace[tvm] installs: 0.1.15 crashes it)."""
    saved = tmp_path / "scoped.json"
    saved.write_text(tvm.ir.save_json(scoped_module()))
    plans = []
    for path in (saved, _saved(tmp_path)):
        code, out, err = run_cli(capsys, "plan", BOARD, path, "--frontend", "tvm", "--json")
        assert code == 0, err
        plans.append({p["name"]: (p["pool"], p["offset"]) for p in json.loads(out)["placements"]})
    assert plans[0] == plans[1]
    assert plans[0]["b"][0] == "sram_ws"
    out = tmp_path / "p"
    code, _, err = run_cli(capsys, "generate", BOARD, saved, "--frontend", "tvm", "--out", out)
    assert code == 0, err
    assert (out / "tvm/scoped_kernels.c").is_file()


def test_float_constants_are_written_exactly_in_the_kernels_c() -> None:
    """TVM's C code generator prints a float constant with 7 significant digits
    (3.740179e-02f, one ulp from the float32 it holds); memplace writes the kernels with
    the exact value, as a C99 hexadecimal float, as TVM's LLVM code generator takes it."""
    model = from_relax(tvm.script.from_source(QUANTIZE), name="q")
    assert f"x[i0] / {float(np.float32(SCALE)).hex()}f" in model.kernels_c
    assert "e-02f" not in model.kernels_c
    assert "-0x1.0000000000000p+7f" in model.kernels_c  # the clip's -128.0


@needs_models
def test_inputs_named_as_the_model_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """str_ww's input is serving_default_input_1:0 in TFLite, serving_default_input_1_0 in C:
    --inputs takes an array of either name."""
    x = np.zeros((1, 30, 1, 40), np.int8)
    for number, name in enumerate(("serving_default_input_1:0", "serving_default_input_1_0")):
        inputs = tmp_path / f"x{number}.npz"
        np.savez(inputs, **{name: x})
        argv = ["generate", BOARD, STR_WW, "--frontend", "tvm", "--inputs", inputs]
        code, _, err = run_cli(capsys, *argv, "--out", tmp_path / f"p{number}")
        assert code == 0, err
    np.savez(tmp_path / "y.npz", y=x)
    argv = ["generate", BOARD, STR_WW, "--frontend", "tvm", "--inputs", tmp_path / "y.npz"]
    error = cli_error(capsys, *argv, "--out", tmp_path / "p")
    assert "holds arrays y; the model's inputs are serving_default_input_1:0" in error


def test_every_tensor_relax_would_allocate_is_a_buffer_live_from_its_first_to_last_kernel() -> None:
    model = from_relax(scoped_module(), {"w": WEIGHTS}, name="scoped")
    assert [step.name for step in model.steps] == ["0:matmul", "1:to_vdevice_b", "2:softmax_llvm"]
    assert [(s.name, s.size, s.scope, s.first, s.last) for s in model.storages] == [
        ("alloc", 32, "global", 0, 1),
        ("b", 32, "global.sram_ws", 1, 2),
    ]
    # The reshape is a view: the softmax reads b's bytes as a tensor of shape (8,).
    softmax = model.steps[2]
    assert (softmax.args[0].buffer, softmax.args[0].shape) == ("b", (8,))
    assert [(t.buffer, t.dtype, t.shape) for t in model.inputs] == [("x", "float32", (2, 8))]
    assert [(t.buffer, t.shape) for t in model.outputs] == [("output", (8,))]
    (weights,) = model.constants
    assert weights.data == WEIGHTS.tobytes()


def test_storage_scopes_become_pools_and_candidate_pools() -> None:
    board = load_board(BOARD)
    pinned = from_relax(scoped_module("global.sram_ws"), {"w": WEIGHTS}).workload(board)
    assert pinned.buffer("b").scope == "global.sram_ws"
    assert pinned.buffer("alloc").scope == "global.workspace"
    assert pinned.buffer("const_0").kind == "constant"
    result = plan(board, pinned)
    assert result.placement("b").pool == "sram_ws"
    assert result.placement("alloc").pool == "dtcm_ws"  # global: the fastest pool
    # A memory's name: any workspace pool in that memory.
    in_ddr = from_relax(scoped_module("global.ddr"), {"w": WEIGHTS}).workload(board)
    assert in_ddr.buffer("b").pools == ("ddr_ws",)
    assert plan(board, in_ddr).placement("b").pool == "ddr_ws"
    # Any other VDevice scope: mapped by the caller to a pool or candidate pools.
    mapped = from_relax(
        scoped_module("fast"), {"w": WEIGHTS}, scopes={"fast": ["sram_ws", "ddr_ws"]}
    ).workload(board)
    assert mapped.buffer("b").pools == ("sram_ws", "ddr_ws")


def test_a_scope_naming_nothing_of_the_board_is_refused() -> None:
    model = from_relax(scoped_module("texture"), {"w": WEIGHTS})
    with pytest.raises(InputError, match="storage scope 'texture', which names no pool or memory"):
        model.workload(load_board(BOARD))


def test_plan_explains_a_saved_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "plan", BOARD, _saved(tmp_path), "--frontend", "tvm", "--explain"
    )
    assert code == 0, err
    assert "b" in out and "sram_ws" in out
    code, out, _ = run_cli(capsys, "plan", BOARD, _saved(tmp_path), "--frontend", "tvm", "--json")
    placements = {p["name"]: p for p in json.loads(out)["placements"]}
    assert placements["b"]["pool"] == "sram_ws"
    assert placements["b"]["first"] == 1 and placements["b"]["last"] == 2


@needs_kws
def test_a_tflite_model_is_lowered_fused_with_its_kernels_workspace_as_dynamic_buffers() -> None:
    model = read_relax(KWS)
    assert len(model.steps) == 24  # 10 of them dequantize weights
    assert all(step.symbol.startswith("__tvm_ffi_") for step in model.steps)
    assert model.tvm_plan_bytes == 130072  # Relax's StaticPlanBlockMemory, on this model
    # The weights stay as the model has them: int8 (and int32 biases).
    assert sum(len(c.data) for c in model.constants) == 28976
    assert model.workspace > 0  # the fused convolutions take workspace from TVM's backend
    workload = model.workload(load_board(BOARD))
    dynamic = [b for b in workload.buffers if b.dynamic]
    assert dynamic and all(b.first == b.last for b in dynamic)
    assert "TVMBackendAllocWorkspace" in model.kernels_c
    assert set(model.headers) >= {
        "tvm/ffi/c_api.h",
        "tvm/runtime/c_backend_api.h",
        "dlpack/dlpack.h",
    }


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"y": np.zeros((2, 8), np.float32)}, "holds arrays y; the model's inputs are x, w"),
        (
            {"x": np.zeros((2, 8), np.int8), "w": WEIGHTS},
            "array x is int8 (2, 8); the input is float32 (2, 8)",
        ),
        (
            {"x": np.zeros((8, 2), np.float32), "w": WEIGHTS},
            "array x is float32 (8, 2); the input is float32 (2, 8)",
        ),
    ],
)
def test_inputs_that_do_not_match_the_model_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arrays: dict[str, Any], message: str
) -> None:
    inputs = tmp_path / "x.npz"
    np.savez(inputs, **arrays)
    out = tmp_path / "p"
    error = cli_error(
        capsys,
        "generate",
        BOARD,
        _saved(tmp_path),
        "--frontend",
        "tvm",
        "--inputs",
        inputs,
        "--out",
        out,
    )
    assert message in error
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "text", "extra", "message"),
    [
        ("m.pb", "x", (), "--frontend tvm reads .json, .py, .tflite, .onnx models, not 'm.pb'"),
        ("m.py", "import os", (), "not a TVMScript module"),
        ("m.json", "{", (), "not a module saved with tvm.ir.save_json"),
        ("m.tflite", "not a flatbuffer", (), "TVM's TFLite frontend cannot read it"),
        (
            "w.yaml",
            "memplace: workload/v1",
            ("--inputs", "x.npz"),
            "--inputs feeds a model read with --frontend tvm",
        ),
    ],
)
def test_models_memplace_cannot_read_are_refused_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    extra: tuple[str, ...],
    message: str,
) -> None:
    path = tmp_path / name
    path.write_text(text)
    frontend = () if extra else ("--frontend", "tvm")
    error = cli_error(capsys, "generate", BOARD, path, *frontend, *extra, "--out", tmp_path / "p")
    assert message in error


@needs_kws
def test_without_tvm_the_command_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tvm", None)  # what `import tvm` finds uninstalled
    error = cli_error(capsys, "plan", BOARD, KWS, "--frontend", "tvm", code=3)
    assert "pip install 'memplace[tvm]'" in error


def test_generating_twice_gives_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _saved(tmp_path)
    for name in ("a", "b"):
        argv = ["generate", BOARD, model, "--frontend", "tvm", "--out", tmp_path / name]
        assert run_cli(capsys, *argv)[0] == 0
    files = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    assert Path("tvm/scoped_kernels.c") in files
    assert Path("tvm/include/tvm/ffi/c_api.h") in files
    assert Path("memplace/src/scoped_model.c") in files
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    executor = (tmp_path / "a/memplace/src/scoped_model.c").read_text()
    # The reshape is a second DLTensor over b's bytes, not a copy.
    assert executor.count("SCOPED_B_PTR") == 2
    assert "memcpy(tensors[" in executor  # R.to_vdevice: the one copy
    assert "malloc" not in executor


def test_an_onnx_model_without_the_onnx_package_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\0")
    error = cli_error(capsys, "plan", BOARD, path, "--frontend", "tvm", code=3)
    assert "pip install onnx" in error


def test_an_onnx_model_is_read_through_tvms_onnx_frontend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(WEIGHTS, name="w")],
    )
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    code, out, err = run_cli(capsys, "plan", BOARD, path, "--frontend", "tvm", "--json")
    assert code == 0, err
    placements = {p["name"]: p for p in json.loads(out)["placements"]}
    assert set(placements) == {"x", "output", "const_0"}
    assert placements["const_0"]["size"] == WEIGHTS.nbytes
    assert placements["const_0"]["pool"] == "itcm_const"


@needs_kws
def test_folding_constants_is_tvms_zero_pipeline_with_float_weights() -> None:
    """With FoldConstant, as TVM's own zero pipeline lowers it: the weights become float32
    constants and Relax's plan needs 98072 bytes on kws."""
    model = read_relax(KWS, fold_constants=True)
    assert len(model.steps) == 14
    assert model.tvm_plan_bytes == 98072
    assert sum(len(c.data) for c in model.constants) > 3 * 28976


def test_parameters_main_does_not_take_are_refused() -> None:
    with pytest.raises(
        InputError, match="main has no parameter v to bind; its parameters are x, w"
    ):
        from_relax(scoped_module(), {"v": WEIGHTS})


HEADER = (
    "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
    "@I.ir_module\nclass Module:\n"
)
F4 = 'R.Tensor((4,), "float32")'


def _script(signature: str, *lines: str) -> str:
    """A TVMScript module whose one function is `signature` with `lines` as its body."""
    body = "".join(f"        {line}\n" for line in lines)
    return f"{HEADER}    @R.function\n    def {signature}:\n{body}"


REFUSED_MODELS = {
    "symbolic": (
        _script(
            'main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32")',
            "y = R.add(x, x)",
            "return y",
        ),
        "input x has a symbolic shape; memplace plans static shapes",
    ),
    "bool": (
        _script(f'main(x: {F4}) -> R.Tensor((4,), "bool")', "y = R.greater(x, x)", "return y"),
        "alloc is bool; memplace's executor passes int, uint and float tensors",
    ),
    "nothing": (
        _script(f"main(x: {F4}) -> {F4}", "return x"),
        "the model computes nothing (its main calls no kernel)",
    ),
    "passthrough": (
        _script(f"main(x: {F4}) -> R.Tuple({F4}, {F4})", "y = R.add(x, x)", "return (y, x)"),
        "output 1 is an input or constant itself; memplace runs models whose outputs a "
        "kernel writes",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_MODELS))
def test_models_the_static_executor_cannot_run_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, message = REFUSED_MODELS[case]
    path = tmp_path / f"{case}.py"
    path.write_text(text)
    error = cli_error(capsys, "plan", BOARD, path, "--frontend", "tvm")
    assert error == f"memplace: error: MODEL: {path}: {message}"


def test_more_refusals_of_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "absent.tflite"
    assert f"no model file at {missing}" in cli_error(
        capsys, "plan", BOARD, missing, "--frontend", "tvm"
    )
    garbage = tmp_path / "m.onnx"
    garbage.write_bytes(b"not protobuf")
    assert "TVM's ONNX frontend cannot read it" in cli_error(
        capsys, "plan", BOARD, garbage, "--frontend", "tvm"
    )
    not_npz = tmp_path / "x.npz"
    not_npz.write_text("text")
    argv = ["generate", BOARD, _saved(tmp_path), "--frontend", "tvm", "--inputs", not_npz]
    assert "x.npz: not a NumPy .npz archive" in cli_error(capsys, *argv, "--out", tmp_path / "p")
    argv = ["generate", "nrf5340", _saved(tmp_path, "global"), "--frontend", "tvm"]
    error = cli_error(capsys, *argv, "--out", tmp_path / "q")
    assert (
        "project type aot_standalone_demo runs the model on one core; board nrf5340 has 2" in error
    )
    assert not (tmp_path / "q").exists()


def test_a_module_without_main_is_refused() -> None:
    module = tvm_module_without_main()
    with pytest.raises(InputError, match="a Relax model is an IRModule with a function main"):
        from_relax(module)


def tvm_module_without_main() -> object:
    import tvm

    return tvm.script.from_source(_script(f"run(x: {F4}) -> {F4}", "y = R.add(x, x)", "return y"))
