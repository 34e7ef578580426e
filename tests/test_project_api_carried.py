"""The Project API server a generated project carries: `microtvm_api_server.py` with copies
of the standard-library modules, run as microTVM runs it, by a Python that cannot import
memplace (`-I -S`), over real pipes."""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PATIENCE
from memplace import workflow
from memplace.board import load_board
from memplace.carried import processes
from memplace.carried.standalone import DESCRIPTION, EMULATOR
from memplace.cli import main
from memplace.codegen.server import CARRIED_DIR, PACKAGE, SCRIPT, carried_modules
from memplace.importers import load_workload
from memplace.options import OPTIONS, with_defaults
from memplace.process import INSTALL_HINTS, find_tool
from memplace.project_api import (
    Client,
    InvalidParams,
    RemoteError,
    ServerProcess,
    TransportClosedError,
)
from memplace.project_api.carry import board_info
from memplace.project_files import MANIFEST
from memplace.resources import data_dir, demo_workload
from memplace.runners import QemuRunner
from test_project_api_process import SMALL_WORKLOAD

PACKAGE_DIR = CARRIED_DIR
CARRIED = carried_modules()
BOARD = "qemu-mps3-an547"
REPLY_TIMEOUT = PATIENCE  # a build may take a while on a busy machine


def _generate(tmp_path: Path, board: str = BOARD, name: str = "my project") -> Path:
    """A project for `board` in a folder whose name needs quoting in a shell."""
    workload = tmp_path / "small.json"
    workload.write_text(json.dumps(SMALL_WORKLOAD))
    out = tmp_path / name
    source = demo_workload() if board == BOARD else workload
    workflow.generate(workflow.ProjectRequest(load_board(board), load_workload(source), out))
    return out


def _carried_server(project: Path, log: Path) -> ServerProcess:
    """The project's own server, started as microTVM starts it, by an isolated Python
    without site-packages: nothing but the standard library and the project's files."""
    script = str(project / SCRIPT)
    with log.open("ab") as stderr:
        return ServerProcess(
            [sys.executable, "-I", "-S", script], timeout=REPLY_TIMEOUT, stderr=stderr
        )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Client, Path]]:
    """(project, client of its carried server, the server's stderr), ended afterwards."""
    project = _generate(tmp_path)
    log = tmp_path / "server.log"
    started = _carried_server(project, log)
    try:
        yield project, started.client, log
    finally:
        assert started.close() == 0


def _image(project: Path, core: str) -> Path:
    """A stand-in image, for the methods that only need one to exist."""
    image = project / "build" / f"{core}.elf"
    image.parent.mkdir(exist_ok=True)
    image.write_bytes(b"\x7fELF")
    return image


# -- what a project carries -----------------------------------------------------------


def test_the_carried_modules_import_only_the_standard_library_and_each_other() -> None:
    carried = {name.removesuffix(".py") for name in CARRIED}
    sources = {name: PACKAGE_DIR / name for name in CARRIED}
    sources[SCRIPT] = data_dir("firmware_templates") / PACKAGE / SCRIPT
    for name, path in sources.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # `from .server import ...`: another carried module
                    assert node.module in carried, (name, node.module)
                    continue
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                top, _, rest = module.partition(".")
                if top == PACKAGE:  # the script imports the copies beside it
                    assert rest in carried, (name, module)
                    continue
                assert top == "__future__" or top in sys.stdlib_module_names, (name, module)


# Names whose `X | Y` or `X[...]` outside an annotation needs Python 3.9 or 3.10 at run
# time (vermin does not look for these; `from __future__ import annotations` makes the
# same forms fine inside annotations).
_BUILTIN_GENERICS = {"dict", "list", "tuple", "set", "frozenset", "type"}
_TYPE_NAMES = _BUILTIN_GENERICS | {"int", "float", "str", "bytes", "bool", "Path", "None"}


def _newer_than_python_3_8(path: Path) -> list[str]:
    """What in `path` Python 3.8 cannot run: vermin's verdict (syntax, and library calls
    such as `zip(strict=...)`), and type expressions evaluated at run time."""
    vermin = Path(sys.executable).parent / "vermin"
    done = subprocess.run(
        [str(vermin), "-t=3.8-", "--no-tips", "--violations", str(path)],
        capture_output=True,
        text=True,
    )
    found = [] if done.returncode == 0 else [done.stdout.strip()]
    tree = ast.parse(path.read_text())
    generics = _BUILTIN_GENERICS | {  # collections.abc's are generic from 3.9 on, typing's not
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "collections.abc"
        for alias in node.names
    }
    in_annotations: set[int] = set()
    for node in ast.walk(tree):
        notes = [getattr(node, "returns", None), getattr(node, "annotation", None)]
        for note in filter(None, notes):
            in_annotations |= {id(inner) for inner in ast.walk(note)}
    for node in ast.walk(tree):
        if id(node) in in_annotations:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [ast.unparse(side) for side in (node.left, node.right)]
            if any(side.split("[")[0] in _TYPE_NAMES for side in sides):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) in generics:
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_carried_modules_run_on_python_3_8() -> None:
    """TVM 0.10 to 0.15 run a project's server with their own Python, 3.8 at the oldest."""
    paths = [PACKAGE_DIR / name for name in (*CARRIED, "__init__.py")]
    paths.append(data_dir("firmware_templates") / PACKAGE / SCRIPT)
    paths.append(data_dir("firmware_templates") / PACKAGE / "template_server.py")
    assert [problem for path in paths for problem in _newer_than_python_3_8(path)] == []


@pytest.mark.parametrize(
    "code",
    [
        "match x:\n    case 1:\n        pass\n",
        "with (open('a') as a, open('b') as b):\n    pass\n",
        "pairs = zip(a, b, strict=True)\n",
        "ok = isinstance(x, int | str)\n",
        "Alias = dict[str, int]\n",
        "from collections.abc import Callable\nHandler = Callable[[int], int]\n",
    ],
)
def test_the_python_3_8_check_catches_newer_code(tmp_path: Path, code: str) -> None:
    """Annotations may use the new forms (they are never evaluated); run-time code not."""
    path = tmp_path / "newer.py"
    fine = "from __future__ import annotations\n\n\ndef f(x: int | None) -> dict[str, int]:\n"
    fine += "    return {}\n"
    path.write_text(f"{fine}\n\n{code}")
    assert _newer_than_python_3_8(path) != []
    path.write_text(fine)
    assert _newer_than_python_3_8(path) == []


def test_a_generated_project_carries_its_server(tmp_path: Path) -> None:
    project = _generate(tmp_path)
    for name in CARRIED:
        assert (project / PACKAGE / name).read_bytes() == (PACKAGE_DIR / name).read_bytes()
    templates = data_dir("firmware_templates") / PACKAGE
    assert (project / SCRIPT).read_bytes() == (templates / SCRIPT).read_bytes()
    assert (project / PACKAGE / "__init__.py").read_bytes() == (
        templates / "__init__.py"
    ).read_bytes()
    description = json.loads((project / DESCRIPTION).read_text())
    images = json.loads((project / MANIFEST).read_text())["images"]
    assert images == description["images"] == {"cpu0": "build/cpu0.elf"}
    # The very command line `memplace run` uses, with the images relative to the project.
    assert description["commands"] == {
        EMULATOR: QemuRunner("mps3-an547").command({"cpu0": Path("build/cpu0.elf")})
    }
    assert description["runner"] == EMULATOR == QemuRunner.name
    assert description["project_options"] == [o.to_json() for o in with_defaults(board=BOARD)]
    assert description["board_info"] == board_info(load_board(BOARD))
    assert description["install_hints"] == {
        **{name: INSTALL_HINTS[name] for name in ("arm-none-eabi-gcc", "cmake", "ninja")},
        "qemu-system-arm": QemuRunner.record.install,
    }
    assert str(tmp_path) not in (project / DESCRIPTION).read_text()  # nothing absolute


def test_the_carried_files_are_the_same_every_time(tmp_path: Path) -> None:
    first = _generate(tmp_path, name="one")
    second = _generate(tmp_path, name="two")
    carried = [SCRIPT, DESCRIPTION, *(f"{PACKAGE}/{name}" for name in CARRIED)]
    for relative in carried:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


def test_a_board_with_its_own_flash_command_stores_it(tmp_path: Path) -> None:
    description = json.loads((_generate(tmp_path, "stm32h743") / DESCRIPTION).read_text())
    assert description["runner"] == "pyocd"
    assert description["commands"] == {
        "pyocd": ["pyocd", "load", "--target", "stm32h743xx", "build/cm7.elf"]
    }
    assert description["install_hints"]["pyocd"] == "pip install pyocd"


def test_a_library_project_carries_no_server(tmp_path: Path) -> None:
    out = tmp_path / "lib"
    request = workflow.ProjectRequest(
        load_board(BOARD), load_workload(demo_workload()), out, "library"
    )
    workflow.generate(request)
    assert not (out / SCRIPT).exists() and not (out / PACKAGE).exists()


def test_memplace_generate_writes_the_server_too(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    assert main(["generate", BOARD, str(demo_workload()), "--out", str(out)]) == 0
    assert (out / SCRIPT).is_file() and (out / DESCRIPTION).is_file()


def test_isolated_python_cannot_import_memplace() -> None:
    """What the tests below rely on: the carried server cannot lean on memplace."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import memplace"], capture_output=True, text=True
    )
    assert "No module named 'memplace'" in done.stderr


# -- the carried server, without a build ------------------------------------------------


def test_the_carried_server_describes_its_project(served: tuple[Path, Client, Path]) -> None:
    project, api, log = served
    info = api.server_info_query("0.18.0")
    assert info["is_template"] is False
    assert info["platform_name"] == "memplace" and info["protocol_version"] == 1
    assert info["project_dir"] == str(project.resolve())
    assert (
        info["board"] == BOARD
        and info["valid_scopes"] == board_info(load_board(BOARD))["valid_scopes"]
    )
    assert info["project_options"] == [o.to_json() for o in with_defaults(board=BOARD)]
    assert len(info["project_options"]) == len(OPTIONS)
    assert f"serving the Project API of the project in {project.resolve()}" in log.read_text()


def test_the_carried_server_refuses_what_it_cannot_do(served: tuple[Path, Client, Path]) -> None:
    _, api, _ = served
    assert api.raw(b"{oops")["error"]["code"] == -32700
    with pytest.raises(RemoteError, match="InputError: this server serves the project in"):
        api.generate_project("w.yaml", "elsewhere", {"board": BOARD})
    with pytest.raises(RemoteError, match=r"no image .*cpu0\.elf: build the project first"):
        api.open_transport()
    with pytest.raises(TransportClosedError, match="no transport is open"):
        api.read_transport(1, 0.1)
    with pytest.raises(InvalidParams, match="n is from 1 to 16777216"):
        api.read_transport(10**30, 1.0)
    with pytest.raises(InvalidParams, match="timeout_sec is from 0 to 86400"):
        api.write_transport(b"x", 1e300)
    # The server passes options as they came; the project's handler judges them.
    with pytest.raises(InvalidParams, match="flash: option erase: expected a bool"):
        api.flash({"erase": "perhaps"})
    with pytest.raises(InvalidParams, match="build: no option bar; options: board, project_type"):
        api.build({"bar": "baz"})
    with pytest.raises(InvalidParams, match="build: option verbose: expected a bool"):
        api.build({"verbose": "loud"})
    with pytest.raises(InvalidParams, match="open_transport: option runner: 'jlink' is not one"):
        api.open_transport({"runner": "jlink"})
    with pytest.raises(RemoteError) as caught:
        api.open_transport({"runner": "pyocd"})
    assert caught.value.name == "InputError"
    assert caught.value.data == {
        "message": "the transport is the console of the firmware under QEMU; board "
        f"{BOARD} runs with pyocd, which has none here",
        "exit_code": 2,
        "key": "runner",
    }
    assert api.flash() == {"runner": "qemu", "flashed": False}


def test_a_missing_tool_says_how_to_install_it(tmp_path: Path) -> None:
    project = _generate(tmp_path)
    _image(project, "cpu0")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    requests = [
        {"jsonrpc": "2.0", "method": "open_transport", "params": {"options": {}}, "id": 1},
        {"jsonrpc": "2.0", "method": "build", "params": {"options": {}}, "id": 2},
    ]
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(project / SCRIPT)],  # on stdin and stdout
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        env=env,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    opened, built = (json.loads(line)["error"] for line in done.stdout.splitlines())
    assert opened == {
        "code": -32000,
        "message": "ToolError",
        "data": {
            "message": "qemu-system-arm not found; install it: apt-get install qemu-system-arm",
            "exit_code": 3,
        },
    }
    # cmake is found beside Python (the virtual environment's), the compiler is not.
    assert built["data"]["message"] == (
        "arm-none-eabi-gcc not found; install it: " + INSTALL_HINTS["arm-none-eabi-gcc"]
    )


def test_the_server_script_refuses_bad_arguments_and_a_broken_project(tmp_path: Path) -> None:
    project = _generate(tmp_path)
    script = [sys.executable, "-I", "-S", str(project / SCRIPT)]
    done = subprocess.run([*script, "--read-fd", "0"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "error: --read-fd and --write-fd go together" in done.stderr
    (project / DESCRIPTION).write_text("{")
    done = subprocess.run(script, capture_output=True, text=True, input="")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        f"microtvm_api_server.py: {project.resolve() / DESCRIPTION} is not valid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    (project / DESCRIPTION).write_text('{"memplace": "project-api/v1"}')
    done = subprocess.run(script, capture_output=True, text=True, input="")
    assert done.returncode == 2
    assert "project.json is missing or misstates 'board'" in done.stderr
    (project / DESCRIPTION).unlink()
    done = subprocess.run(script, capture_output=True, text=True, input="")
    assert done.returncode == 2 and "No such file or directory" in done.stderr


# -- flashing a real board with the board's own command ---------------------------------


FAKE_PYOCD = """#!/bin/sh
printf '%s\\n' "$@" > "$(dirname "$0")/argv.txt"
[ "$1" = load ] || { echo "pyocd: no such command $1"; exit 1; }
echo "pyocd: programmed $#"
"""


@pytest.fixture
def fake_pyocd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `pyocd` on PATH that records its arguments; the servers started later see it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "pyocd"
    tool.write_text(FAKE_PYOCD)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tool


def test_the_carried_server_flashes_with_the_boards_command(
    tmp_path: Path, fake_pyocd: Path
) -> None:
    project = _generate(tmp_path, "stm32h743", "h7 project")
    log = tmp_path / "server.log"
    started = _carried_server(project, log)
    try:
        api = started.client
        with pytest.raises(RemoteError, match=r"no image .*cm7\.elf: build the project first"):
            api.flash()
        _image(project, "cm7")
        assert api.flash() == {"runner": "pyocd", "flashed": True}
        with pytest.raises(RemoteError) as caught:
            api.flash({"probe": "0669FF", "frequency": "4000000"})
        assert caught.value.data == {
            "message": "this project's server flashes with the board's own settings only, "
            "which option probe, frequency would change; "
            f"use `memplace flash {project.resolve()}`",
            "exit_code": 2,
            "key": "probe",
        }
        with pytest.raises(RemoteError, match="which runner openocd would change"):
            api.flash({"runner": "openocd"})
        with pytest.raises(RemoteError, match="runs with pyocd, which has none here"):
            api.open_transport()
    finally:
        assert started.close() == 0
    argv = ["load", "--target", "stm32h743xx", "build/cm7.elf"]
    assert (fake_pyocd.parent / "argv.txt").read_text().splitlines() == argv
    # Every command the server runs is logged quoted, as a shell would take it.
    assert f"memplace.process: running: {shlex.join([str(fake_pyocd), *argv])}\n" in (
        log.read_text()
    )


def test_a_flash_that_fails_is_a_tool_error_with_the_tools_output(
    tmp_path: Path, fake_pyocd: Path
) -> None:
    fake_pyocd.write_text("#!/bin/sh\necho 'No connected debug probe'\nexit 1\n")
    project = _generate(tmp_path, "stm32h743")
    _image(project, "cm7")
    started = _carried_server(project, tmp_path / "server.log")
    try:
        with pytest.raises(RemoteError) as caught:
            started.client.flash()
    finally:
        started.close()
    assert caught.value.name == "ToolError"
    assert caught.value.data == {
        "message": "pyocd could not flash the board (exit code 1):\nNo connected debug probe",
        "exit_code": 3,
    }


# -- the process wrapper the carried server runs programs through ------------------------


def test_the_wrapper_logs_the_quoted_argv(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="memplace.process")
    code, output = processes.run(["sh", "-c", "echo out; echo err >&2; exit 5", "a b"], PATIENCE)
    assert (code, output) == (5, "out\nerr\n")
    started = processes.start(["sh", "-c", "sleep infinity", "it's"], cwd=tmp_path)
    assert started.stop() == -9 and started.stop() == -9
    assert [r.getMessage() for r in caplog.records] == [
        "running: sh -c 'echo out; echo err >&2; exit 5' 'a b'",
        "starting: sh -c 'sleep infinity' 'it'\"'\"'s'",
    ]


def test_the_wrapper_kills_what_overruns_and_names_what_is_missing() -> None:
    started = time.monotonic()
    with pytest.raises(processes.ToolError, match=r"sleep did not finish within 0\.2 s"):
        processes.run(["sleep", f"{2 * PATIENCE:g}"], 0.2)
    assert time.monotonic() - started < PATIENCE  # killed, not waited for
    with pytest.raises(processes.ToolError, match="no-such-tool not found; install it: apt x"):
        processes.find_tool("no-such-tool", "apt x")
    with pytest.raises(processes.ToolError, match="/no/such/tool not found; install it"):
        processes.start(["/no/such/tool"])
    assert processes.find_tool("cmake") == find_tool("cmake")  # beside Python, then PATH


# -- end to end: build, run under QEMU, read the console --------------------------------


def _read_until(api: Client, token: bytes) -> bytes:
    data = b""
    deadline = time.monotonic() + PATIENCE
    while token not in data:
        assert time.monotonic() < deadline, data
        data += api.read_transport(4096, PATIENCE)
    return data


@pytest.mark.qemu
def test_the_carried_server_builds_and_runs_its_project(
    served: tuple[Path, Client, Path],
) -> None:
    project, api, log = served
    folder = project.resolve()
    image = folder / "build" / "cpu0.elf"
    assert api.build() == {"images": {"cpu0": str(image)}}
    assert image.is_file()
    assert api.flash() == {"runner": "qemu", "flashed": False}
    assert api.open_transport()["timeouts"]["session_start_timeout_sec"] == 10.0
    api.write_transport(b"nobody reads this\n", 5.0)  # the exerciser does not read
    output = _read_until(api, b"memplace: result")
    with pytest.raises(TransportClosedError) as caught:
        while True:
            output += api.read_transport(4096, 10.0)
    assert b"memplace: result pass\n" in output
    assert caught.value.data["exit_code"] == 0  # the exerciser passed
    api.close_transport()
    assert api.raw(b"not json")["error"]["code"] == -32700  # and it keeps serving
    assert api.server_info_query()["project_dir"] == str(folder)
    text = log.read_text()
    cmake = find_tool("cmake")
    configure = [cmake, "-S", str(folder), "-B", str(folder / "build"), "-G", "Ninja"]
    assert f"running: {shlex.join(configure)} -DCMAKE_MAKE_PROGRAM=" in text
    assert f"running: {shlex.join([cmake, '--build', str(folder / 'build')])}\n" in text
    qemu = QemuRunner("mps3-an547").command({"cpu0": Path("build/cpu0.elf")})
    qemu[0] = find_tool(qemu[0])
    assert f"starting: {shlex.join(qemu)}\n" in text
