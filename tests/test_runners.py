"""Runners and the process wrapper: the registry of runner records, exact command lines,
missing tools, timeouts."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from conftest import PATIENCE, ended, wait_until
from memplace import process, qemu
from memplace.errors import InputError, ToolError
from memplace.runners import RUNNERS, FlashRequest, QemuRunner, registry
from memplace.verify.runlog import parse_run

REPO = Path(__file__).resolve().parents[1]
RUNNER_MODULES = REPO / "plugin" / "memplace" / "runners"


# -- the registry: one record per runner, in the runner's own module ----------------------


def test_every_runner_module_is_found_by_its_record() -> None:
    modules = {path.stem for path in RUNNER_MODULES.glob("*.py")} - {"__init__", "base", "registry"}
    assert {runner.__module__.rpartition(".")[2] for runner in RUNNERS.values()} == modules
    assert list(RUNNERS) == ["qemu", "pyocd", "openocd"]  # in rising rank
    assert registry.flash_runners() == ("pyocd", "openocd")
    assert all(name == runner.name == runner.record.name for name, runner in RUNNERS.items())


def test_records_name_only_settings_a_flashing_can_be_given() -> None:
    assert tuple(field.name for field in fields(FlashRequest)) == registry.SETTINGS
    assert set(registry.BOARD_SETTINGS) <= set(registry.SETTINGS)
    for record in registry.records().values():
        caps = record.capabilities
        assert caps.needs <= caps.settings <= set(registry.SETTINGS), record.name
        assert caps.run or caps.flash, record.name


@pytest.mark.parametrize(
    ("capabilities", "message"),
    [
        (
            registry.Capabilities(flash=True, settings=frozenset({"speed"})),
            re.escape("runner x: no setting ['speed']"),
        ),
        (registry.Capabilities(flash=True, needs=frozenset({"target"})), "needs settings it does"),
    ],
)
def test_a_record_naming_a_setting_no_flashing_has_is_refused(
    capabilities: registry.Capabilities, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        registry.Record("x", "x", "pip install x", capabilities, "`x`", 99)


def test_the_docs_table_of_runners_is_the_registrys() -> None:
    text = (REPO / "docs" / "project-api.md").read_text(encoding="utf-8")
    assert registry.markdown_table() in text, (
        "docs/project-api.md is out of date: paste the output of\n"
        "  .venv/bin/python -c 'from memplace.runners.registry import markdown_table as t; "
        'print(t(), end="")\''
    )


def test_a_runners_install_hint_is_its_records() -> None:
    assert registry.install_hints() == {
        "qemu-system-arm": "apt-get install qemu-system-arm",
        "pyocd": "pip install pyocd",
        "openocd": "apt-get install openocd",
    }
    assert QemuRunner.record.tool == qemu.EXECUTABLE


# -- QEMU: one launcher, one command line ---------------------------------------------------


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


def test_missing_qemu_is_exit_3_with_its_records_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(ToolError) as caught:
        QemuRunner("mps3-an547").run({"cpu0": Path("build/cpu0.elf")}, timeout=5)
    assert caught.value.exit_code == 3
    assert str(caught.value) == (
        "qemu-system-arm not found; install it: " + QemuRunner.record.install
    )
    assert QemuRunner.record.install == "apt-get install qemu-system-arm"


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


def test_qemu_started_paused_under_its_gdbstub() -> None:
    """What `memplace stacks --run` starts: the same machine and semihosting as `run`, the
    UART on stdio, QMP and the gdbstub on sockets in its folder, paused, and the fill
    patterns loaded at their addresses before the CPU starts."""
    folder = Path("/tmp/memplace-run-x")
    argv = qemu.command(
        "mps2-an385", ["fw.elf"], "stdio", folder, [(str(folder / "load0.bin"), 0x20000000)]
    )
    assert argv == [
        "qemu-system-arm",
        "-M",
        "mps2-an385",
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "stdio",
        "-semihosting-config",
        "enable=on,target=native",
        "-kernel",
        "fw.elf",
        "-qmp",
        "unix:/tmp/memplace-run-x/qmp.sock,server=on,wait=off",
        "-gdb",
        "unix:/tmp/memplace-run-x/gdb.sock,server=on,wait=off",
        "-S",
        "-device",
        "loader,file=/tmp/memplace-run-x/load0.bin,addr=0x20000000",
    ]


def test_qemus_command_line_is_built_in_one_place() -> None:
    """`memplace run`, `check`, `stacks --run` and the Project API's transport all start
    QEMU through `memplace.qemu`: no other module writes its flags."""
    package = REPO / "plugin" / "memplace"
    writers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if '"-semihosting-config"' in path.read_text(encoding="utf-8")
    )
    assert writers == ["qemu.py"]


def test_flash_help_says_what_each_runner_takes_from_its_record() -> None:
    assert registry.flash_help() == (
        "Runners: pyocd takes --target, --probe, --frequency, --erase and needs --target; "
        "openocd takes --config, --probe, --frequency and needs --config."
    )
