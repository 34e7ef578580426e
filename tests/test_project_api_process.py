"""`memplace serve` as a real process: over pipes the client passes, over stdin/stdout,
and driving a firmware under QEMU whose console is the transport."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PATIENCE, ended, wait_until
from memplace import process
from memplace.cli import main
from memplace.project_api import (
    Client,
    InvalidParams,
    RemoteError,
    ServerProcess,
    TransportClosedError,
)
from memplace.resources import demo_workload
from memplace.runners import QemuRunner

BOARD = "qemu-mps3-an547"
SERVE = [sys.executable, "-m", "memplace.cli", "serve"]
REPLY_TIMEOUT = PATIENCE  # a build may take a while on a busy machine
SMALL_WORKLOAD = {
    "memplace": "workload/v1",
    "name": "small",
    "steps": ["a", "b"],
    "buffers": [{"name": "x", "size": 1024, "live": ["a", "b"]}],
}

ECHO_APP = r"""
/* Echoes each line read from the console, upper-cased, until a line "quit". */
#include <stdint.h>

static int semihost(int operation, const void *argument)
{
    register int r0 __asm__("r0") = operation;
    register const void *r1 __asm__("r1") = argument;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int app_main(void)
{
    const uint32_t open_console[3] = {(uint32_t)":tt", 0 /* "r" */, 3};
    int console = semihost(0x01 /* SYS_OPEN */, open_console);
    static char line[80];
    semihost(0x04 /* SYS_WRITE0 */, "echo: ready\n");
    for (;;) {
        uint32_t request[3] = {(uint32_t)console, (uint32_t)line, sizeof line - 1};
        int got = (int)(sizeof line - 1) - semihost(0x06 /* SYS_READ */, request);
        if (got <= 0) {
            return 3;
        }
        line[got] = '\0';
        if (got >= 4 && line[0] == 'q' && line[1] == 'u' && line[2] == 'i' && line[3] == 't') {
            semihost(0x04, "echo: bye\n");
            return 7;
        }
        for (int i = 0; i < got; i++) {
            if (line[i] >= 'a' && line[i] <= 'z') {
                line[i] = (char)(line[i] - 'a' + 'A');
            }
        }
        semihost(0x04, line);
    }
}
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """`memplace serve --board ...` in tmp_path, on two pipes; always ended afterwards."""
    log = (tmp_path / "server.log").open("wb")
    started = ServerProcess(
        [*SERVE, "--board", BOARD], timeout=REPLY_TIMEOUT, cwd=tmp_path, stderr=log
    )
    try:
        yield started
    finally:
        started.close()
        log.close()


def _read_until(api: Client, token: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + PATIENCE
    while token not in data:
        assert time.monotonic() < deadline, data
        data += api.read_transport(256, PATIENCE)
    return data


def _qemu_in(folder: Path) -> list[int]:
    """The QEMU processes running in `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"qemu-system-arm" in (entry / "cmdline").read_bytes() and (
                    (entry / "cwd").resolve() == folder.resolve()
                ):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_server_over_pipes_answers_and_keeps_serving(
    server: ServerProcess, tmp_path: Path
) -> None:
    api = server.client
    assert api.server_info_query("0.18.0")["board"] == BOARD
    assert api.raw(b"{oops")["error"]["code"] == -32700
    assert api.raw(b'{"jsonrpc": "2.0", "method": "fly", "id": 2}')["error"]["code"] == -32601
    with pytest.raises(InvalidParams, match="option erase: expected a bool"):
        api.flash({"erase": "perhaps"})
    with pytest.raises(RemoteError, match="InputError: project_dir: no project yet"):
        api.build()
    assert api.server_info_query()["protocol_version"] == 1
    assert server.close() == 0
    log = (tmp_path / "server.log").read_text()
    assert "request server_info_query" in log and "unreadable request" in log


@pytest.mark.qemu
def test_the_transport_is_the_console_of_the_firmware_under_qemu(
    server: ServerProcess, tmp_path: Path
) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "echo.c").write_text(ECHO_APP)
    api = server.client
    options = {"project_type": "app", "sources": "app"}
    assert api.generate_project(demo_workload(), "echo", options)["project_dir"] == "echo"
    assert api.build() == {"images": {"cpu0": "echo/build/cpu0.elf"}}
    assert api.flash() == {"runner": "qemu", "flashed": False}
    assert api.open_transport()["timeouts"]["session_start_timeout_sec"] == 10.0
    assert _read_until(api, b"ready\n") == b"echo: ready\n"
    api.write_transport(b"hello, firmware\n", 5.0)
    assert _read_until(api, b"\n") == b"HELLO, FIRMWARE\n"
    api.write_transport(bytes(range(0x20, 0x7F)) + b"\n", 5.0)
    assert _read_until(api, b"\n").startswith(b" !\"#$%&'()*+,-./0123456789:;<=>?@ABC")
    api.write_transport(b"quit\n", 5.0)
    assert b"echo: bye\n" in _read_until(api, b"memplace: result")
    with pytest.raises(TransportClosedError) as caught:
        while True:
            api.read_transport(256, 10.0)
    assert caught.value.data["exit_code"] == 7  # what app_main returned
    api.close_transport()


@pytest.mark.qemu
def test_the_exerciser_reports_over_the_transport(server: ServerProcess, tmp_path: Path) -> None:
    api = server.client
    api.generate_project(demo_workload(), "my demo", {})
    api.build()
    api.open_transport()
    assert b"memplace: result pass" in _read_until(api, b"memplace: result")
    with pytest.raises(TransportClosedError, match="qemu-system-arm exited with code 0"):
        while True:
            api.read_transport(256, 10.0)
    server.close()
    # Every command the server ran is in its log, quoted as a shell would take it.
    log = (tmp_path / "server.log").read_text()
    cmake = process.find_tool("cmake")
    assert f"memplace.process: running: {shlex.join([cmake, '--build', 'my demo/build'])}\n" in log
    qemu = QemuRunner("mps3-an547").command({"cpu0": Path("my demo/build/cpu0.elf")})
    qemu[0] = process.find_tool(qemu[0])
    assert f"memplace.process: starting: {shlex.join(qemu)}\n" in log


def test_flashing_over_the_api_logs_the_quoted_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pyocd = bin_dir / "pyocd"
    pyocd.write_text("#!/bin/sh\necho programmed\n")
    pyocd.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    workload = tmp_path / "small.json"
    workload.write_text(json.dumps(SMALL_WORKLOAD))
    log = (tmp_path / "server.log").open("wb")
    with ServerProcess(
        [*SERVE, "--board", "stm32h743"], timeout=REPLY_TIMEOUT, cwd=tmp_path, stderr=log
    ) as api:
        api.generate_project("small.json", "h7 project", {})
        (tmp_path / "h7 project" / "build").mkdir()
        (tmp_path / "h7 project" / "build" / "cm7.elf").write_bytes(b"\x7fELF")
        assert api.flash({"frequency": "4000000"}) == {"runner": "pyocd", "flashed": True}
    log.close()
    argv = [str(pyocd), "load", "--target", "stm32h743xx", "--frequency", "4000000"]
    expected = shlex.join([*argv, "h7 project/build/cm7.elf"])
    assert f"memplace.process: running: {expected}\n" in (tmp_path / "server.log").read_text()


@pytest.mark.qemu
@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_stopping_the_server_stops_qemu(
    server: ServerProcess, tmp_path: Path, ending: signal.Signals
) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "echo.c").write_text(ECHO_APP)
    api = server.client
    api.generate_project(demo_workload(), "waits", {"project_type": "app", "sources": "app"})
    api.build()
    api.open_transport()
    _read_until(api, b"ready\n")  # the firmware now waits for its console
    assert len(_qemu_in(tmp_path)) == 1
    server.process.send_signal(ending)
    # SIGTERM and SIGHUP unwind and close the transport; after SIGKILL the kernel ends QEMU.
    assert server.process.wait(PATIENCE) == (-ending if ending == signal.SIGKILL else 128 + ending)
    wait_until(lambda: _qemu_in(tmp_path) == [], "QEMU ended with the server")


def test_a_server_on_stdin_and_stdout_writes_only_replies_there(tmp_path: Path) -> None:
    requests = [
        {"jsonrpc": "2.0", "method": "server_info_query", "params": ["1"], "id": 1},
        {"jsonrpc": "2.0", "method": "build", "params": {"options": {}}, "id": 2},
    ]
    lines = "".join(json.dumps(r) + "\n" for r in requests) + "not json\n"
    done = subprocess.run(
        [*SERVE, "--board", BOARD],
        input=lines,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, None]
    assert replies[0]["result"]["platform_name"] == "memplace"
    assert replies[1]["error"]["message"] == "InputError"
    assert replies[2]["error"]["code"] == -32700
    assert "request server_info_query" in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--read-fd", "0"], "serve: --read-fd and --write-fd go together"),
        (["--read-fd", "97", "--write-fd", "98"], "serve: file descriptor 97 is not open"),
        (["--board", "nosuch"], "BOARD: no bundled board 'nosuch'"),
        (["--project", "."], "DIR: no memplace project here"),
    ],
)
def test_serve_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["serve", *argv]) == 2
    assert message in capsys.readouterr().err


def test_serve_ends_when_the_client_closes_its_end(tmp_path: Path) -> None:
    requests_in, requests_out = os.pipe()
    replies_in, replies_out = os.pipe()
    os.close(requests_out)  # the client is gone before the first request
    try:
        assert main(["serve", "--read-fd", str(requests_in), "--write-fd", str(replies_out)]) == 0
    finally:
        os.close(replies_in)


def test_the_server_a_client_starts_runs_through_the_process_wrapper(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Logged with its quoted argv, in a session of its own (killed with its children),
    and set to die with us (PR_SET_PDEATHSIG: the kernel's parent-death signal)."""
    caplog.set_level("INFO", logger="memplace.process")
    started = ServerProcess([*SERVE, "--board", BOARD], timeout=REPLY_TIMEOUT)
    try:
        assert started.client.server_info_query()["board"] == BOARD
        pid = started.process.pid
        assert os.getsid(pid) == pid
        status = Path(f"/proc/{pid}/status").read_text()
        assert status  # alive; the death signal is not in /proc, the kill test below is
        logged = [r.getMessage() for r in caplog.records if r.name == "memplace.process"]
        assert any(m.startswith("starting: ") and "serve --board" in m for m in logged)
    finally:
        assert started.close() == 0


def test_a_server_whose_client_dies_ends_too(tmp_path: Path) -> None:
    """A client process killed outright leaves no server behind."""
    script = (
        "import os, sys, time\n"
        "from memplace.project_api import ServerProcess\n"
        f"s = ServerProcess({[*SERVE, '--board', BOARD]!r}, timeout={PATIENCE})\n"
        "s.client.server_info_query()\n"
        "print(s.process.pid, flush=True)\n"
        f"time.sleep({2 * PATIENCE})\n"
    )
    client = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert client.stdout is not None
    server = int(client.stdout.readline())
    client.kill()
    client.wait()
    wait_until(lambda: ended(server), f"the server {server} ended with its client")
