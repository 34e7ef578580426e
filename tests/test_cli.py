"""The command line: output, exit codes, and one clear line for every input error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import PATIENCE, run_cli
from memplace.cli import main
from memplace.resources import demo_workload

DEMO = str(demo_workload())


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("memplace: error: ")
    return lines[0].removeprefix("memplace: error: ")


def test_boards_lists_the_default_board(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "boards")
    assert code == 0
    assert "qemu-mps3-an547" in out and "cpu0 (cortex-m55)" in out
    code, out, _ = run_cli(capsys, "boards", "--json")
    rows = json.loads(out)
    an547 = next(row for row in rows if row["name"] == "qemu-mps3-an547")
    assert an547["qemu_machine"] == "mps3-an547"


def test_plan_prints_a_pool_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "plan", "qemu-mps3-an547", DEMO)
    assert code == 0
    assert "dtcm_ws     dtcm    [0x2003c000, 0x2007c000)  215040 / 262144         215040" in out
    assert "main.stack" in out


def test_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "plan", "qemu-mps3-an547", DEMO, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["memplace"] == "plan/v1" and data["workload"] == "demo"


def test_plan_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "plan", "qemu-mps3-an547", DEMO, "--explain")
    assert code == 0
    assert "dma_ring: scope global, users main, npu0; candidates sram_ws, ddr_ws" in out
    assert "dw1_skip: scope global, users main; candidates dtcm_ws, sram_ws, ddr_ws" in out
    assert "  -> sram_ws at offset 0: spilled: dtcm_ws full" in out


def test_bad_board_file_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    write_yaml: Callable[[str, str], Path],
    board_data: dict[str, Any],
) -> None:
    board_data["pools"]["dtcm_ws"]["memory"] = "dtmc"
    path = write_yaml("board.yaml", yaml.safe_dump(board_data, sort_keys=False))
    code, out, err = run_cli(capsys, "plan", str(path), DEMO)
    assert code == 2 and out == ""
    message = _one_error_line(err)
    assert message.startswith(f"{path}:")
    assert message.endswith(
        "pools.dtcm_ws.memory: no memory 'dtmc'; did you mean 'dtcm'? valid: ddr, dtcm, itcm, sram"
    )


def test_unknown_bundled_board(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", "qemu-mps3", DEMO)
    assert code == 2
    assert "BOARD: no bundled board 'qemu-mps3'" in _one_error_line(err)


def test_missing_workload(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "plan", "qemu-mps3-an547", str(tmp_path / "none.yaml"))
    assert code == 2
    assert "WORKLOAD: no workload file at" in _one_error_line(err)


def test_bad_scope_in_workload(
    capsys: pytest.CaptureFixture[str], write_yaml: Callable[[str, str], Path]
) -> None:
    path = write_yaml(
        "w.yaml",
        "memplace: workload/v1\nname: w\nbuffers:\n"
        "  - {name: a, size: 64, live: 0, scope: global.fast}\n",
    )
    code, _, err = run_cli(capsys, "plan", "qemu-mps3-an547", str(path))
    assert code == 2
    message = _one_error_line(err)
    assert message.startswith(f"{path}:4:41: a.scope: unknown scope 'global.fast'")


def test_usage_errors_are_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", "qemu-mps3-an547")
    assert code == 2
    assert "the following arguments are required: WORKLOAD" in _one_error_line(err)
    code, _, err = run_cli(capsys, "frobnicate")
    assert code == 2
    assert "invalid choice: 'frobnicate'" in _one_error_line(err)


def test_planning_failure_is_exit_1(
    capsys: pytest.CaptureFixture[str], write_yaml: Callable[[str, str], Path]
) -> None:
    path = write_yaml(
        "w.yaml",
        "memplace: workload/v1\nname: w\nbuffers:\n"
        "  - {name: big, size: 2M, live: 0, scope: global.sram_ws}\n",
    )
    code, _, err = run_cli(capsys, "plan", "qemu-mps3-an547", str(path))
    assert code == 1
    assert _one_error_line(err) == "big (2097152 bytes) fits nowhere: sram_ws lacks 1048576 bytes"


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    from memplace.errors import InputError

    with pytest.raises(InputError):
        main(["--debug", "plan", "qemu-mps3", DEMO])


def test_generate_then_refuse_to_overwrite_edits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "proj"
    code, stdout, _ = run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", str(out))
    assert code == 0 and f"wrote {out}" in stdout
    (out / "src/exerciser_cpu0.c").write_text("/* mine */\n")
    code, _, err = run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", str(out))
    assert code == 2
    assert "exerciser_cpu0.c was changed since memplace wrote it" in _one_error_line(err)
    code, _, _ = run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", str(out), "--force")
    assert code == 0
    assert "mine" not in (out / "src/exerciser_cpu0.c").read_text()


def test_verify_outside_a_project(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "verify", str(tmp_path))
    assert code == 2
    assert "DIR: no memplace project here" in _one_error_line(err)


def test_verify_before_build(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", str(tmp_path / "p"))
    code, _, err = run_cli(capsys, "verify", str(tmp_path / "p"))
    assert code == 2
    assert "build the project first" in _one_error_line(err)


def test_run_on_a_board_without_qemu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, board_data: dict[str, Any]
) -> None:
    del board_data["run"]
    board = tmp_path / "bench.yaml"
    board.write_text(yaml.safe_dump(board_data, sort_keys=False))
    run_cli(capsys, "generate", str(board), DEMO, "--out", str(tmp_path / "p"))
    code, _, err = run_cli(capsys, "run", str(tmp_path / "p"))
    assert code == 2
    assert "does not run under QEMU" in _one_error_line(err)


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """`memplace plan ... | head -1`: the command ends quietly when its reader goes away."""
    import subprocess
    import sys

    buffers = [{"name": f"b{i}", "size": 64, "live": [i % 8, i % 8]} for i in range(2000)]
    workload = tmp_path / "many.yaml"
    workload.write_text(
        yaml.safe_dump({"memplace": "workload/v1", "name": "many", "buffers": buffers})
    )
    command = [sys.executable, "-m", "memplace.cli", "plan", "qemu-mps3-an547", str(workload)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(4) == b"pool"
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=PATIENCE) == 0
    assert "Traceback" not in stderr
