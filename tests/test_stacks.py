"""`memplace stacks`: stack budgets of firmware memplace did not generate, from its ELF and
GCC's reports alone. The firmware (examples/rtos-stacks) is shaped like a FreeRTOS
application on the MPS2 AN385 (Cortex-M3): tasks of known depth, two handlers of different
priorities, and a scheduler start that resets the main stack pointer."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from conftest import PATIENCE, RTOS_EXAMPLE, RTOS_EXAMPLE_FLAGS, build_rtos_example, run_cli
from memplace import process

SOURCES = RTOS_EXAMPLE
FLAGS = RTOS_EXAMPLE_FLAGS

BOARD = """\
memplace: board/v1
extends: qemu-mps2-an385
name: rtos-demo
cores:
  cpu0: {rtos: freertos}
contexts:
  rx:      {core: cpu0, kind: task, entry: vRxTask, task: Rx, stack: {size: 512}}
  tx:      {core: cpu0, kind: task, entry: vTxTask, stack: {size: 128}}
  systick: {core: cpu0, kind: isr, entry: SysTick_Handler, priority: 255}
  timer0:  {core: cpu0, kind: isr, entry: TIMER0_Handler, priority: 64}
"""
HOOKED = "  hooked:  {core: cpu0, kind: task, entry: vHookTask, stack: {size: 1024}}\n"
HINTS = """\
memplace: stack_hints/v1
indirect_calls:
  - {caller: vHookTask, targets: [vTxTask]}
recursion:
  - {function: walk, depth: 8}
"""
# Frames from GCC's .su files: leaf 96, middle 48, vRxTask, vTxTask, the handlers,
# vTaskStartScheduler and Reset_Handler 8, main 208, walk 24. A context switch leaves 76
# bytes on a task's stack on ARM_CM3: the exception frame (32), its alignment (4), r4-r11
# (32) and the 8 bytes the port leaves unused at the top.
RX = 8 + 48 + 96 + 76
TX = 8 + 96 + 76
SYSTICK = 36 + 8 + 96
TIMER0 = 36 + 8 + 48 + 96
MAIN_PATH = 8 + 208 + 8


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The firmware built by its own commands, as a user's build would, with the two flags
    `memplace stacks` needs."""
    build = tmp_path_factory.mktemp("rtos") / "build"
    build.mkdir()
    return build_rtos_example(build)


def _su_frames(folder: Path) -> dict[str, int]:
    """Each function's frame as GCC's .su files give it."""
    frames = {}
    for path in folder.glob("*.su"):
        for line in path.read_text().splitlines():
            where, size, _ = line.split("\t")
            frames[where.rsplit(":", 1)[-1]] = int(size)
    return frames


@pytest.mark.parametrize(
    "flags",
    [
        ["-mcpu=cortex-m3", "-O0"],
        ["-mcpu=cortex-m3", "-O1"],
        ["-mcpu=cortex-m3", "-O2"],
        ["-mcpu=cortex-m3", "-O3"],
        ["-mcpu=cortex-m3", "-Os"],
        ["-mcpu=cortex-m3", "-Og"],
        ["-mcpu=cortex-m0", "-O0"],  # Armv6-M: frames set up through a literal at -O0
    ],
    ids=" ".join,
)
def test_every_optimisation_level_is_bounded(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At -O0 GCC restores the stack pointer from the frame pointer (`adds r7, #108; mov
    sp, r7`): the walk follows it, so a Debug build is bounded as a release build is, and
    each bound holds GCC's own frames."""
    folder = tmp_path / "build"
    folder.mkdir()
    elf = build_rtos_example(folder, [*flags, "-mthumb", "-ffreestanding"])
    board = (SOURCES / "board.yaml").read_text()
    code, out, _ = _stacks(capsys, tmp_path, board, str(elf), "--json")
    report = json.loads(out)
    assert (code, report["findings"]) == (0, [])
    frames = _su_frames(folder)
    for stack in report["stacks"]:
        assert stack["static_bound"] is not None, stack
        path = [name for name in stack["path"] if name in frames]
        switch = 76 if stack["context"] != "main" else 0
        # (a tail call leaves only the callee's frame, so no sum along the path holds)
        assert stack["static_bound"] >= max(frames[name] for name in path) + switch, stack
    if "-O0" in flags:  # no tail calls, no inlining: every frame of the path is on the stack
        rx = next(s for s in report["stacks"] if s["context"] == "rx")
        assert rx["static_bound"] == sum(frames[n] for n in ("vRxTask", "middle", "leaf")) + 76


def test_json_is_written_for_an_error_too(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _stacks(
        capsys, tmp_path, BOARD + "  bad: {core: cpu9}\n", "--json", str(firmware)
    )
    assert code == 2
    report = json.loads(out)
    assert report["ok"] is False and report["error"]["exit_code"] == 2
    assert report["error"]["line"] == 11 and report["error"]["file"].endswith("board.yaml")
    assert report["error"]["message"] in err
    code, out, _ = _stacks(capsys, tmp_path, BOARD, "--json", str(tmp_path / "none.elf"))
    assert code == 2
    assert json.loads(out)["error"]["key"] == "FIRMWARE.elf"
    code, out, _ = _stacks(capsys, tmp_path, BOARD, "--json", "--no-such-flag")
    assert code == 2 and json.loads(out)["ok"] is False


def test_a_hint_naming_a_function_this_build_lacks_is_a_warning(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One hints file serves every build type: a function another level keeps (or a name
    misspelt) is said, and the check goes on."""
    hints = tmp_path / "hints.yaml"
    hints.write_text(HINTS + "  - {function: prvInlinedAtO3, depth: 2}\n")
    argv = [str(firmware), "--stack-hints", str(hints)]
    code, out, _ = _stacks(capsys, tmp_path, SOURCES.joinpath("board.yaml").read_text(), *argv)
    assert code == 0, out
    assert (
        f"warning: {hints}:6:16: stack hints: no function 'prvInlinedAtO3' in this build "
        "(inlined, or not linked), so the hint is not used; "
    ) in out
    assert out.rstrip().endswith("verify: ok")


def _stacks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, board: str, *argv: str
) -> tuple[int, str, str]:
    (tmp_path / "board.yaml").write_text(board)
    return run_cli(capsys, "stacks", *argv, "--board", tmp_path / "board.yaml")


def test_tasks_and_handlers_are_bounded_as_freertos_switches_them(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "stacks.xml"
    code, out, _ = _stacks(capsys, tmp_path, BOARD, str(firmware), "--json", "--junit", str(junit))
    assert code == 1  # tx is over its budget
    report = json.loads(out)
    bounds = {s["context"]: (s["static_bound"], s["budget"]) for s in report["stacks"]}
    # The main stack: the handlers (two priority levels: both at once) nest on main's path
    # up to the scheduler start, since an interrupt may come before it; after it, main's
    # frames are gone (the port resets the main stack pointer).
    assert bounds == {
        "main": (MAIN_PATH + SYSTICK + TIMER0, 8192),
        "rx": (RX, 512),
        "tx": (TX, 128),
    }
    (finding,) = report["findings"]
    assert finding["check"] == "stack-bound" and finding["subject"] == "tx"
    assert finding["message"] == (
        f"can use {TX} bytes, over its budget of 128 (deepest path: vTxTask > leaf)"
    )
    cases = ET.parse(junit).getroot().iter("testcase")
    failed = [(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None]
    assert failed == [("memplace.stack-bound", "stack tx")]


def test_interrupts_masked_until_the_scheduler_starts_never_meet_mains_frames(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hints = tmp_path / "hints.yaml"
    hints.write_text("memplace: stack_hints/v1\ninterrupts_masked_until_scheduler: true\n")
    argv = [str(firmware), "--json", "--stack-hints", str(hints)]
    _, out, _ = _stacks(capsys, tmp_path, BOARD, *argv)
    main_stack = json.loads(out)["stacks"][0]
    assert main_stack["static_bound"] == max(MAIN_PATH, SYSTICK + TIMER0)
    hints.write_text("memplace: stack_hints/v1\ninterrupts_masked_until_scheduler: 1\n")
    code, out, err = _stacks(capsys, tmp_path, BOARD, *argv)
    assert code == 2
    assert f"{hints}:2:36: interrupts_masked_until_scheduler: expected true or false, got 1" in err


def test_the_text_report_says_what_lands_on_each_stack(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = _stacks(capsys, tmp_path, BOARD, str(firmware))
    assert "  deepest path: vRxTask > middle > leaf\n" in out
    assert "  a context switch (freertos ARM_CM3) leaves 76 bytes on it" in out
    assert f"  ISR timer0 lands on it: {TIMER0} bytes with its exception frame\n" in out


def test_without_an_rtos_the_handlers_stack_on_mains_frames(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = (
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: bare\ncontexts:\n"
        "  systick: {core: cpu0, kind: isr, entry: SysTick_Handler, priority: 255, "
        "preempts: [main]}\n"
        "  timer0: {core: cpu0, kind: isr, entry: TIMER0_Handler, priority: 64, "
        "preempts: [main]}\n"
    )
    code, out, _ = _stacks(capsys, tmp_path, bare, str(firmware), "--json")
    assert code == 0
    (main_stack,) = json.loads(out)["stacks"]
    assert main_stack["static_bound"] == MAIN_PATH + SYSTICK + TIMER0


def test_indirect_calls_and_recursion_need_hints_that_say_which(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _stacks(capsys, tmp_path, BOARD + HOOKED, str(firmware), "--json")
    assert code == 1
    unbounded = [f["message"] for f in json.loads(out)["findings"] if f["subject"] == "hooked"]
    assert any(
        m.startswith("indirect call in vHookTask at ")
        and "list them in the stack hints (indirect_calls) (call path: vHookTask)" in m
        for m in unbounded
    )
    assert "recursion walk > walk has no depth; bound it with a recursion hint" in unbounded[1]
    (tmp_path / "hints.yaml").write_text(HINTS)
    hints = ["--stack-hints", str(tmp_path / "hints.yaml")]
    code, out, _ = _stacks(capsys, tmp_path, BOARD + HOOKED, str(firmware), *hints)
    assert "stack hooked: measured - of 1024 bytes (planned buffers 0), static bound " in out
    assert "  deepest path: vHookTask > walk (recursion x8: walk > walk)\n" in out
    assert f"static bound {8 + 8 * 24 + 76}\n" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.elf"], "FIRMWARE.elf: no firmware at missing.elf"),
        (["ELF", "--core", "cpu9"], "--core: no core 'cpu9'; the board has cpu0"),
        (["ELF", "--objects", "EMPTY"], "--objects: no .su files under EMPTY: compile the "),
        (["ELF", "--objects", "NOWHERE"], "--objects: no folder of objects at NOWHERE"),
    ],
)
def test_usage_errors(
    firmware: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    (tmp_path / "empty").mkdir()
    names = {"ELF": str(firmware), "EMPTY": str(tmp_path / "empty")}
    names["NOWHERE"] = str(tmp_path / "nowhere")
    argv = [names.get(a, a) for a in argv]
    message = message.replace("EMPTY", names["EMPTY"]).replace("NOWHERE", names["NOWHERE"])
    code, _, err = _stacks(capsys, tmp_path, BOARD, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_a_board_of_several_cores_needs_the_firmwares_core(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = "memplace: board/v1\nextends: qemu-mps2-an521\nname: two-cores\n"
    code, _, err = _stacks(capsys, tmp_path, board, str(firmware))
    assert code == 2
    assert err.strip() == (
        "memplace: error: --core: board two-cores has several cores; name the firmware's "
        "with --core (cpu0, cpu1)"
    )


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "verification.md"


def _ci_section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("### Checking an existing FreeRTOS project in CI")
    return text[start : text.index("\n#", start + 1)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_ci_section_runs_as_written(tmp_path: Path) -> None:
    section = _ci_section()
    board, github, gitlab = (yaml.safe_load(block) for block in _blocks(section, "yaml"))
    assert board == yaml.safe_load((SOURCES / "board.yaml").read_text())  # the example's own
    (commands,) = _blocks(section, "sh")
    for name in ("tasks.c", "startup.c", "link.ld", "Makefile"):
        shutil.copy(SOURCES / name, tmp_path / name)
    (tmp_path / "board.yaml").write_text(yaml.safe_dump(board))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-c", commands], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stack tx: measured - of 256 bytes (planned buffers 0), static bound 180" in done.stdout
    assert done.stdout.rstrip().endswith("verify: ok")
    cases = list(ET.parse(tmp_path / "stacks.xml").getroot().iter("testcase"))
    assert {c.get("name") for c in cases} >= {"stack main", "stack rx", "stack tx"}
    assert json.loads((tmp_path / "stacks.sarif").read_text())["version"] == "2.1.0"
    # Both CI jobs run the same build and check.
    steps = [step.get("run", "") for step in github["jobs"]["stacks"]["steps"]]
    for line in commands.strip().splitlines():
        assert line in steps
        assert line in gitlab["stacks"]["script"]
    assert gitlab["stacks"]["artifacts"]["reports"]["junit"] == "stacks.xml"


def _wired(irq: int) -> str:
    """The bare board with TIMER0_Handler's context wired to device interrupt line `irq`."""
    return (
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: wired\ncontexts:\n"
        "  timer0: {core: cpu0, kind: isr, entry: TIMER0_Handler, priority: 64, "
        f"preempts: [main], irq: {irq}}}\n"
    )


def test_an_isr_on_its_line_is_bounded_from_the_vector_table(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _stacks(capsys, tmp_path, _wired(8), str(firmware), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["findings"] == []
    (main_stack,) = report["stacks"]
    assert main_stack["interrupts"] == [{"context": "timer0", "bytes": TIMER0}]
    assert main_stack["static_bound"] == MAIN_PATH + TIMER0


def test_a_vector_table_entry_that_is_not_the_isrs_entry_is_a_finding(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Line 7 of the example's table is Default_Handler's: what runs when it fires is
    bounded, and the board's entry is said to be elsewhere."""
    code, out, _ = _stacks(capsys, tmp_path, _wired(7), str(firmware), "--json")
    assert code == 1
    report = json.loads(out)
    (finding,) = report["findings"]
    assert (finding["check"], finding["subject"]) == ("vector", "main")
    assert finding["message"] == (
        "isr timer0: entry 23 (irq 7) of the vector table at 0x00000000 holds Default_Handler, "
        "not TIMER0_Handler()"
    )
    (main_stack,) = report["stacks"]
    (handler,) = main_stack["interrupts"]
    assert handler["context"] == "timer0" and handler["bytes"] < TIMER0


def test_a_line_past_the_end_of_the_vector_table_is_a_finding(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _stacks(capsys, tmp_path, _wired(9), str(firmware), "--json")
    assert code == 1
    report = json.loads(out)
    (finding,) = report["findings"]
    assert (finding["check"], finding["subject"]) == ("vector", "main")
    assert finding["message"] == (
        f"isr timer0: {firmware.name} has no entry 25 (irq 9) of the vector table at "
        "0x00000000 (it has 25 entries)"
    )
    assert json.loads(out)["stacks"][0]["static_bound"] is None


# A recursion through a hub with three ways back (as a trace recorder's error paths), and a
# call on its way out that a hint can cut.
RECURSIVE = """
#include <stdint.h>
volatile uint32_t sink;
static uint32_t hub(uint32_t n);
#define SPOKE(name, bytes) \\
    __attribute__((noinline)) static uint32_t name(uint32_t n) \\
    { volatile uint8_t f[bytes]; f[n % bytes] = (uint8_t)n; return hub(n - 1u) + f[1]; }
SPOKE(big, 200)
SPOKE(middle, 120)
SPOKE(small, 40)
__attribute__((noipa)) static uint32_t rare(uint32_t n)
{ volatile uint8_t f[1000]; f[n % 1000u] = 1u; return f[3]; }
__attribute__((noinline)) static uint32_t hub(uint32_t n)
{
    volatile uint8_t f[8];
    f[0] = (uint8_t)n;
    switch (n & 3u) {
    case 0u: return big(n);
    case 1u: return middle(n);
    case 2u: return small(n);
    default: return n > 64u ? rare(n) : f[0];
    }
}
void vRecursiveTask(void *argument) { for (;;) { sink = hub((uint32_t)(uintptr_t)argument); } }
void SysTick_Handler(void) {}
void TIMER0_Handler(void) {}
void vTaskStartScheduler(void) {}
int main(void) { vTaskStartScheduler(); return 0; }
"""


def test_recursion_costs_its_deepest_pass_and_a_cut_call_is_an_assumption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pass through the recursion goes hub > big > hub > middle at most: never through
    all three spokes at once. A call cut by a hint leaves the graph, and every report says
    the bound rests on it."""
    source = tmp_path / "recursive.c"
    source.write_text(RECURSIVE)
    elf = build_rtos_example(tmp_path, FLAGS, tasks=source)
    frames = _su_frames(tmp_path)
    board = BOARD.split("contexts:")[0] + (
        "contexts:\n  worker: {core: cpu0, kind: task, entry: vRecursiveTask, "
        "stack: {size: 8192}}\n"
    )
    hints = tmp_path / "hints.yaml"
    hints.write_text("memplace: stack_hints/v1\nrecursion:\n  - {function: hub, depth: 3}\n")
    argv = [str(elf), "--objects", str(tmp_path), "--stack-hints", str(hints), "--json"]
    code, out, _ = _stacks(capsys, tmp_path, board, *argv)
    assert code == 0, out
    worker = json.loads(out)["stacks"][1]
    spokes = sorted(frames[name] for name in ("big", "middle", "small"))
    every_frame = frames["hub"] + sum(spokes)
    deepest = frames["hub"] + spokes[-1] + spokes[-2]  # big > hub > middle
    exit_cost = frames["rare"]  # taken from hub's frame, which the pass holds already
    own = frames["vRecursiveTask"]
    assert worker["static_bound"] == own + 3 * deepest + exit_cost + 76
    assert worker["static_bound"] < own + 3 * every_frame + exit_cost + 76
    cut = hints.read_text() + "cut_calls:\n  - {caller: hub, callee: rare}\n"
    hints.write_text(hints.read_text() + "cut_calls:\n  - {callee: rare}\n")
    code, out, _ = _stacks(capsys, tmp_path, board, *argv)
    report = json.loads(out)  # from every caller: the same here, said otherwise
    assert report["assumptions"] == [f"call cut: no function calls rare ({hints}:5:14)"]
    everywhere = report["stacks"][1]["static_bound"]
    hints.write_text(cut)
    junit, sarif = tmp_path / "stacks.xml", tmp_path / "stacks.sarif"
    code, out, _ = _stacks(
        capsys, tmp_path, board, *argv, "--junit", str(junit), "--sarif", str(sarif)
    )
    report = json.loads(out)
    assert code == 0 and report["stacks"][1]["static_bound"] < worker["static_bound"] - 900
    assert report["stacks"][1]["static_bound"] == everywhere
    said = f"call cut: hub never calls rare ({hints}:5:14)"
    assert report["assumptions"] == [said]
    code, out, _ = _stacks(capsys, tmp_path, board, *argv[:-1])
    assert f"assumption: {said}\n" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert [p.get("value") for p in suite.iter("property")] == [said]
    run = json.loads(sarif.read_text())["runs"][0]
    assert run["properties"]["assumptions"] == [said]
    # Only what ran is listed: no run, so no run check nor measured marks.
    ran = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert ran == {"stack-unbounded", "stack-bound", "vector", "task"}
    classes = {case.get("classname") for case in suite.iter("testcase")}
    assert classes == {f"memplace.{check}" for check in ("stack-unbounded", "stack-bound")} | {
        "memplace.vector",
        "memplace.task",
    }


# The kernel's tick: its hook runs when the tick interrupt increments the tick, never when
# xTaskResumeAll catches up on pended ticks.
TICKS = """
#include <stdint.h>
volatile uint32_t sink, pended;
__attribute__((noipa)) void vApplicationTickHook(void)
{ volatile uint8_t f[3000]; f[sink % 3000u] = 1u; sink = f[7]; }
__attribute__((noipa)) uint32_t xTaskIncrementTick(void)
{ if (pended == 0u) { vApplicationTickHook(); } return sink; }
__attribute__((noipa)) void xTaskResumeAll(void)
{ while (pended) { pended -= xTaskIncrementTick(); } }
void vTickedTask(void *argument) { (void)argument; for (;;) { xTaskResumeAll(); } }
void SysTick_Handler(void) { xTaskIncrementTick(); }
void TIMER0_Handler(void) {}
__attribute__((noipa)) void vTaskStartScheduler(void) {}
int main(void) { vTaskStartScheduler(); return 0; }
"""


def test_a_call_cut_where_one_caller_calls_stays_for_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "ticks.c"
    source.write_text(TICKS)
    elf = build_rtos_example(tmp_path, FLAGS, tasks=source)
    board = BOARD.split("contexts:")[0] + (
        "contexts:\n  ticked: {core: cpu0, kind: task, entry: vTickedTask, stack: {size: 4096}}\n"
        "  systick: {core: cpu0, kind: isr, entry: SysTick_Handler, priority: 255}\n"
    )
    argv = [str(elf), "--objects", str(tmp_path), "--json"]
    code, out, _ = _stacks(capsys, tmp_path, board, *argv)
    before = {s["context"]: s["static_bound"] for s in json.loads(out)["stacks"]}
    assert before["ticked"] > 3000 and before["main"] > 3000
    hints = tmp_path / "hints.yaml"
    hints.write_text(
        "memplace: stack_hints/v1\ncut_calls:\n  - {caller: xTaskIncrementTick, "
        "callee: vApplicationTickHook, called_from: xTaskResumeAll}\n"
    )
    code, out, _ = _stacks(capsys, tmp_path, board, *argv, "--stack-hints", str(hints))
    report = json.loads(out)
    after = {s["context"]: s["static_bound"] for s in report["stacks"]}
    assert code == 0 and after["ticked"] < 1000  # the task's path no longer reaches the hook
    assert after["main"] == before["main"]  # the tick interrupt's still does
    assert report["assumptions"] == [
        "call cut: xTaskIncrementTick never calls vApplicationTickHook when called from "
        f"xTaskResumeAll ({hints}:3:14)"
    ]


@pytest.mark.parametrize(
    ("defined", "port", "error"),
    [
        ("void vPortStoreTaskMPUSettings(void) {}", "ARM_CM3_MPU", None),
        ("void *xSecureContext;", None, None),
        (
            "void *pxCurrentTCBs[2];",
            None,
            "rtos: the image's FreeRTOS port has several cores (configNUMBER_OF_CORES > 1) "
            "(pxCurrentTCBs), which memplace does not model",
        ),
        (
            "void vPortEnableVFP(void) {}",
            None,
            "rtos: the image holds a FreeRTOS port for a floating-point unit (vPortEnableVFP), "
            "but the board's cortex-m3 with float_abi soft has none in use: set the core's cpu "
            "and float_abi to the firmware's",
        ),
    ],
    ids=["mpu", "trustzone on armv7-m", "smp", "fpu port on an m3"],
)
def test_the_port_is_read_from_the_image(
    defined: str,
    port: str | None,
    error: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What the image defines says which port switches its tasks; a port memplace does not
    model is refused by name, never guessed."""
    (tmp_path / "port.c").write_text(defined + "\n")
    gcc = process.find_tool("arm-none-eabi-gcc")
    objects = []
    for path in (SOURCES / "tasks.c", SOURCES / "startup.c", tmp_path / "port.c"):
        objects.append(str(tmp_path / f"{path.stem}.o"))
        argv = [gcc, *FLAGS, "-fstack-usage", "-fcallgraph-info=su,da", "-c", str(path)]
        assert (
            process.run([*argv, "-o", objects[-1]], timeout=PATIENCE, cwd=tmp_path).returncode == 0
        )
    elf = tmp_path / "rtos.elf"
    argv = [gcc, *FLAGS, "-nostdlib", "-T", str(SOURCES / "link.ld"), *objects, "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    board = (SOURCES / "board.yaml").read_text()
    code, out, err = _stacks(
        capsys, tmp_path, board, str(elf), "--objects", str(tmp_path), "--json"
    )
    if error is not None:
        assert code == 2 and err.strip() == f"memplace: error: {error}"
        assert json.loads(out)["error"]["key"] == "rtos"
        return
    stacks = {s["context"]: s for s in json.loads(out)["stacks"]}
    # (TrustZone's non-secure side is an Armv8-M port: on the M3 the image is ARM_CM3's)
    (switch,) = stacks["rx"]["interrupts"]
    assert switch["context"] == f"context switch (freertos {port or 'ARM_CM3'})"
