"""No child outlives memplace, however it ends: Ctrl-C, SIGTERM, SIGHUP or SIGKILL.

A project whose image never ends (a reset handler that loops) keeps QEMU running under
`memplace run`, and under `memplace stacks --run` (QEMU started paused under its gdbstub,
by the same launcher); memplace is then ended each way, and no QEMU may be left running
the project's image. (`memplace serve` with a transport open: tests/test_project_api_process.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PATIENCE, ended, wait_until
from memplace import process
from memplace.cli import main

pytestmark = pytest.mark.qemu

LOOP = """\
void reset(void) { for (;;) { __asm volatile("nop"); } }
__attribute__((section(".vectors"), used)) void (*const vectors[2])(void) = {
    (void (*)(void))0x20010000, reset};
"""
RUN = [sys.executable, "-m", "memplace.cli", "run"]
STACKS = [sys.executable, "-m", "memplace.cli", "stacks", "--board", "qemu-mps3-an547", "--run"]
WORKLOAD = "memplace: workload/v1\nname: endless\nbuffers:\n  - {name: a, size: 64, live: [0, 0]}\n"


@pytest.fixture
def endless(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A generated project whose image is a loop that never ends."""
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    project = tmp_path / "endless"
    assert (
        main(["generate", "qemu-mps3-an547", str(tmp_path / "w.yaml"), "--out", str(project)]) == 0
    )
    (project / "build").mkdir()
    (tmp_path / "loop.c").write_text(LOOP)
    gcc = process.find_tool("arm-none-eabi-gcc")
    flags = ["-mcpu=cortex-m55", "-mthumb", "-nostdlib", "-Wl,-e,reset"]
    flags += ["-fstack-usage", "-fcallgraph-info=su"]  # for `memplace stacks`
    layout = ["-Wl,--section-start=.vectors=0", "-Wl,-Ttext=0x100"]
    argv = [
        gcc,
        *flags,
        *layout,
        "-o",
        str(project / "build" / "cpu0.elf"),
        str(tmp_path / "loop.c"),
    ]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    capsys.readouterr()
    return project


def qemu_running(image: Path) -> list[int]:
    """QEMU processes running `image`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"qemu-system-arm") and str(image).encode() in b" ".join(argv):
            found.append(int(entry.name))
    return found


def _end_while_qemu_runs(argv: list[str], image: Path, ending: signal.Signals) -> tuple[int, str]:
    """Start memplace, send it `ending` once QEMU runs `image`, and see QEMU end with it:
    memplace's exit code and what it said."""
    memplace = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: qemu_running(image), "QEMU started")
        memplace.send_signal(ending)
        code = memplace.wait(PATIENCE)
        wait_until(lambda: not qemu_running(image), "QEMU ended with memplace")
    finally:
        memplace.kill()
        memplace.wait()
    assert memplace.stderr is not None
    return code, memplace.stderr.read()


@pytest.mark.parametrize(
    "ending", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name
)
def test_ending_memplace_run_ends_qemu(endless: Path, ending: signal.Signals) -> None:
    image = endless / "build" / "cpu0.elf"
    argv = [*RUN, str(endless), "--timeout", f"{2 * PATIENCE:g}"]
    code, said = _end_while_qemu_runs(argv, image, ending)
    if ending == signal.SIGKILL:
        assert code == -signal.SIGKILL
    elif ending == signal.SIGINT:
        assert code == 130
    else:
        assert code == 128 + ending
        assert f"memplace: ended by {ending.name}" in said


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_ending_memplace_stacks_run_ends_qemu(endless: Path, ending: signal.Signals) -> None:
    image = endless / "build" / "cpu0.elf"
    argv = [*STACKS, "--timeout", f"{2 * PATIENCE:g}", str(image)]
    code, _ = _end_while_qemu_runs(argv, image, ending)
    assert code == (-signal.SIGKILL if ending == signal.SIGKILL else 128 + ending)


def running_in(folder: Path, but: int) -> list[int]:
    """Processes other than `but` whose command line names `folder` (CMake, Ninja, the
    compiler, QEMU working on a project there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == but:
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(folder).encode() in argv:
            found.append(int(entry.name))
    return found


# A compiler that never finishes: memplace's check is in its build whenever it is ended,
# however fast or slow the machine. It leaves its process id where the test finds it.
HANGING_GCC = """#!/bin/sh
echo $$ >> "{pids}"
exec sleep infinity
"""


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_ending_memplace_check_ends_its_build(tmp_path: Path, ending: signal.Signals) -> None:
    out = tmp_path / "checked"
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    tools, pids = tmp_path / "bin", tmp_path / "compilers"
    tools.mkdir()
    (tools / "arm-none-eabi-gcc").write_text(HANGING_GCC.format(pids=pids))
    (tools / "arm-none-eabi-gcc").chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    argv = [sys.executable, "-m", "memplace.cli", "check", "qemu-mps3-an547"]
    memplace = subprocess.Popen(
        [*argv, str(tmp_path / "w.yaml"), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_until(pids.exists, "memplace's build started the compiler")
        memplace.send_signal(ending)
        code = memplace.wait(PATIENCE)
        compilers = [int(pid) for pid in pids.read_text().split()]
        wait_until(lambda: all(ended(pid) for pid in compilers), "the compiler ended too")
        wait_until(lambda: not running_in(out, memplace.pid), "its tools ended with memplace")
    finally:
        memplace.kill()
        memplace.wait()
    assert code == 128 + ending
    assert memplace.stderr is not None
    assert f"memplace: ended by {ending.name}" in memplace.stderr.read()


class _EndsWhenCollected:
    """Sends memplace a termination signal from a finaliser, where Python prints and
    drops the exception the signal handler raises."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_whose_exception_is_swallowed_still_ends_memplace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import memplace.cli as cli

    listed = cli._boards

    def boards(args: object) -> int:
        _EndsWhenCollected()  # collected at once: its finaliser sends the signal
        return listed(args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_boards", boards)
    assert main(["boards"]) == 128 + signal.SIGTERM
    assert "memplace: ended by SIGTERM" in capsys.readouterr().err
