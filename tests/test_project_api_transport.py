"""The console transport over real processes, and the protocol module's independence:
it runs from a copy, with nothing but the standard library (what every carried module
imports is checked in test_project_api_carried.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PATIENCE
from memplace import process
from memplace.carried.server import MAX_READ
from memplace.carried.transport import ConsoleTransport
from memplace.errors import ToolError
from memplace.project_api import IoTimeoutError, TransportClosedError
from memplace.runners import QemuRunner

PROTOCOL = Path(__file__).resolve().parent.parent / "plugin" / "memplace" / "carried"


@pytest.fixture
def transports() -> Iterator[list[ConsoleTransport]]:
    """Transports a test opens; all closed (their processes killed) afterwards."""
    opened: list[ConsoleTransport] = []
    yield opened
    for transport in opened:
        transport.close()


def _open(opened: list[ConsoleTransport], *argv: str) -> ConsoleTransport:
    transport = ConsoleTransport(process.start(list(argv)))
    opened.append(transport)
    return transport


def _read_all(transport: ConsoleTransport, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += transport.read(size - len(data), PATIENCE)
    return data


def test_bytes_go_to_the_process_and_come_back(transports: list[ConsoleTransport]) -> None:
    cat = _open(transports, "cat")
    payload = bytes(range(256)) * 64
    cat.write(payload, PATIENCE)
    assert _read_all(cat, len(payload)) == payload


def test_a_read_with_nothing_to_read_times_out(transports: list[ConsoleTransport]) -> None:
    cat = _open(transports, "cat")
    started = time.monotonic()
    with pytest.raises(IoTimeoutError, match=r"no byte came from the firmware within 0\.2 s"):
        cat.read(10, 0.2)
    assert time.monotonic() - started > 0.15  # not early; how late is up to the machine
    with pytest.raises(IoTimeoutError):
        cat.read(10, 0)


def test_the_end_of_the_program_closes_the_transport(transports: list[ConsoleTransport]) -> None:
    short = _open(transports, "sh", "-c", "printf 'last words'; echo ' on stderr' >&2; exit 4")
    assert _read_all(short, len(b"last words on stderr\n")) == b"last words on stderr\n"
    with pytest.raises(TransportClosedError) as caught:
        short.read(10, PATIENCE)
    assert caught.value.data == {
        "message": "the firmware's console closed: sh exited with code 4",
        "exit_code": 4,
    }
    with pytest.raises(TransportClosedError, match="sh exited with code 4"):
        short.write(b"anyone there?\n" * 10_000, PATIENCE)


def test_a_write_nobody_reads_times_out(transports: list[ConsoleTransport]) -> None:
    deaf = _open(transports, "sleep", "infinity")
    with pytest.raises(IoTimeoutError) as caught:
        deaf.write(b"x" * (4 << 20), 0.3)
    written = caught.value.data["written"]
    assert 0 < written < 4 << 20
    assert caught.value.data["message"] == f"wrote {written} of {4 << 20} bytes within 0.3 s"


def test_a_closed_transport_refuses_reads_and_writes(transports: list[ConsoleTransport]) -> None:
    cat = _open(transports, "cat")
    assert cat.close() == -9  # killed
    with pytest.raises(TransportClosedError, match="the transport was closed"):
        cat.read(1, 0.1)
    with pytest.raises(TransportClosedError, match="the transport was closed"):
        cat.write(b"x", 0.1)
    assert cat.close() == -9  # twice is fine


def test_starting_a_missing_program_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(ToolError, match="cmake not found; install it: pip install cmake"):
        process.start(["cmake", "--version"])
    # The transport's QEMU, started as `open_transport` starts it: its record's install hint.
    with pytest.raises(ToolError, match="qemu-system-arm not found; install it: apt-get install"):
        QemuRunner("mps3-an547").start({"cpu0": Path("build/cpu0.elf")})


def test_a_read_takes_at_most_a_pipe_full_whatever_n_says(
    transports: list[ConsoleTransport],
) -> None:
    # Python allocates the n bytes asked of os.read before reading: never ask for more.
    yes = _open(transports, "yes")
    data = yes.read(MAX_READ, PATIENCE)
    assert 0 < len(data) <= 64 * 1024
    assert set(data) == set(b"y\n")


def test_a_copy_of_the_protocol_serves_without_memplace(tmp_path: Path) -> None:
    package = tmp_path / "carried"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("server.py", "client.py", "processes.py"):
        shutil.copy(PROTOCOL / name, package / name)
    script = """
import sys
sys.path.insert(0, ".")
from carried.client import Client
from carried.server import Server, ProjectOption, TransportClosedError
assert "memplace" not in sys.modules and "yaml" not in sys.modules

option = ProjectOption("verbose", "bool", "say more", default=False, optional=("build",))

class Handler:
    def server_info_query(self, tvm_version):
        return {"platform_name": "copy", "is_template": True, "model_library_format_path": None,
                "project_options": [option]}
    def read_transport(self, n, timeout_sec):
        raise TransportClosedError("gone")

client = Client.in_memory(Server(Handler()))
info = client.server_info_query("0.18")
assert info["protocol_version"] == 1 and info["project_options"][0]["name"] == "verbose"
try:
    client.read_transport(1, 0)
except TransportClosedError as exc:
    print("ok", exc)
"""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],  # no site-packages: stdlib only
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok TransportClosedError: gone\n"
