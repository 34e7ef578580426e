"""The wheel carries everything `memplace demo` needs, and works outside the checkout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel as `make wheel` builds it."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(["bash", str(REPO / "scripts" / "wheel.sh"), str(out)], check=True)
    (found,) = out.glob("memplace-*.whl")
    return found


def test_the_wheel_has_a_tag_a_package_index_accepts(wheel: Path) -> None:
    # name-version-python-abi-platform.whl; PyPI refuses linux_*, takes manylinux_2_X_*.
    python, abi, platforms = wheel.stem.split("-")[2:]
    assert (python, abi) == ("py3", "none")
    assert all(re.fullmatch(r"manylinux(2014|_2_\d+)_x86_64", tag) for tag in platforms.split("."))
    names = zipfile.ZipFile(wheel).namelist()
    assert "memplace/planner/_core.so" in names  # the compiled core is what makes it platform's
    wheel_meta = next(n for n in names if n.endswith(".dist-info/WHEEL"))
    assert "Root-Is-Purelib: false" in zipfile.ZipFile(wheel).read(wheel_meta).decode()


def test_wheel_holds_boards_templates_cmake_and_the_example(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "memplace/board_configs/qemu-mps3-an547.yaml" in names
    assert "memplace/firmware_templates/project/linker.ld.j2" in names
    assert "memplace/cmake/arm-none-eabi.cmake" in names
    assert "memplace/examples/demo/workload.yaml" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "memplace = memplace.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_demo_runs_from_the_wheel_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    # The installed copy must win over the checkout's editable install.
    script = (
        "import sys, memplace.cli; "
        f"assert memplace.cli.__file__.startswith({str(target)!r}), memplace.cli.__file__; "
        "sys.exit(memplace.cli.main(['demo', '--out', 'demo']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=work,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(target), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run: passed" in done.stdout
    assert "verify: ok" in done.stdout
    assert (work / "demo" / "build" / "cpu0.elf").is_file()
