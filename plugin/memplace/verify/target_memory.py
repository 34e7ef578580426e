"""Running firmware under QEMU, unchanged, and reading its memory at the end of the run.

Before the CPU starts, QEMU's generic loader writes a fill pattern over the areas to watch
(`-device loader,file=F,addr=A`). The run goes on until the firmware exits or the time is
up, which is normal for firmware that never exits (an RTOS). Then QEMU is stopped through
QMP and the memories asked for are saved (`pmemsave`) and read back. The firmware's console
(UART on QEMU's stdio, and semihosting) is kept. A firmware that exits ends QEMU at once
(semihosting's exit call), so its memory cannot be read: `memory` is then empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplace import process
from memplace.errors import ToolError

QEMU = "qemu-system-arm"
QMP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Paint:
    """`size` bytes of `fill` written at `address` before the CPU starts."""

    address: int
    size: int
    fill: int


@dataclass(frozen=True)
class RunMemory:
    """What a run left: its exit code (None: stopped when its time was up), its console,
    and the bytes of each area read at the end, by start address."""

    exit_code: int | None
    console: str
    memory: dict[int, bytes] = field(default_factory=dict)

    def read(self, address: int, size: int) -> bytes | None:
        for start, data in self.memory.items():
            if start <= address and address + size <= start + len(data):
                return data[address - start : address - start + size]
        return None

    def word(self, address: int) -> int | None:
        data = self.read(address, 4)
        return None if data is None else int.from_bytes(data, "little")


def run_and_read(
    machine: str,
    elf: Path,
    paints: Sequence[Paint],
    areas: Sequence[tuple[int, int]],
    timeout: float,
) -> RunMemory:
    """Run `elf` on QEMU's `machine` with `paints` applied, until it exits or `timeout`
    seconds pass; then read `areas` ((address, size) each) of its memory."""
    with tempfile.TemporaryDirectory(prefix="memplace-run-") as scratch:
        folder = Path(scratch)
        qmp = folder / "qmp.sock"
        argv = [
            process.find_tool(QEMU),
            "-M",
            machine,
            "-nographic",
            "-monitor",
            "none",
            "-serial",
            "stdio",
            "-semihosting-config",
            "enable=on,target=native",
            "-kernel",
            str(elf),
            "-qmp",
            f"unix:{qmp},server=on,wait=off",
        ]
        for index, paint in enumerate(paints):
            pattern = folder / f"paint{index}.bin"
            pattern.write_bytes(bytes([paint.fill]) * paint.size)
            argv += ["-device", f"loader,file={pattern},addr=0x{paint.address:x}"]
        running = process.start(argv)
        console = _Console(running.stdout)
        try:
            code = running.wait(timeout)
            memory: dict[int, bytes] = {}
            if code is None:
                memory = _read(qmp, folder, areas)
        finally:
            running.stop()
            console.join()
    return RunMemory(code, console.text(), memory)


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


def _read(qmp: Path, folder: Path, areas: Sequence[tuple[int, int]]) -> dict[int, bytes]:
    """Stop the machine and save each area through QMP."""
    with socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(QMP_TIMEOUT)
        connection.connect(str(qmp))
        stream = connection.makefile("rwb")
        stream.readline()  # the greeting
        _ask(stream, "qmp_capabilities")
        _ask(stream, "stop")
        memory = {}
        for index, (address, size) in enumerate(areas):
            saved = folder / f"area{index}.bin"
            _ask(stream, "pmemsave", val=address, size=size, filename=str(saved))
            memory[address] = saved.read_bytes()
        return memory


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
