"""Relax models run on the board under QEMU (`memplace check BOARD MODEL --frontend tvm`),
their outputs compared with TVM's own VM on the host (`tvm.compile(mod, target="llvm")`):
int8 bit for bit, float within 1e-5 relative; the ELF verified and the stacks bounded as
for every project."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tvm

from conftest import run_cli
from memplace.board import load_board
from memplace.importers.relax import from_relax
from memplace.project import Project
from memplace.workflow import ProjectRequest, check
from relax_models import (
    AD01,
    KWS,
    QUANTIZE,
    WEIGHTS,
    bound,
    boundary_inputs,
    needs_kws,
    needs_models,
    run_on_host,
    scoped_module,
    tflite_module,
)

pytestmark = pytest.mark.qemu

BOARD = "qemu-mps3-an547"


def _bounded(report: dict[str, object]) -> None:
    assert report["ok"] is True, report["findings"]
    (stack,) = report["stacks"]  # type: ignore[misc]
    assert stack["static_bound"] is not None and stack["measured"] <= stack["static_bound"]


@needs_kws
def test_kws_runs_on_the_users_inputs_bit_identical_to_tvms_vm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    x = np.random.default_rng(7).integers(-128, 128, (1, 49, 10, 1), dtype=np.int8)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, input_1=x)
    out = tmp_path / "kws"
    code, stdout, err = run_cli(
        capsys, "check", BOARD, KWS, "--frontend", "tvm", "--inputs", inputs, "--out", out, "--json"
    )
    assert code == 0, err
    report = json.loads(stdout)
    _bounded(report)
    (output,) = report["outputs"]
    assert (output["name"], output["dtype"], output["shape"]) == ("output", "int8", [1, 12])
    # Bit for bit what TVM's VM computes on the host (tvm.compile(mod, target="llvm")),
    # 127 and -127 included where TVM's own C, with its 7-digit constants, gives 126 / -126.
    (expected,) = run_on_host(tflite_module(KWS), x)
    assert output["values"] == expected.reshape(-1).tolist()
    assert output["values"][9:] == [127, -128, -127]
    assert report["inputs"][0]["from"] == str(inputs)
    # The storages and the kernels' workspace arena are planned; no heap is linked.
    plan = Project.load(out).plan
    assert plan.placement("alloc1").pool == "dtcm_ws"
    assert any(p.dynamic for p in plan.placements)
    assert (
        "malloc" not in (out / "build/cpu0.map").read_text().split("Discarded input sections")[-1]
    )


@needs_kws
def test_without_inputs_the_model_runs_on_a_fill_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run_cli(
        capsys, "check", BOARD, KWS, "--frontend", "tvm", "--out", tmp_path / "kws", "--json"
    )
    assert code == 0, err
    report = json.loads(stdout)
    assert "(j * 13 + 7) mod 256" in report["inputs"][0]["from"]
    x = ((np.arange(490) * 13 + 7) % 256).astype(np.uint8).view(np.int8).reshape(1, 49, 10, 1)
    (expected,) = run_on_host(tflite_module(KWS), x)
    assert report["outputs"][0]["values"] == expected.reshape(-1).tolist()


@needs_models
def test_ad01_on_the_fill_bit_identical_to_tvms_vm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run_cli(
        capsys, "check", BOARD, AD01, "--frontend", "tvm", "--out", tmp_path / "ad01", "--json"
    )
    assert code == 0, err
    (output,) = json.loads(stdout)["outputs"]
    x = ((np.arange(640) * 13 + 7) % 256).astype(np.uint8).view(np.int8).reshape(1, 640)
    (expected,) = run_on_host(tflite_module(AD01), x)
    assert output["values"] == expected.reshape(-1).tolist()


def test_float_constants_reach_the_board_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quantization scale 7 printed digits do not hold, on inputs where one ulp of the
    scale moves the result: the board computes what TVM's llvm build computes, where the
    C TVM prints itself (target c) computes otherwise."""
    model = tmp_path / "quantize.json"  # a module saved with tvm.ir.save_json
    model.write_text(tvm.ir.save_json(tvm.script.from_source(QUANTIZE)))
    x = boundary_inputs()
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=x)
    argv = ["check", BOARD, model, "--frontend", "tvm", "--inputs", inputs, "--json"]
    code, stdout, err = run_cli(capsys, *argv, "--out", tmp_path / "q")
    assert code == 0, err
    (output,) = json.loads(stdout)["outputs"]
    module = tvm.script.from_source(QUANTIZE)
    (llvm,) = run_on_host(module, x)
    assert output["values"] == llvm.tolist() == [-100, -70, -40, -10, 11, 41, 71, 100]
    (c,) = run_on_host(module, x, c_library=tmp_path / "q.so")
    assert c.tolist() == [-99, -69, -39, -9, 10, 40, 70, 99]


def test_a_float_model_across_memory_scopes_from_python(tmp_path: Path) -> None:
    """The Python API: an IRModule and its parameters; a tensor copied to the VDevice of
    scope global.sram_ws lives in sram_ws, its reshape is a view of it."""
    board = load_board(BOARD)
    x = np.linspace(-2.0, 3.0, 16, dtype=np.float32).reshape(2, 8)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=x)
    model = from_relax(scoped_module("global.sram_ws"), {"w": WEIGHTS}, name="scoped")
    model = model.with_inputs(inputs)
    out = tmp_path / "scoped"
    result = check(ProjectRequest(board, model.workload(board), out, "aot_standalone_demo"))
    assert result.report.ok, result.report.table()
    assert result.plan.placement("b").pool == "sram_ws"
    from memplace.codegen.relax import read_outputs

    console = json.loads((out / "build/run.json").read_text())["output"]
    (output,) = read_outputs(console, model)
    # TVM's VM cannot allocate a scope other than global on the host: the same model there.
    (expected,) = run_on_host(bound(scoped_module("global"), {"w": WEIGHTS}), x)
    np.testing.assert_allclose(np.array(output["values"], np.float32), expected, rtol=1e-5)


APP = """
#include <string.h>
#include "scoped_memplace.h"
#include "scoped_model.h"

int app_main(void)
{
    float x[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i / 4.0f;
    }
    memcpy(SCOPED_X_PTR, x, sizeof x);
    struct scoped_inputs inputs = {.x = SCOPED_X_PTR, .w = SCOPED_W_PTR};
    struct scoped_outputs outputs = {.output = SCOPED_OUTPUT_PTR};
    if (scoped_run(&inputs, &outputs) != 0) {
        return 2;
    }
    float y[8];
    memcpy(y, SCOPED_OUTPUT_PTR, sizeof y);
    float sum = 0.0f;
    for (int i = 0; i < 8; i++) {
        sum += y[i];
    }
    return sum > 0.999f && sum < 1.001f ? 0 : 3; /* a softmax */
}
"""


def test_an_app_calls_the_executor_with_memplaces_buffers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "scoped.py"
    model.write_text(scoped_module().script())  # w is an input here
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "main.c").write_text(APP)
    argv = ["check", BOARD, model, "--frontend", "tvm", "--project-type", "app"]
    code, stdout, err = run_cli(capsys, *argv, "--sources", sources, "--out", tmp_path / "p")
    assert code == 0, stdout + err
    assert "verify: ok" in stdout
