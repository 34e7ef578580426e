"""Generated projects a product can ship: C++ inside, CMSIS-named interrupt handlers, an end
that does not need a debugger, the user's own CMake settings, and every memory's free room
in a region. Each is built and run under QEMU."""

from __future__ import annotations

import builtins
import importlib.metadata
import io
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PATIENCE, cli_error, run_cli
from memplace import contract, process, resources
from memplace.board import load_board
from memplace.cli import main
from memplace.codegen import render
from memplace.importers import load_workload
from memplace.planner import plan
from memplace.project_files import USER_CMAKE
from memplace.runners import QemuRunner
from memplace.verify.image import Image
from mlf_archives import v5_archive

pytestmark = pytest.mark.qemu

CPP_MAIN = """#include <stdint.h>
#include <stdexcept>
#include "demo_memplace.h"
#include "memplace_runtime.h"
#include "shape.hpp"

static int constructed;
struct Early {
    Early() { constructed = 7; }
};
static Early early;

// The room of DTCM that no pool or stack takes, and a variable no reset touches.
static uint32_t frame[1024] MEMPLACE_BSS_IN_DTCM;
static uint32_t boots __attribute__((section(".noinit")));

extern "C" uint32_t sum_words(const uint32_t *words, uint32_t count);

static void use_input(int value)
{
    if (value < 0) {
        throw std::runtime_error("negative");
    }
    DEMO_INPUT_PTR[0] = static_cast<uint8_t>(value);
}

extern "C" int app_main(void)
{
    boots++;
    if (constructed != 7) {
        memplace_write("app: no constructor\\n");
        return 1;
    }
    Square square(3);
    const Shape &shape = square;
    if (shape.area() != 9 || unit_square().area() != 1) {
        return 2;
    }
    int caught = 0;
    try {
        use_input(-1);
    } catch (const std::runtime_error &error) {
        caught = 1;
        memplace_write("app: caught ");
        memplace_write(error.what());
        memplace_write("\\n");
    }
    use_input(5);
    frame[0] = 5u;
    frame[1] = 6u;
    if (!caught || DEMO_INPUT_PTR[0] != 5u || sum_words(frame, 2) != 11u || APP_FLAVOUR != 3) {
        return 3;
    }
    memplace_write("app: c++ ok\\n");
    return 0;
}
"""
SHAPE_HPP = """struct Shape {
    virtual ~Shape() = default;
    virtual int area() const = 0;
};
struct Square : Shape {
    explicit Square(int side) : side_(side) {}
    int area() const override;
    int side_;
};
const Shape &unit_square();
"""
SHAPE_CC = """#include "shape.hpp"
int Square::area() const { return side_ * side_; }
const Shape &unit_square()
{
    static const Square unit(1);
    return unit;
}
"""
SUM_S = """    .syntax unified
    .thumb
    .text
    .global sum_words
    .type sum_words, %function
sum_words:
    movs r2, #0
1:  cbz r1, 2f
    ldr r3, [r0], #4
    add r2, r2, r3
    subs r1, r1, #1
    b 1b
2:  mov r0, r2
    bx lr
    .size sum_words, . - sum_words
"""
USER_SETTINGS = """
list(APPEND MEMPLACE_USER_DEFINITIONS APP_FLAVOUR=3)
list(APPEND MEMPLACE_USER_INCLUDE_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/../app/include)
"""


def _app(folder: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def _generate(
    capsys: pytest.CaptureFixture[str],
    board: str | Path,
    out: Path,
    sources: Path,
    *more: str,
    workload: Path | None = None,
) -> None:
    workload = workload or resources.demo_workload()
    argv = ["generate", board, workload, "--out", out, "--project-type", "app"]
    code, _, err = run_cli(capsys, *argv, "--sources", sources, *more)
    assert code == 0, err


def test_a_cpp_app_with_constructors_virtual_calls_and_exceptions_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memplace check` passes a C++ app that throws, catches and calls virtual functions,
    with no stack hints: the C++ runtime's indirect calls and the virtual calls are
    resolved from the image, each resolution listed as an assumption."""
    sources = _app(
        tmp_path / "app",
        {
            "main.cpp": CPP_MAIN,
            "include/shape.hpp": SHAPE_HPP,
            "shapes/square.cc": SHAPE_CC,
            "shapes/asm/sum.S": SUM_S,
        },
    )
    out = tmp_path / "project"
    _generate(capsys, "qemu-mps3-an547", out, sources)
    user = out / USER_CMAKE
    user.write_text(user.read_text() + USER_SETTINGS)
    # Regenerating, even with --force, leaves the user's file as it is.
    _generate(capsys, "qemu-mps3-an547", out, sources, "--force")
    assert user.read_text().endswith(USER_SETTINGS)
    argv = ["check", "qemu-mps3-an547", resources.demo_workload(), "--out", out]
    code, text, err = run_cli(
        capsys, *argv, "--project-type", "app", "--sources", sources, "--json"
    )
    report = json.loads(text)
    assert code == 0, (report["findings"], err)
    assert (
        "app: caught negative\napp: c++ ok\n"
        in json.loads((out / "build/run.json").read_text())["output"]
    )
    (main,) = [s for s in report["stacks"] if s["context"] == "main"]
    assert main["measured"] >= 700  # the unwinder's frames, on top of the thrower's
    assert main["static_bound"] >= main["measured"]
    assert "__gxx_personality_v0" in main["path"]  # the deepest path goes through a throw
    said = report["assumptions"]
    personality = "__gnu_Unwind_RaiseException calls the personality routines: "
    assert any(a.startswith(personality) and "__gxx_personality_v0" in a for a in said), said
    assert (
        "_ZN10__cxxabiv111__terminateEPFvvE calls the terminate handler: abort (cpu0.elf)" in said
    )
    virtual = [a for a in said if a.startswith("virtual call in app_main at ")]
    assert any("main.cpp" in a and "_ZNK6Square4areaEv" in a for a in virtual), said
    # error.what(): runtime_error's, an alias of logic_error's, named by either
    assert any("error4whatEv" in a for a in virtual), said
    assert "frame of 0 bytes: __restore_core_regs (cxx-runtime, cpu0.elf)" in said
    image = Image.from_file(out / "build" / "cpu0.elf")
    frame = image.get_symbol("_ZL5frame") or image.get_symbol("frame")
    assert frame is not None
    assert 0x20000000 <= frame.address < 0x2003C000  # DTCM below its pool: the app's room
    boots = image.get_symbol("_ZL5boots") or image.get_symbol("boots")
    assert boots is not None and image.get_section(".noinit") is not None


def test_an_app_defines_an_interrupt_handler_by_its_vendor_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = _app(
        tmp_path / "app",
        {
            "app.c": """#include <stdint.h>
#include "memplace_runtime.h"
static volatile int fired;
static volatile int initialised;
void SystemInit(void) { initialised = 1; }
void TIMER0_IRQHandler(void) { fired++; }
int app_main(void)
{
    /* Line 3 (TIMER0 of the SSE-300): enable it in the NVIC and pend it. */
    *(volatile uint32_t *)0xE000E100u = 1u << 3;
    *(volatile uint32_t *)0xE000E200u = 1u << 3;
    __asm__ volatile("dsb\\n isb" ::: "memory");
    return fired == 1 ? 0 : 2;
}
"""
        },
    )
    out = tmp_path / "project"
    _generate(capsys, "qemu-mps3-an547", out, sources)
    startup = (out / "memplace/cpu0/startup.c").read_text()
    assert (
        'void TIMER0_IRQHandler(void) __attribute__((weak, alias("Default_Handler")));' in startup
    )
    assert "    TIMER0_IRQHandler, /* irq 3 */" in startup
    assert "    Interrupt6_Handler, /* irq 6 */" in startup  # a line Arm reserves
    assert run_cli(capsys, "build", out)[0] == 0
    code, text, _ = run_cli(capsys, "run", out)
    assert code == 0, text


def test_the_stm32h743_table_carries_sts_names(tmp_path: Path) -> None:
    board = load_board("stm32h743")
    small = tmp_path / "small.yaml"
    small.write_text(
        "memplace: workload/v1\nname: small\nbuffers:\n  - {name: x, size: 1K, live: [0, 0]}\n"
    )
    workload = load_workload(small, None, board)
    startup = render(board, plan(board, workload))["memplace/cm7/startup.c"]
    assert "    WWDG_IRQHandler, /* irq 0 */" in startup
    assert "    ETH_IRQHandler, /* irq 61 */" in startup
    assert "    WAKEUP_PIN_IRQHandler, /* irq 149 */" in startup
    assert 'void ETH_IRQHandler(void) __attribute__((weak, alias("Default_Handler")));' in startup
    assert startup.count("ETH_IRQHandler(void) __attribute__") == 1


ON_A_BENCH = """memplace: board/v1
name: an547-on-a-bench
extends: qemu-mps3-an547
run: {{simulator: false, on_exit: {on_exit}}}
"""
ENDS = """#include <stdint.h>
#include "memplace_runtime.h"
int app_main(void)
{
#ifdef APP_FAULT
    __asm__ volatile(".inst.n 0xde00"); /* undefined: a UsageFault, escalated to HardFault */
#endif
    memplace_write("app: ended\\n");
    return 3;
}
"""


def _bench_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], on_exit: str, app: str, fault: bool
) -> Path:
    board = tmp_path / "board.yaml"
    board.write_text(ON_A_BENCH.format(on_exit=on_exit))
    out = tmp_path / "project"
    _generate(capsys, board, out, _app(tmp_path / "app", {"app.c": app}))
    if fault:
        user = out / USER_CMAKE
        user.write_text(user.read_text() + "list(APPEND MEMPLACE_USER_DEFINITIONS APP_FAULT)\n")
    assert run_cli(capsys, "build", out)[0] == 0
    return out


def _qemu(elf: Path, *extra: str, serial: bool = False) -> process.Completed:
    """QEMU as a board without a debugger: a reset ends it (-no-reboot). With `serial`,
    UART0 goes to QEMU's output."""
    argv = QemuRunner("mps3-an547").command({"cpu0": elf})
    at = argv.index("-semihosting-config")
    del argv[at : at + 2]
    if serial:
        argv[argv.index("-serial") + 1] = "stdio"
    argv[0] = process.find_tool(argv[0])
    return process.run([*argv, "-no-reboot", *extra], timeout=PATIENCE)


@pytest.mark.parametrize("fault", [False, True], ids=["return", "fault"])
@pytest.mark.parametrize("semihosting", [False, True], ids=["plain", "semihosting"])
def test_without_a_debugger_the_firmware_resets_as_the_board_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: bool, semihosting: bool
) -> None:
    out = _bench_project(tmp_path, capsys, "reset", ENDS, fault)
    startup = (out / "memplace/cpu0/startup.c").read_text()
    assert "return (*(volatile const uint32_t *)0xE000EDF0u & 1u) != 0u;" in startup
    extra = ("-semihosting-config", "enable=on,target=native") if semihosting else ()
    done = _qemu(out / "build" / "cpu0.elf", *extra)
    # No debugger (QEMU's DHCSR.C_DEBUGEN reads 0): no semihosting call, not even with QEMU
    # ready to take one; the firmware resets through AIRCR, which -no-reboot turns into an
    # exit. A fault ends the same way: no `bkpt` to escalate into a lockup.
    assert done.returncode == 0
    assert "app: ended" not in done.output


def test_on_exit_hook_gets_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = """#include <stdint.h>
#include "memplace_runtime.h"
#define UART0_DATA (*(volatile uint32_t *)0x49303000u)
#define UART0_CTRL (*(volatile uint32_t *)0x49303008u)
void memplace_on_exit(int code)
{
    const char *text = "hook: exit ";
    UART0_CTRL = 1u; /* transmit enable */
    while (*text != '\\0') {
        UART0_DATA = (uint32_t)*text++;
    }
    UART0_DATA = (uint32_t)('0' + code);
    UART0_DATA = '\\n';
    *(volatile uint32_t *)0xE000ED0Cu = 0x05FA0004u; /* reset: -no-reboot ends QEMU */
}
int app_main(void) { return 3; }
"""
    out = _bench_project(tmp_path, capsys, "hook", app, False)
    done = _qemu(out / "build" / "cpu0.elf", serial=True)
    assert done.returncode == 0
    assert "hook: exit 3" in done.output


def test_a_simulator_board_ends_through_semihosting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "project"
    _generate(capsys, "qemu-mps3-an547", out, _app(tmp_path / "app", {"app.c": ENDS}))
    startup = (out / "memplace/cpu0/startup.c").read_text()
    assert "static int memplace_host_attached(void)\n{\n    return 1;\n}" in startup
    assert run_cli(capsys, "build", out)[0] == 0
    code, text, _ = run_cli(capsys, "run", out)
    assert code == 3
    assert "app: ended" in text


def _regions(script: str) -> list[tuple[int, int]]:
    memory = script[script.index("MEMORY\n{") : script.index("}")]
    spans = []
    for line in memory.splitlines()[2:]:
        origin = int(line.split("ORIGIN = ")[1].split(",")[0], 16)
        spans.append((origin, origin + int(line.split("LENGTH = ")[1], 16)))
    return spans


@pytest.mark.parametrize("name", sorted(resources.bundled_boards()))
def test_every_byte_of_each_memory_is_in_a_region(name: str, tmp_path: Path) -> None:
    board = load_board(name)
    small = tmp_path / "small.yaml"
    small.write_text(
        "memplace: workload/v1\nname: small\nbuffers:\n  - {name: x, size: 1K, live: [0, 0]}\n"
    )
    files = render(board, plan(board, load_workload(small, None, board)), "library")
    covered: dict[str, list[tuple[int, int]]] = {}
    for core in board.cores:
        script = files.get(f"memplace/{core}/linker.ld")
        for start, end in _regions(script) if script else ():
            for item in board.memories.values():
                if core not in item.access:
                    continue
                seen = item.address_for(core)
                if seen <= start < seen + item.size:
                    shift = item.origin - seen
                    covered.setdefault(item.name, []).append((start + shift, end + shift))
    box = 128  # the mailbox of released cores lies outside every region, at one address
    for item in board.memories.values():
        spans = sorted(covered.get(item.name, []))
        assert spans, item.name
        cursor, holes = item.origin, 0
        for start, end in spans:
            holes += max(0, start - cursor)
            # Images of several cores may share a memory; within one image, no overlap.
            cursor = max(cursor, end)
        for core in board.cores:
            script = files.get(f"memplace/{core}/linker.ld")
            mine = sorted(_regions(script)) if script else []
            for (_, end), (start, _) in itertools.pairwise(mine):
                assert end <= start, (core, mine)
        holes += item.origin + item.size - cursor
        assert holes in (0, box), (item.name, spans)


def test_pools_show_their_fill_and_free_room_is_the_applications() -> None:
    board = load_board("qemu-mps3-an547")
    workload = load_workload(resources.demo_workload(), None, board)
    script = render(board, plan(board, workload))["memplace/cpu0/linker.ld"]
    assert "  dtcm                     (rw) : ORIGIN = 0x20000000, LENGTH = 0x0003c000" in script
    # Its capacity, not its use: ld's memory report shows 82% of it used.
    assert "  pool_dtcm_ws             (rw) : ORIGIN = 0x2003c000, LENGTH = 0x00040000" in script
    assert f"  {contract.free_section('dtcm')}.bss (NOLOAD) : ALIGN(4)" in script


def test_version_and_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    import memplace

    code, out, err = run_cli(capsys, "--version")
    assert (code, err) == (0, "")
    assert out == f"memplace {memplace.__version__}\n"
    assert memplace.__version__ == importlib.metadata.version("memplace")


def test_completion_scripts_complete_commands_options_and_boards(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, script, _ = run_cli(capsys, "completion", "bash")
    assert code == 0

    def complete(*words: str) -> list[str]:
        line = " ".join(shlex.quote(w) for w in words)
        probe = f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _memplace\n"
        probe += 'printf "%s\\n" "${COMPREPLY[@]}"\n'
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert complete("memplace", "ge") == ["generate"]
    assert "--project-type" in complete("memplace", "check", "--pro")
    assert "stm32h743" in complete("memplace", "generate", "stm32")
    assert complete("memplace", "-q", "dem") == ["demo"]
    code, zsh, _ = run_cli(capsys, "completion", "zsh")
    assert code == 0 and zsh.startswith("#compdef memplace\n")
    assert "generate) choices=(" in zsh and "stm32h743" in zsh
    if shutil.which("zsh"):
        subprocess.run(["zsh", "-n"], input=zsh, text=True, check=True)
    assert cli_error(capsys, "completion", "fish").startswith("memplace: error: ")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_check_shows_progress_on_a_terminal_and_the_console_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = _app(
        tmp_path / "app",
        {
            "app.c": '#include "memplace_runtime.h"\nint app_main(void)\n{\n'
            '    memplace_write("app: hello from the firmware\\n");\n    return 0;\n}\n'
        },
    )
    terminal = _Terminal()
    seen: list[str] = []
    printed = builtins.print

    def spy(*args: object, **kwargs: object) -> None:
        # The console line is printed while QEMU still runs: before the run's summary.
        seen.append(" ".join(map(str, args)))
        printed(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(builtins, "print", spy)
    workload = resources.demo_workload()
    code = main(
        [
            "check",
            "qemu-mps3-an547",
            str(workload),
            "--out",
            str(tmp_path / "p"),
            "--project-type",
            "app",
            "--sources",
            str(sources),
        ]
    )
    monkeypatch.undo()
    out = capsys.readouterr().out
    assert code == 0, out
    progress = terminal.getvalue().splitlines()
    stages = [
        line.split(":")[1].strip() for line in progress if not line.startswith("memplace:   [")
    ]
    assert stages == ["plan", "render", "build", "run", "verify"], progress
    assert any(re.match(r"memplace:   \[\d+/\d+\] ", line) for line in progress), progress
    assert "app: hello from the firmware" in out
    assert seen.index("app: hello from the firmware") < next(
        i for i, line in enumerate(seen) if line.startswith("run: passed")
    )
    record = json.loads((tmp_path / "p" / "build" / "run.json").read_text())
    assert "app: hello from the firmware\n" in record["output"]
    # -q: no progress, the same report.
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["-q", "run", str(tmp_path / "p")])
    monkeypatch.undo()
    assert code == 0 and terminal.getvalue() == ""
    assert "app: hello from the firmware" in capsys.readouterr().out


def test_output_into_a_pipe_comes_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert (
        run_cli(capsys, "generate", "qemu-mps3-an547", resources.demo_workload(), "--out", out)[0]
        == 0
    )
    (out / "CMakeLists.txt").write_text("# edited\n")
    # As a shell pipes it: Python's own buffering, which PYTHONUNBUFFERED would hide.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-m", "memplace.cli", "demo", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment,
    )
    assert done.returncode == 2
    lines = done.stdout.splitlines()
    assert lines[0].startswith("memplace demo: workload demo")
    assert lines[1].startswith("memplace: error: ") and "was changed" in lines[1]


STANDIN = Path(__file__).resolve().parent / "firmware" / "tflm_standin"
TFLM_APP = Path(__file__).resolve().parent / "firmware" / "tflm_app"
HELLO = Path(__file__).resolve().parents[2] / "shared" / "models" / "tflite-micro"
HELLO = HELLO / "hello_world_int8.tflite"


def _standin_library(folder: Path) -> Path:
    """The stand-in built as a TFLM build would be: for the board's core, into an archive."""
    folder.mkdir()
    flags = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O2", "-Wall", "-Werror"]
    gxx, ar = process.find_tool("arm-none-eabi-g++"), process.find_tool("arm-none-eabi-ar")
    obj = folder / "standin.o"
    compile_ = [gxx, *flags, f"-I{STANDIN}", "-c", str(STANDIN / "standin.cc"), "-o", str(obj)]
    for argv in (compile_, [ar, "rcs", str(folder / "libtensorflow-microlite.a"), str(obj)]):
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    return folder / "libtensorflow-microlite.a"


@pytest.mark.skipif(not HELLO.is_file(), reason="../shared/models is incomplete")
@pytest.mark.parametrize("planned", [True, False], ids=["planned", "unplanned"])
def test_a_tflm_build_links_into_a_project_with_the_planned_arena_and_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], planned: bool
) -> None:
    """The recipe of docs/workloads.md, with the stand-in for libtensorflow-microlite.a."""
    library = _standin_library(tmp_path / "tflm")
    app = tmp_path / "app"
    shutil.copytree(TFLM_APP, app)
    model = app / "planned.tflite"
    if planned:
        argv = ["tflm", HELLO, "--board", "qemu-mps3-an547", "--pool", "dtcm_ws", "--out", model]
        assert run_cli(capsys, *argv)[0] == 0
    else:
        shutil.copy(HELLO, model)  # the model as it was: no plan of memplace's in it
    out = tmp_path / "project"
    _generate(capsys, "qemu-mps3-an547", out, app, workload=HELLO)
    header = (out / "memplace/include/hello_world_int8_memplace.h").read_text()
    assert "#define HELLO_WORLD_INT8_TFLM_ARENA (hello_world_int8_pool_dtcm_ws)" in header
    user = out / USER_CMAKE
    user.write_text(
        user.read_text()
        + f"list(APPEND MEMPLACE_USER_INCLUDE_DIRS {STANDIN})\n"
        + f"list(APPEND MEMPLACE_USER_LIBRARIES {library})\n"
        + 'list(APPEND MEMPLACE_USER_DEFINITIONS "TFLM_MODEL_FILE=\\"${CMAKE_CURRENT_SOURCE_DIR}'
        + '/../app/planned.tflite\\"")\n'
    )
    assert run_cli(capsys, "build", out)[0] == 0
    code, text, _ = run_cli(capsys, "run", out)
    if planned:
        assert code == 0, text
        assert "tflm: output 42 arena used 256\n" in text
    else:
        assert code == 1
        assert "tflm: AllocateTensors failed" in text


def test_check_on_the_aot_demo_prints_the_models_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v5_archive(tmp_path / "model.tar")
    argv = ["check", "qemu-mps3-an547", archive, "--out", tmp_path / "p"]
    code, out, _ = run_cli(capsys, *argv, "--project-type", "aot_standalone_demo")
    assert code == 0, out
    assert "tvm: output y hex f304b53fc262ca3fd7b3dd3f5177ef3f\n" in out
    assert out.index("tvm: output y") < out.index("run: passed")
