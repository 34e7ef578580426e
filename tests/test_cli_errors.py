"""Every mistake on the command line, and every refusal of the system, is one line: exit 2
for bad input or usage, checked before any work; exit 3 when the machine refused (no space,
a folder it cannot write). Never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_error
from memplace.cli import main
from memplace.resources import demo_workload

BOARD = "qemu-mps3-an547"


def _fails(capsys: pytest.CaptureFixture[str], code: int, *argv: str) -> str:
    return cli_error(capsys, *argv, code=code)


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("mine\n")
    return path


@pytest.mark.parametrize("command", ["generate", "check"])
def test_out_naming_a_file_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], a_file: Path, command: str
) -> None:
    err = _fails(capsys, 2, command, BOARD, str(demo_workload()), "--out", str(a_file))
    assert err.endswith(f"argument --out: {a_file} is a file, not a folder")
    assert a_file.read_text() == "mine\n"
    assert sorted(p.name for p in a_file.parent.iterdir()) == ["notes.txt"]


def test_out_under_a_file_is_refused(capsys: pytest.CaptureFixture[str], a_file: Path) -> None:
    out = a_file / "project"
    err = _fails(capsys, 2, "generate", BOARD, str(demo_workload()), "--out", str(out))
    assert err.endswith(f"argument --out: {out}: {a_file} is a file, not a folder")


def test_svg_naming_a_folder_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = _fails(capsys, 2, "plan", BOARD, str(demo_workload()), "--svg", str(tmp_path))
    assert err.endswith(f"argument --svg: {tmp_path} is a folder; name a file to write")


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf", "soon"])
@pytest.mark.parametrize(
    ("command", "option"), [("run", "--timeout"), ("plan", "--time-limit"), ("check", "--timeout")]
)
def test_seconds_are_positive_and_finite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, option: str, value: str
) -> None:
    inputs = [str(tmp_path)] if command == "run" else [BOARD, str(demo_workload())]
    out = ["--out", str(tmp_path / "p")] if command == "check" else []
    err = _fails(capsys, 2, command, *inputs, *out, f"{option}={value}")
    assert err.endswith(f"argument {option}: expected a positive number of seconds, got {value!r}")
    assert not (tmp_path / "p").exists()


def test_run_on_a_project_never_built_starts_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = tmp_path / "p"
    assert main(["generate", BOARD, str(demo_workload()), "--out", str(project)]) == 0
    capsys.readouterr()
    err = _fails(capsys, 2, "run", str(project))
    elf = project / "build" / "cpu0.elf"
    assert err.endswith(f"no image {elf}: build the project first (memplace build {project})")
    assert not (project / "build").exists()


def test_a_file_the_system_will_not_grow_is_a_system_failure(tmp_path: Path) -> None:
    """The file system refuses the write (here a file size limit; a full disk alike): the
    input was fine, the machine failed (exit 3), and nothing is left half-written."""
    svg = tmp_path / "plan.svg"
    code = (
        "import resource, signal, sys; from memplace.cli import main; "
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100)); "
        f"sys.exit(main(['plan', {BOARD!r}, {str(demo_workload())!r}, '--svg', {str(svg)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stderr == "memplace: error: File too large\n"
    assert list(tmp_path.iterdir()) == []


def test_a_device_as_an_output_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, 2, "plan", BOARD, str(demo_workload()), "--svg", "/dev/full")
    assert err.endswith(
        "--svg: /dev/full is not a regular file memplace wrote (a link, FIFO "
        "or device); name a new file"
    )


def test_a_folder_the_system_will_not_write_is_a_system_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # /proc takes no new folders, not even from root.
    err = _fails(capsys, 3, "generate", BOARD, str(demo_workload()), "--out", "/proc/memplace-x")
    assert err.startswith("memplace: error: /proc/")


def test_a_name_too_long_for_a_file_name_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        f"memplace: workload/v1\nname: {'n' * 300}\nbuffers:\n  - {{name: a, size: 64, live: 0}}\n"
    )
    err = _fails(capsys, 2, "generate", BOARD, str(path), "--out", str(tmp_path / "p"))
    assert err.endswith(
        "w.yaml:2:7: name: a name is at most 100 characters (it becomes file names and C "
        "identifiers), got 300"
    )
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf", "more"])
def test_an_effort_is_positive_and_finite(capsys: pytest.CaptureFixture[str], value: str) -> None:
    err = _fails(capsys, 2, "plan", BOARD, str(demo_workload()), f"--effort={value}")
    assert err.endswith(f"argument --effort: expected a positive number, got {value!r}")
