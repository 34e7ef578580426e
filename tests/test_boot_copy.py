"""Images copied at boot (`layout.copy`): vectors and code that run from RAM or TCM while
the image is programmed elsewhere, copied by the core's own reset code, by the core that
releases it, or by the boot ROM. Loader rules, generated files, real builds and QEMU runs,
and the checks `verify` makes of every load copy."""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from conftest import AN521_COPIED_CPU1, PATIENCE, cli_error, has_toolchain, run_cli
from memplace import contract
from memplace.board import Board, load_board
from memplace.project_files import run_record

WORKLOAD = """\
memplace: workload/v1
name: small
steps: [a, b, c]
buffers:
  - {name: x, size: 1024, live: [a, b]}
  - {name: y, size: 2048, live: [b, c]%s}
constants:
  - {name: w, size: 300}
"""

# An ISR context the exerciser raises: it reaches its handler only through the vector
# table VTOR points at, the copy.
TICK = """\
contexts:
  tick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 1}
"""

# AN385 with its image programmed in SSRAM1 (where QEMU boots) and run from SSRAM2&3.
AN385_FROM_RAM = (
    """\
memplace: board/v1
extends: qemu-mps2-an385
name: an385-code-in-ram
cores:
  cpu0:
    layout: {vectors: ssram23, code: ssram23, data: ssram23, load: ssram1, copy: reset}
"""
    + TICK
)

# AN547 (Cortex-M55) with its image programmed in ITCM (where QEMU boots) and run from SRAM.
AN547_FROM_SRAM = (
    """\
memplace: board/v1
extends: qemu-mps3-an547
name: an547-code-in-sram
cores:
  cpu0:
    layout: {vectors: sram, code: sram, data: dtcm, load: itcm, copy: reset}
"""
    + TICK
)


# The i.MX RT1176 with the M7's image copied into ITCM by the boot ROM (non-XIP boot).
RT1176_ROM_COPY = """\
memplace: board/v1
extends: imxrt1176
name: imxrt1176-rom-copy
cores:
  cm7:
    layout: {vectors: itcm, code: itcm, data: dtcm, load: flash, copy: boot-rom}
"""

needs_toolchain = pytest.mark.skipif(not has_toolchain(), reason="needs arm-none-eabi-gcc, QEMU")


def _sections(elf_path: Path) -> dict[str, tuple[int, int, int]]:
    """name -> (run address, load address, size) of every allocated section."""
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        found = {}
        for section in elf.iter_sections():
            if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or not section["sh_size"]:
                continue
            lma = section["sh_addr"]
            for segment in loads:
                if section["sh_type"] != "SHT_NOBITS" and segment.section_in_segment(section):
                    lma = segment["p_paddr"] + section["sh_addr"] - segment["p_vaddr"]
            found[section.name] = (section["sh_addr"], lma, section["sh_size"])
        return found


def _inside(board: Board, core: str, memory: str, address: int) -> bool:
    start = board.memories[memory].address_for(core)
    return start <= address < start + board.memories[memory].size


# --- the loader ---------------------------------------------------------------------


BASE_AN547 = "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
BASE_AN385 = "memplace: board/v1\nextends: qemu-mps2-an385\nname: mine\n"
BASE_AN521 = "memplace: board/v1\nextends: qemu-mps2-an521\nname: mine\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {vectors: itcm, code: sram}\n",
            "board.yaml:6:35: cores.cpu0.layout.code: code runs from 'sram' but is programmed "
            "into 'itcm', and nothing is declared to copy it there; say what does (copy: reset, "
            "releaser, boot-rom) or set code: itcm",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {vectors: sram, code: sram, load: itcm}\n",
            "board.yaml:6:23: cores.cpu0.layout.vectors: the vector table must be in the load "
            "memory 'itcm', where the image is when the core starts; set vectors: itcm, or say "
            "what copies it there (copy: reset, releaser, boot-rom)",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {copy: reset}\n",
            "board.yaml:6:20: cores.cpu0.layout.copy: vectors and code are already in the load "
            "memory 'itcm': there is nothing to copy (data is copied at reset anyway); remove copy",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {code: itcm, vectors: itcm, load: sram, "
            "copy: reset}\n",
            "board.yaml:6:35: cores.cpu0.layout.vectors: vectors is copied into 'itcm' before it "
            "runs, but 'itcm' is 'rx'; add w to its attrs",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {vectors: sram, code: sram, load: itcm, "
            "copy: reset-code}\n",
            "board.yaml:6:59: cores.cpu0.layout.copy: 'reset-code' is not allowed; did you mean "
            "'reset'? valid: boot-rom, releaser, reset",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {vectors: sram, code: sram, load: itcm, "
            "copy: boot-rom}\n",
            "board.yaml:6:59: cores.cpu0.layout.copy: QEMU machine 'mps3-an547' has no boot ROM "
            "that copies images; use copy: reset",
        ),
        (
            BASE_AN547 + "cores:\n  cpu0:\n    layout: {vectors: sram, code: sram, load: itcm, "
            "copy: reset}\n    boot: 0x01000000\n",
            "board.yaml:7:11: cores.cpu0.boot: the boot address must lie in the load memory "
            "'itcm' [0x00000000, 0x00080000) as core 'cpu0' sees it",
        ),
        (
            BASE_AN385 + "cores:\n  cpu0:\n    cpu: cortex-m0\n    layout: {vectors: ssram23, "
            "code: ssram23, copy: reset}\n",
            "board.yaml:7:23: cores.cpu0.layout.vectors: cortex-m0 has no VTOR, so its vector "
            "table stays where it boots; set vectors: ssram1",
        ),
        (
            BASE_AN521 + "cores:\n  cpu0:\n    layout: {vectors: ssram0, code: ssram2, "
            "copy: releaser}\n",
            "board.yaml:6:51: cores.cpu0.layout.copy: copy: releaser needs a core that releases "
            "core 'cpu0'; add release: {by: CORE, steps: [...]}, or use copy: reset",
        ),
        (
            BASE_AN521 + "cores:\n  cpu1:\n    layout: {vectors: ssram2, code: ssram2, "
            "load: ssram1, copy: releaser}\nmemories:\n  ssram1: {access: [cpu1, dma]}\npools:\n"
            "  ssram2_ws: null\n",
            "board.yaml:6:51: cores.cpu1.layout.load: core 'cpu0' copies this image before it "
            "releases core 'cpu1', but cannot reach memory 'ssram1'; add cpu0 to its access list",
        ),
    ],
    ids=[
        "code in RAM with no copier",
        "vectors in RAM with no copier",
        "copy with nothing to copy",
        "copy into a read-only memory",
        "copier misspelt",
        "boot ROM under QEMU",
        "reset copy booting outside the load memory",
        "no VTOR to move",
        "releaser copy on a core nobody releases",
        "load memory the releaser cannot read",
    ],
)
def test_a_copy_nothing_can_do_is_one_line_with_its_place(
    text: str,
    message: str,
    write_yaml: Callable[[str, str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write_yaml("board.yaml", text)
    line = cli_error(capsys, "boards", "show", path)
    assert line.endswith(message), line


def test_a_boot_rom_starts_only_a_core_that_starts_at_reset(
    write_yaml: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(
        "board.yaml",
        "memplace: board/v1\nextends: imxrt1176\nname: mine\ncores:\n  cm4:\n"
        "    layout: {copy: boot-rom}\n",
    )
    line = cli_error(capsys, "boards", "show", path)
    assert line.endswith(
        "board.yaml:6:20: cores.cm4.layout.copy: a boot ROM starts only the cores that start "
        "at reset; core 'cm4' is released by 'cm7': use copy: releaser"
    ), line


def test_the_boot_rom_copies_one_block(
    write_yaml: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(
        "board.yaml",
        "memplace: board/v1\nextends: imxrt1176\nname: mine\ncores:\n  cm7:\n"
        "    layout: {vectors: itcm, code: ocram1, copy: boot-rom}\n",
    )
    line = cli_error(capsys, "boards", "show", path)
    assert line.endswith(
        "board.yaml:6:23: cores.cm7.layout.vectors: the boot ROM copies one block from "
        "'flash': put vectors and code in one memory (vectors: ocram1)"
    ), line


def test_copied_layouts_load_show_and_round_trip(write_yaml: Callable[[str, str], Path]) -> None:
    board = Board.from_file(write_yaml("board.yaml", AN385_FROM_RAM))
    core = board.cores["cpu0"]
    assert (core.layout.code, core.layout.load, core.layout.copy) == ("ssram23", "ssram1", "reset")
    assert core.boot == 0x00000000  # where it is programmed, not where .vectors runs
    again = Board.from_resolved(board.to_data())
    assert again.cores["cpu0"].layout == core.layout
    rt1176 = load_board("imxrt1176")
    assert rt1176.cores["cm7"].layout.copy == "reset"
    assert rt1176.cores["cm7"].boot == 0x30002000
    assert rt1176.cores["cm4"].layout.copy == "releaser"
    assert rt1176.cores["cm4"].boot == 0x1FFE0000


def test_the_schema_lists_the_copiers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema", "board")
    assert code == 0
    copy = json.loads(out)["$defs"]["layout"]["properties"]["copy"]
    assert copy["enum"] == ["reset", "releaser", "boot-rom"]
    assert "what copies vectors and code" in copy["description"]


# --- generated, built, run ----------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Callable[[str, str], tuple[Path, Path, Path]]:
    """Board and workload files in the test's folder, and where their project goes."""

    def make(board_text: str, users: str) -> tuple[Path, Path, Path]:
        board = tmp_path / "board.yaml"
        board.write_text(board_text)
        workload = tmp_path / "small.yaml"
        workload.write_text(WORKLOAD % users)
        return board, workload, tmp_path / "out"

    return make


@pytest.mark.qemu
@needs_toolchain
@pytest.mark.parametrize(
    ("text", "run_memory", "load_memory"),
    [(AN385_FROM_RAM, "ssram23", "ssram1"), (AN547_FROM_SRAM, "sram", "itcm")],
    ids=["mps2-an385", "mps3-an547"],
)
def test_code_copied_to_ram_by_the_reset_code_runs_under_qemu(
    text: str,
    run_memory: str,
    load_memory: str,
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(text, "")
    code, stdout, err = run_cli(capsys, "check", board_file, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout
    assert "ISR tick lands on it" in stdout
    board = Board.from_file(board_file)
    sections = _sections(out / "build" / "cpu0.elf")
    for name in (contract.VECTORS, ".text"):
        run, load, _ = sections[name]
        assert _inside(board, "cpu0", run_memory, run), name
        assert _inside(board, "cpu0", load_memory, load), name
    # The core boots on a table where the image is programmed, whose reset handler runs there.
    assert sections[contract.BOOT_VECTORS][:2] == (0x0, 0x0)
    boot_run, boot_load, _ = sections[contract.BOOT]
    assert boot_run == boot_load and _inside(board, "cpu0", load_memory, boot_run)
    startup = (out / "memplace" / "cpu0" / "startup.c").read_text()
    assert '"    ldr   r1, =0xE000ED08\\n" /* VTOR */' in startup


# AN385 whose vector table stays where the image is programmed and only its code moves.
AN385_CODE_IN_RAM = (
    """\
memplace: board/v1
extends: qemu-mps2-an385
name: an385-only-code-in-ram
cores:
  cpu0:
    layout: {vectors: ssram1, code: ssram23, data: ssram23, load: ssram1, copy: reset}
"""
    + TICK
)

# AN521: both images programmed in SSRAM0, one after the other, each copied out by its own
# reset code; CPU1's image starts at its `boot`, where CPU0 points INITSVTOR1.
AN521_TWO_COPIES = """\
memplace: board/v1
extends: qemu-mps2-an521
name: an521-two-copies
cores:
  cpu0:
    layout: {vectors: ssram2, code: ssram2, data: ssram2, load: ssram0, copy: reset}
  cpu1:
    layout: {vectors: ssram1, code: ssram1, data: ssram1, load: ssram0, copy: reset}
    boot: 0x10100000
    release:
      by: cpu0
      steps:
        - {write: 0x50021114, value: 0x10100000}
        - {clear: 0x50021118, mask: 0x2}
pools:
  ssram2_ws: null
"""


@pytest.mark.qemu
@needs_toolchain
def test_a_vector_table_left_in_the_load_memory_is_where_the_core_boots(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN385_CODE_IN_RAM, "")
    code, stdout, err = run_cli(capsys, "check", board_file, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "ISR tick lands on it" in stdout
    sections = _sections(out / "build" / "cpu0.elf")
    assert sections[contract.VECTORS][:2] == (0x0, 0x0)  # first, where the core boots
    assert sections[contract.BOOT][0] > sections[contract.VECTORS][0]


@pytest.mark.qemu
@needs_toolchain
def test_two_images_copied_out_of_one_load_memory_each_start_at_their_boot(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN521_TWO_COPIES, ", users: [main1]")
    code, stdout, err = run_cli(capsys, "check", board_file, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout
    assert _sections(out / "build" / "cpu1.elf")[contract.BOOT_VECTORS][:2] == (
        0x10100000,
        0x10100000,
    )


@pytest.mark.qemu
@needs_toolchain
def test_verify_finds_a_boot_table_that_is_not_at_the_cores_boot(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """QEMU starts an AN385 at 0 whatever the board says; a board whose core starts
    elsewhere gets a linked image that a real one would not boot."""
    text = AN385_FROM_RAM.replace("copy: reset}", "copy: reset}\n    boot: 0x400")
    board_file, workload, out = project(text, "")
    code, stdout, _ = run_cli(capsys, "check", board_file, workload, "--out", out)
    assert code == 1
    assert (
        "FAIL vectors cpu0: memplace_boot_vectors is at 0x00000000, but core cpu0 starts "
        "from the vector table at 0x00000400 (its `boot`)"
    ) in stdout


@pytest.mark.qemu
@needs_toolchain
def test_a_startup_that_leaves_vtor_on_the_boot_table_faults_at_the_first_interrupt(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN385_FROM_RAM, "")
    assert run_cli(capsys, "generate", board_file, workload, "--out", out)[0] == 0
    startup = out / "memplace" / "cpu0" / "startup.c"
    store = '"    str   r0, [r1]\\n"'
    assert startup.read_text().count(store) == 1
    startup.write_text(startup.read_text().replace(store, '"    nop\\n"'))
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "run", out, "--timeout", f"{PATIENCE:g}")
    # SysTick lands in memplace_boot_fault, which ends the run as a fault.
    assert code == 125, stdout
    assert "run: FAILED (exit code 125)" in stdout


@pytest.mark.qemu
@needs_toolchain
def test_an_image_its_releaser_copies_runs_under_qemu(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN521_COPIED_CPU1, ", users: [main1]")
    code, stdout, err = run_cli(capsys, "check", board_file, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "stack main1: measured" in stdout
    board = Board.from_file(board_file)
    sections = _sections(out / "build" / "cpu1.elf")
    for name in (contract.VECTORS, ".text"):
        run, load, _ = sections[name]
        assert _inside(board, "cpu1", "ssram2", run), name
        assert _inside(board, "cpu1", "ssram1", load), name
    assert sections[contract.RELEASE_TABLE][0] == 0x38000000
    startup = (out / "memplace" / "cpu0" / "startup.c").read_text()
    assert "memplace_copy_released((const volatile uint32_t *)0x38000000u)" in startup


@pytest.mark.qemu
@needs_toolchain
def test_a_released_image_never_programmed_fails_the_run(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN521_COPIED_CPU1, ", users: [main1]")
    assert run_cli(capsys, "generate", board_file, workload, "--out", out)[0] == 0
    assert run_cli(capsys, "build", out)[0] == 0
    # The release table's magic word, gone: as if CPU1's image had never been programmed.
    _patch_section(out / "build" / "cpu1.elf", contract.RELEASE_TABLE, 0, b"\0\0\0\0")
    code, stdout, err = run_cli(capsys, "run", out)
    assert code == 1, stdout + err
    console = json.loads(run_record(out).read_text())["output"]
    assert "memplace: fail core cpu1 image missing from its load memory" in console
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 1
    assert "the image has no release table for core cpu0 to copy it by" in stdout


@needs_toolchain
def test_the_boot_rom_copy_is_written_into_the_linker_script_and_checked(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(RT1176_ROM_COPY, ", users: [main_m4]")
    assert run_cli(capsys, "generate", board_file, workload, "--out", out)[0] == 0
    script = (out / "memplace" / "cm7" / "linker.ld").read_text()
    assert f"{contract.ROM_COPY_LOAD} = LOADADDR({contract.VECTORS});" in script
    assert f"{contract.ROM_COPY_RUN} = ADDR({contract.VECTORS});" in script
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 0, stdout
    symbols = _symbols(out / "build" / "cm7.elf")
    sections = _sections(out / "build" / "cm7.elf")
    assert symbols[contract.ROM_COPY_LOAD] == sections[contract.VECTORS][1] == 0x30002000
    assert symbols[contract.ROM_COPY_RUN] == sections[contract.VECTORS][0] == 0x00000000
    text_end = sections[".text"][0] + sections[".text"][2]
    assert symbols[contract.ROM_COPY_SIZE] >= text_end
    # The same image with .text loaded apart from the block the ROM copies.
    elf = out / "build" / "cm7.elf"
    subprocess.run(
        ["arm-none-eabi-objcopy", "--change-section-lma", ".text+0x100", str(elf)], check=True
    )
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 1
    # .text follows the M7's table of 16 + 218 entries: at 0x3a8 in ITCM, 0x300023a8 in flash.
    run_at, load_at = sections[".text"][0], sections[".text"][1] + 0x100
    assert (run_at, load_at) == (0x000003A8, 0x300024A8)
    assert f"which does not carry .text from 0x{load_at:08x} to 0x{run_at:08x}" in stdout


@needs_toolchain
def test_verify_catches_a_load_copy_whose_bytes_differ(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN385_FROM_RAM, "")
    assert run_cli(capsys, "generate", board_file, workload, "--out", out)[0] == 0
    assert run_cli(capsys, "build", out)[0] == 0
    assert run_cli(capsys, "verify", out)[0] == 0
    # The program header of the segment that loads .text now points 4 bytes further into
    # the file: what is programmed at .text's load address is no longer .text.
    elf = out / "build" / "cpu0.elf"
    _, text_load, _ = _sections(elf)[".text"]
    _shift_segment(elf, text_load, 4)
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 1, stdout
    assert "FAIL load-copy .text: the bytes loaded at " in stdout
    assert "differ from .text's contents: the copy would run something else" in stdout


def _symbols(elf_path: Path) -> dict[str, int]:
    with elf_path.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".symtab")
        return {s.name: s["st_value"] for s in table.iter_symbols()}  # type: ignore[union-attr]


def _patch_section(elf_path: Path, name: str, offset: int, data: bytes) -> None:
    with elf_path.open("rb") as stream:
        section = ELFFile(stream).get_section_by_name(name)
        assert section is not None
        at = section["sh_offset"] + offset
    raw = bytearray(elf_path.read_bytes())
    raw[at : at + len(data)] = data
    elf_path.write_bytes(bytes(raw))


def _shift_segment(elf_path: Path, paddr: int, by: int) -> None:
    """Moves the file offset of the loadable segment that starts at or holds `paddr`."""
    with elf_path.open("rb") as stream:
        elf = ELFFile(stream)
        phoff, phentsize = elf.header["e_phoff"], elf.header["e_phentsize"]
        index = next(
            i
            for i, s in enumerate(elf.iter_segments())
            if s["p_type"] == "PT_LOAD" and s["p_paddr"] <= paddr < s["p_paddr"] + s["p_filesz"]
        )
    raw = bytearray(elf_path.read_bytes())
    at = phoff + index * phentsize + 4  # p_offset, after p_type
    (offset,) = struct.unpack_from("<I", raw, at)
    struct.pack_into("<I", raw, at, offset + by)
    elf_path.write_bytes(bytes(raw))


@needs_toolchain
def test_verify_catches_code_copied_to_another_memory_than_its_layout_names(
    project: Callable[[str, str], tuple[Path, Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    board_file, workload, out = project(AN385_FROM_RAM, "")
    assert run_cli(capsys, "generate", board_file, workload, "--out", out)[0] == 0
    # A hand-edited linker script that runs .text from PSRAM, still loaded in SSRAM1.
    script = out / "memplace" / "cpu0" / "linker.ld"
    text_region = "__fini_array_end = .);\n    . = ALIGN(4);\n  } > ssram23 AT > ssram1"
    assert script.read_text().count(text_region) == 1
    script.write_text(
        script.read_text().replace(text_region, text_region.replace("ssram23", "pool_psram_ws"))
    )
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out)
    assert code == 1
    assert "FAIL load-copy .text: .text runs at [0x21000000, " in stdout
    assert "outside its run memory ssram23" in stdout


def test_boards_show_says_who_copies_each_image(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "boards", "show", "imxrt1176")
    assert code == 0
    assert (
        "core cm7 (cortex-m7, float hard): boots at 0x30002000, starts at reset; vectors and "
        "code copied from flash by its reset code"
    ) in out
    assert (
        "core cm4 (cortex-m4, float hard): boots at 0x1ffe0000, released by cm7; vectors and "
        "code copied from flash_cm4 by core cm7"
    ) in out
    code, out, _ = run_cli(capsys, "boards", "show", "imxrt1176", "--json")
    cores = json.loads(out)["cores"]
    assert (cores["cm7"]["copy"], cores["cm4"]["copy"]) == ("reset", "releaser")
