"""QEMU, launched one way for every stage: `memplace run` and `memplace check` run images to
their end (`run`, `start`); `memplace stacks --run` starts one paused under QEMU's gdbstub,
lets it run, reads its memory through QMP and stops it (`paused`). Its command line is
built here only (`command`), and every QEMU is a `process.Running`: killed with memplace.
The runner's record reads this module for its tool, so `memplace.process` loads only when
QEMU is started.

The machine runs at its default memory size (-m must not change it), with no display and
semihosting to QEMU's own stdio. QEMU 7.2 sends the firmware's SYS_WRITE0 and SYS_WRITEC to
stderr and SYS_WRITE on ":tt" to stdout; SYS_READ on ":tt" reads its stdin.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memplace.errors import InputError, ToolError

if TYPE_CHECKING:
    from memplace import process

EXECUTABLE = "qemu-system-arm"
INSTALL = "apt-get install qemu-system-arm"
QMP_TIMEOUT = 30.0
"""Seconds QEMU may take to open its sockets and to answer over them."""


def command(
    machine: str,
    images: Sequence[str],
    serial: str = "null",
    paused_in: Path | None = None,
    loads: Sequence[tuple[str, int]] = (),
) -> list[str]:
    """The exact argv that runs `images` on `machine`: the first as the kernel, the others
    placed by QEMU's generic loader (an image named twice is loaded once). `serial` is where
    the UART goes. With `paused_in`, QEMU starts paused, its QMP and gdbstub on sockets in
    that folder. `loads` are (file, address): bytes written before the CPU starts."""
    if not images:
        raise InputError("no image to run", key="DIR")
    first, *rest = dict.fromkeys(images)
    argv = [
        EXECUTABLE,
        "-M",
        machine,
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        serial,
        "-semihosting-config",
        "enable=on,target=native",
        "-kernel",
        first,
    ]
    for image in rest:
        argv += ["-device", f"loader,file={image}"]
    if paused_in is not None:
        argv += ["-qmp", f"unix:{paused_in / 'qmp.sock'},server=on,wait=off"]
        argv += ["-gdb", f"unix:{paused_in / 'gdb.sock'},server=on,wait=off", "-S"]
    for file, address in loads:
        argv += ["-device", f"loader,file={file},addr=0x{address:x}"]
    return argv


def run(
    machine: str,
    images: Sequence[str],
    timeout: float,
    on_line: Callable[[str], None] | None = None,
) -> process.Completed:
    """Run `images` to their end (or `timeout` seconds: a `ToolError`); each line of the
    console goes to `on_line` as it comes."""
    from memplace import process

    argv = command(machine, images)
    argv[0] = process.find_tool(EXECUTABLE, INSTALL)
    return process.run(argv, timeout=timeout, on_line=on_line)


def start(machine: str, images: Sequence[str]) -> process.Running:
    """Start `images` and leave them running: the firmware's console is QEMU's stdin and
    its stdout and stderr (merged)."""
    from memplace import process

    argv = command(machine, images)
    argv[0] = process.find_tool(EXECUTABLE, INSTALL)
    return process.start(argv)


@contextlib.contextmanager
def paused(machine: str, image: Path, loads: Sequence[tuple[int, bytes]] = ()) -> Iterator[Session]:
    """QEMU started paused on `image` (its UART on stdio), with `loads` ((address, bytes)
    each) written before the CPU starts; stopped, with everything it started, on the way
    out, however that is."""
    from memplace import process

    with tempfile.TemporaryDirectory(prefix="memplace-run-") as scratch:
        folder = Path(scratch)
        files = []
        for index, (address, data) in enumerate(loads):
            file = folder / f"load{index}.bin"
            file.write_bytes(data)
            files.append((str(file), address))
        argv = command(machine, [str(image)], "stdio", folder, files)
        argv[0] = process.find_tool(EXECUTABLE, INSTALL)
        session = Session(process.start(argv), folder)
        try:
            yield session
        finally:
            session.stop()


class Session:
    """A QEMU started paused: its gdbstub (`gdbstub`), its memory (`read`), what it printed
    (`console`), and `stop`."""

    def __init__(self, running: process.Running, folder: Path) -> None:
        self.running = running
        self.folder = folder
        self._console = _Console(running.stdout)

    def gdbstub(self) -> GdbStub:
        """A connection to the gdbstub, once QEMU has opened it; QEMU's own words when it
        ended instead."""
        path = self.folder / "gdb.sock"
        deadline = time.monotonic() + QMP_TIMEOUT
        while not path.exists():
            if self.running.poll() is not None or time.monotonic() > deadline:
                raise ToolError(f"QEMU did not start the firmware: {self.said() or 'no output'}")
            time.sleep(0.02)
        return GdbStub(_connect(path, deadline, "QEMU's gdbstub did not come up"))

    def read(self, areas: Sequence[tuple[int, int]]) -> dict[int, bytes]:
        """Stop the machine and read each area ((address, size)) as the CPU sees it (TCMs
        included), by start address, through QMP's `memsave`."""
        deadline = time.monotonic() + QMP_TIMEOUT
        path = self.folder / "qmp.sock"
        with _connect(path, deadline, "QEMU's QMP did not come up") as connection:
            stream = connection.makefile("rwb")
            stream.readline()  # the greeting
            _ask(stream, "qmp_capabilities")
            _ask(stream, "stop")
            memory = {}
            for index, (address, size) in enumerate(areas):
                saved = self.folder / f"area{index}.bin"
                _ask(stream, "memsave", val=address, size=size, filename=str(saved))
                memory[address] = saved.read_bytes()
            return memory

    def said(self) -> str:
        """The first line QEMU printed as it ended (its fatal error); QEMU is stopped first."""
        self.stop()
        lines = [line.strip() for line in self.console().splitlines() if line.strip()]
        fatal = [line for line in lines if line.startswith("qemu")]
        return (fatal or lines[-1:] or [""])[0][:300]

    def console(self) -> str:
        """Everything QEMU printed so far: the firmware's console and QEMU's own words."""
        return self._console.text()

    def stop(self) -> None:
        """Kill QEMU (a second call does nothing) and wait for the last of its output."""
        self.running.stop()
        self._console.join()


def _connect(path: Path, deadline: float, failure: str) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX)
    while True:
        try:
            connection.connect(str(path))
            break
        except OSError:
            if time.monotonic() > deadline:
                connection.close()
                raise ToolError(failure) from None
            time.sleep(0.02)
    connection.settimeout(QMP_TIMEOUT)
    return connection


class GdbStub:
    """Just enough of GDB's remote protocol to drive a paused QEMU: resume or step to the
    next stop (or a time), read registers and memory, write memory, set breakpoints."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = b""

    def close(self) -> None:
        self.connection.close()

    def go(self, command: str, deadline: float) -> str | None:
        """Resume (`c`) or step (`s`); the stop reply, or None when `deadline` passed first
        (the machine is then interrupted and stopped)."""
        self.send(command)
        while True:
            self.connection.settimeout(max(0.01, min(0.5, deadline - time.monotonic())))
            try:
                return self.receive()
            except TimeoutError:
                if time.monotonic() >= deadline:
                    self.connection.settimeout(QMP_TIMEOUT)
                    self.connection.sendall(b"\x03")
                    self.receive()
                    return None

    def register(self, number: int) -> int:
        """Core register `number` (r0-r15), from the whole register file (`g`)."""
        data = self.ask("g")
        return int.from_bytes(bytes.fromhex(data[number * 8 : number * 8 + 8]), "little")

    def readable(self, address: int, size: int) -> bytes | None:
        """`size` bytes at `address`; None when the stub cannot read them (an `E` reply)."""
        reply = self.ask(f"m{address:x},{size:x}")
        try:
            data = bytes.fromhex(reply)
        except ValueError:
            return None
        return data if len(data) == size else None

    def write(self, address: int, data: bytes) -> bool:
        """Write `data` at `address` (at most a packet's worth); whether the target took it."""
        return self.ask(f"M{address:x},{len(data):x}:{data.hex()}") == "OK"

    def insert_breakpoint(self, address: int) -> None:
        self.ask(f"Z0,{address:x},2")

    def remove_breakpoint(self, address: int) -> None:
        self.ask(f"z0,{address:x},2")

    def ask(self, command: str) -> str:
        self.send(command)
        return self.receive()

    def send(self, command: str) -> None:
        checksum = sum(command.encode()) % 256
        self.connection.sendall(f"${command}#{checksum:02x}".encode())

    def receive(self) -> str:
        """The next packet's data (acknowledged); acks and notifications are skipped."""
        while True:
            start = self.buffer.find(b"$")
            end = self.buffer.find(b"#", start) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buffer) >= end + 3:
                data = self.buffer[start + 1 : end].decode("ascii", errors="replace")
                self.buffer = self.buffer[end + 3 :]
                self.connection.sendall(b"+")
                if data.startswith("O") and data != "OK":
                    continue  # console output the stub forwards
                return data
            chunk = self.connection.recv(65536)
            if not chunk:
                raise ToolError("QEMU's gdbstub closed the connection")
            self.buffer += chunk


class _Console:
    """Everything QEMU prints, read as it comes so that the pipe never fills."""

    def __init__(self, fd: int) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._drain, args=(fd,), daemon=True)
        self._thread.start()

    def _drain(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 65536):
                self._chunks.append(chunk)

    def join(self) -> None:
        self._thread.join(timeout=5)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _ask(stream: Any, command: str, **arguments: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"execute": command}
    if arguments:
        request["arguments"] = arguments
    stream.write((json.dumps(request) + "\n").encode())
    stream.flush()
    deadline = time.monotonic() + QMP_TIMEOUT
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise ToolError(f"QEMU refused {command}: {reply['error'].get('desc', reply)}")
        if "return" in reply:
            return reply
    raise ToolError(f"QEMU did not answer {command} over QMP")
