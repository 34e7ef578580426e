"""Runners and the process wrapper: exact command lines, missing tools, timeouts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import PATIENCE, ended, wait_until
from memplace import process
from memplace.errors import InputError, ToolError
from memplace.runners import QemuRunner
from memplace.verify.runlog import parse_run


def test_qemu_command_line() -> None:
    argv = QemuRunner("mps3-an547").command({"cpu0": Path("build/cpu0.elf")})
    assert argv == [
        "qemu-system-arm",
        "-M",
        "mps3-an547",
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "null",
        "-semihosting-config",
        "enable=on,target=native",
        "-kernel",
        "build/cpu0.elf",
    ]


def test_qemu_loads_further_images_with_the_loader_device() -> None:
    argv = QemuRunner("mps2-an521").command({"cpu0": Path("a.elf"), "cpu1": Path("b.elf")})
    assert argv[-4:] == ["-kernel", "a.elf", "-device", "loader,file=b.elf"]


def test_qemu_needs_an_image() -> None:
    with pytest.raises(InputError, match="no image to run"):
        QemuRunner("mps3-an547").command({})


def test_missing_tool_is_exit_3_with_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(ToolError) as caught:
        process.find_tool("qemu-system-arm")
    assert caught.value.exit_code == 3
    assert "install it: apt-get install qemu-system-arm" in str(caught.value)


def test_running_a_missing_program() -> None:
    with pytest.raises(ToolError, match="no-such-tool not found"):
        process.run(["no-such-tool", "--version"], timeout=5)


def test_timeout_kills_the_whole_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    write_pid = f"echo $$ > {pid_file}.new && mv {pid_file}.new {pid_file}"
    grandchild = f"sh -c '{write_pid}; exec sleep infinity'"
    communicate = subprocess.Popen.communicate

    def once_the_grandchild_runs(child: subprocess.Popen[bytes], **kwargs: Any) -> Any:
        # The timeout's clock starts when the grandchild runs, however slowly it starts; and
        # it never ends by itself.
        wait_until(pid_file.exists, "the grandchild started")
        return communicate(child, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "communicate", once_the_grandchild_runs)
    with pytest.raises(ToolError, match=r"did not finish within 0\.5 s"):
        process.run(["sh", "-c", f"{grandchild} & wait"], timeout=0.5)
    pid = int(pid_file.read_text())
    wait_until(lambda: ended(pid), f"process {pid} ended with its group")


def test_run_collects_output_and_exit_code() -> None:
    done = process.run(["sh", "-c", "echo out; echo err >&2; exit 4"], timeout=PATIENCE)
    assert done.returncode == 4
    assert "out" in done.output and "err" in done.output


def test_run_log_parsing() -> None:
    log = parse_run(
        "noise\nmemplace: fail buffer act1 step 3\nmemplace: stack main used 700 "
        "budget 16384\nmemplace: result fail\n",
        1,
    )
    assert [(f.what, f.name, f.step) for f in log.failures] == [("buffer", "act1", 3)]
    assert log.stacks == {"main": 700}
    assert log.result == "fail" and not log.passed
    assert parse_run("memplace: result pass\n", 0).passed
    assert parse_run("memplace: fault exception 3\n", 125).fault == 3


def test_run_log_names_worker_thread_stacks_as_the_plan_does() -> None:
    log = parse_run(
        "memplace: stack main used 700 budget 16384\n"
        "memplace: stack main.thread0 used 316 budget 16384\n"
        "memplace: stack main.thread12 used 8 budget 1024\n"
        "memplace: stack main.other used 9 budget 1024\n",
        0,
    )
    assert log.stacks == {"main": 700, "main.thread0": 316, "main.thread12": 8}
