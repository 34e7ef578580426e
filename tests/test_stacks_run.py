"""`memplace stacks --run`: marks from a run of the firmware, unchanged, under QEMU.

The firmware (tests/firmware/switching) switches tasks as FreeRTOS's Cortex-M3 and
Cortex-M4F ports do, with FreeRTOS's task lists and control blocks, and prints, as
`uxTaskGetStackHighWaterMark` counts it, how much of the deep task's stack was never
touched. That task yields at its deepest frame, so a context switch stacks its frame and
r4-r11 right below it; on the Cortex-M4F, with a live floating-point context, the extended
frame and s16-s31 too. It ends itself after a fixed number of rounds, so what a run
measures does not depend on the machine's speed; built never to end (-DROUNDS=0), it is read
when the run's time is up."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import PATIENCE
from memplace import process
from memplace.cli import main

pytestmark = pytest.mark.qemu

SOURCES = Path(__file__).parent / "firmware" / "switching"
CORES = {
    # board: the compiler's flags for its core
    "qemu-mps2-an385": ["-mcpu=cortex-m3", "-mthumb"],
    "qemu-mps2-an386": ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
}
FLAGS = ["-O1", "-g", "-ffreestanding"]
WAIT = f"{PATIENCE:g}"  # the firmware ends itself: a run's --timeout only guards against a hang
BOARD = """\
memplace: board/v1
extends: BASE
name: switching
cores:
  cpu0: {rtos: freertos}
contexts:
  deep:    {core: cpu0, kind: task, entry: vDeepTask, task: Deep, stack: {size: 512}}
  shallow: {core: cpu0, kind: task, entry: vShallowTask, task: Shallow, stack: {size: 512}}
  pendsv:  {core: cpu0, kind: isr, entry: xPortPendSVHandler, priority: 255}
  svc:     {core: cpu0, kind: isr, entry: vPortSVCHandler, priority: 0}
  systick: {core: cpu0, kind: isr, entry: xPortSysTickHandler, priority: 255}
  timer0:  {core: cpu0, kind: isr, entry: TIMER0_Handler, priority: 64}
"""


@pytest.fixture(scope="module", params=sorted(CORES))
def base(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory, base: str) -> Path:
    return _build(tmp_path_factory.mktemp("switching") / "build", [*CORES[base], *FLAGS])


def _build(
    build: Path,
    flags: list[str],
    names: tuple[str, ...] = ("rtos", "app", "more", "startup"),
    script: str = "link.ld",
) -> Path:
    build.mkdir()
    gcc = process.find_tool("arm-none-eabi-gcc")
    objects = []
    for name in names:
        objects.append(str(build / f"{name}.o"))
        argv = [gcc, *flags, "-fstack-usage", "-fcallgraph-info=su,da", "-c"]
        assert (
            process.run([*argv, str(SOURCES / f"{name}.c"), "-o", objects[-1]], PATIENCE).returncode
            == 0
        )
    elf = build / "switching.elf"
    argv = [gcc, *flags, "-nostdlib", "-T", str(SOURCES / script), *objects, "-lgcc"]
    assert process.run([*argv, "-o", str(elf)], timeout=PATIENCE).returncode == 0
    return elf


# More of FreeRTOS's ports, each switching as the port does (tests/firmware/switching):
# the board it runs on, what the board's core says, the compiler's flags, and what a
# switch leaves on the deep task's stack (its FP context live) and on the shallow one's.
PORTS = {
    "ARM_CM0": ("qemu-mps2-an385", ", cpu: cortex-m0", ["-mcpu=cortex-m0"], 76, 76),
    "ARM_CM7": (
        "qemu-mps2-an500",
        "",
        ["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"],
        216,
        80,
    ),
    # CONTROL under r4-r11 (and EXC_RETURN, s16-s31 on the Cortex-M4F), the v1 layout.
    "ARM_CM3_MPU": ("qemu-mps2-an385", "", ["-mcpu=cortex-m3", "-DMPU_PORT"], 80, 80),
    "ARM_CM4_MPU": (
        "qemu-mps2-an386",
        "",
        ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-DMPU_PORT"],
        220,
        84,
    ),
    "ARM_CM33_NTZ": (
        "qemu-mps3-an547",
        "",
        ["-mcpu=cortex-m55", "-mfloat-abi=hard", "-DNO_DEVICE_TIMER"],
        220,
        84,
    ),
}


@pytest.mark.parametrize("port", sorted(PORTS))
def test_each_ports_switch_frame_holds_its_mark(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Armv6-M (r8-r11 through the low registers), the Cortex-M7's FP port, the MPU ports
    (CONTROL under r4-r11) and Armv8.1-M (PSPLIM and EXC_RETURN under r4-r11, the extended
    frame and s16-s31 over them): the
    port is read from the image and core, and the deep task, switched out at its deepest
    frame, measures within a word or two of its bound."""
    base, core, flags, deep_switch, plain_switch = PORTS[port]
    flags = [*flags, "-mthumb", *FLAGS, "-Wl,--defsym=__stack_top=0x20080000"]
    firmware = _build(tmp_path / "build", flags)
    board = tmp_path / "board.yaml"
    board.write_text(
        BOARD.replace("BASE", base).replace(
            "cpu0: {rtos: freertos}", f"cpu0: {{rtos: freertos{core}}}"
        )
    )
    argv = ["stacks", str(firmware), "--board", str(board), "--json", "--run", "--timeout", WAIT]
    assert main(argv) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    switch = f"context switch (freertos {port})"
    assert stacks["deep"]["interrupts"] == [{"context": switch, "bytes": deep_switch}]
    assert stacks["shallow"]["interrupts"] == [{"context": switch, "bytes": plain_switch}]
    stacks.pop("system calls (each task's)", None)  # (an MPU port's: bounded, not measured)
    for name, stack in stacks.items():
        assert 0 < stack["measured"] <= stack["static_bound"], name
    assert stacks["deep"]["static_bound"] - stacks["deep"]["measured"] <= 16


@pytest.fixture
def board_file(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "board.yaml"
    path.write_text(BOARD.replace("BASE", base))
    return path


def test_tasks_are_found_bounded_and_measured_without_being_listed(
    firmware: Path, board_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The firmware creates two tasks at one entry (vWorkerTask) with xTaskCreate, their
    stacks from the heap, which the board does not list: each is found from its creation's
    constants (name, depth in words), bounded from the entry, and measured from memplace's
    paint of the heap, since the kernel fills no stack."""
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json"]
    assert main(argv) == 0
    static = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert main([*argv, "--run", "--timeout", WAIT]) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert sorted(stacks) == ["Other", "Worker 1", "Worker 2", "deep", "main", "shallow"]
    for name in ("Worker 1", "Worker 2", "Other"):
        worker = stacks[name]
        assert worker["budget"] == 96 * 4
        assert worker["static_bound"] == static[name]["static_bound"]
        assert 64 < worker["measured"] <= worker["static_bound"]
    # Two static functions named work, in app.c and more.c: each task's path says which.
    assert stacks["Worker 1"]["path"] == ["vWorkerTask", "app.c:work"]
    assert stacks["Other"]["path"] == ["vOtherTask", "more.c:work"]


def test_a_task_whose_name_alone_is_made_at_run_time_is_bounded_by_its_entry(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As FreeRTOS 11 creates its idle task: the name copied into a buffer at run time, the
    # depth (72 words) a constant. Without a run the stack is still bounded and checked,
    # under its entry's name; before, it was a finding asking for the task in the board.
    flags = [*CORES[base], *FLAGS, "-DNAMED_LIKE_THE_IDLE_TASK"]
    firmware = _build(tmp_path / "build", flags)
    assert main(["stacks", str(firmware), "--board", str(board_file), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    stacks = {s["context"]: s for s in report["stacks"]}
    idle = stacks["vIdleLikeTask()"]
    assert idle["budget"] == 72 * 4 and idle["path"][:2] == ["vIdleLikeTask", "app.c:work"]
    assert stacks["Worker 1"]["budget"] == 96 * 4


def test_a_hint_names_one_of_two_static_functions_by_its_file(
    firmware: Path, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json"]
    assert main(argv) == 0
    before = {
        s["context"]: s["static_bound"] for s in json.loads(capsys.readouterr().out)["stacks"]
    }
    hints = tmp_path / "hints.yaml"
    hints.write_text("memplace: stack_hints/v1\nframes:\n  - {function: more.c:work, size: 200}\n")
    assert main([*argv, "--stack-hints", str(hints)]) == 0
    after = {s["context"]: s["static_bound"] for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert after["Other"] > before["Other"]
    assert after["Worker 1"] == before["Worker 1"]


def test_a_stack_nothing_filled_has_no_mark(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A heap memplace does not know (not FreeRTOS's ucHeap) is not painted, and the kernel
    fills nothing: its tasks get no mark, never a false overflow. A task created with a
    name built at run time is found from the creation call the run makes (entry, name and
    depth as given); one made by a function memplace does not follow is found in the
    kernel's lists only: a finding, since nothing says its entry or size."""
    flags = [*CORES[base], *FLAGS, "-DHEAP=xAppHeap", "-DNAMED_AT_RUN_TIME"]
    firmware = _build(tmp_path / "build", flags)
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json"]
    assert main(argv) == 1
    found = {
        (f["check"], f["subject"]): f["message"]
        for f in json.loads(capsys.readouterr().out)["findings"]
    }
    (created,) = [m for (_, subject), m in found.items() if subject.startswith("created at")]
    assert created.startswith("main creates vWorkerTask() through xTaskCreate at 0x")
    assert main([*argv, "--run", "--timeout", WAIT]) == 1
    report = json.loads(capsys.readouterr().out)
    stacks = {s["context"]: s for s in report["stacks"]}
    assert stacks["Worker 2"]["measured"] is None
    # Two tasks of other code share the name Worker 1: a stack each.
    mine, other = (
        stacks["Worker 1 (vWorkerTask, 384 bytes)"],
        stacks["Worker 1 (vOtherTask, 320 bytes)"],
    )
    assert other["path"] == ["vOtherTask", "more.c:work"] and other["budget"] == 320
    assert mine["measured"] is None and other["measured"] is None
    assert stacks["deep"]["measured"] is not None  # a static stack, painted as it is given
    late = stacks["Late"]  # its name made at run time: the run's creation call says it
    assert late["budget"] == 64 * 4 and late["path"] == ["vWorkerTask", "app.c:work"]
    found = {(f["check"], f["subject"]): f["message"] for f in report["findings"]}
    assert not [f for f in report["findings"] if f["check"] in ("stack-budget", "stack-analysis")]
    assert found[("stack-mark", "Worker 2")].startswith(
        "no mark: the lowest bytes of task 'Worker 2''s stack at 0x"
    )
    # Told apart by the stack each creation got, each holds no fill of its own.
    for name in ("Worker 1 (vOtherTask, 320 bytes)", "Worker 1 (vWorkerTask, 384 bytes)"):
        assert found[("stack-mark", name)].startswith(
            "no mark: the lowest bytes of task 'Worker 1''s stack at 0x"
        )
    assert found[("task", "Pinned")] == (
        "the kernel runs task 'Pinned', which no task creation memplace follows and no board "
        "task names: list it in the board (kind: task, entry, task, stack: {size: BYTES})"
    )
    assert not [subject for _, subject in found if subject.startswith("created at")]


def test_the_c_librarys_heap_is_painted_too(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """heap_3 takes task stacks from malloc: the heap the linker script names (a section
    `.heap` here) is painted at main as FreeRTOS's ucHeap is."""
    firmware = _build(
        tmp_path / "build", [*CORES[base], *FLAGS, "-DHEAP=xAppHeap", "-DHEAP_SECTION"]
    )
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json", "--run"]
    assert main([*argv, "--timeout", WAIT]) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    for name in ("Worker 1", "Worker 2", "Other"):
        assert 64 < stacks[name]["measured"] <= stacks[name]["static_bound"], name


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            "ghost: {core: cpu0, kind: task, entry: vDeepTask, task: Ghost, stack: {size: 512}}",
            "the firmware creates no task named 'Ghost'; it creates vDeepTask() as 'Deep'; "
            "the run's tasks: Deep, Other, Shallow, Worker 1, Worker 2",
        ),
        (
            "deep: {core: cpu0, kind: task, entry: vDeepTask, task: Deep, stack: {size: 1024}}",
            "the board gives it 1024 bytes, more than the 512 bytes of stack the firmware "
            "creates task 'Deep' with (xTaskCreateStatic in main); its budget is the real "
            "stack's",
        ),
        (
            "deep: {core: cpu0, kind: task, entry: vShallowTask, task: Deep, stack: {size: 512}}",
            "the board starts task 'Deep' at vShallowTask(), but the firmware creates it at "
            "vDeepTask() (xTaskCreateStatic in main)",
        ),
    ],
    ids=["never created", "larger than the real stack", "another entry"],
)
def test_a_board_task_that_does_not_match_the_firmware_is_a_finding(
    firmware: Path,
    base: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    context: str,
    message: str,
) -> None:
    board = BOARD.replace("BASE", base).replace(
        "  deep:    {core: cpu0, kind: task, entry: vDeepTask, task: Deep, stack: {size: 512}}",
        f"  {context}",
    )
    (tmp_path / "board.yaml").write_text(board)
    argv = ["stacks", str(firmware), "--board", str(tmp_path / "board.yaml"), "--json"]
    assert main([*argv, "--run", "--timeout", WAIT]) == 1
    report = json.loads(capsys.readouterr().out)
    subject = context.split(":")[0]
    assert [f["message"] for f in report["findings"] if f["check"] == "task"] == [message]
    assert any(f["subject"] == subject for f in report["findings"])


def test_marks_are_read_from_the_running_firmware(
    firmware: Path, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = board_file
    console = tmp_path / "console.txt"
    argv = ["stacks", str(firmware), "--board", str(board), "--run", "--timeout", WAIT]
    assert main([*argv, "--console", str(console)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run: read at its exit (code 0); console: ")
    words = re.findall(r"Deep high water mark: (\d+) words", console.read_text())
    assert words, "the firmware reported no mark"
    assert main([*argv, "--json"]) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    deep = stacks["deep"]
    # The firmware's own count (untouched words at the low end), taken a while before the
    # end, gives the same mark, or a smaller one if an interrupt reached deeper since.
    reported = 512 - 4 * int(words[-1])
    assert reported <= deep["measured"] <= reported + 32
    for name in ("main", "deep", "shallow"):
        stack = stacks[name]
        assert 0 < stack["measured"] <= stack["static_bound"], name
    # The tick and the device interrupt (which can nest over it) ran on the main stack.
    handlers = {i["context"]: i["bytes"] for i in stacks["main"]["interrupts"]}
    assert stacks["main"]["measured"] >= handlers["timer0"]
    # Where no recursion or hinted call inflates it, the bound is close to the use: the
    # deep task yields at its deepest frame with what its port saves (on the Cortex-M4F,
    # with its floating-point context live).
    assert deep["static_bound"] <= 1.5 * deep["measured"]
    switch = {"qemu-mps2-an385": 76, "qemu-mps2-an386": 216}[board_base(board)]
    assert deep["interrupts"] == [{"context": switch_name(board), "bytes": switch}]
    # The shallow task holds no floating-point instruction: the basic frame, even on the
    # Cortex-M4F (32 + 4 + r4-r11 and EXC_RETURN + 8).
    plain = {"qemu-mps2-an385": 76, "qemu-mps2-an386": 80}[board_base(board)]
    assert stacks["shallow"]["interrupts"] == [{"context": switch_name(board), "bytes": plain}]


def test_firmware_that_never_ends_is_read_when_its_time_is_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Stopped at a moment only the machine's speed decides: whatever the firmware reached
    # by then, no stack used more than its bound.
    flags = [*CORES["qemu-mps2-an385"], *FLAGS, "-DROUNDS=0"]
    endless = _build(tmp_path / "build", flags)
    (tmp_path / "board.yaml").write_text(BOARD.replace("BASE", "qemu-mps2-an385"))
    argv = ["stacks", str(endless), "--board", str(tmp_path / "board.yaml"), "--run"]
    assert main([*argv, "--timeout", "1"]) == 0
    assert capsys.readouterr().out.startswith("run: stopped after 1 s and read; console: ")
    assert main([*argv, "--timeout", "1", "--json"]) == 0
    for stack in json.loads(capsys.readouterr().out)["stacks"]:
        assert stack["measured"] is None or stack["measured"] <= stack["static_bound"], stack


def board_base(board: Path) -> str:
    return board.read_text().split("extends: ")[1].split()[0]


def switch_name(board: Path) -> str:
    port = "ARM_CM3" if board_base(board) == "qemu-mps2-an385" else "ARM_CM4F"
    return f"context switch (freertos {port})"


def test_a_mark_above_its_bound_is_a_finding(
    firmware: Path, base: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Told that the deep task's frames are smaller than they are, the bound falls below
    # what the run measures: the analysis missed bytes, and the report says so.
    (tmp_path / "board.yaml").write_text(BOARD.replace("BASE", base))
    (tmp_path / "hints.yaml").write_text(
        "memplace: stack_hints/v1\nframes:\n  - {function: deep, size: 8}\n"
    )
    argv = ["stacks", str(firmware), "--board", str(tmp_path / "board.yaml"), "--run"]
    argv += ["--timeout", WAIT, "--stack-hints", str(tmp_path / "hints.yaml"), "--json"]
    assert main(argv) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["check"], f["subject"]) for f in findings] == [("stack-analysis", "deep")]


def test_run_needs_a_board_that_runs_under_qemu(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "board.yaml"
    path.write_text("memplace: board/v1\nextends: stm32f746\nname: on-the-bench\n")
    assert main(["stacks", str(firmware), "--board", str(path), "--run"]) == 2
    assert "--run: board on-the-bench does not run under QEMU" in capsys.readouterr().err


def test_firmware_that_exits_is_read_at_its_exit(
    built_demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The demo exerciser paints its own stacks and reports its main stack's mark before it
    # exits through semihosting; the run is held at that exit call and read.
    elf = built_demo / "build" / "cpu0.elf"
    argv = ["stacks", str(elf), "--board", "qemu-mps3-an547", "--objects", str(built_demo)]
    assert main([*argv, "--run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run: read at its exit (code 0); console: ")
    reported = re.search(r"memplace: stack main used (\d+) budget", out)
    assert reported is not None
    assert f"stack main: measured {reported[1]} of 16384 bytes" in out


FAULTS = """\
void reset(void) { for (;;) { } }
__attribute__((section(".vectors"), used)) void (*const vectors[2])(void) = {
    (void (*)(void))0x20001000, reset};
"""


def test_firmware_qemu_cannot_run_is_a_tool_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Linked where the AN385 has no memory: the core locks up at its first fetch.
    (tmp_path / "far.c").write_text(FAULTS)
    gcc = process.find_tool("arm-none-eabi-gcc")
    argv = [gcc, "-mcpu=cortex-m3", "-mthumb", "-nostdlib", "-fstack-usage", "-Wl,-e,reset"]
    argv += ["-Wl,--section-start=.vectors=0xF0000000", "-Wl,-Ttext=0xF0000100"]
    argv += ["-o", str(tmp_path / "far.elf"), str(tmp_path / "far.c")]
    assert process.run(argv, timeout=PATIENCE, cwd=tmp_path).returncode == 0
    code = main(["stacks", str(tmp_path / "far.elf"), "--board", "qemu-mps2-an385", "--run"])
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("memplace: error: QEMU ended the run: qemu: fatal: Lockup")


def test_a_failing_exit_is_a_finding(built_demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The AN547 exerciser on the AN385 faults at once and exits with 125.
    elf = built_demo / "build" / "cpu0.elf"
    argv = ["stacks", str(elf), "--board", "qemu-mps2-an385", "--objects", str(built_demo)]
    assert main([*argv, "--run", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert {
        "check": "run",
        "subject": "exit",
        "message": "the firmware exited with code 125",
    } in findings


def test_an_mpu_ports_tasks_need_debug_information(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [*CORES[base], "-O1", "-ffreestanding", "-DMPU_PORT"]  # no -g
    port = {"qemu-mps2-an385": "ARM_CM3_MPU", "qemu-mps2-an386": "ARM_CM4_MPU"}[base]
    firmware = _build(tmp_path / "build", flags)
    argv = ["stacks", str(firmware), "--board", str(board_file), "--run", "--timeout", WAIT]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"memplace: error: --run: FreeRTOS's {port} port starts its task control blocks "
        "with the task's MPU settings, which only the image's debug information lays out: "
        "build switching.elf with -g to read its tasks from a run"
    )


def test_a_main_stack_outside_the_boards_memories_is_an_error(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SSRAM2/3 mirror above the board's 4 MB: QEMU runs it, the board has no memory
    there, so the mark would be read from nowhere."""
    flags = [*CORES[base], *FLAGS, "-Wl,--defsym=__stack_top=0x20800000"]
    firmware = _build(tmp_path / "build", flags)
    argv = ["stacks", str(firmware), "--board", str(board_file), "--run", "--json"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    message = (
        "--run: the main stack, [0x207fe000, 0x20800000) below the initial stack pointer of "
        "switching.elf's vector table, is in none of board switching's writable memories: "
        "add the memory it is in to the board (or correct the main stack's size)"
    )
    assert captured.err.strip() == f"memplace: error: {message}"
    assert json.loads(captured.out)["error"]["message"] == message


def test_an_mpu_ports_system_call_stack_is_bounded(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each task's system-call stack holds the deepest MPU_...Impl function and the
    exception frame the system call copies there; its size comes from the debug
    information, without which it is refused."""
    firmware = _build(tmp_path / "build", [*CORES[base], *FLAGS, "-DMPU_PORT"])
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json"]
    assert main(argv) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    calls = stacks["system calls (each task's)"]
    frame = {"qemu-mps2-an385": 36, "qemu-mps2-an386": 108}[base]
    assert calls["budget"] == 64 * 4 and calls["path"] == ["MPU_vTaskDelayImpl"]
    assert calls["interrupts"] == [{"context": "system call", "bytes": frame}]
    assert calls["static_bound"] >= 120 + frame
    stripped = _build(tmp_path / "stripped", [*CORES[base], "-O1", "-ffreestanding", "-DMPU_PORT"])
    assert main(["stacks", str(stripped), "--board", str(board_file)]) == 2
    assert capsys.readouterr().err.strip() == (
        "memplace: error: FIRMWARE.elf: switching.elf makes FreeRTOS MPU system calls "
        "(MPU_...Impl), whose stack size (configSYSTEM_CALL_STACK_SIZE) only the image's "
        "debug information gives: build it with -g"
    )


def test_tasks_of_one_name_are_measured_each_by_its_own_stack(
    base: str, board_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two tasks named 'Worker 1' run other code with other stack sizes (vWorkerTask, 96
    words; vOtherTask, 80 words), both from the heap (xTaskCreate): the run follows each
    creation to the stack pvPortMalloc gives it, so each is measured from its own task
    control block's stack, not from whichever of the name is deepest. A board task keyed by
    the name applies to both."""
    firmware = _build(tmp_path / "build", [*CORES[base], *FLAGS, "-DSHARED_NAME"])
    argv = ["stacks", str(firmware), "--board", str(board_file), "--json", "--run"]
    assert main([*argv, "--timeout", WAIT]) == 0
    report = json.loads(capsys.readouterr().out)
    stacks = {s["context"]: s for s in report["stacks"]}
    mine = stacks["Worker 1 (vWorkerTask, 384 bytes)"]
    other = stacks["Worker 1 (vOtherTask, 320 bytes)"]
    assert other["path"] == ["vOtherTask", "more.c:work"] and other["budget"] == 320
    assert mine["path"] == ["vWorkerTask", "app.c:work"] and mine["budget"] == 384
    for stack in (mine, other, stacks["Other"], stacks["Worker 2"]):
        assert 64 < stack["measured"] <= stack["static_bound"]
    # Each its own: the same code under another name measures the same, and the two of
    # one name differ as their code does.
    assert other["measured"] == stacks["Other"]["measured"]
    assert mine["measured"] == stacks["Worker 2"]["measured"]
    assert mine["measured"] != other["measured"]
    assert report["findings"] == []

    board = tmp_path / "named.yaml"
    listed = (
        "  w1: {core: cpu0, kind: task, entry: vWorkerTask, task: Worker 1, stack: {size: 300}}"
    )
    board.write_text(f"{board_file.read_text()}{listed}\n")
    assert main(["stacks", str(firmware), "--board", str(board), "--json"]) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert stacks["w1 (vWorkerTask, 384 bytes)"]["budget"] == 300
    assert stacks["w1 (vOtherTask, 320 bytes)"]["budget"] == 300
    assert not [name for name in stacks if name.startswith("Worker 1")]
    # Without the kernel's pvPortMalloc the run cannot see which heap stack is whose.
    flags = [*CORES[base], *FLAGS, "-DSHARED_NAME", "-DpvPortMalloc=xAppMalloc"]
    unseen = _build(tmp_path / "unseen", flags)
    assert main(["stacks", str(unseen), *argv[2:], "--timeout", WAIT]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert sorted((f["check"], f["subject"], f["message"]) for f in findings) == [
        (
            "stack-mark",
            f"Worker 1 ({entry})",
            "no mark: tasks of other code or stack sizes are named 'Worker 1' too, and the "
            "run did not see which stack each was given",
        )
        for entry in ("vOtherTask, 320 bytes", "vWorkerTask, 384 bytes")
    ]

    # An entry none of them has is a finding naming theirs.
    board.write_text(
        board.read_text().replace(
            "entry: vWorkerTask, task: Worker 1", "entry: vDeepTask, task: Worker 1"
        )
    )
    assert main(["stacks", str(firmware), "--board", str(board), "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["check"], f["subject"], f["message"]) for f in findings] == [
        (
            "task",
            "w1",
            "the board starts task 'Worker 1' at vDeepTask(), but the firmware creates the "
            "tasks of that name at vWorkerTask(), vOtherTask()",
        )
    ]


TRUSTZONE_BOARD = """\
memplace: board/v1
name: switching-ns
cores:
  cpu0:
    cpu: CPU
    float_abi: FLOAT
    interrupts: 124
    rtos: freertos
    boot: 0x80000000
    layout: {vectors: psram, code: psram, data: psram, load: psram}
memories:
  psram: {origin: 0x80000000, size: 16M, attrs: rwx, kind: dram, access: [cpu0]}
contexts:
  main:    {core: cpu0, entry: main, stack: {memory: psram, size: 8K}}
  deep:    {core: cpu0, kind: task, entry: vDeepTask, task: Deep, stack: {size: 512}}
  shallow: {core: cpu0, kind: task, entry: vShallowTask, task: Shallow, stack: {size: 512}}
  pendsv:  {core: cpu0, kind: isr, entry: xPortPendSVHandler, priority: 255}
  svc:     {core: cpu0, kind: isr, entry: vPortSVCHandler, priority: 0}
  systick: {core: cpu0, kind: isr, entry: xPortSysTickHandler, priority: 255}
run:
  qemu: {machine: mps2-an505}
"""


# The core, its float ABI, the compiler's flags, what a switch leaves on the deep task's
# stack and on the shallow one's. QEMU has no Cortex-M23: its Armv8-M baseline code (and
# the ARM_CM23 port's switch, r8-r11 through the low registers) runs on the AN505's M33.
TRUSTZONE = {
    "cortex-m33": ("hard", ["-mcpu=cortex-m33", "-mfloat-abi=hard"], 224, 88),
    "cortex-m23": ("soft", ["-mcpu=cortex-m23"], 88, 88),
}


@pytest.mark.parametrize("cpu", sorted(TRUSTZONE))
def test_the_non_secure_side_of_trustzone_holds_its_mark(
    cpu: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MPS2 AN505's Cortex-M33 boots secure into a secure stub of our own (secure.c),
    which hands the PSRAM to the non-secure state and branches there: the firmware runs as
    FreeRTOS's non-secure ports do (ARM_CM33: xSecureContext, PSPLIM and EXC_RETURN under
    r4-r11, s16-s31 over them; ARM_CM23: the same, r8-r11 through the low registers).
    The port is read from the image (ARM_CM33, not ARM_CM33_NTZ), the board names the
    non-secure vector table, and the deep task, switched out at its deepest frame,
    measures within a word or two of its bound."""
    float_abi, flags, deep_switch, plain_switch = TRUSTZONE[cpu]
    flags = [*flags, "-mthumb", *FLAGS, "-DNO_DEVICE_TIMER", "-DTRUSTZONE_NS"]
    names = ("rtos", "app", "more", "startup", "secure")
    firmware = _build(tmp_path / "build", flags, names, "link_tz.ld")
    board = tmp_path / "board.yaml"
    board.write_text(TRUSTZONE_BOARD.replace("CPU", cpu).replace("FLOAT", float_abi))
    argv = ["stacks", str(firmware), "--board", str(board), "--json", "--run", "--timeout", WAIT]
    assert main(argv) == 0
    stacks = {s["context"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    switch = "context switch (freertos ARM_CM33)"
    assert stacks["deep"]["interrupts"] == [{"context": switch, "bytes": deep_switch}]
    assert stacks["shallow"]["interrupts"] == [{"context": switch, "bytes": plain_switch}]
    for name, stack in stacks.items():
        assert 0 < stack["measured"] <= stack["static_bound"], name
    assert stacks["deep"]["static_bound"] - stacks["deep"]["measured"] <= 16
