"""Generated firmware beyond the demo: ISR contexts, stack frames, user apps, application
pool storage and the CMake module, each built and run for real."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from conftest import PATIENCE, moved_onto, run_cli
from memplace import resources
from memplace.board import Board, load_board
from memplace.build import build
from memplace.codegen import render
from memplace.contract import fnv1a, pool_section
from memplace.planner import plan
from memplace.project import write_project
from memplace.runners import QemuRunner
from memplace.scopes import resolve
from memplace.workflow import run
from memplace.workload import Workload
from test_codegen import SHARED_DYNAMIC

pytestmark = pytest.mark.qemu

REPO = Path(__file__).resolve().parent.parent
ISR_BOARD = """memplace: board/v1
extends: qemu-mps3-an547
name: an547-isr
contexts:
  systick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 2}
  pendsv: {core: cpu0, kind: isr, entry: PendSV_Handler, preempts: [main, systick], priority: 1}
"""
STACK_WORKLOAD = """memplace: workload/v1
name: frames
steps: 4
buffers:
  - {name: act, size: 4K, live: [0, 3]}
  - {name: window, size: 512, live: [0, 2], scope: main.stack}
  - {name: scratch, size: 256, live: [1, 1], scope: local}
  - {name: tail, size: 256, live: [3, 3], scope: local}
"""


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code, out, err = run_cli(capsys, *argv)
    return code, out + err


def test_isr_contexts_run_nested_on_the_stack_they_preempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "isr.yaml"
    board.write_text(ISR_BOARD)
    workload = str(resources.demo_workload())
    code, plain = _check(
        capsys, "check", "qemu-mps3-an547", workload, "--out", str(tmp_path / "plain")
    )
    assert code == 0, plain
    code, with_isrs = _check(capsys, "check", str(board), workload, "--out", str(tmp_path / "isr"))
    assert code == 0, with_isrs
    source = (tmp_path / "isr" / "src" / "exerciser_cpu0.c").read_text()
    assert "void SysTick_Handler(void)" in source and "void PendSV_Handler(void)" in source

    def measured(text: str) -> int:
        line = next(x for x in text.splitlines() if x.startswith("stack main: measured"))
        return int(line.split()[3])

    # Two nested exception frames (with FP context) and two handler frames on top.
    assert measured(with_isrs) >= measured(plain) + 2 * (32 + 64)


def test_an_isr_the_exerciser_cannot_raise_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "irq.yaml"
    board.write_text(ISR_BOARD.replace("PendSV_Handler", "UART0_IRQHandler"))
    code, out = _check(
        capsys, "generate", str(board), str(resources.demo_workload()), "--out", str(tmp_path / "p")
    )
    assert code == 2
    assert (
        "contexts.pendsv.entry: the exerciser can raise ISR contexts on SysTick_Handler or "
        "PendSV_Handler, or on a device interrupt line (give the context `irq: LINE`), not "
        "'UART0_IRQHandler'"
    ) in out
    assert not (tmp_path / "p").exists()


def test_stack_buffers_live_in_a_real_frame(tmp_path: Path, board: Board) -> None:
    workload_file = tmp_path / "frames.yaml"
    workload_file.write_text(STACK_WORKLOAD)
    workload = Workload.from_file(workload_file)
    good = plan(board, workload)
    assert {p.name: p.stack for p in good.placements if p.stack} == {
        "window": "main",
        "scratch": "main",
        "tail": "main",
    }
    out = tmp_path / "good"
    write_project(render(board, good), out)
    build(out)
    log = run(out)
    assert log.passed
    assert log.stacks["main"] >= good.stacks[0].planned
    # The same plan with two live stack buffers on top of each other fails on the target.
    bad = moved_onto(good, "window", "scratch")
    out = tmp_path / "bad"
    write_project(render(board, bad), out)
    build(out)
    log = run(out)
    assert not log.passed
    assert [(f.name, f.step) for f in log.failures] == [("window", 1)]


APP = """#include <stdint.h>
#include "demo_memplace.h"
#include "memplace_runtime.h"

int app_main(void)
{
    uint8_t *input = DEMO_INPUT_PTR;
    uint32_t sum = 0;
    for (uint32_t i = 0; i < DEMO_INPUT_SIZE; i++) {
        input[i] = (uint8_t)i;
    }
    for (uint32_t i = 0; i < DEMO_CONV1_W_SIZE; i++) {
        sum += DEMO_CONV1_W_PTR[i];
    }
    memplace_write("app: done\\n");
    return sum == 0u ? 1 : 42;
}
"""


def test_app_main_return_value_is_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text(APP)
    out = tmp_path / "project"
    workload = str(resources.demo_workload())
    code, text = _check(
        capsys,
        "generate",
        "qemu-mps3-an547",
        workload,
        "--out",
        str(out),
        "--project-type",
        "app",
        "--sources",
        str(sources),
    )
    assert code == 0, text
    # The project names the sources by a relative path only.
    assert '"${CMAKE_CURRENT_SOURCE_DIR}/../app"' in (out / "CMakeLists.txt").read_text()
    assert _check(capsys, "build", str(out))[0] == 0
    code, text = _check(capsys, "run", str(out))
    assert code == 42
    assert "run: FAILED (exit code 42)" in text


def test_an_app_needs_its_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = str(resources.demo_workload())
    code, text = _check(
        capsys,
        "generate",
        "qemu-mps3-an547",
        workload,
        "--out",
        str(tmp_path / "p"),
        "--project-type",
        "app",
    )
    assert code == 2
    assert "--sources: an app project needs --sources DIR" in text
    code, text = _check(
        capsys,
        "generate",
        "qemu-mps3-an547",
        workload,
        "--out",
        str(tmp_path / "p"),
        "--project-type",
        "app",
        "--sources",
        str(tmp_path / "none"),
    )
    assert code == 2
    assert f"--sources: no folder of sources at {tmp_path / 'none'}" in text


OWN_STORAGE = """#include <stdint.h>
#include "small_memplace.h"

uint8_t small_pool_dtcm_ws[SMALL_DTCM_WS_SIZE] SMALL_DTCM_WS_ATTRIBUTES;

int app_main(void)
{
    uint8_t *x = SMALL_X_PTR;
    uint8_t *y = SMALL_Y_PTR;
    x[0] = 1u;
    y[0] = 2u;
    return (x[0] == 1u && y[0] == 2u && small_workspace_pools.dtcm_ws == small_pool_dtcm_ws)
               ? 0 : 1;
}
"""


def test_the_application_may_provide_the_pool_storage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = tmp_path / "small.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: small\nbuffers:\n"
        "  - {name: x, size: 1K, live: [0, 1]}\n"
        "  - {name: y, size: 2K, live: [1, 1]}\n"
    )
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "main.c").write_text(OWN_STORAGE)
    out = tmp_path / "p"
    code, text = _check(
        capsys,
        "generate",
        "qemu-mps3-an547",
        str(workload),
        "--out",
        str(out),
        "--project-type",
        "app",
        "--sources",
        str(sources),
        "--pool-storage",
        "application",
    )
    assert code == 0, text
    assert "uint8_t small_pool_dtcm_ws[" not in (out / "memplace/src/small_pools.c").read_text()
    assert _check(capsys, "build", str(out))[0] == 0
    assert _check(capsys, "run", str(out))[0] == 0
    code, text = _check(capsys, "verify", str(out))
    assert code == 0, text
    # `check` takes the same option and does all of it at once.
    again = tmp_path / "q"
    argv = ["qemu-mps3-an547", str(workload), "--out", str(again), "--project-type", "app"]
    argv += ["--sources", str(sources), "--pool-storage", "application"]
    code, text = _check(capsys, "check", *argv)
    assert code == 0, text
    assert "uint8_t small_pool_dtcm_ws[" not in (again / "memplace/src/small_pools.c").read_text()


@pytest.fixture
def cmake_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _cmake(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmake = shutil.which("cmake", path=env["PATH"])
    assert cmake is not None
    return subprocess.run([cmake, *args], capture_output=True, text=True, env=env, timeout=PATIENCE)


def _configure(
    env: dict[str, str], source: Path, build_dir: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return _cmake(
        env,
        "-S",
        str(source),
        "-B",
        str(build_dir),
        "-G",
        "Ninja",
        f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'cmake' / 'arm-none-eabi.cmake'}",
        *extra,
    )


def test_the_cmake_module_builds_and_verifies_an_existing_project(
    tmp_path: Path, cmake_env: dict[str, str]
) -> None:
    build_dir = tmp_path / "build"
    configure = _configure(
        cmake_env,
        REPO / "examples" / "cmake-app",
        build_dir,
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = _cmake(cmake_env, "--build", str(build_dir))
    assert built.returncode == 0, built.stdout + built.stderr
    assert "memplace: verifying firmware against the plan" in built.stdout
    assert "verify: ok" in built.stdout
    qemu = subprocess.run(
        QemuRunner("mps3-an547").command({"cpu0": build_dir / "firmware.elf"}),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert qemu.returncode == 0
    assert "sensor: features ready" in qemu.stdout + qemu.stderr


def test_the_linker_refuses_a_pool_moved_out_of_its_region(
    tmp_path: Path, cmake_env: dict[str, str]
) -> None:
    build_dir = tmp_path / "build"
    configure = _configure(
        cmake_env,
        REPO / "examples" / "cmake-app",
        build_dir,
        f"-DCMAKE_EXE_LINKER_FLAGS=-Wl,--section-start={pool_section('dtcm_ws')}=0x01180000",
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = _cmake(cmake_env, "--build", str(build_dir))
    assert built.returncode != 0
    assert "not within region `pool_dtcm_ws'" in built.stdout


def test_the_post_build_verify_fails_the_build(tmp_path: Path, cmake_env: dict[str, str]) -> None:
    """The application brings its own pool storage but forgets the attributes that place
    it: the link works, the verify step after it fails the build."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "cmake-app", project)
    cmakelists = project / "CMakeLists.txt"
    cmakelists.write_text(
        cmakelists.read_text().replace(
            "WORKLOAD ${CMAKE_CURRENT_SOURCE_DIR}/workload.yaml)",
            "WORKLOAD ${CMAKE_CURRENT_SOURCE_DIR}/workload.yaml\n"
            "                POOL_STORAGE application)",
        )
    )
    main_c = project / "main.c"
    main_c.write_text(
        main_c.read_text()
        + "\nuint8_t sensor_pool_sram_ws[SENSOR_SRAM_WS_SIZE] SENSOR_SRAM_WS_ATTRIBUTES;"
        + "\nuint8_t sensor_pool_dtcm_ws[SENSOR_DTCM_WS_SIZE];\n"
    )
    configure = _configure(cmake_env, project, tmp_path / "build")
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = _cmake(cmake_env, "--build", str(tmp_path / "build"))
    assert built.returncode != 0
    assert "FAIL placement dtcm_ws: sensor_pool_dtcm_ws is at 0x01" in built.stdout


def test_the_cmake_module_reports_a_workload_that_does_not_plan(
    tmp_path: Path, cmake_env: dict[str, str]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "cmake-app", project)
    (project / "workload.yaml").write_text(
        "memplace: workload/v1\nname: sensor\n"
        "buffers:\n  - {name: a, size: 64, live: 0, "
        "scope: global.nowhere}\n"
    )
    configure = _configure(cmake_env, project, tmp_path / "build")
    assert configure.returncode != 0
    assert "memplace could not plan" in configure.stderr
    assert "unknown scope 'global.nowhere'" in configure.stderr


TWO_CORES = """memplace: workload/v1
name: duo
steps: 3
buffers:
  - {name: a0, size: 4K, live: [0, 1], users: [main]}
  - {name: b0, size: 2K, live: [1, 2], users: [main]}
  - {name: a1, size: 4K, live: [0, 2], users: [main1]}
  - {name: b1, size: 8K, live: [1, 1], users: [main1]}
  - {name: shared, size: 1K, live: [0, 2], users: [main, main1]}
  - {name: f1, size: 256, live: 1, scope: local, users: [main1]}
constants:
  - {name: w, size: 512}
"""


@pytest.fixture(scope="module")
def two_cores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Board, Workload]:
    path = tmp_path_factory.mktemp("duo") / "duo.yaml"
    path.write_text(TWO_CORES)
    return load_board("qemu-mps2-an521"), Workload.from_file(path)


def test_core_zero_releases_core_one_and_collects_its_result(
    tmp_path: Path, two_cores: tuple[Board, Workload]
) -> None:
    board, workload = two_cores
    out = tmp_path / "duo"
    users = {
        "a0": ("main",),
        "b0": ("main",),
        "a1": ("main1",),
        "b1": ("main1",),
        "shared": ("main", "main1"),
        "f1": ("main1",),
        "w": ("main",),
    }
    write_project(render(board, plan(board, workload), users=users), out)
    build(out)
    log = run(out)
    assert log.passed, log
    # Core 1 measured its own stack, with its local frame, and reported it by mailbox.
    assert log.stacks["main1"] >= 256
    assert log.stacks["main"] > 0
    cpu1 = (out / "src" / "exerciser_cpu1.c").read_text()
    assert '"a1"' in cpu1 and '"b1"' in cpu1 and '"a0"' not in cpu1
    startup0 = (out / "memplace" / "cpu0" / "startup.c").read_text()
    assert "*(volatile uint32_t *)0x50021114u = 0x38000000u;" in startup0
    assert "*(volatile uint32_t *)0x50021118u &= ~0x00000002u;" in startup0
    # The mailbox and every shared pool have one address in both images.
    scripts = [(out / "memplace" / core / "linker.ld").read_text() for core in ("cpu0", "cpu1")]
    mailbox = [line for line in scripts[0].splitlines() if line.startswith("memplace_mailbox")]
    assert mailbox and mailbox[0] in scripts[1]
    assert "duo_pool_sram_ws = 0x30004000;" in scripts[1]


def test_a_failure_on_core_one_fails_the_run(
    tmp_path: Path, two_cores: tuple[Board, Workload]
) -> None:
    board, workload = two_cores
    good = plan(board, workload)
    bad = moved_onto(good, "a1", "b1")
    users = {"a1": ("main1",), "b1": ("main1",), "f1": ("main1",)}
    out = tmp_path / "bad"
    write_project(render(board, bad, users=users), out)
    build(out)
    log = run(out)
    assert log.exit_code == 1
    assert ("buffer", "a1", 1) in [(f.what, f.name, f.step) for f in log.failures]
    assert "main1" in log.stacks


TURNS = """memplace: workload/v1
name: turns
steps: 4
buffers:
  - {name: first0, size: 8K, live: [0, 1], users: [main], scope: global.sram_ws}
  - {name: later1, size: 8K, live: [2, 3], users: [main1], scope: global.sram_ws}
  - {name: first1, size: 8K, live: [0, 1], users: [main1], scope: global.sram_ws}
  - {name: later0, size: 8K, live: [2, 3], users: [main], scope: global.sram_ws}
"""


def test_the_cores_walk_the_timeline_together(tmp_path: Path) -> None:
    """The plan lets buffers of different cores share bytes at different steps; the cores'
    exercisers meet at the end of every step, so that holds on the target too."""
    path = tmp_path / "turns.yaml"
    path.write_text(TURNS)
    board, workload = load_board("qemu-mps2-an521"), Workload.from_file(path)
    result = plan(board, workload)
    offsets = {p.name: p.offset for p in result.placements}
    assert {offsets["first0"], offsets["first1"]} == {offsets["later0"], offsets["later1"]}
    out = tmp_path / "turns"
    users = {"first0": ("main",), "later0": ("main",), "first1": ("main1",), "later1": ("main1",)}
    write_project(render(board, result, users=users), out)
    for core in ("cpu0", "cpu1"):
        assert "memplace_step_done(step)" in (out / "src" / f"exerciser_{core}.c").read_text()
    build(out)
    log = run(out)
    assert log.passed, log
    # A core 1 that runs ahead without meeting core 0: core 0 stops waiting for it at the
    # end of step 0, says so, and the run fails.
    source = out / "src" / "exerciser_cpu1.c"
    source.write_text(source.read_text().replace("memplace_step_done(step)", "0"))
    build(out)
    log = run(out)
    assert log.exit_code == 1
    assert ("core", "cpu1", 0) in [(f.what, f.name, f.step) for f in log.failures]


DYNAMIC = """memplace: workload/v1
name: dyn
steps: 4
buffers:
  - {name: act, size: 4K, live: [0, 3]}
  - {name: work1, size: 1000, live: [0, 1], dynamic: true, align: 8}
  - {name: work2, size: 3000, live: [1, 2], dynamic: true}
  - {name: work3, size: 512, live: [3, 3], dynamic: true, scope: global.sram_ws}
"""


def test_dynamic_buffers_come_from_an_arena_within_their_reservation(
    tmp_path: Path, board: Board
) -> None:
    path = tmp_path / "dyn.yaml"
    path.write_text(DYNAMIC)
    good = plan(board, Workload.from_file(path))
    assert {p.name for p in good.placements if p.dynamic} == {"work1", "work2", "work3"}
    files = render(board, good)
    header = files["memplace/include/dyn_memplace.h"]
    assert "extern struct memplace_arena dyn_arena_dtcm_ws;" in header
    assert "extern struct memplace_arena dyn_arena_sram_ws;" in header
    assert "struct memplace_arena *dyn_arena(const char *scope);" in header
    exerciser = files["src/exerciser_cpu0.c"]
    # Dynamic buffers have no fixed address in the exerciser's tables.
    assert '"work1"}' not in exerciser.split("dynamics[]")[0]
    # The exerciser finds the arenas by every scope that names one, on the target.
    assert 'dyn_arena("global") != &dyn_arena_dtcm_ws' in exerciser
    assert 'dyn_arena("global.workspace") != &dyn_arena_dtcm_ws' in exerciser
    assert 'dyn_arena("global.sram_ws");' in exerciser
    out = tmp_path / "good"
    write_project(files, out)
    build(out)
    log = run(out)
    assert log.passed, log
    # Move the arena onto the static buffer it must never touch: the target sees it.
    bad = moved_onto(good, "act", "work1", "work2")
    out = tmp_path / "bad"
    write_project(render(board, bad), out)
    build(out)
    log = run(out)
    assert log.exit_code == 1
    assert [(f.what, f.name, f.step) for f in log.failures] == [("buffer", "act", 0)]


INTERLEAVED = """memplace: workload/v1
name: ar
steps: 4
buffers:
  - {name: d1, size: 6000, live: [0, 0], dynamic: true}
  - {name: s1, size: 4096, live: [0, 3]}
  - {name: s2, size: 2000, live: [1, 3]}
  - {name: d2, size: 1000, live: [2, 2], dynamic: true}
"""
# Library code the generated images must not pull in.
FORBIDDEN = ("printf", "malloc", "calloc", "realloc", "puts")


def _library_calls(elf: Path) -> list[str]:
    with elf.open("rb") as stream:
        table = ELFFile(stream).get_section_by_name(".symtab")
        assert isinstance(table, SymbolTableSection)
        names = [symbol.name for symbol in table.iter_symbols()]
    assert "memplace_start" in names
    return sorted(name for name in names if any(word in name for word in FORBIDDEN))


def test_static_buffers_never_share_bytes_with_a_live_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = tmp_path / "ar.yaml"
    workload.write_text(INTERLEAVED)
    out = tmp_path / "ar"
    code, text = _check(capsys, "check", "qemu-mps3-an547", str(workload), "--out", str(out))
    assert code == 0, text
    assert "run: passed" in text
    assert _library_calls(out / "build" / "cpu0.elf") == []


def test_each_core_hands_out_its_own_arena_in_a_shared_pool(tmp_path: Path) -> None:
    board = load_board("qemu-mps2-an521")
    workload = Workload.from_data(SHARED_DYNAMIC)
    users = {c.buffer.name: c.users for c in resolve(board, workload)}
    out = tmp_path / "duo"
    write_project(render(board, plan(board, workload), users=users), out)
    build(out)
    log = run(out)
    assert log.passed, log
    assert {"main", "main1"} <= set(log.stacks)
    for core in ("cpu0", "cpu1"):
        assert _library_calls(out / "build" / f"{core}.elf") == []


def test_constants_from_data_files_keep_their_bytes(tmp_path: Path) -> None:
    rng = random.Random(7)
    table = bytes(rng.randrange(256) for _ in range(300))
    (tmp_path / "table.bin").write_bytes(table)
    (tmp_path / "k.yaml").write_text(
        "memplace: workload/v1\nname: k\nsteps: 2\n"
        "buffers:\n  - {name: x, size: 1K, live: [0, 1]}\n"
        "constants:\n  - {name: filled, size: 100}\n  - {name: table, data_file: table.bin}\n"
    )
    board = load_board("qemu-mps3-an547")
    result = plan(board, Workload.from_file(tmp_path / "k.yaml"))
    placement = result.placement("table")
    assert placement.contents == table
    files = render(board, result)
    pools = files["memplace/src/k_pools.c"]
    array = pools[pools.index(f"k_pool_{placement.pool}[") :]
    array = array[array.index("= {") : array.index("};")]
    image = bytes(int(byte, 16) for byte in re.findall(r"0x([0-9a-f]{2}),", array))
    assert image[placement.offset : placement.offset + placement.size] == table
    out = tmp_path / "k"
    write_project(files, out)
    build(out)
    log = run(out)
    assert log.passed, log
    # A constant whose bytes differ from its data file fails its checksum on the target.
    wrong = bytearray(table)
    wrong[0] ^= 0xFF
    changed = replace(
        result,
        placements=tuple(
            replace(p, contents=bytes(wrong)) if p.name == "table" else p for p in result.placements
        ),
    )
    files = render(board, changed)
    exerciser = files["src/exerciser_cpu0.c"]
    files["src/exerciser_cpu0.c"] = exerciser.replace(
        f"0x{fnv1a(bytes(wrong)):08x}u", f"0x{fnv1a(table):08x}u"
    )
    out = tmp_path / "wrong"
    write_project(files, out)
    build(out)
    log = run(out)
    assert [(f.what, f.name) for f in log.failures] == [("constant", "table")]


THREADS_BOARD = ISR_BOARD.replace("name: an547-isr", "name: an547-threads") + (
    "  main: {threads: 2}\n"
)
THREADS_WORKLOAD = """memplace: workload/v1
name: workers
steps: 4
buffers:
  - {name: act, size: 4K, live: [0, 3]}
  - {name: window, size: 512, live: [0, 2], scope: main.stack}
  - {name: rows, size: 256, live: [0, 1], scope: main.thread0.stack}
  - {name: cols, size: 128, live: [1, 3], scope: main.thread0.stack}
  - {name: taps, size: 64, live: [2, 3], scope: main.thread0.stack}
  - {name: ring, size: 512, live: [0, 3], scope: main.thread1.stack}
  - {name: tail, size: 32, live: 2, scope: main.thread1.stack}
"""


def _threads(tmp_path: Path) -> tuple[Path, Path]:
    board, workload = tmp_path / "threads.yaml", tmp_path / "workers.yaml"
    board.write_text(THREADS_BOARD)
    workload.write_text(THREADS_WORKLOAD)
    return board, workload


def test_worker_threads_run_their_buffers_on_their_own_stacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board, workload = _threads(tmp_path)
    out = tmp_path / "p"
    code, text = _check(capsys, "check", str(board), str(workload), "--out", str(out))
    assert code == 0, text
    log = (out / "build" / "run.json").read_text()
    marks = dict(re.findall(r"memplace: stack (\S+) used (\d+) budget 16384", log))
    assert set(marks) == {"main", "main.thread0", "main.thread1"}
    # Each thread's frame holds its planned area (384 and 544 bytes), and the ISRs raised
    # at every step stack an exception frame there.
    assert 384 + 32 <= int(marks["main.thread0"]) < 1024
    assert 544 + 32 <= int(marks["main.thread1"]) < 1024
    code, text = _check(capsys, "verify", str(out), "--json")
    report = json.loads(text)
    assert code == 0 and report["ok"], text
    stacks = {s["context"]: s for s in report["stacks"]}
    for name in ("main.thread0", "main.thread1"):
        stack = stacks[name]
        assert stack["measured"] == int(marks[name])
        assert stack["measured"] <= stack["static_bound"] <= stack["measured"] + 256
        assert stack["path"][0] == f"memplace_thread_{name.replace('.', '_')}"
        assert [i["context"] for i in stack["interrupts"]] == ["systick", "pendsv"]
    code, text = _check(capsys, "verify", str(out))
    assert "ISRs systick, pendsv interrupt it: one exception frame of 108 bytes" in text


def test_a_released_core_reports_its_worker_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "duo-threads.yaml"
    board.write_text(
        "memplace: board/v1\nextends: qemu-mps2-an521\nname: an521-threads\n"
        "contexts:\n  main1: {threads: 1}\n"
    )
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nsteps: 3\nbuffers:\n"
        "  - {name: a0, size: 1K, live: [0, 2], users: [main]}\n"
        "  - {name: a1, size: 1K, live: [0, 2], users: [main1]}\n"
        "  - {name: t1, size: 256, live: [1, 2], scope: main1.thread0.stack}\n"
    )
    out = tmp_path / "p"
    code, text = _check(capsys, "check", str(board), str(workload), "--out", str(out), "--json")
    assert code == 0, text
    stacks = {s["context"]: s for s in json.loads(text)["stacks"]}
    thread = stacks["main1.thread0"]
    assert 256 <= thread["measured"] <= thread["static_bound"] <= thread["budget"]
    assert stacks["main1"]["measured"] > 0


def test_two_thread_stack_buffers_on_top_of_each_other_fail_the_run(tmp_path: Path) -> None:
    board_file, workload_file = _threads(tmp_path)
    board = load_board(board_file)
    good = plan(board, Workload.from_file(workload_file))
    rows, cols = good.placement("rows"), good.placement("cols")
    # Both live at step 1 on thread 0's stack: put one on top of the other.
    assert rows.stack == cols.stack == "main.thread0" and rows.offset != cols.offset
    bad = moved_onto(good, "rows", "cols")
    out = tmp_path / "bad"
    write_project(render(board, bad), out)
    build(out)
    log = run(out)
    assert not log.passed
    # rows breaks where cols lands on it; cols then also meets taps, planned on rows' bytes.
    assert [(f.name, f.step) for f in log.failures] == [("rows", 1), ("cols", 2)]
    assert set(log.stacks) == {"main", "main.thread0", "main.thread1"}


APP_THREAD = """#include <stdint.h>
#include "workers_memplace.h"

/* Thread 0's function; thread 1 has none in this image. */
void memplace_thread_main_thread0(void *argument)
{
    volatile uint8_t area[WORKERS_STACK_MAIN_THREAD0_PLANNED] __attribute__((aligned(16)));
    area[WORKERS_COLS_STACK_OFFSET] = (uint8_t)(uintptr_t)argument;
}

int app_main(void)
{
    memplace_thread_main_thread0(0);
    return 0;
}
"""


def test_a_thread_stack_without_its_function_is_unbounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board, workload = _threads(tmp_path)
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "app.c").write_text(APP_THREAD)
    out = tmp_path / "p"
    argv = ["generate", str(board), str(workload), "--out", str(out)]
    code, text = _check(capsys, *argv, "--project-type", "app", "--sources", str(sources))
    assert code == 0, text
    assert _check(capsys, "build", str(out))[0] == 0
    code, text = _check(capsys, "verify", str(out), "--json")
    report = json.loads(text)
    assert code == 1
    assert [(f["check"], f["subject"], f["message"]) for f in report["findings"]] == [
        (
            "stack-unbounded",
            "main.thread1",
            "the thread's function memplace_thread_main_thread1() is not in cpu0.elf: start "
            "the thread in a function of that name (the generated header declares it)",
        )
    ]
    bounds = {s["context"]: s["static_bound"] for s in report["stacks"]}
    # Thread 0's function holds the planned area; an ISR frame may land on top of it.
    assert bounds["main.thread0"] >= 384 + 108 and bounds["main.thread1"] is None
