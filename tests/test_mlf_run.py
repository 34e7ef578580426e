"""TVM models from Model Library Format archives, built with the cross compiler and run
under QEMU: `memplace check BOARD model.tar --project-type aot_standalone_demo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from memplace.project import Project
from mlf_archives import EXPECTED, printed_outputs, v5_archive, v7_archive

pytestmark = pytest.mark.qemu

BOARD = "qemu-mps3-an547"
DEMO = "aot_standalone_demo"


def _check(
    capsys: pytest.CaptureFixture[str], archive: Path, out: Path, *options: str
) -> tuple[int, dict[str, object], str]:
    """`memplace check ... --json`: its exit code, its report and what the run printed."""
    options = options or ("--project-type", DEMO)
    code, stdout, err = run_cli(capsys, "check", BOARD, archive, "--out", out, "--json", *options)
    assert not err.strip() or code != 0, err
    run = json.loads((out / "build/run.json").read_text())
    return code, json.loads(stdout), str(run["output"])


def test_a_version_5_archive_runs_with_its_workspace_from_the_planned_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p"
    code, report, output = _check(capsys, v5_archive(tmp_path / "model.tar"), out)
    assert code == 0, output
    assert report["ok"] is True
    assert "tvm: run returned 0" in output
    assert printed_outputs(output) == pytest.approx(EXPECTED, abs=2e-6)
    assert "tvm: output y hex f304b53f" in output  # sqrt(2) as float32, little-endian
    project = Project.load(out)
    workspace = project.plan.placement("tvm_workspace")
    assert workspace.dynamic and workspace.pool == "dtcm_ws"


def test_a_version_7_archive_runs_on_usmp_pools_pinned_to_board_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v7_archive(
        tmp_path / "model.tar", constant_pool="ddr_const", workspace_pool="sram_ws"
    )
    out = tmp_path / "p"
    code, report, output = _check(capsys, archive, out)
    assert code == 0, output
    assert report["ok"] is True
    assert printed_outputs(output) == pytest.approx(EXPECTED, abs=2e-6)
    plan = Project.load(out).plan
    assert plan.placement("tvm_sram_ws").pool == "sram_ws"
    assert plan.placement("tvm_ddr_const").pool == "ddr_const"
    pools = {p.name: p for p in plan.pools}
    assert pools["sram_ws"].used >= 32  # the TVM pool's bytes, where the plan put them


def test_a_workspace_declared_too_small_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TVM's main takes 16 bytes and its operator 16 more: 16 declared bytes are refused
    at run time, and the run says so rather than writing past the arena."""
    out = tmp_path / "p"
    code, _, output = _check(capsys, v5_archive(tmp_path / "model.tar", workspace=16), out)
    assert code == 1
    assert "tvm: run returned -1" in output
    assert "memplace: fail arena tvm_workspace step 0" in output


def test_an_app_calls_the_model_with_memplaces_buffers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Project type app: the model's code and workspace backend come with the project, and
    the user's code calls tvmgen_default_run itself."""
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text(
        """\
#include <string.h>
#include "tvmgen_default.h"
#include "tvm_default_memplace.h"
#include "memplace_runtime.h"

int app_main(void)
{
    const float x[4] = {4.0f, 12.0f, 24.0f, 40.0f};
    memcpy(TVM_DEFAULT_INPUT_X_PTR, x, sizeof x);
    struct tvmgen_default_inputs inputs = {.x = TVM_DEFAULT_INPUT_X_PTR};
    struct tvmgen_default_outputs outputs = {.y = TVM_DEFAULT_OUTPUT_Y_PTR};
    if (tvmgen_default_run(&inputs, &outputs) != 0) {
        return 1;
    }
    const float *y = (const float *)TVM_DEFAULT_OUTPUT_Y_PTR;
    for (int i = 0; i < 4; i++) {
        memplace_write("app: y ");
        memplace_write_u32((uint32_t)y[i]);
        memplace_write("\\n");
    }
    return 0;
}
"""
    )
    out = tmp_path / "p"
    archive = v5_archive(tmp_path / "model.tar")
    code, report, output = _check(
        capsys, archive, out, "--project-type", "app", "--sources", str(sources)
    )
    assert code == 0, output
    assert report["ok"] is True
    assert [line for line in output.splitlines() if line.startswith("app:")] == [
        "app: y 3",
        "app: y 5",
        "app: y 7",
        "app: y 9",
    ]


def test_a_demo_on_a_board_with_device_isrs_keeps_its_vector_table_true(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled STM32H743 wires its Ethernet isr to line 61: the demo, which enables no
    line, still defines that handler, so the table verify checks holds it."""
    out = tmp_path / "h7"
    archive = v5_archive(tmp_path / "model.tar")
    argv = ("--out", out, "--project-type", DEMO)
    assert run_cli(capsys, "generate", "stm32h743", archive, *argv)[0] == 0
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 0, stdout
    assert "void ETH_IRQHandler(void)\n{\n}\n" in (out / "src" / "aot_demo.c").read_text()
