"""`memplace verify` on real builds, after the linked ELF (or the run) was tampered with.

Each mutation must be caught: exit code 1, and a finding that names what broke. The demo
project is built once; each test works on a copy. (tests/test_e2e.py covers a workspace
pool moved to SRAM, a pool moved onto the stack, a constant pool's load copy moved out of
the load memory and a stack that overflowed in a run.)
"""

from __future__ import annotations

import json
import os
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from memplace.board import load_board
from memplace.cli import main
from memplace.contract import pool_section, stack_section
from test_stack_soundness import PROLOGUE, build_program

pytestmark = pytest.mark.qemu


def verify_json(folder: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    code, out, _ = run_cli(capsys, "verify", folder, "--json", *extra)
    return code, json.loads(out)


def findings(report: Any) -> set[tuple[str, str]]:
    return {(f["check"], f["subject"]) for f in report["findings"]}


def test_the_unchanged_build_verifies_with_a_static_bound(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = verify_json(demo_copy(), capsys)
    assert code == 0 and report["ok"], report
    (stack,) = report["stacks"]
    assert stack["planned"] <= stack["static_bound"] < stack["budget"]
    assert stack["path"][:3] == ["Reset_Handler", "memplace_start", "main"]


def test_a_constant_pool_moved_to_another_memory_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-address", f"{pool_section('itcm_const')}=0x60000000")
    code, report = verify_json(mutant, capsys)
    assert code == 1
    messages = [f["message"] for f in report["findings"] if f["subject"] == "itcm_const"]
    assert "demo_pool_itcm_const is at 0x60000000, the plan says 0x00070000" in messages
    assert any("outside memory itcm" in message for message in messages)


def test_a_constant_without_its_load_copy_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # Loaded where it runs, in DDR: nothing in the load memory for the reset handler to
    # copy, and the copy table still reads the old place.
    mutant = demo_copy("--change-section-lma", f"{pool_section('ddr_const')}=0x60c00000")
    code, report = verify_json(mutant, capsys)
    assert code == 1
    messages = [f["message"] for f in report["findings"] if f["check"] == "load-copy"]
    assert {f["subject"] for f in report["findings"]} == {"ddr_const"}
    assert any("outside the load memory itcm" in message for message in messages)
    assert any("the reset handler copies 40960 bytes from" in message for message in messages)


def test_a_load_copy_on_top_of_the_code_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-lma", f"{pool_section('ddr_const')}=0x00000400")
    code, report = verify_json(mutant, capsys)
    assert code == 1
    assert (
        "overlap",
        f".text/{pool_section('ddr_const')} (load copy)",
    ) in findings(report)


def test_a_stack_moved_out_of_its_place_is_caught(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-address", f"{stack_section('main')}=0x01000000")
    code, report = verify_json(mutant, capsys)
    assert code == 1
    messages = [f["message"] for f in report["findings"] if f["subject"] == "main.stack"]
    assert any("the plan says 16384 bytes at 0x2007c000" in message for message in messages)
    assert any("outside memory dtcm" in message for message in messages)


def test_a_run_deeper_than_the_bound_means_the_analysis_was_wrong(
    demo_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy()
    record = mutant / "build" / "run.json"
    output = "memplace: stack main used 9000 budget 16384\nmemplace: result pass\n"
    record.write_text(json.dumps({"exit_code": 0, "output": output}))
    os.utime(record, (2**31, 2**31))  # newer than the image
    code, report = verify_json(mutant, capsys)
    assert code == 1
    (finding,) = report["findings"]
    assert finding["check"] == "stack-analysis" and finding["subject"] == "main"
    assert "the run used 9000 bytes, more than the static bound" in finding["message"]
    assert report["stacks"][0]["measured"] == 9000


def test_junit_and_sarif_carry_the_findings(
    demo_copy: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mutant = demo_copy("--change-section-address", f"{pool_section('dtcm_ws')}=0x01180000")
    junit, sarif = tmp_path / "verify.xml", tmp_path / "verify.sarif"
    code = main(["verify", str(mutant), "--junit", str(junit), "--sarif", str(sarif)])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL placement dtcm_ws" in out
    failed = [
        c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None
    ]
    assert any(c.get("name") == "dtcm_ws" for c in failed)
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert any(r["ruleId"] == "placement" and "dtcm_ws" in r["message"]["text"] for r in results)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert "build/cpu0.elf" in uris


def test_verify_needs_objdump(
    built_demo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("memplace.carried.processes.shutil.which", lambda name: None)
    assert main(["verify", str(built_demo)]) == 3
    err = capsys.readouterr().err
    assert (
        "arm-none-eabi-objdump not found; install it: apt-get install binutils-arm-none-eabi" in err
    )


RECURSIVE = """
    __attribute__((noinline)) static uint32_t depth_first(uint32_t level)
    {
        volatile uint8_t frame[64];
        TOUCH(frame, level);
        return level == 0u ? frame[1] : depth_first(level - 1u) + frame[2];
    }
    int app_main(void)
    {
        return depth_first(4u) == 0u;
    }
"""

DEEP = """
    __attribute__((noinline)) static uint32_t big(uint32_t seed)
    {
        volatile uint8_t frame[3000];
        TOUCH(frame, seed);
        return sum(frame, sizeof frame);
    }
    volatile uint32_t never;
    int app_main(void)
    {
        return never ? (int)big(never) : 0;
    }
"""


def test_unbounded_recursion_is_caught_with_its_path_and_a_hint_bounds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = build_program(tmp_path, "recursive", RECURSIVE)
    code, report = verify_json(probe.folder, capsys)
    assert code == 1 and report["stacks"][0]["static_bound"] is None
    (finding,) = report["findings"]
    assert finding["check"] == "stack-unbounded" and finding["subject"] == "main"
    assert "recursion depth_first > depth_first has no depth" in finding["message"]
    assert (
        "call path: Reset_Handler > memplace_start > app_main > depth_first" in finding["message"]
    )
    hints = tmp_path / "hints.yaml"
    hints.write_text("memplace: stack_hints/v1\nrecursion: [{function: depth_first, depth: 5}]\n")
    code, report = verify_json(probe.folder, capsys, "--stack-hints", str(hints))
    assert code == 0, report
    assert report["stacks"][0]["static_bound"] >= report["stacks"][0]["measured"]


def test_a_static_bound_over_the_budget_is_caught_before_any_run_overflows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The deep path never runs, so the run's mark is small; the bound knows better.
    board = tmp_path / "small.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: small\n"
        "contexts:\n  main:\n    stack: {memory: dtcm, size: 2K}\n"
    )
    probe = build_program(tmp_path, "deep", DEEP, board=load_board(board))
    code, report = verify_json(probe.folder, capsys)
    assert code == 1
    (finding,) = report["findings"]
    assert (finding["check"], finding["subject"]) == ("stack-bound", "main")
    assert "over its budget of 2048" in finding["message"] and "> big" in finding["message"]
    stack = report["stacks"][0]
    assert stack["measured"] < stack["budget"] < stack["static_bound"]


def test_check_takes_stack_hints_and_writes_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 256, live: [0, 0]}\n"
    )
    sarif = tmp_path / "out.sarif"
    code = main(
        [
            "check",
            "qemu-mps3-an547",
            str(workload),
            "--out",
            str(tmp_path / "p"),
            "--stack-hints",
            "newlib-nano",
            "--sarif",
            str(sarif),
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"]
    assert json.loads(sarif.read_text())["runs"][0]["results"] == []
    stack = report["stacks"][0]
    assert stack["measured"] <= stack["static_bound"]


def test_a_hint_naming_no_function_is_a_warning(
    built_demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hints = tmp_path / "hints.yaml"
    hints.write_text("memplace: stack_hints/v1\nalloca:\n  - {function: wlak, size: 8}\n")
    code = main(["verify", str(built_demo), "--stack-hints", str(hints)])
    out = capsys.readouterr().out
    warning = (
        f"{hints}:3:16: stack hints: no function 'wlak' in this build (inlined, or not "
        "linked), so the hint is not used; did you mean 'walk'?"
    )
    assert f"warning: {warning}\n" in out
    assert code == 0 and out.rstrip().endswith("verify: ok")
    assert main(["verify", str(built_demo), "--stack-hints", str(hints), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == [warning]


def test_hints_written_in_the_workload_travel_with_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stack_hints:` in the workload file bound the recursion for `memplace verify DIR`
    with no --stack-hints, because the project keeps a copy of them."""
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "main.c").write_text(PROLOGUE + textwrap.dedent(RECURSIVE))
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 256, live: [0, 0]}\n"
        "stack_hints:\n  - recursion: [{function: depth_first, depth: 5}]\n"
    )
    out = tmp_path / "p"
    argv = ["qemu-mps3-an547", str(workload), "--out", str(out)]
    argv += ["--project-type", "app", "--sources", str(sources)]
    assert main(["check", *argv, "--json"]) == 0, capsys.readouterr()
    capsys.readouterr()
    kept = (out / "memplace" / "stack_hints" / "workload-0.yaml").read_text()
    assert "of the workload file w.yaml" in kept and str(tmp_path) not in kept
    code, report = verify_json(out, capsys)
    assert code == 0, report
    (stack,) = report["stacks"]
    assert stack["measured"] <= stack["static_bound"]
    # Without the hint the same program is unbounded: the kept copy is what bounds it.
    (out / "memplace" / "stack_hints" / "workload-0.yaml").unlink()
    code, report = verify_json(out, capsys)
    assert code == 1 and report["stacks"][0]["static_bound"] is None


def test_a_kept_hint_naming_no_function_names_the_kept_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "b.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: b\n"
        "stack_hints:\n  - alloca: [{function: no_such_function, size: 8}]\n"
    )
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 256, live: [0, 0]}\n"
    )
    out = tmp_path / "p"
    assert main(["check", str(board), str(workload), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "warning: " in printed and "memplace/stack_hints/board-0.yaml:" in printed
    assert "no function 'no_such_function' in this build" in printed
