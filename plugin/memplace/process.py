"""The one way memplace runs another program: an argv list, logged, with a timeout, and
killed with all its children when it overruns or memplace is interrupted."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memplace.errors import ToolError

log = logging.getLogger("memplace.process")

INSTALL_HINTS = {
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "qemu-system-arm": "apt-get install qemu-system-arm",
    "cmake": "pip install cmake (or apt-get install cmake)",
    "ninja": "pip install ninja (or apt-get install ninja-build)",
    "pyocd": "pip install pyocd",
    "openocd": "apt-get install openocd",
}


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    output: str


def find_tool(name: str) -> str:
    """The path of tool `name`: beside the running Python first (a virtual environment's
    bin holds cmake and ninja from PyPI), then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        hint = INSTALL_HINTS.get(name, f"install {name}")
        raise ToolError(f"{name} not found; install it: {hint}")
    return found


def run(argv: list[str], timeout: float, cwd: Path | None = None) -> Completed:
    """Run `argv` to completion; stdout and stderr come back together as text."""
    log.info("running: %s", shlex.join(argv))
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        hint = INSTALL_HINTS.get(Path(argv[0]).name, f"install {argv[0]}")
        raise ToolError(f"{argv[0]} not found; install it: {hint}") from exc
    try:
        raw, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _kill(child)
        raise ToolError(
            f"{Path(argv[0]).name} did not finish within {timeout:g} s: {shlex.join(argv)}"
        ) from exc
    except BaseException:
        _kill(child)
        raise
    output = raw.decode("utf-8", errors="replace")
    log.debug("%s exited with %d", Path(argv[0]).name, child.returncode)
    return Completed(tuple(argv), child.returncode, output)


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


class Running:
    """A started program the caller talks to: its stdin, and its stdout and stderr merged.

    `stop` kills it with all its children; it is safe to call more than once."""

    def __init__(
        self, argv: list[str], child: subprocess.Popen[bytes], stdin: IO[bytes], stdout: IO[bytes]
    ) -> None:
        self.argv = tuple(argv)
        self._child = child
        self._pipes = (stdin, stdout)
        self.stdin = stdin.fileno()  # writes to the program's standard input
        self.stdout = stdout.fileno()  # reads its standard output and error

    def poll(self) -> int | None:
        """The exit code once the program has ended, else None."""
        return self._child.poll()

    def wait(self, timeout: float) -> int | None:
        """The exit code, waiting up to `timeout` seconds for it; None if still running."""
        try:
            return self._child.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> int:
        """Kill the program and its children if they still run; its exit code."""
        if self._child.poll() is None:
            log.debug("stopping %s", Path(self.argv[0]).name)
            _kill(self._child)
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.close()
        return self._child.wait()


def start(argv: list[str], cwd: Path | None = None) -> Running:
    """Start `argv` with pipes to its stdin and from its stdout and stderr (merged), in a
    session of its own so that `Running.stop` reaches its children."""
    log.info("starting: %s", shlex.join(argv))
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        hint = INSTALL_HINTS.get(Path(argv[0]).name, f"install {argv[0]}")
        raise ToolError(f"{argv[0]} not found; install it: {hint}") from exc
    if child.stdin is None or child.stdout is None:  # both were asked for as pipes
        _kill(child)
        raise ToolError(f"could not open pipes to {Path(argv[0]).name}")
    return Running(argv, child, child.stdin, child.stdout)
