"""The transport of a running firmware: its console, as the pipes of the process running it.

Under QEMU the firmware's console is QEMU's standard streams: what the firmware writes by
semihosting comes out of QEMU's stdout and stderr (read here merged, in order), and what
is written to QEMU's stdin is what the firmware reads with SYS_READ on a ":tt" handle.
Reads and writes follow the Project API: a read returns 1 to n bytes or raises
`IoTimeoutError` when none came in time; a write sends every byte or raises.

Standard library only, like `server`: a generated project carries a copy of this module.
"""

from __future__ import annotations

import logging
import os
import select
import time
from pathlib import Path
from typing import Protocol

from .server import IoTimeoutError, TransportClosedError

log = logging.getLogger("memplace.project_api")

# What a TVM session on the transport may expect of a firmware under QEMU, in seconds.
TIMEOUTS = {
    "session_start_retry_timeout_sec": 2.0,
    "session_start_timeout_sec": 10.0,
    "session_established_timeout_sec": 10.0,
}
# How long a closed console waits for its process's exit code, in seconds.
_EXIT_WAIT = 5.0
# The most bytes one read takes from the console: a pipe holds 64 KiB, and asking the
# kernel for more would only make Python allocate a larger buffer first.
_CHUNK = 64 * 1024


class Running(Protocol):
    """A started program: its argv, the file descriptors of its stdin and of its merged
    stdout and stderr, and how to wait for it and stop it (`memplace.process.Running`,
    or the copy `processes.Running` a generated project carries)."""

    @property
    def argv(self) -> tuple[str, ...]: ...

    @property
    def stdin(self) -> int: ...

    @property
    def stdout(self) -> int: ...

    def wait(self, timeout: float) -> int | None: ...

    def stop(self) -> int: ...


class ConsoleTransport:
    """Bytes to and from a started program."""

    def __init__(self, running: Running) -> None:
        self.running = running
        self.closed = False
        os.set_blocking(running.stdout, False)
        os.set_blocking(running.stdin, False)

    def read(self, n: int, timeout: float | None) -> bytes:
        """Between 1 and `n` bytes; waits up to `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._check_open()
            ready, _, _ = select.select([self.running.stdout], [], [], _left(deadline))
            if not ready:
                raise IoTimeoutError(f"no byte came from the firmware within {timeout:g} s")
            try:
                data = os.read(self.running.stdout, min(n, _CHUNK))
            except BlockingIOError:
                continue
            if not data:
                raise self._ended()
            return data

    def write(self, data: bytes, timeout: float | None) -> None:
        """Send all of `data` within `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        view = memoryview(data)
        while view:
            self._check_open()
            _, ready, _ = select.select([], [self.running.stdin], [], _left(deadline))
            if not ready:
                written = len(data) - len(view)
                raise IoTimeoutError(
                    f"wrote {written} of {len(data)} bytes within {timeout:g} s",
                    {"written": written},
                )
            try:
                view = view[os.write(self.running.stdin, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._ended() from None

    def close(self) -> int:
        """Stop the process; its exit code."""
        self.closed = True
        return self.running.stop()

    def _check_open(self) -> None:
        if self.closed:
            raise TransportClosedError("the transport was closed")

    def _ended(self) -> TransportClosedError:
        code = self.running.wait(_EXIT_WAIT)
        what = "is still running" if code is None else f"exited with code {code}"
        return TransportClosedError(
            f"the firmware's console closed: {Path(self.running.argv[0]).name} {what}",
            {"exit_code": code},
        )


class TransportMethods:
    """The Project API's transport calls over the console a handler opened, shared by
    `memplace serve` and a project's own server (which open it each their own way)."""

    transport: ConsoleTransport | None = None

    def close_transport(self) -> None:
        if self.transport is not None:
            code = self.transport.close()
            log.info("transport closed; QEMU exit code %d", code)
            self.transport = None

    def read_transport(self, n: int, timeout_sec: float | None) -> bytes:
        return self._transport().read(n, timeout_sec)

    def write_transport(self, data: bytes, timeout_sec: float | None) -> None:
        self._transport().write(data, timeout_sec)

    def _transport(self) -> ConsoleTransport:
        if self.transport is None:
            raise TransportClosedError("no transport is open; call open_transport first")
        return self.transport


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
