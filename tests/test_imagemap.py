"""The image-map stage: where every image puts its bytes, computed once from the board, the
plan and measured sizes, kept in the project, formatted by render and read by verify."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import AN521_COPIED_CPU1, AN521_SHARED_DATA, cli_error, has_toolchain, run_cli
from memplace.board import load_board
from memplace.codegen import render
from memplace.imagemap import ImageMap, image_map
from memplace.planner import plan
from memplace.project import Project
from memplace.project_files import IMAGE_MAP
from memplace.workload import Workload

WORKLOAD = """\
memplace: workload/v1
name: duo
steps: [s0, s1, s2]
buffers:
  - {name: a, size: 4K, live: [s0, s1], users: [main]}
  - {name: b, size: 2K, live: [s1, s2], users: [main1]}
"""


DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo" / "workload.yaml"
needs_toolchain = pytest.mark.skipif(not has_toolchain(), reason="needs arm-none-eabi-gcc, QEMU")


def _inputs(tmp_path: Path, board: str) -> tuple[Path, Path]:
    board_path = tmp_path / "board.yaml"
    board_path.write_text(board)
    workload = tmp_path / "duo.yaml"
    workload.write_text(WORKLOAD)
    return board_path, workload


def _memory_lines(script: str) -> list[tuple[str, str, int, int]]:
    """(name, attrs, origin, length) of every region of a linker script's MEMORY block."""
    block = script.split("MEMORY\n{\n", 1)[1].split("\n}", 1)[0]
    found = re.findall(r"^\s*(\w+)\s+\((\w+)\) : ORIGIN = (0x\w+), LENGTH = (0x\w+)$", block, re.M)
    return [
        (name, attrs, int(origin, 16), int(length, 16)) for name, attrs, origin, length in found
    ]


def test_render_only_formats_the_map_it_is_given(tmp_path: Path) -> None:
    """Measured sizes are an input of the map, not of render: given a map, render needs no
    build, and each linker script's MEMORY block is that map's regions, as they are."""
    board_path, workload_path = _inputs(tmp_path, AN521_SHARED_DATA)
    board = load_board(board_path)
    result = plan(board, Workload.from_file(workload_path))
    assert image_map(board, result).shared_memories == ("ssram0",)
    sizes = {"ssram0": {"cpu0": 0x3000, "cpu1": 0x800}}
    mapped = image_map(board, result, sizes=sizes)
    files = render(board, result, image_map=mapped)
    for core in mapped.cores:
        expected = [(r.name, r.attrs, r.origin, r.length) for r in core.regions]
        assert _memory_lines(files[f"memplace/{core.core}/linker.ld"]) == expected
    # cpu0 boots from the start of SSRAM0 and takes what it measured, rounded up to a page;
    # cpu1's data follows and takes the rest, below the mailbox.
    cpu0 = next(s for s in mapped.core("cpu0").slices if s.memory == "ssram0")
    cpu1 = next(s for s in mapped.core("cpu1").slices if s.memory == "ssram0")
    assert (cpu0.start, cpu0.end) == (0x10000000, 0x10003000)
    assert cpu1.start == 0x10003000 and mapped.mailbox is not None
    assert mapped.mailbox.memory == "ssram0" and cpu1.end > mapped.mailbox.system_address
    assert next(r for r in mapped.core("cpu1").regions if r.name == "ssram0").end == (
        mapped.mailbox.system_address
    )
    # The project keeps the map, byte-stable, and it reads back as the same value.
    assert files[IMAGE_MAP] == mapped.dumps() == image_map(board, result, sizes=sizes).dumps()
    assert ImageMap.from_data(json.loads(files[IMAGE_MAP])) == mapped


def test_images_that_do_not_fit_their_shared_memory_are_refused(tmp_path: Path) -> None:
    board_path, workload_path = _inputs(tmp_path, AN521_SHARED_DATA)
    board = load_board(board_path)
    result = plan(board, Workload.from_file(workload_path))
    with pytest.raises(Exception, match=r"memory 'ssram0' holds the images of cores cpu0, cpu1"):
        image_map(board, result, sizes={"ssram0": {"cpu0": 0x400000, "cpu1": 0x800}})


def _edit_map(project: Path, change: Any) -> None:
    path = project / IMAGE_MAP
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


@needs_toolchain
@pytest.mark.qemu
def test_verify_reads_the_map_the_project_keeps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board_path, workload = _inputs(tmp_path, AN521_COPIED_CPU1)
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", board_path, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout
    kept = Project.load(out).image_map
    assert kept is not None
    assert kept == image_map(load_board(board_path), Project.load(out).plan)
    (release,) = kept.core("cpu0").releases
    assert release.core == "cpu1" and release.copy_table is not None
    assert kept.core("cpu1").release_table is not None

    # A map that no longer says what the images hold: verify names each disagreement.
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)

    def move(data: dict[str, Any]) -> None:
        data["mailbox"]["system_address"] -= 16
        cpu0 = next(core for core in data["cores"] if core["core"] == "cpu0")
        cpu0["releases"][0]["copy_table"] += 256
        cpu0["regions"] = [r for r in cpu0["regions"] if r["name"] != "ssram0"]

    _edit_map(moved, move)
    code, stdout, err = run_cli(capsys, "verify", moved, "--json")
    assert code == 1, stdout + err
    findings = json.loads(stdout)["findings"]
    messages = [f["message"] for f in findings]
    assert any(
        "memplace_mailbox is at 0x" in m and f"image map ({IMAGE_MAP}) puts the mailbox" in m
        for m in messages
    ), messages
    assert any(
        "core cpu0 reads core cpu1's release table at 0x" in m and "but the image has it at 0x" in m
        for m in messages
    ), messages
    assert any(
        re.search(r"^\.text \[0x\w+, 0x\w+\) lies in no region the image map", m) for m in messages
    ), messages
    assert {f["check"] for f in findings} == {"shared", "load-copy", "memory"}


def test_a_damaged_image_map_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", out)[0] == 0
    (out / IMAGE_MAP).write_text('{"memplace": "image-map/v1", "cores": 3}\n')
    error = cli_error(capsys, "verify", out)
    assert error.startswith(f"memplace: error: DIR: {out / IMAGE_MAP} is not an image map ")
    assert error.endswith("; regenerate the project")


def test_a_project_from_before_the_map_still_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", "qemu-mps3-an547", DEMO, "--out", out)[0] == 0
    assert Project.load(out).image_map is not None
    (out / IMAGE_MAP).unlink()
    assert Project.load(out).image_map is None
    assert dataclasses.replace(Project.load(out), image_map=None) == Project.load(out)


NO_STEPS = """\
memplace: board/v1
extends: qemu-mps2-an521
name: no-steps
cores:
  cpu1:
    release: {by: cpu0, steps: []}
"""


def test_a_core_the_startup_code_cannot_release_is_refused_where_the_board_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A rule of the board (`board.checks`), found when a project is generated: shown at the
    key to change in the board file, which the board kept from when it was read."""
    board_path, workload = _inputs(tmp_path, NO_STEPS)
    out = tmp_path / "p"
    error = cli_error(capsys, "generate", board_path, workload, "--out", out)
    assert error == (
        f"memplace: error: {board_path}:6:14: cores.cpu1.release: core cpu1 is released by "
        "cpu0, but the board lists no release steps or handshake, so the generated startup "
        "code cannot start it; add the register `steps` that release it, or "
        "`handshake: rp2040-sio-fifo`"
    )
    assert not out.exists()
    # `plan` needs no startup code: the board serves it as it is.
    assert run_cli(capsys, "plan", board_path, workload)[0] == 0


def test_a_core_with_no_thread_to_start_on_is_refused_through_the_python_api() -> None:
    """A board file cannot say so (its rules refuse it first); a board built in Python can."""
    from memplace.board.checks import check_generated_startup
    from memplace.errors import InputError

    board = load_board("qemu-mps2-an521")
    alone = dataclasses.replace(
        board, contexts={k: c for k, c in board.contexts.items() if c.core != "cpu1"}
    )
    with pytest.raises(InputError, match="no thread context with a stack to start on") as caught:
        check_generated_startup(alone)
    assert caught.value.mark is not None and caught.value.key == "contexts"
