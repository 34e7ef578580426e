"""The CMake module gives the stack analysis GCC's account of the user's own code: the
target is compiled with -fstack-usage and -fcallgraph-info, and the post-build verify reads
the .su and .ci files from the target's object folder, so a stack budget that the user's
functions break fails the build."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import PATIENCE, run_cli
from memplace.board import Board, load_board
from memplace.cli import main
from memplace.workflow import ProjectRequest, generate
from memplace.workload import Workload

pytestmark = pytest.mark.qemu

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "cmake-app"
CALL = "    uint32_t energy = 0;\n"  # the line of the example's main() the variants replace

# A function of the user's whose frame size is known only at run time: a VLA.
SMOOTH = """
__attribute__((noinline)) uint32_t smooth(const uint8_t *data, uint32_t length)
{
    uint8_t window[length];
    uint32_t sum = 0;
    for (uint32_t i = 0; i < length; i++) {
        window[i] = data[i];
        sum += window[i];
    }
    return sum;
}
"""
SMOOTH_CALL = "    uint32_t energy = smooth(filtered, filtered[0] & 63u);\n"

# A function of the user's with a large fixed frame.
INTEGRATE = """
__attribute__((noinline)) uint32_t integrate(const uint8_t *data, uint32_t length)
{
    volatile uint8_t history[4096];
    uint32_t sum = 0;
    for (uint32_t i = 0; i < sizeof history; i++) {
        history[i] = data[i % length];
        sum += history[i];
    }
    return sum;
}
"""
INTEGRATE_CALL = "    uint32_t energy = integrate(filtered, SENSOR_FILTERED_SIZE);\n"

SMALL_STACK_BOARD = """memplace: board/v1
extends: qemu-mps3-an547
name: an547-small-stack
contexts:
  main: {stack: {memory: dtcm, size: 2K}}
"""


@dataclass(frozen=True)
class Example:
    """A copy of examples/cmake-app, configured once; each test writes the variant it needs
    and builds it again (CMake configures again only what a changed CMakeLists.txt or
    board needs)."""

    source: Path
    build: Path
    env: dict[str, str]

    @property
    def output(self) -> Path:
        return self.build / "memplace-firmware"

    @property
    def objects(self) -> Path:
        return self.build / "CMakeFiles" / "firmware.dir"

    def write(self, function: str = "", call: str = CALL, options: str = "") -> None:
        """main.c with `function` added and `call` computing `energy`, and `options` added to
        the memplace_target() call."""
        text = (EXAMPLE / "main.c").read_text()
        text = text.replace("int main(void)\n", f"{function}\nint main(void)\n").replace(CALL, call)
        _update(self.source / "main.c", text)
        cmake = (EXAMPLE / "CMakeLists.txt").read_text()
        _update(
            self.source / "CMakeLists.txt",
            cmake.replace("/workload.yaml)", f"/workload.yaml{options})"),
        )

    def cmake(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmake = shutil.which("cmake", path=self.env["PATH"])
        assert cmake is not None
        return subprocess.run(
            [cmake, *args], capture_output=True, text=True, env=self.env, timeout=PATIENCE
        )

    def build_it(self) -> subprocess.CompletedProcess[str]:
        return self.cmake("--build", str(self.build))


def _update(path: Path, text: str) -> None:
    """Write `text` to `path` unless it holds it already: an unchanged CMakeLists.txt
    keeps its time, so CMake does not configure again."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    folder = tmp_path_factory.mktemp("cmake-module")
    shutil.copytree(EXAMPLE, folder / "app")
    example = Example(folder / "app", folder / "build", env)
    configure = example.cmake(
        "-S",
        str(example.source),
        "-B",
        str(example.build),
        "-G",
        "Ninja",
        f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'cmake' / 'arm-none-eabi.cmake'}",
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    return example


@pytest.fixture(scope="module")
def first_build(example: Example) -> subprocess.CompletedProcess[str]:
    """The example as it is, built; every later build leaves an image behind too."""
    example.write()
    return example.build_it()


def test_the_target_is_compiled_for_the_stack_analysis(
    example: Example, first_build: subprocess.CompletedProcess[str]
) -> None:
    assert first_build.returncode == 0, first_build.stdout + first_build.stderr
    assert "verify: ok" in first_build.stdout
    for name in ("main.c.su", "main.c.ci"):
        assert (example.objects / name).is_file(), name
    assert ":main\t" in (example.objects / "main.c.su").read_text()


def test_the_post_build_verify_reads_the_users_su_and_ci_files(example: Example) -> None:
    """Only GCC's files know where in main.c the VLA is; the disassembly knows an address."""
    example.write(SMOOTH, SMOOTH_CALL)
    built = example.build_it()
    assert built.returncode != 0
    main_c = example.source / "main.c"
    line = 1 + main_c.read_text().splitlines().index("    uint8_t window[length];")
    assert (
        f"FAIL stack-unbounded main: smooth allocates on the stack at run time "
        f"(window {main_c}:{line}:"
    ) in built.stdout
    assert "(call path: Reset_Handler > memplace_start > main > smooth)" in built.stdout


def test_a_hint_bounds_the_users_vla_and_the_build_passes(
    example: Example, capsys: pytest.CaptureFixture[str]
) -> None:
    hints = example.source / "stack_hints.yaml"
    _update(hints, "memplace: stack_hints/v1\nalloca:\n  - {function: smooth, size: 64}\n")
    example.write(
        SMOOTH,
        SMOOTH_CALL,
        "\n                STACK_HINTS ${CMAKE_CURRENT_SOURCE_DIR}/stack_hints.yaml",
    )
    built = example.build_it()
    assert built.returncode == 0, built.stdout + built.stderr
    assert "verify: ok" in built.stdout
    argv = ["verify", str(example.output), "--core", "cpu0", "--objects", str(example.objects)]
    assert main([*argv, "--stack-hints", str(hints), "--json"]) == 0
    stack = json.loads(capsys.readouterr().out)["stacks"][0]
    assert stack["context"] == "main" and stack["path"][-2:] == ["main", "smooth"]
    # The hint's 64 bytes come on top of the frames of smooth (8) and main (16).
    assert stack["static_bound"] >= 64 + 8 + 16


def test_a_deferred_check_runs_the_firmware_first(example: Example) -> None:
    example.write(options="\n                DEFER_CHECK")
    built = example.build_it()
    assert built.returncode == 0, built.stdout + built.stderr
    assert "verify:" not in built.stdout  # no check right after the link
    checked = example.cmake("--build", str(example.build), "--target", "firmware_memplace_check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "run: passed" in checked.stdout
    assert re.search(r"stack main: measured \d+ of \d+ bytes", checked.stdout)
    assert "verify: ok" in checked.stdout


def test_a_user_function_over_the_stack_budget_fails_the_build(example: Example) -> None:
    _update(example.source / "small-stack.yaml", SMALL_STACK_BOARD)
    example.write(INTEGRATE, INTEGRATE_CALL)
    cmake = (example.source / "CMakeLists.txt").read_text()
    _update(
        example.source / "CMakeLists.txt",
        cmake.replace(
            "BOARD qemu-mps3-an547", "BOARD ${CMAKE_CURRENT_SOURCE_DIR}/small-stack.yaml"
        ),
    )
    built = example.build_it()
    assert built.returncode != 0
    assert "FAIL stack-bound main: can use " in built.stdout
    assert (
        "over its budget of 2048 (deepest path: Reset_Handler > memplace_start > main > integrate)"
    ) in built.stdout


def _verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, "verify", *argv)


def test_objects_must_be_a_folder_with_gccs_files(
    example: Example,
    first_build: subprocess.CompletedProcess[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    output = str(example.output)
    code, out, err = _verify(capsys, output, "--core", "cpu0", "--objects", str(tmp_path / "no"))
    assert (code, out) == (2, "")
    assert err.strip() == f"memplace: error: --objects: no folder of objects at {tmp_path / 'no'}"
    code, out, err = _verify(capsys, output, "--core", "cpu0", "--objects", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"memplace: error: --objects: no .su files under {tmp_path}: compile the image with "
        f"-fstack-usage -fcallgraph-info=su,da"
    )


def test_objects_belong_to_one_core(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    touch_workload: Callable[[Board], Workload],
) -> None:
    board = load_board("qemu-mps2-an521")
    generate(ProjectRequest(board, touch_workload(board), tmp_path / "duo"))
    code, out, err = _verify(capsys, str(tmp_path / "duo"), "--objects", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.strip() == (
        "memplace: error: --objects: the folder holds one image's objects; name its core with "
        "--core (cpu0, cpu1)"
    )


@pytest.mark.parametrize("build_type", ["", "Debug", "Release", "RelWithDebInfo", "MinSizeRel"])
def test_every_build_type_passes_the_post_build_check(build_type: str, tmp_path: Path) -> None:
    """The example with the optimisation left to CMake's build type (none by default, -O0
    in effect): GCC's -O0 code restores the stack pointer from its frame pointer, which the
    stack analysis follows, so the check after the link passes every build type."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    shutil.copytree(EXAMPLE, tmp_path / "app")
    cmake_lists = tmp_path / "app" / "CMakeLists.txt"
    text = cmake_lists.read_text()
    assert " -O2 " in text
    cmake_lists.write_text(text.replace(" -O2 ", " "))
    example = Example(tmp_path / "app", tmp_path / "build", env)
    configure = example.cmake(
        "-S",
        str(example.source),
        "-B",
        str(example.build),
        "-G",
        "Ninja",
        f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'cmake' / 'arm-none-eabi.cmake'}",
        f"-DCMAKE_BUILD_TYPE={build_type}",
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = example.build_it()
    assert built.returncode == 0, built.stdout + built.stderr
    assert "verify: ok" in built.stdout
    assert re.search(
        r"stack main: measured - of \d+ bytes \(planned buffers \d+\), static bound \d+",
        built.stdout,
    )
