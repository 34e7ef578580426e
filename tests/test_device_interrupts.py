"""Device interrupts in generated projects: `interrupts: N` sizes the vector table, an isr
with `irq: K` is wired to line K with its priority in the NVIC, the exerciser raises it
through the NVIC's set-pending register, and a line with no handler reports itself. Each
is built with the cross compiler and run under QEMU."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from conftest import cli_error, run_cli
from memplace import contract

pytestmark = pytest.mark.qemu

# AN385: a Cortex-M3 whose NVIC QEMU builds with 32 lines (the bundled board says so);
# line 8 is the first CMSDK timer's. The timer's ISR is more urgent than SysTick's and
# is raised from inside it, so its frame lands on top of SysTick's on the main stack.
TIMER_BOARD = """memplace: board/v1
extends: qemu-mps2-an385
name: an385-timer
contexts:
  systick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 2}
  timer0:
    core: cpu0
    kind: isr
    entry: TIMER0_Handler
    irq: 8
    preempts: [main, systick]
    priority: 1
"""
WORKLOAD = """memplace: workload/v1
name: irqdemo
steps: 3
buffers:
  - {name: a, size: 4K, live: [0, 1]}
  - {name: b, size: 2K, live: [1, 2]}
  - {name: window, size: 512, live: [0, 2], scope: main.stack}
"""
# An exception frame of a core without an FPU, and what each exerciser ISR puts on it.
FRAME = 32
ISR_WORK = 64


def _check_json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "check", *argv, "--json")
    assert code == 0, out + err
    report: dict[str, Any] = json.loads(out)
    return report


def _main_stack(report: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in report["stacks"] if s["context"] == "main")


def _symbols(elf: Path) -> dict[str, tuple[int, int]]:
    with elf.open("rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        assert isinstance(table, SymbolTableSection)
        return {s.name: (s["st_value"], s["st_size"]) for s in table.iter_symbols() if s.name}


def _word(elf: Path, address: int) -> int:
    with elf.open("rb") as handle:
        image = ELFFile(handle)
        for section in image.iter_sections():
            start, end = section["sh_addr"], section["sh_addr"] + section.data_size
            if section["sh_type"] == "SHT_PROGBITS" and start <= address < end:
                (value,) = struct.unpack_from("<I", section.data(), address - start)
                return int(value)
    raise AssertionError(f"no section holds 0x{address:08x}")


def test_a_device_isr_nests_over_systick_and_the_bound_holds_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "timer.yaml"
    board.write_text(TIMER_BOARD)
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    plain = _check_json(capsys, "qemu-mps2-an385", workload, "--out", tmp_path / "plain")
    report = _check_json(capsys, board, workload, "--out", tmp_path / "timer")
    assert report["ok"] and not report["findings"], report

    project = tmp_path / "timer"
    startup = (project / "memplace" / "cpu0" / "startup.c").read_text()
    assert "const memplace_vector memplace_vectors[48] = {" in startup
    assert "    TIMER0_Handler, /* irq 8 */\n" in startup
    # Every other line: its CMSIS name, a weak alias of Default_Handler.
    assert len(re.findall(r"    Interrupt(\d+)_Handler, /\* irq \1 \*/", startup)) == 31
    # Priority 1 in the top 3 bits of byte 8 of NVIC_IPR: byte 0 of the word at 0xE000E408.
    assert "(*(volatile uint32_t *)0xe000e408u & ~0x000000ffu) | 0x00000020u;" in startup
    exerciser = (project / "src" / "exerciser_cpu0.c").read_text()
    assert "*(volatile uint32_t *)0xe000e100u = 0x00000100u;" in exerciser  # NVIC_ISER0
    assert "*(volatile uint32_t *)0xe000e200u = 0x00000100u; /* raise timer0 inside */" in exerciser

    elf = project / "build" / "cpu0.elf"
    symbols = _symbols(elf)
    vectors, size = symbols["memplace_vectors"]
    assert size == (16 + 32) * 4
    assert _word(elf, vectors + 4 * (16 + 8)) == symbols["TIMER0_Handler"][0] | 1

    before, after = _main_stack(plain), _main_stack(report)
    costs = {entry["context"]: entry["bytes"] for entry in after["interrupts"]}
    assert set(costs) == {"systick", "timer0"}
    assert all(cost >= FRAME + ISR_WORK for cost in costs.values())
    # The run: both handlers' frames at once on the main stack, one over the other.
    assert after["measured"] >= before["measured"] + 2 * (FRAME + ISR_WORK)
    # The bound: main's own, plus each priority level's costliest handler.
    assert after["static_bound"] >= before["static_bound"] + sum(costs.values())
    assert after["measured"] <= after["static_bound"] <= after["budget"]


UNWIRED_APP = """#include <stdint.h>

int app_main(void)
{
    *(volatile uint32_t *)0xE000E100u = 1u << 5; /* NVIC_ISER0: enable line 5 */
    *(volatile uint32_t *)0xE000E200u = 1u << 5; /* NVIC_ISPR0: set it pending */
    __asm__ volatile("dsb\\n isb" ::: "memory");
    return 0;
}
"""


def test_a_line_with_no_handler_reports_which_line_fired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text(UNWIRED_APP)
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    out = tmp_path / "project"
    argv = ("--out", out, "--project-type", "app", "--sources", sources, "--json")
    code, text, err = run_cli(capsys, "check", "qemu-mps2-an385", workload, *argv)
    assert code == 1, text + err
    findings = json.loads(text)["findings"]
    assert {
        "check": "run",
        "subject": "fault",
        "message": "the image stopped on exception 21 (device interrupt line 5, which has no "
        "handler of its own)",
    }.items() <= findings[0].items(), findings


def test_the_exerciser_refuses_an_isr_it_cannot_raise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "uart.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: uart\ncontexts:\n"
        "  uart: {core: cpu0, kind: isr, entry: UART0_IRQHandler, preempts: [main]}\n"
    )
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    code, out, err = run_cli(capsys, "generate", board, workload, "--out", tmp_path / "p")
    assert code == 2 and out == ""
    assert err == (
        f"memplace: error: {board}:5:40: contexts.uart.entry: the exerciser can raise ISR "
        "contexts on "
        "SysTick_Handler or PendSV_Handler, or on a device interrupt line (give the context "
        "`irq: LINE`), not 'UART0_IRQHandler'\n"
    )
    assert not (tmp_path / "p").exists()


def test_a_device_isr_priority_is_a_level_the_startup_code_can_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever the project runs, the startup code writes an isr's level into the 3 bits
    every Armv7-M core implements: 64, a raw byte, is no such level."""
    board = tmp_path / "raw.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: raw\ncontexts:\n"
        "  timer0: {core: cpu0, kind: isr, irq: 8, preempts: [main], priority: 64}\n"
    )
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text("int app_main(void) { return 0; }\n")
    argv = ("--project-type", "app", "--sources", sources, "--out", tmp_path / "p")
    code, out, err = run_cli(capsys, "generate", board, workload, *argv)
    assert code == 2 and out == ""
    assert err == (
        f"memplace: error: {board}:5:71: contexts.timer0.priority: the startup code programs "
        "device interrupt priorities in the 3 priority bits that every armv7-m core "
        "implements, 0..7; got 64 on cortex-m3\n"
    )
    assert not (tmp_path / "p").exists()


def test_a_worker_thread_takes_the_device_isrs_frame_on_its_own_stack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "thread.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: thread-irq\ncontexts:\n"
        "  main: {threads: 1}\n"
        "  timer0: {core: cpu0, kind: isr, entry: TIMER0_Handler, irq: 8, preempts: [main], "
        "priority: 1}\n"
    )
    workload = tmp_path / "thr.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: thr\nsteps: 2\nbuffers:\n"
        "  - {name: a, size: 1K, live: [0, 1]}\n"
        "  - {name: t, size: 256, live: [0, 1], scope: main.thread0.stack}\n"
    )
    report = _check_json(capsys, board, workload, "--out", tmp_path / "p")
    assert report["ok"], report
    exerciser = (tmp_path / "p" / "src" / "exerciser_cpu0.c").read_text()
    assert "main_thread0_raises[] = {\n    {0xe000e200u, 0x00000100u},\n};" in exerciser
    thread = next(s for s in report["stacks"] if s["context"] == "main.thread0")
    assert thread["interrupts"] == [{"context": "timer0", "bytes": FRAME + 4}]
    assert thread["measured"] >= thread["planned"] + FRAME


def test_a_table_the_reset_code_copies_is_aligned_for_vtor_and_wires_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The image runs from SSRAM2&3, copied out of SSRAM1: VTOR moves to the copied table
    of 48 entries, which starts on a 256-byte boundary, and the timer's line reaches its
    handler through it."""
    board = tmp_path / "ram.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: ram-irq\ncores:\n  cpu0:\n"
        "    layout: {vectors: ssram23, code: ssram23, data: ssram23, load: ssram1, "
        "copy: reset}\ncontexts:\n"
        "  timer0: {core: cpu0, kind: isr, entry: TIMER0_Handler, irq: 8, preempts: [main], "
        "priority: 1}\n"
    )
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    report = _check_json(capsys, board, workload, "--out", tmp_path / "p")
    assert report["ok"], report
    assert "ALIGN(256)" in (tmp_path / "p" / "memplace" / "cpu0" / "linker.ld").read_text()
    elf = tmp_path / "p" / "build" / "cpu0.elf"
    with elf.open("rb") as handle:
        vectors = ELFFile(handle).get_section_by_name(contract.VECTORS)
        assert vectors is not None and vectors["sh_addralign"] == 256
        assert vectors["sh_addr"] % 256 == 0 and vectors["sh_size"] == 48 * 4
        table = vectors.data()
    assert (
        int.from_bytes(table[4 * 24 : 4 * 25], "little") == _symbols(elf)["TIMER0_Handler"][0] | 1
    )
    # `memplace stacks` on the same firmware finds the handler through the copied table too,
    # not through the 16-entry table the core boots from.
    code, out, _ = run_cli(capsys, "stacks", elf, "--board", board, "--json")
    assert code == 0, out
    assert json.loads(out)["findings"] == []


def _patch_word(elf: Path, address: int, value: int) -> None:
    """Writes `value` over the word the image loads at `address`, as a bad build would."""
    with elf.open("rb") as handle:
        for section in ELFFile(handle).iter_sections():
            start = section["sh_addr"]
            if (
                section["sh_type"] == "SHT_PROGBITS"
                and start <= address < start + section.data_size
            ):
                offset = section["sh_offset"] + address - start
                break
        else:
            raise AssertionError(f"no section holds 0x{address:08x}")
    with elf.open("r+b") as handle:
        handle.seek(offset)
        handle.write(struct.pack("<I", value))


def test_verify_finds_an_isr_that_is_not_its_lines_vector_table_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "timer.yaml"
    board.write_text(TIMER_BOARD)
    workload = tmp_path / "irqdemo.yaml"
    workload.write_text(WORKLOAD)
    project = tmp_path / "p"
    assert run_cli(capsys, "generate", board, workload, "--out", project)[0] == 0
    assert run_cli(capsys, "build", project)[0] == 0
    code, out, _ = run_cli(capsys, "verify", project, "--json")
    assert code == 0, out

    elf = project / "build" / "cpu0.elf"
    symbols = _symbols(elf)
    vectors = symbols["memplace_vectors"][0]
    _patch_word(elf, vectors + 4 * (16 + 8), symbols["Default_Handler"][0] | 1)
    code, out, _ = run_cli(capsys, "verify", project, "--json")
    assert code == 1
    findings = [f for f in json.loads(out)["findings"] if f["check"] == "vector"]
    assert [(f["subject"], f["message"]) for f in findings] == [
        (
            "timer0",
            "isr timer0: entry 24 (irq 8) of memplace_vectors holds Default_Handler, "
            "not TIMER0_Handler()",
        )
    ]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (
            "memplace_write",
            "names starting with 'memplace_' are kept for memplace's generated code",
        ),
        ("memcpy", "'memcpy' is a function of the C library or runtime the generated code uses"),
    ],
)
def test_a_device_isr_may_not_take_a_name_the_generated_code_uses(
    entry: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "b.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: b\ncontexts:\n"
        f"  dev: {{core: cpu0, kind: isr, entry: {entry}, irq: 3, preempts: [main]}}\n"
    )
    assert cli_error(capsys, "boards", "show", board) == (
        f"memplace: error: {board}:5:39: contexts.dev.entry: {why}; the handler of irq 3 "
        "needs a name of its own"
    )
