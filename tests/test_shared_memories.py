"""Several images in one memory: each image gets a range of its own, sized from a build of
the project (link, measure, place, link again), written into the linker scripts; `verify`
proves the ranges disjoint across the ELFs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import AN521_SHARED_DATA, cli_error, run_cli
from memplace.board import load_board
from memplace.codegen import render
from memplace.imagemap import IMAGE_ALIGN, shared_image_memories
from memplace.planner import plan
from memplace.project_files import BUILD_DIR
from memplace.scopes import resolve
from memplace.verify.image import Image
from memplace.workflow import image_bytes
from memplace.workload import Workload

WORKLOAD = """\
memplace: workload/v1
name: duo
steps: [s0, s1, s2]
buffers:
  - {name: a, size: 4K, live: [s0, s1], users: [main]}
  - {name: b, size: 2K, live: [s1, s2], users: [main1]}
  - {name: tmp, size: 256, live: [s1, s1], scope: local, users: [main1]}
"""


# Both images wholly in SSRAM0: cpu1's starts at its vector table, which its release names.
ONE_MEMORY = """\
memplace: board/v1
name: an521-one-memory
extends: qemu-mps2-an521
cores:
  cpu1:
    layout: {vectors: ssram0, code: ssram0, data: ssram0, load: ssram0}
    boot: BOOT
    release:
      by: cpu0
      steps:
        - {write: 0x50021114, value: BOOT}
        - {clear: 0x50021118, mask: 0x2}
"""


def _write(tmp_path: Path, board: str) -> tuple[Path, Path]:
    path = tmp_path / "board.yaml"
    path.write_text(board)
    workload = tmp_path / "duo.yaml"
    workload.write_text(WORKLOAD)
    return path, workload


def _range(project: Path, core: str, memory: str) -> tuple[int, int]:
    """[ORIGIN, ORIGIN + LENGTH) of `memory` in the linker script of `core`."""
    script = (project / "memplace" / core / "linker.ld").read_text()
    found = re.search(
        rf"^\s*{memory}\s+\(\w+\) : ORIGIN = (0x[0-9a-f]+), LENGTH = (0x[0-9a-f]+)$",
        script,
        re.MULTILINE,
    )
    assert found, script
    origin, length = int(found[1], 16), int(found[2], 16)
    return origin, origin + length


@pytest.mark.qemu
def test_images_sharing_a_memory_get_ranges_sized_from_the_build(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board_path, workload = _write(tmp_path, AN521_SHARED_DATA)
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", board_path, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout
    board = load_board(board_path)
    cpu0 = _range(out, "cpu0", "ssram0")
    cpu1 = _range(out, "cpu1", "ssram0")
    # cpu0 boots from the start of SSRAM0; its range is what its image measures, rounded up,
    # and cpu1's data follows it and takes the rest (below the mailbox at the top).
    used = image_bytes(board, "ssram0", "cpu0", Image.from_file(out / BUILD_DIR / "cpu0.elf"))
    assert 0 < used <= cpu0[1] - cpu0[0] < used + IMAGE_ALIGN
    assert cpu0[0] == 0x10000000 and cpu1[0] == cpu0[1]
    assert cpu1[1] == 0x10400000 - 128
    data1 = Image.from_file(out / BUILD_DIR / "cpu1.elf").get_section(".bss")
    assert data1 is not None and cpu1[0] <= data1.address < data1.end <= cpu1[1]
    # The sizing build leaves nothing behind, and the same inputs give the same scripts.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.yaml", "duo.yaml", "p"]
    again = tmp_path / "again"
    assert run_cli(capsys, "generate", board_path, workload, "--out", again)[0] == 0
    for core in ("cpu0", "cpu1"):
        script = f"memplace/{core}/linker.ld"
        assert (again / script).read_text() == (out / script).read_text()


@pytest.mark.qemu
def test_images_wholly_in_one_memory_start_at_their_vector_tables(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board_path, workload = _write(tmp_path, ONE_MEMORY.replace("BOOT", "0x10100000"))
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", board_path, workload, "--out", out)
    assert code == 0, stdout + err
    assert _range(out, "cpu0", "ssram0") == (0x10000000, 0x10100000)
    assert _range(out, "cpu1", "ssram0")[0] == 0x10100000


def test_an_image_that_runs_past_the_next_vector_table_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board_path, workload = _write(tmp_path, ONE_MEMORY.replace("BOOT", "0x10000400"))
    out = tmp_path / "new" / "p"  # the folders the measuring build needed go again too
    error = cli_error(capsys, "generate", board_path, workload, "--out", out)
    # Found after the measuring build, and still shown where the board file says it.
    assert re.fullmatch(
        rf"memplace: error: {re.escape(str(board_path))}:7:11: "
        r"cores\.cpu1\.boot: memory 'ssram0' holds the images of cores cpu0, "
        r"cpu1: the image of core 'cpu0' takes \[0x10000000, 0x100[0-9a-f]{5}\), past "
        r"0x10000400 where the vector table of core 'cpu1' starts; give core 'cpu1' a later "
        r"`boot`, or its image a memory of its own",
        error,
    ), error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.yaml", "duo.yaml"]


def _app_sharing_sram(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bss: int, code: int
) -> tuple[str, Path]:
    """`memplace generate` of an app whose two images keep their data in the 1K that SRAM
    leaves for images, each with `bss` bytes of its own: the one line it prints, and `out`."""
    board = AN521_SHARED_DATA.replace("data: ssram0", "data: sram") + (
        "  cpu0:\n    layout: {vectors: ssram0, code: ssram0, data: sram, load: ssram0}\n"
        "pools:\n  sram_ws: {memory: sram, size: 111K, kind: workspace}\n"
    )
    board_path, workload = _write(tmp_path, board)
    workload.write_text(
        "memplace: workload/v1\nname: duo\nbuffers:\n  - {name: a, size: 1K, live: 0}\n"
    )
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text(
        f"static volatile char big[{bss}];\n"
        "int app_main(void) { big[0] = 1; return big[0] - 1; }\n"
    )
    out = tmp_path / "p"
    argv = ("generate", board_path, workload, "--out", out, "--project-type", "app")
    if code == 2:
        return cli_error(capsys, *argv, "--sources", sources), out
    # A tool's failure ends with the tool's own words, after memplace's one line.
    exit_code, _, err = run_cli(capsys, *argv, "--sources", sources)
    assert exit_code == code and "Traceback" not in err, err
    return err, out


def test_images_that_do_not_fit_together_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Each image's 600 bytes of .bss fit the room alone, not together.
    error, out = _app_sharing_sram(capsys, tmp_path, 600, code=2)
    # SRAM is the bundled board's: the error shows its line there.
    assert re.fullmatch(
        r"memplace: error: \S+/board_configs/qemu-mps2-an521\.yaml:\d+:\d+: "
        r"memories\.sram: memory 'sram' holds the images of cores cpu0, "
        r"cpu1, \d+ bytes in all \(cpu0: \d+, cpu1: \d+\), more than its 1024 bytes left "
        r"for images",
        error,
    ), error
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "board.yaml", "duo.yaml"]


def test_an_image_too_big_for_the_memory_alone_fails_in_the_measuring_build(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    error, out = _app_sharing_sram(capsys, tmp_path, 2000, code=3)
    assert "region `sram' overflowed" in error
    assert error.startswith(
        "memplace: error: measuring the images that share sram (each linked with all the room "
        "there): the build of "
    ), error
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app", "board.yaml", "duo.yaml"]


@pytest.mark.qemu
def test_verify_finds_images_whose_ranges_overlap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board_path, workload = _write(tmp_path, AN521_SHARED_DATA)
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", board_path, workload, "--out", out)[0] == 0
    cpu0 = _range(out, "cpu0", "ssram0")
    # Move cpu1's range down onto the end of cpu0's, as a hand edit or a stale script would.
    script = out / "memplace" / "cpu1" / "linker.ld"
    moved = cpu0[1] - 0x100
    script.write_text(
        script.read_text().replace(f"ORIGIN = 0x{cpu0[1]:08x}", f"ORIGIN = 0x{moved:08x}")
    )
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 1
    findings = [f for f in json.loads(stdout)["findings"] if f["check"] == "shared"]
    assert findings, stdout
    message = findings[0]["message"]
    # Both images are named, with the addresses each takes.
    assert re.search(
        r"in shared memory ssram0: \S+ of cpu0 \[0x[0-9a-f]{8}, 0x[0-9a-f]{8}\) overlaps "
        r"\S+ of cpu1 \[0x[0-9a-f]{8}, 0x[0-9a-f]{8}\)",
        message,
    ), message


def test_the_bundled_boards_give_each_image_memories_of_its_own() -> None:
    """Nothing of theirs is measured: each image's part of a memory is all of it below the
    pools and stacks, as before images could share a memory."""
    for name in ("qemu-mps2-an521", "qemu-mps3-an524", "stm32h747", "imxrt1176", "rp2040"):
        assert shared_image_memories(load_board(name)) == [], name


@pytest.mark.qemu
def test_rp2040_two_images_one_after_the_other_in_its_flash_and_sram(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The other way to run both RP2040 cores: two images in the one flash and the one SRAM,
    core 1's from 1M into flash, where core 0 launches it."""
    board = (
        "memplace: board/v1\nname: rp2040-two-images\nextends: rp2040\ncores:\n  core1:\n"
        "    image: null\n"
        "    layout: {vectors: flash, code: flash, data: sram, load: flash}\n"
        "    boot: 0x10100000\n"
    )
    board_path, workload = _write(tmp_path, board)
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", board_path, workload, "--out", out)[0] == 0
    assert _range(out, "core0", "flash") == (0x10000100, 0x10100000)
    assert _range(out, "core1", "flash")[0] == 0x10100000
    sram0, sram1 = _range(out, "core0", "sram"), _range(out, "core1", "sram")
    assert sram0[0] == 0x20000000 and sram1[0] == sram0[1] and sram1[1] == 0x20020000 - 128
    startup = (out / "memplace/core0/startup.c").read_text()
    assert "memplace_launch_core1(0x10100000u, (const volatile uint32_t *)0x10100000u);" in startup
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 0, stdout
    measured = image_bytes(
        load_board(board_path), "sram", "core0", Image.from_file(out / BUILD_DIR / "core0.elf")
    )
    assert sram0[1] - sram0[0] == -(-measured // IMAGE_ALIGN) * IMAGE_ALIGN


def test_render_without_a_build_shares_the_memory_evenly(tmp_path: Path) -> None:
    """The pure `render` (a library project, or a caller of the Python API) has nothing
    measured: the images still get disjoint ranges, the memory's room split evenly."""
    board_path, workload_path = _write(tmp_path, AN521_SHARED_DATA)
    board = load_board(board_path)
    workload = Workload.from_file(workload_path)
    users = {c.buffer.name: c.users for c in resolve(board, workload)}
    files = render(board, plan(board, workload), users=users)
    for core in ("cpu0", "cpu1"):
        script = tmp_path / "memplace" / core / "linker.ld"
        script.parent.mkdir(parents=True)
        script.write_text(files[f"memplace/{core}/linker.ld"])
    (start0, end0), (start1, end1) = (_range(tmp_path, c, "ssram0") for c in ("cpu0", "cpu1"))
    assert start0 == 0x10000000 and end0 == start1 == 0x10200000 and end1 == 0x10400000 - 128
