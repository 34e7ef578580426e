"""Several cores running one image (`cores.<c>.image`): the loader's rules, each refusal
as a user meets it, and the image built, run under QEMU and verified."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from conftest import PATIENCE, cli_error, run_cli
from memplace import contract
from memplace.board import load_board
from memplace.project_files import BUILD_DIR
from memplace.schema import board_schema

REPO = Path(__file__).resolve().parent.parent

WORKLOAD = """\
memplace: workload/v1
name: duo
steps: [s0, s1, s2]
buffers:
  - {name: a, size: 4K, live: [s0, s1], users: [main]}
  - {name: b, size: 2K, live: [s1, s2], users: [main1]}
  - {name: shared, size: 1K, live: [s0, s2], users: [main, main1]}
  - {name: tmp, size: 256, live: [s1, s1], scope: local, users: [main1]}
"""

# Two Cortex-M33 of QEMU's mps2-an521 that run one image from SSRAM0: cpu0 releases cpu1
# by pointing INITSVTOR1 at cpu1's vector table in that image (2K past cpu0's).
CPU1 = """\
  cpu1:
    cpu: cortex-m33
    image: cpu0
    release:
      by: cpu0
      steps:
        - {write: 0x50021114, value: 0x10000800}
        - {clear: 0x50021118, mask: 0x2}
"""


def _board(cpu1: str = CPU1, entry1: str = "main1", extra: str = "", views: str = "") -> str:
    image_access = "cpu0, cpu1, cpu2" if "cpu2" in extra else "cpu0, cpu1"
    return f"""\
memplace: board/v1
name: an521-one-image
cores:
  cpu0:
    cpu: cortex-m33
    float_abi: hard
    layout: {{vectors: ssram0, code: ssram0, data: ssram0, load: ssram0}}
{cpu1}{extra}memories:
  ssram0: {{origin: 0x10000000, size: 4M, attrs: rwx, kind: sram, access: [{image_access}]}}
  sram:   {{origin: 0x30000000, size: 128K, attrs: rwx, kind: sram, access: [cpu0, cpu1]{views}}}
pools:
  sram_ws: {{memory: sram, size: 96K, kind: workspace}}
contexts:
  main: {{core: cpu0, entry: main, stack: {{memory: sram, size: 8K}}}}
  main1: {{core: cpu1, entry: {entry1}, stack: {{memory: sram, size: 8K}}}}
run:
  qemu: {{machine: mps2-an521}}
"""


CPU2 = """\
  cpu2:
    cpu: cortex-m33
    float_abi: hard
    layout: {vectors: ssram0, code: ssram0, data: ssram0, load: ssram0}
    release: {by: cpu0, steps: [{write: 0x50021114, value: 0x10000000}]}
"""


def _files(tmp_path: Path, board: str) -> tuple[Path, Path]:
    path = tmp_path / "board.yaml"
    path.write_text(board)
    workload = tmp_path / "duo.yaml"
    workload.write_text(WORKLOAD)
    return path, workload


def _refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, board: str, line: int, message: str
) -> None:
    path, workload = _files(tmp_path, board)
    error = cli_error(capsys, "plan", path, workload)
    assert re.match(rf"memplace: error: {re.escape(str(path))}:{line}:\d+: ", error), error
    assert message in error, error


@pytest.mark.parametrize(
    ("cpu1", "line", "message"),
    [
        (
            CPU1.replace("image: cpu0", "image: cpu9"),
            10,
            "no core 'cpu9'; did you mean 'cpu0'?",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu1"),
            10,
            "core 'cpu1' names itself; a core runs its own image without `image`",
        ),
        (
            CPU1.replace("cortex-m33", "cortex-m4"),
            9,
            "one image is built for one cpu: core 'cpu0' is cortex-m33, so core 'cpu1' cannot "
            "run its image as cortex-m4",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu0\n    float_abi: soft"),
            11,
            "one image has one float ABI: core 'cpu0' uses hard, not soft",
        ),
        (
            CPU1.replace(
                "image: cpu0", "image: cpu0\n    layout: {vectors: sram, code: sram, data: sram}"
            ),
            11,
            "core 'cpu1' runs the image of core 'cpu0', whose layout says where it goes; "
            "remove `layout`",
        ),
        (
            CPU1[: CPU1.index("    release")],
            9,
            "core 'cpu1' runs the image of core 'cpu0', which starts it once the image's data "
            "is set up: add release: {by: cpu0, ...}",
        ),
        (
            CPU1.replace("    image: cpu0\n", ""),
            9,
            "core 'cpu1' needs a `layout` (where its image goes), or `image: CORE` to run "
            "another core's image",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu0\n    boot: 0x10000000"),
            11,
            "the vector table of core 'cpu1' goes after that of core 'cpu0', which starts at "
            "0x10000000",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu0\n    interrupts: 481"),
            11,
            "a cortex-m33 has at most 480 device interrupt lines, got 481",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu0\n    interrupts: 32\n    boot: 0x10000880"),
            12,
            "a vector table of 48 entries starts on a 256-byte boundary (VTOR); core 'cpu1' "
            "boots from 0x10000880",
        ),
        (
            CPU1.replace("image: cpu0", "image: cpu0\n    boot: 0x10000400").replace(
                "0x10000800", "0x10000400"
            ),
            12,
            "the vector table of core 'cpu0' (496 entries from 0x10000000) runs into the vector "
            "table of core 'cpu1' at 0x10000400; set `boot` of core 'cpu1' further on",
        ),
    ],
    ids=[
        "unknown",
        "itself",
        "other-cpu",
        "other-float-abi",
        "layout",
        "no-release",
        "neither",
        "boot-before",
        "too-many-lines",
        "table-unaligned",
        "owner-table-too-long",
    ],
)
def test_a_core_running_another_cores_image_is_refused_where_the_board_says_wrong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cpu1: str, line: int, message: str
) -> None:
    board = _board(cpu1)
    if "core 'cpu0' (496 entries" in message:  # cpu0's own table takes the most lines
        board = board.replace("float_abi: hard\n", "float_abi: hard\n    interrupts: 480\n", 1)
    _refused(capsys, tmp_path, board, line, message)


def test_a_joining_cores_vector_table_ends_before_the_next_one_in_the_image(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each table of the image sits where its release starts it: 480 lines on cpu1 take
    1984 bytes from 0x10000800, past where cpu2's table starts."""
    cpu2 = (
        "  cpu2:\n    cpu: cortex-m33\n    image: cpu0\n    boot: 0x10000c00\n"
        "    release: {by: cpu0, steps: [{write: 0x50021114, value: 0x10000c00}]}\n"
    )
    board = _board(CPU1.replace("image: cpu0", "image: cpu0\n    interrupts: 480"), extra=cpu2)
    _refused(
        capsys,
        tmp_path,
        board,
        11,
        "cores.cpu1.interrupts: the vector table of core 'cpu1' (496 entries from 0x10000800) "
        "runs into the vector table of core 'cpu2' at 0x10000c00; give core 'cpu1' fewer "
        "interrupt lines, or a `boot` with room for them",
    )


def test_a_joining_core_with_lines_needs_its_default_table_on_its_vtor_boundary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """cpu0 boots from 0x10000080, so cpu1's table goes 2K on, at 0x10000880: 48 entries
    need a 256-byte boundary there, said at cpu1's `interrupts`."""
    board = _board(CPU1.replace("image: cpu0", "image: cpu0\n    interrupts: 32")).replace(
        "float_abi: hard\n", "float_abi: hard\n    boot: 0x10000080\n", 1
    )
    _refused(
        capsys,
        tmp_path,
        board,
        12,
        "cores.cpu1.interrupts: a vector table of 48 entries starts on a 256-byte boundary "
        "(VTOR); core 'cpu1' boots from 0x10000880",
    )


def test_an_isr_of_a_joining_core_needs_lines_on_that_core(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """cpu0's lines are cpu0's NVIC's: cpu1 declares its own."""
    board = _with_device_isrs(_board()).replace(
        "image: cpu0\n    interrupts: 124\n", "image: cpu0\n"
    )
    path, workload = _files(tmp_path, board)
    error = cli_error(capsys, "plan", path, workload)
    line = board.splitlines().index("    irq: 8") + 1
    assert re.match(rf"memplace: error: {re.escape(str(path))}:{line}:\d+: ", error), error
    assert (
        "contexts.dev1.irq: core 'cpu1' declares no device interrupt lines; add "
        "`interrupts: N` to it"
    ) in error, error


def test_a_core_cannot_join_an_image_copied_at_boot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board = _board().replace(
        "data: ssram0, load: ssram0}", "data: ssram0, load: ssram0, copy: reset}"
    )
    board = board.replace("{vectors: ssram0, code: ssram0", "{vectors: sram, code: sram", 1)
    _refused(
        capsys,
        tmp_path,
        board,
        10,
        "core 'cpu0' runs its image after copying it at boot (copy: reset); a second core "
        "cannot join a copied image yet: give core 'cpu1' an image of its own",
    )


def test_a_core_cannot_run_an_image_that_is_itself_shared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    chained = CPU2.replace(
        "    float_abi: hard\n    layout: {vectors: ssram0, code: ssram0, data: ssram0, "
        "load: ssram0}\n",
        "    image: cpu1\n",
    )
    _refused(
        capsys,
        tmp_path,
        _board(extra=chained),
        18,
        "core 'cpu1' itself runs another core's image; name the core whose image it is",
    )


def test_the_core_whose_image_it_is_releases_the_core_that_runs_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cpu1 = CPU1.replace("by: cpu0", "by: cpu2")
    _refused(
        capsys,
        tmp_path,
        _board(
            cpu1,
            extra=CPU2.replace(
                "    release: {by: cpu0, steps: [{write: 0x50021114, value: 0x10000000}]}\n", ""
            ),
        ),
        12,
        "core 'cpu1' runs the image of core 'cpu0': core 'cpu0' releases it, after its "
        "reset code has set the image's data up",
    )


def test_contexts_of_one_image_need_entries_of_their_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _refused(
        capsys,
        tmp_path,
        _board(entry1="main"),
        23,
        "context 'main' of core 'cpu0' already starts at main() in the image core 'cpu1' runs "
        "too; give this context an entry of its own (entry: NAME)",
    )


def test_a_core_must_reach_and_see_the_image_as_its_owner_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _refused(
        capsys,
        tmp_path,
        _board(views=", views: {cpu1: 0x20000000}"),
        10,
        "cores 'cpu0' and 'cpu1' see memory 'sram' at different addresses, so one image "
        "cannot serve both",
    )
    unreached = _board().replace(
        "kind: sram, access: [cpu0, cpu1]}\n  sram:", "kind: sram, access: [cpu0]}\n  sram:"
    )
    _refused(
        capsys,
        tmp_path,
        unreached,
        10,
        "core 'cpu1' cannot access memory 'ssram0', which holds the image of core 'cpu0'",
    )


@pytest.mark.qemu
def test_two_cores_run_one_image_under_qemu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, workload = _files(tmp_path, _board())
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", path, workload, "--out", out, "--json")
    assert code == 0, stdout + err
    # One image: cpu1's vector table in it, at the address its release writes to INITSVTOR1.
    assert sorted(p.name for p in (out / BUILD_DIR).glob("*.elf")) == ["cpu0.elf"]
    assert not (out / "memplace/cpu1/linker.ld").exists()
    board = load_board(path)
    with (out / BUILD_DIR / "cpu0.elf").open("rb") as stream:
        elf = ELFFile(stream)
        table = elf.get_section_by_name(contract.vectors_section("cpu1"))
        assert table is not None and table["sh_addr"] == 0x10000800 == board.cores["cpu1"].boot
        sp, _reset = struct.unpack("<II", table.data()[:8])
        stack = board.contexts["main1"].stack
        assert stack is not None and sp == stack.address + stack.size
    report = json.loads(stdout)
    assert report["ok"], report
    stacks = {s["context"]: s for s in report["stacks"]}
    # Both cores ran and painted their own stacks; each measured mark is under its bound.
    for context in ("main", "main1"):
        measured, bound = stacks[context]["measured"], stacks[context]["static_bound"]
        assert measured is not None and 0 < measured <= bound, stacks[context]
    assert stacks["main1"]["planned"] == 256
    run = (out / BUILD_DIR / "run.json").read_text()
    assert "begin duo on an521-one-image core cpu1" in run


@pytest.mark.qemu
def test_the_rp2040_builds_one_image_both_cores_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As the Pico SDK builds it: one ELF; core 1 launched over the SIO FIFO with its own
    vector table, stack pointer and entry, all in that image."""
    _, workload = _files(tmp_path, _board())
    out = tmp_path / "rp"
    assert run_cli(capsys, "generate", "rp2040", workload, "--out", out)[0] == 0
    assert not (out / "memplace/core1/linker.ld").exists()
    startup = (out / "memplace/core0/startup.c").read_text()
    assert "memplace_launch_core1(0x10000900u, (const volatile uint32_t *)0x10000900u);" in startup
    assert run_cli(capsys, "build", out)[0] == 0
    assert sorted(p.name for p in (out / BUILD_DIR).glob("*.elf")) == ["core0.elf"]
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 0, stdout
    report = json.loads(stdout)
    bounds = {s["context"]: s["static_bound"] for s in report["stacks"]}
    assert bounds["main"] > 0 and bounds["main1"] > 0
    with (out / BUILD_DIR / "core0.elf").open("rb") as stream:
        elf = ELFFile(stream)
        table = elf.get_section_by_name(contract.vectors_section("core1"))
        assert table is not None and table["sh_addr"] == 0x10000900
        sp, reset = struct.unpack("<II", table.data()[:8])
        symbols = elf.get_section_by_name(".symtab")
        assert isinstance(symbols, SymbolTableSection)
        names = {s.name: s["st_value"] for s in symbols.iter_symbols()}
    # Core 1 starts on the top of its SCRATCH_X stack, in its own reset code.
    assert sp == 0x20041000 == names["__memplace_stack_main1_end"]
    assert reset & ~1 == names["memplace_core1_reset"] & ~1
    assert "core1_entry" in names and "memplace_core1_write" in names
    shown = run_cli(capsys, "boards", "show", "rp2040")[1]
    assert "boots at 0x10000900, released by core0, runs the image of core0" in shown


@pytest.mark.qemu
def test_the_rp2040s_core1_wires_its_own_device_interrupt_in_the_shared_image(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each RP2040 core has its own NVIC with lines 0..25: core1's isr on SIO_IRQ_PROC1 (line
    16) is wired in core1's table, 2K past core0's, and counted on core1's stack."""
    _, workload = _files(tmp_path, _board())
    board = tmp_path / "rp.yaml"
    board.write_text(
        "memplace: board/v1\nextends: rp2040\nname: rp2040-fifo-irq\ncontexts:\n"
        "  fifo1: {core: core1, kind: isr, entry: SIO_IRQ_PROC1_Handler, irq: 16, "
        "preempts: [main1], priority: 1}\n"
    )
    out = tmp_path / "rp"
    assert run_cli(capsys, "generate", board, workload, "--out", out)[0] == 0
    startup = (out / "memplace/core1/startup.c").read_text()
    # Priority 1 in the top 2 bits of byte 16 of core1's own NVIC_IPR (an M0+ has 2 bits).
    assert "(*(volatile uint32_t *)0xe000e410u & ~0x000000ffu) | 0x00000040u;" in startup
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 0, stdout
    stacks = {s["context"]: s for s in json.loads(stdout)["stacks"]}
    assert [i["context"] for i in stacks["main1"]["interrupts"]] == ["fifo1"]
    assert stacks["main"]["interrupts"] == []
    with (out / BUILD_DIR / "core0.elf").open("rb") as stream:
        elf = ELFFile(stream)
        table = elf.get_section_by_name(contract.vectors_section("core1"))
        own = elf.get_section_by_name(contract.VECTORS)
        assert table is not None and own is not None
        assert table["sh_addr"] == 0x10000900 and table.data_size == (16 + 26) * 4
        assert own.data_size == (16 + 26) * 4
        line16 = struct.unpack_from("<I", table.data(), 4 * (16 + 16))[0]
        symbols = elf.get_section_by_name(".symtab")
        assert isinstance(symbols, SymbolTableSection)
        names = {s.name: s["st_value"] for s in symbols.iter_symbols()}
    assert line16 == names["SIO_IRQ_PROC1_Handler"] | 1


def test_a_moved_vector_table_is_a_verify_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The release points at `boot`: an image whose table for the joining core is elsewhere
    would start it on garbage."""
    path, workload = _files(tmp_path, _board())
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", path, workload, "--out", out)[0] == 0
    script = out / "memplace/cpu0/linker.ld"
    joined = contract.vectors_section("cpu1")
    script.write_text(script.read_text().replace(f"{joined} 0x10000800", f"{joined} 0x10000c00"))
    assert run_cli(capsys, "build", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 1
    messages = [f["message"] for f in json.loads(stdout)["findings"] if f["check"] == "vectors"]
    assert messages == [
        "memplace_vectors_cpu1 is at 0x10000c00, but core cpu1's release starts it from 0x10000800"
    ]


@pytest.mark.qemu
def test_worker_threads_and_isrs_run_on_both_cores_of_one_image(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each core of the image raises its own ISR context over its own stack and walks the
    steps on its own worker threads; the image holds one function of each name."""
    board = (
        _board()
        .replace("size: 96K, kind: workspace", "size: 64K, kind: workspace")
        .replace(
            "entry: main, stack: {memory: sram, size: 8K}",
            "entry: main, threads: 1, stack: {memory: sram, size: 8K}",
        )
        .replace(
            "entry: main1, stack: {memory: sram, size: 8K}",
            "entry: main1, threads: 1, stack: {memory: sram, size: 8K}",
        )
        .replace(
            "run:\n",
            "  tick0: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], "
            "priority: 1}\n"
            "  tick1: {core: cpu1, kind: isr, entry: PendSV_Handler, preempts: [main1], "
            "priority: 1}\n"
            "run:\n",
        )
    )
    path, workload = _files(tmp_path, board)
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", path, workload, "--out", out, "--json")
    assert code == 0, stdout + err
    report = json.loads(stdout)
    stacks = {s["context"]: s for s in report["stacks"]}
    assert sorted(stacks) == ["main", "main.thread0", "main1", "main1.thread0"]
    for stack in stacks.values():
        assert stack["measured"] is not None and stack["measured"] <= stack["static_bound"]
    # Each ISR lands on the stack of its own core's context.
    assert [i["context"] for i in stacks["main"]["interrupts"]] == ["tick0"]
    assert [i["context"] for i in stacks["main1"]["interrupts"]] == ["tick1"]
    hints = (out / "memplace/stack_hints/exerciser.yaml").read_text()
    assert "{caller: memplace_cpu1_run_on_stack, targets: []}" in hints


@pytest.mark.qemu
def test_an_app_image_calls_app_main_on_its_owner_and_the_context_entry_on_the_other_core(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, workload = _files(tmp_path, _board())
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "app.c").write_text(
        '#include "memplace_runtime.h"\n'
        'int app_main(void) { memplace_write("app on cpu0\\n"); return 0; }\n'
        'int main1(void) { memplace_cpu1_write("app on cpu1\\n"); return 0; }\n'
    )
    out = tmp_path / "p"
    argv = ("check", path, workload, "--out", out, "--project-type", "app", "--sources", sources)
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 0, stdout + err
    run = json.loads((out / BUILD_DIR / "run.json").read_text())["output"]
    assert "app on cpu0\n" in run and "app on cpu1\n" in run


# Both M33s of the AN521 have an NVIC of their own, with line 8 on each: cpu0 wires its
# line 8 to dev0, cpu1 its own line 8 to dev1, which nests over cpu1's PendSV isr.
DEVICE_ISRS = """\
  dev0: {core: cpu0, kind: isr, entry: DEV0_Handler, irq: 8, preempts: [main], priority: 1}
  tick1: {core: cpu1, kind: isr, entry: PendSV_Handler, preempts: [main1], priority: 2}
  dev1:
    core: cpu1
    kind: isr
    entry: DEV1_Handler
    irq: 8
    preempts: [main1, tick1]
    priority: 1
"""
WINDOW = "  - {name: window1, size: 512, live: [s0, s2], scope: main1.stack}\n"


def _with_device_isrs(board: str) -> str:
    board = board.replace("float_abi: hard\n", "float_abi: hard\n    interrupts: 124\n", 1)
    board = board.replace("image: cpu0\n", "image: cpu0\n    interrupts: 124\n", 1)
    return board.replace("run:\n", DEVICE_ISRS + "run:\n")


@pytest.mark.qemu
def test_a_joining_core_takes_device_interrupts_on_its_own_lines_under_qemu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """cpu1 runs cpu0's image from its own table of 16 + 124 entries; its reset code sets
    dev1's priority in its own NVIC, and its exerciser raises line 8 there inside tick1,
    so both frames land on main1's stack over its planned stack buffer."""
    plain_path, workload = _files(tmp_path, _board())
    workload.write_text(WORKLOAD + WINDOW)
    plain = run_cli(capsys, "check", plain_path, workload, "--out", tmp_path / "plain", "--json")
    assert plain[0] == 0, plain[1] + plain[2]
    path = tmp_path / "irq.yaml"
    path.write_text(_with_device_isrs(_board()))
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", path, workload, "--out", out, "--json")
    assert code == 0, stdout + err
    report = json.loads(stdout)
    assert report["ok"] and not report["findings"], report

    startup = (out / "memplace/cpu1/startup.c").read_text()
    assert "memplace_vectors_cpu1[140] = {" in startup
    assert "    DEV1_Handler, /* irq 8 */\n" in startup
    assert len(re.findall(r"    Interrupt(\d+)_Handler, /\* irq \1 \*/", startup)) == 123
    # Priority 1 in the top 3 bits of byte 8 of cpu1's own NVIC_IPR.
    assert "(*(volatile uint32_t *)0xe000e408u & ~0x000000ffu) | 0x00000020u;" in startup
    exerciser = (out / "src/exerciser_cpu1.c").read_text()
    assert "*(volatile uint32_t *)0xe000e200u = 0x00000100u; /* raise dev1 inside */" in exerciser

    elf = out / BUILD_DIR / "cpu0.elf"
    with elf.open("rb") as stream:
        image = ELFFile(stream)
        symbols = image.get_section_by_name(".symtab")
        assert isinstance(symbols, SymbolTableSection)
        named = [s for s in symbols.iter_symbols() if s.name]
        table = image.get_section_by_name(contract.vectors_section("cpu1"))
        assert table is not None and table["sh_addr"] == 0x10000800
        assert table.data_size == (16 + 124) * 4
        cpu1_line8 = struct.unpack_from("<I", table.data(), 4 * (16 + 8))[0]
        own = image.get_section_by_name(contract.VECTORS)
        assert own is not None
        cpu0_line8 = struct.unpack_from("<I", own.data(), 4 * (16 + 8))[0]
    # One function of each name in the image: each core's line 8 goes to its own isr.
    address = {s.name: s["st_value"] for s in named}
    assert [s.name for s in named].count("DEV1_Handler") == 1
    assert cpu1_line8 == address["DEV1_Handler"] | 1
    assert cpu0_line8 == address["DEV0_Handler"] | 1

    stacks = {s["context"]: s for s in report["stacks"]}
    before = {s["context"]: s for s in json.loads(plain[1])["stacks"]}["main1"]
    main1 = stacks["main1"]
    costs = {i["context"]: i["bytes"] for i in main1["interrupts"]}
    assert set(costs) == {"tick1", "dev1"}
    assert [i["context"] for i in stacks["main"]["interrupts"]] == ["dev0"]
    # Both of cpu1's isr frames at once on main1's stack, under the bound that counts them.
    assert main1["measured"] >= before["measured"] + 2 * 64
    assert main1["static_bound"] >= before["static_bound"] + sum(costs.values())
    assert main1["measured"] <= main1["static_bound"] <= main1["budget"]
    run = json.loads((out / BUILD_DIR / "run.json").read_text())["output"]
    assert "memplace: result pass" in run and "fail" not in run

    # `memplace stacks` reads dev1's handler from cpu1's own table: rewired to the default
    # handler there, it is a `vector` finding (cpu0's line 8 still holds DEV0_Handler).
    image = bytearray(elf.read_bytes())
    struct.pack_into("<I", image, table["sh_offset"] + 4 * (16 + 8), address["Default_Handler"] | 1)
    rewired = tmp_path / "rewired.elf"
    rewired.write_bytes(image)
    argv = ("stacks", "--board", path, "--core", "cpu1", "--objects", out / BUILD_DIR, rewired)
    code, text, _ = run_cli(capsys, *argv)
    assert code == 1
    assert (
        "FAIL vector main1: isr dev1: entry 24 (irq 8) of the vector table at 0x10000800 holds "
        "Default_Handler, not DEV1_Handler()"
    ) in text
    argv = ("stacks", "--board", path, "--core", "cpu0", "--objects", out / BUILD_DIR, rewired)
    assert run_cli(capsys, *argv)[0] == 0


@pytest.mark.qemu
def test_a_line_of_a_joining_core_with_no_handler_reports_which_line_fired(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, workload = _files(tmp_path, _with_device_isrs(_board()))
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "app.c").write_text(
        "#include <stdint.h>\n"
        "int app_main(void) { return 0; }\n"
        "void DEV0_Handler(void) {}\n"
        "void DEV1_Handler(void) {}\n"
        "void PendSV_Handler(void) {}\n"
        "int main1(void)\n{\n"
        "    *(volatile uint32_t *)0xE000E100u = 1u << 5; /* cpu1's NVIC_ISER0 */\n"
        "    *(volatile uint32_t *)0xE000E200u = 1u << 5; /* cpu1's NVIC_ISPR0 */\n"
        '    __asm__ volatile("dsb\\n isb" ::: "memory");\n'
        "    for (;;) {\n    }\n}\n"
    )
    out = tmp_path / "p"
    argv = ("--out", out, "--project-type", "app", "--sources", sources, "--json")
    code, stdout, err = run_cli(capsys, "check", path, workload, *argv)
    assert code == 1, stdout + err
    findings = json.loads(stdout)["findings"]
    assert {
        "check": "run",
        "subject": "fault",
        "message": "the image stopped on exception 21 (device interrupt line 5, which has no "
        "handler of its own)",
    }.items() <= findings[0].items(), findings


def test_the_board_schema_takes_image_in_place_of_layout() -> None:
    """Editors check board files against `memplace schema`: a core has `layout`, or `image`
    with the `release` that starts it, never both."""
    validator = jsonschema.Draft202012Validator(board_schema())
    data = yaml.safe_load(_board())
    assert list(validator.iter_errors(data)) == []
    assert list(validator.iter_errors(yaml.safe_load(_with_device_isrs(_board())))) == []
    core = data["cores"]["cpu1"]
    for broken in (
        {**core, "layout": data["cores"]["cpu0"]["layout"]},
        {key: value for key, value in core.items() if key != "release"},
        {key: value for key, value in core.items() if key != "image"},
    ):
        data["cores"]["cpu1"] = broken
        assert list(validator.iter_errors(data)), broken


def test_a_core_cannot_reach_memory_its_images_owner_does_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    board = _board().replace(
        "pools:\n",
        "  own1: {origin: 0x20000000, size: 4K, attrs: rw, kind: sram, access: [cpu1]}\npools:\n",
    )
    _refused(
        capsys,
        tmp_path,
        board,
        10,
        "core 'cpu1' reaches memory 'own1', which core 'cpu0' does not: the image they share is "
        "linked with one memory map; add cpu0 to that memory's access list",
    )


@pytest.mark.qemu
def test_the_core_that_runs_another_image_may_come_first_in_the_board(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The pools it reaches first are still defined once, in the image it runs: a constant
    pool's bytes are there for both cores to check."""
    board = _board().replace(
        "pools:\n", "pools:\n  ssram0_const: {memory: ssram0, size: 64K, kind: constant}\n"
    )
    cpu0 = board[board.index("  cpu0:\n") : board.index(CPU1)]
    board = board.replace(cpu0, "").replace(CPU1, CPU1 + cpu0)
    assert board.index("  cpu1:") < board.index("  cpu0:")
    path, workload = _files(tmp_path, board)
    workload.write_text(
        WORKLOAD + "constants:\n  - {name: w0, size: 300, users: [main]}\n"
        "  - {name: w1, size: 200, users: [main1]}\n"
    )
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", path, workload, "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout


@pytest.mark.qemu
def test_the_cmake_module_builds_one_target_for_both_cores_of_one_image(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An existing CMake project: the target of core cpu0 holds cpu1's code too, the
    post-build verify bounds both cores' stacks, and both cores run it."""
    board, workload = _files(tmp_path, _board())
    source = tmp_path / "app"
    source.mkdir()
    (source / "main.c").write_text(
        '#include "memplace_runtime.h"\n'
        'int main(void) { memplace_write("lib on cpu0\\n"); return 0; }\n'
        'int main1(void) { memplace_cpu1_write("lib on cpu1\\n"); return 0; }\n'
    )
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(two_cores C)\n"
        f"include({REPO / 'cmake' / 'memplace.cmake'})\n"
        "add_executable(firmware main.c)\n"
        'set_target_properties(firmware PROPERTIES SUFFIX ".elf")\n'
        "target_compile_options(firmware PRIVATE -O2 -g -Wall -Wextra -Werror)\n"
        "target_link_options(firmware PRIVATE --specs=nano.specs --specs=nosys.specs)\n"
        f"memplace_target(TARGET firmware BOARD {board} WORKLOAD {workload} CORE cpu0)\n"
    )
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    build = tmp_path / "build"
    toolchain = f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'cmake' / 'arm-none-eabi.cmake'}"
    for argv in (
        ["-S", str(source), "-B", str(build), "-G", "Ninja", toolchain],
        ["--build", str(build)],
    ):
        done = subprocess.run(
            ["cmake", *argv], capture_output=True, text=True, env=env, timeout=PATIENCE
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert "stack main1:" in done.stdout and "verify: ok" in done.stdout
    code, stdout, err = run_cli(capsys, "run", build / "memplace-firmware")
    assert code == 0, stdout + err
    run = json.loads((build / "memplace-firmware" / BUILD_DIR / "run.json").read_text())
    assert "lib on cpu0\n" in run["output"] and "lib on cpu1\n" in run["output"]


def test_a_vector_table_in_the_room_of_a_pool_is_refused_at_boot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The pools and stacks of a memory take its top; a core whose table would start in
    them is refused where its `boot` is, not by the linker."""
    cpu1 = CPU1.replace("image: cpu0", "image: cpu0\n    boot: 0x103ffc00").replace(
        "value: 0x10000800", "value: 0x103ffc00"
    )
    board = _board(cpu1).replace(
        "pools:\n", "pools:\n  ssram0_const: {memory: ssram0, size: 1M, kind: constant}\n"
    )
    _refused(
        capsys,
        tmp_path,
        board,
        11,
        "the vector table of core 'cpu1' (from 0x103ffc00) runs into pool 'ssram0_const' at "
        "[0x10300000, 0x10400000) in memory 'ssram0'; move `boot` below it",
    )
