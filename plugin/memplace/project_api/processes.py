"""How the server a generated project carries runs other programs: an argv list, logged
quoted, with a timeout, killed with all its children when it overruns or the server ends.

Standard library only, like `server`, so that it can travel with a project. memplace
itself runs programs through `memplace.process`, which is this module with memplace's own
error class on top.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .server import ServerError

log = logging.getLogger("memplace.process")

# What memplace exits with when a tool fails or is missing; it travels in `data`.
TOOL_EXIT_CODE = 3


class ToolError(ServerError):
    """A tool is missing, failed or overran; named as memplace's own tool errors are."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, {"exit_code": TOOL_EXIT_CODE})


def find_tool(name: str, hint: str | None = None) -> str:
    """The path of tool `name`: beside the running Python first (a virtual environment's
    bin holds cmake and ninja from PyPI), then on PATH. `hint` says how to install it."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ToolError(f"{name} not found; install it: {hint or 'install ' + name}")
    return found


def run(
    argv: list[str], timeout: float, cwd: Path | None = None, hint: str | None = None
) -> tuple[int, str]:
    """Run `argv` to completion: its exit code, and its stdout and stderr as one text.
    `hint` says how to install the program, should it be missing."""
    log.info("running: %s", shlex.join(argv))
    child = _popen(argv, cwd, subprocess.DEVNULL, hint)
    try:
        raw, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(child)
        raise ToolError(
            f"{Path(argv[0]).name} did not finish within {timeout:g} s: {shlex.join(argv)}"
        ) from None
    except BaseException:
        _kill(child)
        raise
    log.debug("%s exited with %d", Path(argv[0]).name, child.returncode)
    return child.returncode, raw.decode("utf-8", errors="replace")


class Running:
    """A started program: its stdin, and its stdout and stderr merged (as file
    descriptors). `stop` kills it with its children; calling it twice is fine."""

    def __init__(self, argv: list[str], child: subprocess.Popen[bytes]) -> None:
        if child.stdin is None or child.stdout is None:  # both were asked for as pipes
            _kill(child)
            raise ToolError(f"could not open pipes to {Path(argv[0]).name}")
        self.argv = tuple(argv)
        self._child = child
        self._pipes: tuple[IO[bytes], ...] = (child.stdin, child.stdout)
        self.stdin = child.stdin.fileno()
        self.stdout = child.stdout.fileno()

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


def start(argv: list[str], cwd: Path | None = None, hint: str | None = None) -> Running:
    """Start `argv` with pipes to its stdin and from its stdout and stderr (merged)."""
    log.info("starting: %s", shlex.join(argv))
    return Running(argv, _popen(argv, cwd, subprocess.PIPE, hint))


def _popen(
    argv: list[str], cwd: Path | None, stdin: int, hint: str | None
) -> subprocess.Popen[bytes]:
    # A session of its own, so that killing its process group reaches its children too;
    # on Linux the kernel also kills it when this process dies, however that happens.
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()) if sys.platform.startswith("linux") else None,
        )
    except FileNotFoundError as exc:
        raise ToolError(f"{argv[0]} not found; install it: {hint or 'install ' + argv[0]}") from exc
    except OSError as exc:
        raise ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc


PR_SET_PDEATHSIG = 1
"""Linux prctl(2): the signal the kernel sends this process when its parent ends."""


def _die_with(parent: int) -> Callable[[], None]:
    """What the child runs before the program: ask the kernel for SIGKILL when `parent`
    ends, and end at once if it already has (it may end between fork and this call)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def arm() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
