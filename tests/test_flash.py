"""Flashing real boards: the exact command lines of pyOCD and OpenOCD, the settings each
runner takes (refused in one place), the board's default runner, `memplace flash` with
the tools replaced by scripts that record what they were given, and a runner added by its
record alone (in the schema, the board loader, the command's help and `memplace flash`)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import cli_error, run_cli
from memplace import options, resources
from memplace.board import Board, FlashRun, load_board
from memplace.cli import main
from memplace.codegen import render
from memplace.errors import InputError
from memplace.planner import plan
from memplace.project import write_project
from memplace.project_api import Client, RemoteError
from memplace.project_api.handler import make_server
from memplace.runners import (
    RUNNERS,
    Capabilities,
    FlashRequest,
    QemuRunner,
    Record,
    Runner,
    board_flash,
    default_runner,
    registry,
)
from memplace.runners.openocd import OpenocdRunner
from memplace.runners.pyocd import PyocdRunner
from memplace.schema import board_schema
from memplace.workload import Workload

ONE = {"cpu0": Path("build/cpu0.elf")}
TWO = {"cpu0": Path("build/cpu0.elf"), "cpu1": Path("build/cpu1.elf")}
PYOCD = {"runner": "pyocd", "target": "stm32h743xx"}
OPENOCD = {"runner": "openocd", "config": ["board/stm32h7x3i_eval.cfg"]}


# -- exact command lines -------------------------------------------------------------------


def test_pyocd_command_line() -> None:
    runner = PyocdRunner.for_flashing(FlashRequest(target="stm32h743xx"))
    assert runner.flash_command(ONE) == [
        "pyocd",
        "load",
        "--target",
        "stm32h743xx",
        "build/cpu0.elf",
    ]


def test_pyocd_with_every_setting_and_two_images() -> None:
    request = FlashRequest(target="stm32h747xx", probe="0669FF", frequency=4_000_000, erase=True)
    assert PyocdRunner.for_flashing(request).flash_command(TWO) == [
        "pyocd",
        "load",
        "--target",
        "stm32h747xx",
        "--uid",
        "0669FF",
        "--frequency",
        "4000000",
        "--erase",
        "chip",
        "build/cpu0.elf",
        "build/cpu1.elf",
    ]


def test_openocd_command_line() -> None:
    runner = OpenocdRunner.for_flashing(FlashRequest(config=("board/stm32h7x3i_eval.cfg",)))
    assert runner.flash_command(ONE) == [
        "openocd",
        "-f",
        "board/stm32h7x3i_eval.cfg",
        "-c",
        "program build/cpu0.elf verify reset exit",
    ]


def test_openocd_with_every_setting_and_two_images() -> None:
    request = FlashRequest(
        config=("interface/stlink.cfg", "target/stm32h7x_dual_bank.cfg"),
        probe="066DFF",
        frequency=1_800_000,
    )
    assert OpenocdRunner.for_flashing(request).flash_command(TWO) == [
        "openocd",
        "-f",
        "interface/stlink.cfg",
        "-f",
        "target/stm32h7x_dual_bank.cfg",
        "-c",
        "adapter serial 066DFF",
        "-c",
        "adapter speed 1800",
        "-c",
        "program build/cpu0.elf verify",
        "-c",
        "program build/cpu1.elf verify reset exit",
    ]


def test_openocd_braces_a_path_tcl_would_split() -> None:
    runner = OpenocdRunner(FlashRequest(config=("b.cfg",)))
    argv = runner.flash_command({"cpu0": Path("my project/build/cpu0.elf")})
    assert argv[-1] == "program {my project/build/cpu0.elf} verify reset exit"
    with pytest.raises(InputError, match=re.escape("OpenOCD cannot be given 'a{b}/x.elf'")):
        runner.flash_command({"cpu0": Path("a{b}/x.elf")})


def test_flashing_needs_an_image() -> None:
    with pytest.raises(InputError, match="no image to flash"):
        PyocdRunner(FlashRequest(target="t")).flash_command({})


# -- capabilities, refused in one place ------------------------------------------------


def test_capabilities_are_data() -> None:
    assert {name: sorted(r.record.capabilities.settings) for name, r in RUNNERS.items()} == {
        "qemu": [],
        "pyocd": ["erase", "frequency", "probe", "target"],
        "openocd": ["config", "frequency", "probe"],
    }
    assert QemuRunner.record.capabilities.run and not QemuRunner.record.capabilities.flash


@pytest.mark.parametrize(
    ("runner", "request_", "message"),
    [
        (
            OpenocdRunner,
            FlashRequest(config=("b.cfg",), erase=True),
            "runner openocd does not take --erase; it takes --config, --frequency, --probe",
        ),
        (
            OpenocdRunner,
            FlashRequest(config=("b.cfg",), target="stm32h743xx"),
            "runner openocd does not take --target",
        ),
        (
            PyocdRunner,
            FlashRequest(target="t", config=("b.cfg",)),
            "runner pyocd does not take --config; it takes --erase, --frequency, --probe, --target",
        ),
        (
            PyocdRunner,
            FlashRequest(),
            "runner pyocd needs a target: set run.flash.target in the board file or pass --target",
        ),
        (
            OpenocdRunner,
            FlashRequest(probe="x"),
            "runner openocd needs a config: set run.flash.config in the board file",
        ),
        (
            QemuRunner,
            FlashRequest(),
            "runner qemu does not flash boards; it runs images itself: use `memplace run DIR`",
        ),
    ],
)
def test_what_a_runner_does_not_take_is_refused(
    runner: type[PyocdRunner], request_: FlashRequest, message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        runner.for_flashing(request_)


def test_the_board_fills_what_the_request_leaves_unset() -> None:
    pyocd = FlashRun("pyocd", target="stm32h743xx")
    openocd = FlashRun("openocd", config=("board/stm32h7x3i_eval.cfg",), frequency=4000)
    request = FlashRequest(probe="P").over(pyocd)
    assert request == FlashRequest(target="stm32h743xx", probe="P")
    assert FlashRequest(target="stm32h750xx").over(pyocd).target == "stm32h750xx"
    assert FlashRequest().over(openocd) == FlashRequest(
        config=("board/stm32h7x3i_eval.cfg",), frequency=4000
    )
    assert FlashRequest.from_values({"config": "a.cfg", "erase": False}).given() == ["config"]


@pytest.mark.parametrize(
    ("run", "flash", "runner"),
    [
        ({"flash": PYOCD}, FlashRun("pyocd", target="stm32h743xx"), "pyocd"),
        (
            {"qemu": {"machine": "mps3-an547"}, "flash": OPENOCD},
            FlashRun("openocd", config=("board/stm32h7x3i_eval.cfg",)),
            "openocd",
        ),
        ({"qemu": {"machine": "mps3-an547"}}, None, "qemu"),
        ({}, None, None),
    ],
)
def test_the_board_names_its_runner(
    board_data: dict[str, Any], run: dict[str, Any], flash: FlashRun | None, runner: str | None
) -> None:
    board = Board.from_data({**board_data, "run": run})
    assert board_flash(board) == flash
    assert default_runner(board) == runner


# -- memplace flash -------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, board: Board, demo_workload: Workload) -> Callable[..., Path]:
    """A generated project whose manifest's board says how to flash it, with its image
    in place (flashing reads no more of it)."""

    def make(run: dict[str, Any] | None, name: str = "p") -> Path:
        folder = tmp_path / name
        write_project(render(board, plan(board, demo_workload)), folder)
        manifest = folder / "memplace.json"
        data = json.loads(manifest.read_text())
        data["board"].pop("qemu_machine", None)
        data["board"]["run"] = run or {}
        manifest.write_text(json.dumps(data))
        (folder / "build").mkdir()
        (folder / "build" / "cpu0.elf").write_bytes(b"\x7fELF")
        return folder

    return make


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, int], Path]:
    """Put a fake tool on PATH (and nothing else); it records its arguments in a file."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-venv" / "python"))

    def install(name: str, exit_code: int = 0) -> Path:
        record = tmp_path / f"{name}.args"
        script = folder / name
        script.write_text(
            "#!/bin/sh\n"
            f'for arg in "$@"; do printf "%s\\n" "$arg" >> {shlex.quote(str(record))}; done\n'
            f"echo '{name}: programming done' ; echo '{name}: oops' >&2; exit {exit_code}\n"
        )
        script.chmod(0o755)
        return record

    return install


def test_flash_uses_the_boards_runner(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = project({"flash": PYOCD})
    record = tools("pyocd", 0)
    code, out, _ = run_cli(capsys, "flash", str(folder))
    assert code == 0
    assert out == f"flashed {folder} with pyocd\n"
    assert record.read_text().splitlines() == [
        "load",
        "--target",
        "stm32h743xx",
        f"{folder}/build/cpu0.elf",
    ]


def test_flags_override_and_add_to_the_boards_settings(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = project({"flash": PYOCD})
    record = tools("pyocd", 0)
    argv = [str(folder), "--target", "stm32h750xx", "--probe", "0669FF", "--erase"]
    assert run_cli(capsys, "flash", *argv)[0] == 0
    assert record.read_text().splitlines()[:7] == [
        "load",
        "--target",
        "stm32h750xx",
        "--uid",
        "0669FF",
        "--erase",
        "chip",
    ]


def test_flash_with_openocd(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = project({"flash": OPENOCD})
    record = tools("openocd", 0)
    assert run_cli(capsys, "flash", str(folder), "--frequency", "4000000")[0] == 0
    assert record.read_text().splitlines() == [
        "-f",
        "board/stm32h7x3i_eval.cfg",
        "-c",
        "adapter speed 4000",
        "-c",
        f"program {folder}/build/cpu0.elf verify reset exit",
    ]


@pytest.mark.parametrize(("tool", "hint"), [("pyocd", "pip install pyocd"), ("openocd", "apt")])
def test_a_missing_tool_is_exit_3_with_an_install_hint(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
    tool: str,
    hint: str,
) -> None:
    folder = project({"flash": PYOCD if tool == "pyocd" else OPENOCD})
    code, _, err = run_cli(capsys, "flash", str(folder))
    assert code == 3
    assert f"memplace: error: {tool} not found; install it: {hint}" in err


def test_a_tool_that_fails_is_exit_3_with_its_output(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = project({"flash": PYOCD})
    tools("pyocd", 1)
    code, _, err = run_cli(capsys, "flash", str(folder))
    assert code == 3
    assert "memplace: error: pyocd could not flash the board (exit code 1):" in err
    assert "pyocd: oops" in err


@pytest.mark.parametrize(
    ("run", "argv", "message"),
    [
        (
            None,
            [],
            "--runner: board qemu-mps3-an547 says nothing of how to flash it: add run.flash "
            "to the board file, or pass --runner (qemu, pyocd, openocd)",
        ),
        (
            {"qemu": {"machine": "mps3-an547"}},
            [],
            "--runner: runner qemu does not flash boards; it runs images itself: use "
            "`memplace run DIR`",
        ),
        (
            {"flash": OPENOCD},
            ["--erase"],
            "--runner: runner openocd does not take --erase; it takes --config, --frequency, "
            "--probe",
        ),
        (
            {"flash": OPENOCD},
            ["--runner", "pyocd"],
            "--target: runner pyocd needs a target: set run.flash.target in the board file "
            "or pass --target",
        ),
        ({"flash": PYOCD}, ["--runner", "jlink"], "argument --runner: 'jlink' is not one of"),
        ({"flash": PYOCD}, ["--frequency", "4MHz"], "expected an integer, got '4MHz'"),
    ],
)
def test_flash_input_errors_are_exit_2(
    project: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    run: dict[str, Any] | None,
    argv: list[str],
    message: str,
) -> None:
    folder = project(run)
    assert message in cli_error(capsys, "flash", str(folder), *argv)


def test_flash_before_build_says_to_build(
    project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project({"flash": PYOCD})
    (folder / "build" / "cpu0.elf").unlink()
    code, _, err = run_cli(capsys, "flash", str(folder))
    assert code == 2
    assert f"no image {folder}/build/cpu0.elf: build the project first" in err


def test_flash_outside_a_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "flash", str(tmp_path))
    assert code == 2 and "no memplace project here" in err


def test_the_project_api_flashes_with_the_same_runners(
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
) -> None:
    folder = project({"flash": PYOCD})
    record = tools("pyocd", 0)
    api = Client.in_memory(make_server(project=folder))
    assert api.flash({"erase": "false", "probe": 42}) == {"runner": "pyocd", "flashed": True}
    assert record.read_text().splitlines()[3:5] == ["--uid", "42"]
    assert "--erase" not in record.read_text()
    record.unlink()
    api.flash({"erase": "true"})
    assert "--erase\nchip\n" in record.read_text()
    with pytest.raises(RemoteError, match="runner openocd needs a config"):
        api.flash({"runner": "openocd"})
    with pytest.raises(RemoteError, match="board qemu-mps3-an547 runs with pyocd, which has none"):
        api.open_transport()


# -- adding a runner: its own module, nothing else -------------------------------------


class ToyRunner(Runner):
    """A runner as a new module under `memplace/runners/` declares one (here in the test
    only): its record, and the command it flashes with."""

    record = Record(
        name="toy",
        tool="toyflash",
        install="pip install toyflash",
        capabilities=Capabilities(
            flash=True,
            settings=frozenset({"target", "probe"}),
            needs=frozenset({"target"}),
        ),
        usage="`toyflash --chip T IMAGE...`",
        rank=30,
    )

    def _flash_argv(self, images: list[str]) -> list[str]:
        return [self.record.tool, "--chip", str(self.request.target), *images]


@pytest.fixture
def toy() -> Iterator[type[Runner]]:
    """The toy runner, registered as the registry registers a runner module's."""
    registry.register(ToyRunner)
    yield ToyRunner
    registry.unregister(ToyRunner.name)


def _toy_board(tmp_path: Path, flash: str) -> Path:
    path = tmp_path / "toy-board.yaml"
    path.write_text(
        f"memplace: board/v1\nname: toy-board\nextends: stm32h743\nrun:\n  flash: {flash}\n"
    )
    return path


def test_a_new_runner_is_in_the_command_help(
    toy: type[Runner], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "program a built project into its board (pyocd or openocd or toy)" in (
        " ".join(capsys.readouterr().out.split())
    )
    with pytest.raises(SystemExit):
        main(["flash", "--help"])
    help_text = capsys.readouterr().out
    assert "--runner {qemu,pyocd,openocd,toy}" in help_text
    assert "toy takes --target, --probe and needs --target." in " ".join(help_text.split())
    assert options.BY_NAME["runner"].choices == ("qemu", "pyocd", "openocd", "toy")


def test_a_new_runner_is_in_the_schema(toy: type[Runner]) -> None:
    schema = board_schema()
    assert schema["$defs"]["flash"]["properties"]["runner"]["enum"] == ["pyocd", "openocd", "toy"]
    validator = jsonschema.Draft202012Validator(schema)
    data = yaml.safe_load(resources.bundled_boards()["stm32h743"].read_text())
    data["run"]["flash"] = {"runner": "toy", "target": "chip1"}
    assert list(validator.iter_errors(data)) == []
    for flash in ({"runner": "toy"}, {"runner": "toy", "target": "chip1", "config": "a.cfg"}):
        data["run"]["flash"] = flash
        assert list(validator.iter_errors(data)) != [], flash


def test_a_new_runner_is_checked_by_the_board_loader(toy: type[Runner], tmp_path: Path) -> None:
    board = load_board(_toy_board(tmp_path, "{runner: toy, target: chip1}"))
    assert board.run.flash == FlashRun("toy", target="chip1")
    assert default_runner(board) == "toy"
    path = _toy_board(tmp_path, "{runner: toy, config: a.cfg}")
    with pytest.raises(InputError) as caught:
        load_board(path)
    assert (
        str(caught.value)
        == f"{path}:5:24: run.flash.config: runner toy takes `target`, not `config`"
    )


def test_without_its_record_a_runner_is_refused(tmp_path: Path) -> None:
    path = _toy_board(tmp_path, "{runner: toy, target: chip1}")
    with pytest.raises(InputError, match="'toy' is not allowed"):
        load_board(path)


def test_a_new_runner_flashes_and_says_how_to_install_its_tool(
    toy: type[Runner],
    project: Callable[..., Path],
    tools: Callable[[str, int], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = project({"flash": {"runner": "toy", "target": "chip1"}})
    code, _, err = run_cli(capsys, "flash", str(folder))
    assert (code, err.strip()) == (
        3,
        "memplace: error: toyflash not found; install it: pip install toyflash",
    )
    record = tools("toyflash", 0)
    assert "runner toy does not take --erase; it takes --probe, --target" in cli_error(
        capsys, "flash", str(folder), "--erase"
    )
    code, out, _ = run_cli(capsys, "flash", str(folder))
    assert (code, out) == (0, f"flashed {folder} with toy\n")
    assert record.read_text().splitlines() == ["--chip", "chip1", f"{folder}/build/cpu0.elf"]
