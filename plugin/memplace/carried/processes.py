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
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .server import ServerError

log = logging.getLogger("memplace.process")


class ToolError(ServerError):
    """A tool is missing, failed or overran; named as memplace's own tool errors are."""


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
    argv: list[str],
    timeout: float,
    cwd: Path | None = None,
    hint: str | None = None,
    on_line: Callable[[str], None] | None = None,
) -> tuple[int, str]:
    """Run `argv` to completion: its exit code, and its stdout and stderr as one text.
    `hint` says how to install the program, should it be missing. `on_line` is given each
    line of that output as it comes (without its newline)."""
    log.info("running: %s", shlex.join(argv))
    child = _popen(argv, cwd, subprocess.DEVNULL, hint)
    try:
        if on_line is None:
            raw, _ = child.communicate(timeout=timeout)
        else:
            raw = _stream(child, time.monotonic() + timeout, on_line)
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


def _stream(
    child: subprocess.Popen[bytes], deadline: float, on_line: Callable[[str], None]
) -> bytes:
    """Everything `child` writes until it ends, each line handed to `on_line` as it comes;
    subprocess.TimeoutExpired past `deadline`."""
    assert child.stdout is not None  # _popen asks for a pipe
    chunks: list[bytes] = []
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(child.args, 0)
            if not selector.select(left):
                continue
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                on_line(line.decode("utf-8", errors="replace"))
    if pending:
        on_line(pending.decode("utf-8", errors="replace"))
    child.wait(max(deadline - time.monotonic(), 0.001))
    return b"".join(chunks)


def check(
    argv: list[str],
    timeout: float,
    failure: str,
    cwd: Path | None = None,
    on_line: Callable[[str], None] | None = None,
) -> str:
    """Run `argv`; its output, or a `ToolError` with `failure` and the output's end when
    it exits with a code other than 0. `on_line` sees each line as it comes."""
    code, output = run(argv, timeout, cwd, on_line=on_line)
    if code != 0:
        tail = "\n".join(output.rstrip().splitlines()[-30:])
        raise ToolError(f"{failure} (exit code {code}):\n{tail}")
    return output


class Launched:
    """A started program. `stop` kills it with its children; calling it twice is fine."""

    def __init__(self, argv: list[str], child: subprocess.Popen[bytes]) -> None:
        self.argv = tuple(argv)
        self._child = child
        self._pipes: tuple[IO[bytes], ...] = ()

    @property
    def pid(self) -> int:
        return self._child.pid

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the program alone (not its children)."""
        self._child.send_signal(signum)

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


class Running(Launched):
    """A started program with its stdin, and its stdout and stderr merged, as file
    descriptors."""

    def __init__(self, argv: list[str], child: subprocess.Popen[bytes]) -> None:
        super().__init__(argv, child)
        if child.stdin is None or child.stdout is None:  # both were asked for as pipes
            _kill(child)
            raise ToolError(f"could not open pipes to {Path(argv[0]).name}")
        self._pipes = (child.stdin, child.stdout)
        self.stdin = child.stdin.fileno()
        self.stdout = child.stdout.fileno()


def start(argv: list[str], cwd: Path | None = None, hint: str | None = None) -> Running:
    """Start `argv` with pipes to its stdin and from its stdout and stderr (merged)."""
    log.info("starting: %s", shlex.join(argv))
    return Running(argv, _popen(argv, cwd, subprocess.PIPE, hint))


def launch(
    argv: list[str],
    pass_fds: tuple[int, ...],
    cwd: Path | None = None,
    stderr: IO[bytes] | int | None = None,
    hint: str | None = None,
) -> Launched:
    """Start `argv` talking over the file descriptors `pass_fds` it inherits (a Project
    API server's pipes); no stdin, its stdout and stderr go to `stderr` (default: ours)."""
    log.info("starting: %s", shlex.join(argv))
    child = _popen(argv, cwd, subprocess.DEVNULL, hint, stderr, stderr, pass_fds)
    return Launched(argv, child)


def _popen(
    argv: list[str],
    cwd: Path | None,
    stdin: int,
    hint: str | None,
    stdout: IO[bytes] | int | None = subprocess.PIPE,
    stderr: IO[bytes] | int | None = subprocess.STDOUT,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    # A session of its own, so that killing its process group reaches its children too;
    # on Linux the kernel also kills it when this process dies, however that happens.
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=pass_fds,
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
