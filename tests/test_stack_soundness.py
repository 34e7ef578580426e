"""Static stack bounds against the stacks real programs paint under QEMU.

Every program here writes every byte of its frames, so the painted high-water mark is
its true depth. The bound must never be below it, and where no recursion or indirect call
is involved it must be within 30% of it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from memplace import workflow
from memplace.board import Board, load_board
from memplace.build import build
from memplace.project import Project
from memplace.verify import Report, RunLog, StackHints, load_hints, verify
from memplace.workload import Workload

pytestmark = pytest.mark.qemu

TIGHT = 1.30

WORKLOAD = """memplace: workload/v1
name: probe
buffers:
  - {name: scratch, size: 256, live: [0, 0]}
"""

# Fills a frame so that painting sees all of it.
PROLOGUE = """
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include "memplace_runtime.h"

#define TOUCH(frame, seed)                                  \\
    for (uint32_t i_ = 0; i_ < sizeof(frame); i_++) {       \\
        (frame)[i_] = (uint8_t)((seed) + i_);               \\
    }

static uint32_t sum(const volatile uint8_t *frame, uint32_t size)
{
    uint32_t total = 0;
    for (uint32_t i = 0; i < size; i++) {
        total += frame[i];
    }
    return total;
}
"""

PROGRAMS = {
    "chain": """
        __attribute__((noinline)) static uint32_t leaf(uint32_t seed)
        {
            volatile uint8_t frame[1200];
            TOUCH(frame, seed);
            return sum(frame, sizeof frame);
        }
        __attribute__((noinline)) static uint32_t middle(uint32_t seed)
        {
            volatile uint8_t frame[300];
            TOUCH(frame, seed);
            return leaf(frame[7]) + sum(frame, sizeof frame);
        }
        __attribute__((noinline)) static uint32_t shallow(uint32_t seed)
        {
            volatile uint8_t frame[64];
            TOUCH(frame, seed);
            return sum(frame, sizeof frame);
        }
        int app_main(void)
        {
            return (middle(3) + shallow(5)) == 0u;
        }
    """,
    "variadic": """
        __attribute__((noinline)) static uint32_t total(int count, ...)
        {
            volatile uint8_t frame[256];
            TOUCH(frame, count);
            va_list args;
            va_start(args, count);
            uint32_t result = sum(frame, sizeof frame);
            for (int i = 0; i < count; i++) {
                result += va_arg(args, uint32_t);
            }
            va_end(args);
            return result;
        }
        int app_main(void)
        {
            return total(6, 1u, 2u, 3u, 4u, 5u, 6u) == 0u;
        }
    """,
    "alloca": """
        __attribute__((noinline)) static uint32_t row(uint32_t width)
        {
            volatile uint8_t frame[width];
            TOUCH(frame, width);
            return sum(frame, width);
        }
        int app_main(void)
        {
            return (row(100u) + row(480u)) == 0u;
        }
    """,
    "recursion": """
        __attribute__((noinline)) static uint32_t walk(uint32_t depth)
        {
            volatile uint8_t frame[96];
            TOUCH(frame, depth);
            if (depth == 0u) {
                return sum(frame, sizeof frame);
            }
            return walk(depth - 1u) + frame[5];
        }
        int app_main(void)
        {
            return walk(9u) == 0u;
        }
    """,
    "indirect": """
        typedef uint32_t (*op)(uint32_t);
        __attribute__((noinline)) static uint32_t small(uint32_t seed)
        {
            volatile uint8_t frame[32];
            TOUCH(frame, seed);
            return sum(frame, sizeof frame);
        }
        __attribute__((noinline)) static uint32_t large(uint32_t seed)
        {
            volatile uint8_t frame[700];
            TOUCH(frame, seed);
            return sum(frame, sizeof frame);
        }
        op table[2] = {small, large};
        volatile uint32_t pick = 1u;
        int app_main(void)
        {
            return table[pick](4u) == 0u;
        }
    """,
    "printf": """
        /* The generated linker script has no heap (`end`): newlib's string printf may
           grow a buffer, so give it one. */
        static uint8_t heap[2048] __attribute__((aligned(8)));
        static uint32_t heap_used;
        void *_sbrk(int increment);
        void *_sbrk(int increment)
        {
            if (heap_used + (uint32_t)increment > sizeof heap) {
                return (void *)-1;
            }
            void *at = &heap[heap_used];
            heap_used += (uint32_t)increment;
            return at;
        }
        int app_main(void)
        {
            char text[48];
            volatile uint8_t frame[200];
            TOUCH(frame, 1);
            snprintf(text, sizeof text, "%d %s %x\\n", (int)sum(frame, 200), "ok", 255u);
            memplace_write(text);
            return 0;
        }
    """,
}

HINTS = {
    "alloca": "alloca: [{function: row, size: 480}]\n",
    "recursion": "recursion: [{function: walk, depth: 10}]\n",
    "indirect": "indirect_calls: [{caller: app_main, targets: [small, large]}]\n",
}
BUNDLED = {"printf": ["newlib-nano"]}
# Whose bound may be loose: recursion (a hinted depth is an upper bound), indirect calls
# (the costliest target), and newlib (paths a short string never takes).
LOOSE = {"recursion", "indirect", "printf"}


@dataclass(frozen=True)
class Probe:
    folder: Path
    run: RunLog
    report: Report

    @property
    def measured(self) -> int:
        return self.run.stacks["main"]

    @property
    def bound(self) -> int | None:
        return self.report.stacks[0].static_bound


def build_program(
    root: Path, name: str, body: str, board: Board | None = None, hints: StackHints | None = None
) -> Probe:
    """An `app` project running `body` (which defines app_main), built and run."""
    sources = root / f"{name}-src"
    sources.mkdir(parents=True, exist_ok=True)
    (sources / "main.c").write_text(PROLOGUE + textwrap.dedent(body))
    (root / "workload.yaml").write_text(WORKLOAD)
    folder = root / name
    board = board or load_board("qemu-mps3-an547")
    workload = Workload.from_file(root / "workload.yaml")
    workflow.generate(workflow.ProjectRequest(board, workload, folder, "app", sources=sources))
    build(folder)
    log = workflow.run(folder)
    assert log.passed, log
    return Probe(folder, log, verify(Project.load(folder), log, hints))


def hints_for(root: Path, name: str) -> StackHints | None:
    files: list[str | Path] = list(BUNDLED.get(name, []))
    if name in HINTS:
        path = root / f"{name}-hints.yaml"
        path.write_text("memplace: stack_hints/v1\n" + HINTS[name])
        files.append(path)
    return load_hints(files)


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Probe]:
    root = tmp_path_factory.mktemp("stack")
    return {
        name: build_program(root, name, body, hints=hints_for(root, name))
        for name, body in PROGRAMS.items()
    }


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_bound_is_never_below_the_painted_mark(probes: dict[str, Probe], name: str) -> None:
    probe = probes[name]
    assert probe.report.ok, probe.report.table()
    assert probe.bound is not None
    assert probe.bound >= probe.measured, probe.report.table()


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - LOOSE))
def test_the_bound_is_tight_without_recursion_or_indirect_calls(
    probes: dict[str, Probe], name: str
) -> None:
    probe = probes[name]
    assert probe.bound is not None
    assert probe.bound <= TIGHT * probe.measured, probe.report.table()


def test_the_deepest_path_is_the_one_the_program_takes(probes: dict[str, Probe]) -> None:
    path = probes["chain"].report.stacks[0].path
    assert tuple(name.split(".")[0] for name in path) == (
        "Reset_Handler",
        "memplace_start",
        "app_main",
        "middle",
        "leaf",
    )


def test_without_hints_the_same_programs_are_unbounded(probes: dict[str, Probe]) -> None:
    for name, kind in [("recursion", "recursion walk > walk"), ("indirect", "indirect call")]:
        report = verify(Project.load(probes[name].folder), probes[name].run)
        assert report.stacks[0].static_bound is None
        (finding,) = report.findings
        assert finding.check == "stack-unbounded" and kind in finding.message
        assert "call path: Reset_Handler > memplace_start > app_main" in finding.message


def test_isr_frames_land_on_the_stack_they_preempt(tmp_path: Path) -> None:
    board = tmp_path / "isr.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: isr\ncontexts:\n"
        "  tick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 2}\n"
        "  pend: {core: cpu0, kind: isr, entry: PendSV_Handler, preempts: [main, tick],"
        " priority: 1}\n"
    )
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    folder = tmp_path / "p"
    workflow.generate(
        workflow.ProjectRequest(load_board(board), Workload.from_file(workload), folder)
    )
    build(folder)
    log = workflow.run(folder)
    assert log.passed, log
    report = verify(Project.load(folder), log)
    assert report.ok, report.table()
    (stack,) = report.stacks
    assert [name for name, _ in stack.interrupts] == ["tick", "pend"]
    # Both nest (pend is more urgent): each adds its exception frame (FP context on the
    # M55) and its handler's own bound.
    for _, cost in stack.interrupts:
        assert cost is not None and cost > 108
    assert stack.static_bound is not None and stack.measured is not None
    assert stack.static_bound >= stack.measured
    without = stack.static_bound - sum(cost or 0 for _, cost in stack.interrupts)
    assert without < stack.measured
