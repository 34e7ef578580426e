"""The client side of the Project API: standard library only, like `server`.

A `Client` sends one request line and waits for its reply line. It talks to a server in
memory (`Client.in_memory`: no process, for tests and for drivers that embed memplace),
over two pipes (`Client.over_pipes`), or to a server it starts (`ServerProcess`).
Error replies come back as exceptions: the JSON-RPC codes as `RPCError` subclasses,
-32000 as the server error class of that name (`IoTimeoutError`, `TransportClosedError`)
or as `RemoteError` carrying the name (`InputError`, `PlanningError`, ...).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import select
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Callable, Optional

from .processes import launch
from .server import Server, error_from_json

Exchange = Callable[[bytes], Optional[bytes]]  # typing's: Python 3.8 runs it


class ProtocolError(Exception):
    """The server's reply broke the protocol, or the server went away."""


class Client:
    """Calls Project API methods and returns their results."""

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self._ids = itertools.count(1)

    @classmethod
    def in_memory(cls, server: Server) -> Client:
        """A client wired straight to `server`: no process, no pipe."""
        return cls(server.handle_line)

    @classmethod
    def over_pipes(cls, read_fd: int, write_fd: int, timeout: float | None = None) -> Client:
        """A client reading replies from `read_fd` and writing requests to `write_fd`;
        `timeout` bounds the wait for each reply (seconds; None waits for ever)."""
        return cls(_PipeLines(read_fd, write_fd, timeout).exchange)

    def raw(self, line: bytes) -> Any:
        """Send one line as it is; the parsed reply, or None when none came."""
        reply = self._exchange(line if line.endswith(b"\n") else line + b"\n")
        return None if reply is None else json.loads(reply)

    def call(self, method: str, **params: Any) -> Any:
        request_id = next(self._ids)
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        reply = self.raw(json.dumps(request).encode("utf-8"))
        if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0":
            raise ProtocolError(f"{method}: the reply is not a JSON-RPC 2.0 object: {reply!r}")
        if reply.get("id") != request_id:
            raise ProtocolError(f"{method}: the reply is for id {reply.get('id')!r}")
        if "error" in reply:
            error = reply["error"]
            if not isinstance(error, dict):
                raise ProtocolError(f"{method}: the error is not an object: {error!r}")
            raise error_from_json(error)
        if "result" not in reply:
            raise ProtocolError(f"{method}: the reply holds neither result nor error")
        return reply["result"]

    def server_info_query(self, tvm_version: str = "") -> dict[str, Any]:
        info: dict[str, Any] = self.call("server_info_query", tvm_version=tvm_version)
        return info

    def generate_project(
        self,
        model_library_format_path: str | Path,
        project_dir: str | Path,
        options: Mapping[str, Any] | None = None,
        standalone_crt_dir: str | Path | None = None,
    ) -> Any:
        return self.call(
            "generate_project",
            model_library_format_path=str(model_library_format_path),
            standalone_crt_dir=None if standalone_crt_dir is None else str(standalone_crt_dir),
            project_dir=str(project_dir),
            options=dict(options or {}),
        )

    def build(self, options: Mapping[str, Any] | None = None) -> Any:
        return self.call("build", options=dict(options or {}))

    def flash(self, options: Mapping[str, Any] | None = None) -> Any:
        return self.call("flash", options=dict(options or {}))

    def open_transport(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        reply: dict[str, Any] = self.call("open_transport", options=dict(options or {}))
        return reply

    def close_transport(self) -> None:
        self.call("close_transport")

    def read_transport(self, n: int, timeout_sec: float | None) -> bytes:
        reply = self.call("read_transport", n=n, timeout_sec=timeout_sec)
        return base64.b85decode(reply["data"])

    def write_transport(self, data: bytes, timeout_sec: float | None) -> None:
        encoded = base64.b85encode(data).decode("ascii")
        self.call("write_transport", data=encoded, timeout_sec=timeout_sec)


class _PipeLines:
    """Request lines out on one file descriptor, reply lines in on another."""

    def __init__(self, read_fd: int, write_fd: int, timeout: float | None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.timeout = timeout
        self._pending = b""

    def exchange(self, line: bytes) -> bytes:
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self.write_fd, view) :]
        except BrokenPipeError as exc:
            raise ProtocolError("the server has closed its end of the pipe") from exc
        return self._read_line()

    def _read_line(self) -> bytes:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while b"\n" not in self._pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                raise ProtocolError(f"no reply from the server within {self.timeout:g} s")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise ProtocolError("the server closed its end of the pipe without replying")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line + b"\n"


class ServerProcess:
    """A Project API server started as a process, talking over two fresh pipes.

    `argv` starts the server without its pipe arguments (for memplace:
    `["memplace", "serve", "--board", NAME]`); `--read-fd N --write-fd M` are added, then
    `--debug` if asked, as TVM's `instantiate_from_dir` launches a server.
    Leaving the `with` block closes the pipes, which ends the server, and waits for it.
    It starts as every program memplace runs does (`processes.launch`): logged, in a
    session of its own, killed with its children, and by the kernel if we die first.
    """

    def __init__(
        self,
        argv: Sequence[str],
        timeout: float | None = None,
        cwd: str | Path | None = None,
        stderr: IO[bytes] | int | None = None,
        debug: bool = False,
    ) -> None:
        requests_in, requests_out = os.pipe()
        replies_in, replies_out = os.pipe()
        try:
            self.process = launch(
                [*argv, "--read-fd", str(requests_in), "--write-fd", str(replies_out)]
                + (["--debug"] if debug else []),  # where TVM puts it
                (requests_in, replies_out),
                None if cwd is None else Path(cwd),
                stderr,
            )
        except BaseException:
            for fd in (requests_out, replies_in):
                os.close(fd)
            raise
        finally:
            os.close(requests_in)
            os.close(replies_out)
        self._fds: tuple[int, ...] = (replies_in, requests_out)
        self.client = Client.over_pipes(replies_in, requests_out, timeout)

    def close(self, timeout: float = 10.0) -> int:
        """Close the pipes and wait for the server to end (killed after `timeout` s)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = ()
        code = self.process.wait(timeout)
        return self.process.stop() if code is None else code

    def __enter__(self) -> Client:
        return self.client

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
