"""End to end: real builds with arm-none-eabi-gcc, real runs under QEMU, real ELF checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import moved_onto, run_cli
from memplace.board import Board
from memplace.build import build
from memplace.cli import main
from memplace.codegen import render
from memplace.contract import pool_section, stack_section
from memplace.planner import plan
from memplace.project import Project, write_project
from memplace.verify import verify
from memplace.workflow import recorded_run, run
from memplace.workload import Workload

pytestmark = pytest.mark.qemu


def test_demo_plans_builds_runs_and_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["demo", "--out", str(tmp_path / "demo")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "dtcm_ws     dtcm    [0x2003c000, 0x2007c000)  215040 / 262144         215040" in out
    assert "run: passed (exit code 0)" in out
    assert "stack main: measured" in out
    assert out.rstrip().endswith("verify: ok")
    # What the README says `make demo` shows, line for line.
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    shown = readme.split("## What `make demo` shows", 1)[1].split("```", 2)[1]
    assert out.strip() == shown.strip()


def test_the_run_passes_and_reports_the_stack(demo_copy: Callable[..., Path]) -> None:
    project = demo_copy()
    log = run(project)
    assert log.passed
    assert 640 < log.stacks["main"] < 4096
    report = verify(Project.load(project), recorded_run(project))
    assert report.ok, report.table()
    assert report.stacks[0].measured == log.stacks["main"]


def test_overlapping_live_buffers_fail_the_run(
    tmp_path: Path, board: Board, demo_workload: Workload, capsys: pytest.CaptureFixture[str]
) -> None:
    good = plan(board, demo_workload)
    victim, intruder = good.placement("conv1_out"), good.placement("dw1_out")
    # Both live at step dw1 (2), in the same pool: put one on top of the other.
    assert victim.pool == intruder.pool and victim.last >= intruder.first
    bad = moved_onto(good, victim.name, intruder.name)
    out = tmp_path / "bad"
    write_project(render(board, bad), out)
    build(out)
    code = main(["run", str(out)])
    stdout = capsys.readouterr().out
    assert code == 1
    assert "run: FAILED (exit code 1)" in stdout
    assert "run: buffer conv1_out failed its check at step 2" in stdout
    assert main(["verify", str(out)]) == 1
    assert "FAIL run conv1_out: buffer conv1_out failed its check at step 2" in (
        capsys.readouterr().out
    )


def _verify_json(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, _ = run_cli(capsys, "verify", folder, "--json")
    return code, json.loads(out)


def test_a_pool_moved_to_another_memory_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-address", f"{pool_section('dtcm_ws')}=0x01180000")
    code, report = _verify_json(mutant, capsys)
    assert code == 1 and report["ok"] is False
    messages = {(f["check"], f["subject"], f["message"]) for f in report["findings"]}
    assert (
        "placement",
        "dtcm_ws",
        "demo_pool_dtcm_ws is at 0x01180000, the plan says 0x2003c000",
    ) in messages
    assert any(
        check == "placement" and "outside memory dtcm" in message for check, _, message in messages
    )


def test_overlapping_sections_are_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-address", f"{pool_section('dtcm_ws')}=0x2007b000")
    code, report = _verify_json(mutant, capsys)
    assert code == 1
    overlaps = [f for f in report["findings"] if f["check"] == "overlap"]
    assert overlaps[0]["subject"] == f"{pool_section('dtcm_ws')}/{stack_section('main')}"


def test_a_constant_loaded_outside_the_load_memory_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-lma", f"{pool_section('ddr_const')}=0x01000000")
    code, report = _verify_json(mutant, capsys)
    assert code == 1
    assert {f["subject"] for f in report["findings"] if f["check"] == "load-copy"} == {"ddr_const"}


def test_a_stack_over_its_budget_is_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "tight.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: tight\n"
        "contexts:\n  main:\n    stack: {memory: dtcm, size: 2K}\n"
    )
    workload = tmp_path / "deep.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: deep\nbuffers:\n"
        "  - {name: frame, size: 2032, live: 0, scope: local}\n"
        "  - {name: act, size: 4K, live: [0, 1]}\n"
    )
    code = main(["check", str(board), str(workload), "--out", str(tmp_path / "p"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    (stack,) = report["stacks"]
    assert (stack["context"], stack["budget"], stack["measured"], stack["planned"]) == (
        "main",
        2048,
        2048,
        2032,
    )
    # The static bound saw it coming; the run confirmed it.
    assert stack["static_bound"] >= stack["measured"]
    assert sorted(f["check"] for f in report["findings"]) == ["stack-bound", "stack-budget"]
