"""memplace as microTVM sees it: `memplace template` writes a folder TVM's tools launch,
and a client that behaves as TVM v0.15's does (`tvm.micro.project`, written here, not
copied) drives a model (a Model Library Format archive, or a workload file) from the
template to a run under QEMU, through the template's
server and then the generated project's own server, each launched as TVM launches one:
`python microtvm_api_server.py --read-fd N --write-fd M --debug`, by a Python that
cannot import memplace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import PATIENCE, cli_error, run_cli
from memplace.cli import main
from memplace.codegen.server import SCRIPT
from memplace.project_api import (
    Client,
    InvalidParams,
    RemoteError,
    ServerProcess,
    TransportClosedError,
)
from memplace.project_api.handler import make_server
from memplace.project_api.template import CONFIG
from memplace.resources import demo_workload
from mlf_archives import EXPECTED, printed_outputs, v7_archive

BOARD = "qemu-mps3-an547"
TVM_VERSION = "0.15.0"
DEMO = "aot_standalone_demo"
REPLY_TIMEOUT = PATIENCE  # a build may take a while on a busy machine
# How TVM's Python runs a server: isolated, no site-packages, so no memplace.
TVM_PYTHON = [sys.executable, "-I", "-S"]


def model_for_tvm(tmp_path: Path) -> Path:
    """The workload the option tests below generate from."""
    return demo_workload()


def standalone_crt(tmp_path: Path, archive: Path) -> Path:
    """A stand-in for TVM's standalone CRT folder (TVM always sends one): the runtime
    headers memplace writes into a project when no CRT is given."""
    scratch = tmp_path / "without-crt"
    argv = ["generate", BOARD, str(archive), "--out", str(scratch), "--project-type", DEMO]
    assert main(argv) == 0
    crt = tmp_path / "standalone_crt"
    shutil.copytree(scratch / "tvm" / "runtime" / "include", crt / "include")
    return crt


# -- memplace template ----------------------------------------------------------------


def test_template_writes_the_folder_tvm_launches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "template"
    code, printed, _ = run_cli(capsys, "template", BOARD, "--out", out)
    assert code == 0 and f"board {BOARD}" in printed
    assert sorted(p.name for p in out.iterdir()) == [CONFIG, SCRIPT]
    config = json.loads((out / CONFIG).read_text())
    assert config == {"memplace": "template/v1", "board": BOARD, "python": sys.executable}
    assert os.access(out / SCRIPT, os.X_OK)


def test_a_board_file_is_named_by_its_absolute_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = Path(__file__).resolve().parents[1] / "board_configs" / f"{BOARD}.yaml"
    os.chdir(tmp_path)
    relative = os.path.relpath(board, tmp_path)
    assert run_cli(capsys, "template", relative, "--out", "t")[0] == 0
    assert json.loads((tmp_path / "t" / CONFIG).read_text())["board"] == str(board)


@pytest.mark.parametrize(
    ("setup", "board", "message"),
    [
        (None, "nosuch", "memplace: error: BOARD: no bundled board 'nosuch'; valid: "),
        ("file", BOARD, "is a file, not a folder"),
        ("full", BOARD, "is not empty; a template is written to a new folder"),
    ],
)
def test_template_refuses_a_bad_board_or_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str | None, board: str, message: str
) -> None:
    out = tmp_path / "out"
    if setup == "file":
        out.write_text("x")
    if setup == "full":
        out.mkdir()
        (out / "mine.txt").write_text("keep")
    assert message in cli_error(capsys, "template", board, "--out", out)
    written = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    assert written == (["mine.txt"] if setup == "full" else [])


def test_the_template_server_says_when_memplaces_python_is_gone(tmp_path: Path) -> None:
    assert main(["template", BOARD, "--out", str(tmp_path / "t")]) == 0
    config = tmp_path / "t" / CONFIG
    config.write_text(json.dumps({**json.loads(config.read_text()), "python": "/no/python"}))
    done = subprocess.run(
        [*TVM_PYTHON, str(tmp_path / "t" / SCRIPT), "--read-fd", "0", "--write-fd", "1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "the Python with memplace, /no/python, is gone" in done.stderr


def test_serve_takes_debug_after_the_pipes_as_tvm_passes_it() -> None:
    requests_in, requests_out = os.pipe()
    replies_in, replies_out = os.pipe()
    os.close(requests_out)  # the client is gone before the first request
    try:
        argv = ["serve", "--read-fd", str(requests_in), "--write-fd", str(replies_out)]
        assert main([*argv, "--debug"]) == 0
    finally:
        os.close(replies_in)


# -- the whole flow, as TVM drives it ---------------------------------------------------


def _tvm_options(info: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """TVM's `add_unspecified_options`: every served option, its default where not given;
    and tvmc's check that no option is required that the user did not give."""
    required = [o["name"] for o in info["project_options"] if o["required"]]
    assert [name for name in required if name not in given] == []
    return {o["name"]: given.get(o["name"], o["default"]) for o in info["project_options"]}


def _launch(folder: Path, log: Path) -> ServerProcess:
    """TVM's `instantiate_from_dir(folder, debug=True)`."""
    with log.open("ab") as stderr:
        return ServerProcess(
            [*TVM_PYTHON, str(folder / SCRIPT)],
            timeout=REPLY_TIMEOUT,
            cwd=folder,
            stderr=stderr,
            debug=True,
        )


def _console(api: Client, until: bytes) -> bytes:
    """What the firmware writes, until `until` or its end (TransportClosedError)."""
    console = b""
    deadline = time.monotonic() + PATIENCE
    while until not in console and time.monotonic() < deadline:
        try:
            console += api.read_transport(4096, PATIENCE)
        except TransportClosedError as exc:
            assert exc.data["exit_code"] == 0, console
            break
    return console


@pytest.mark.qemu
@pytest.mark.parametrize("model", ["model_library_format", "workload"])
def test_a_tvm_client_goes_from_template_to_a_run_under_qemu(tmp_path: Path, model: str) -> None:
    """As `TemplateProject.from_directory(...).generate_project_from_mlf(...)`, then
    `GeneratedProject`'s build, flash and transport: a Model Library Format archive (TVM
    0.15's layout, with USMP pools) runs once and prints its outputs; a workload file
    gets the exerciser."""
    template = tmp_path / "template"
    assert main(["template", BOARD, "--out", str(template)]) == 0
    if model == "model_library_format":
        source = v7_archive(tmp_path / "model.tar")
        crt = standalone_crt(tmp_path, source)
        project_type, ends_with = DEMO, b"tvm: output y[3]"
    else:
        source, crt = demo_workload(), tmp_path / "standalone_crt"
        (crt / "include/tvm/runtime").mkdir(parents=True)  # checked, though not used
        (crt / "include/tvm/runtime/c_backend_api.h").write_text("/* TVM's CRT */\n")
        project_type, ends_with = "exerciser", b"memplace: result"
    project = tmp_path / "generated"
    log = tmp_path / "servers.log"

    started = _launch(template, log)
    try:
        info = started.client.server_info_query(TVM_VERSION)
        assert info["is_template"] is True and info["model_library_format_path"] == ""
        assert info["protocol_version"] == 1 and info["board"] == BOARD
        given = {"project_type": project_type, "verbose": True}
        given["compile_definitions"] = ["-DMEMPLACE_FROM_TVM=1"]
        options = _tvm_options(info, given)
        started.client.generate_project(source, project, options, crt)
    finally:
        assert started.close() == 0
    if model == "model_library_format":
        assert (project / "model.tar").read_bytes() == source.read_bytes()

    started = _launch(project, log)
    try:
        api = started.client
        info = api.server_info_query(TVM_VERSION)
        assert info["is_template"] is False
        archive = str(project / "model.tar") if model == "model_library_format" else ""
        assert info["model_library_format_path"] == archive
        options = _tvm_options(info, options)
        built = api.build(options)
        assert built["images"] == {"cpu0": str(project / "build" / "cpu0.elf")}
        assert "-DMEMPLACE_FROM_TVM=1" in built["output"]  # verbose, and the definition
        assert api.flash(options) == {"runner": "qemu", "flashed": False}
        timeouts = api.open_transport(options)["timeouts"]
        assert timeouts["session_start_timeout_sec"] > 0
        console = _console(api, ends_with).decode()
        api.close_transport()
    finally:
        assert started.close() == 0
    if model == "model_library_format":
        assert "tvm: run returned 0" in console
        assert printed_outputs(console) == pytest.approx(EXPECTED, abs=2e-6)
    else:
        assert "memplace: result pass" in console
    logged = log.read_text()
    assert "memplace.project_api: request build" in logged  # both servers log, --debug on


# -- TVM's build options ----------------------------------------------------------------

APP = """\
#ifndef MEMPLACE_TVM_FLAG
#error "compile_definitions did not reach the compiler"
#endif

int app_main(void)
{
    int unused; /* a warning: -Wunused-variable */
    return MEMPLACE_TVM_FLAG - 7;
}
"""


@pytest.fixture
def app_project(tmp_path: Path) -> tuple[Client, Path]:
    """A client of `memplace serve` that generated an app project whose source needs a
    definition and holds a warning."""
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "main.c").write_text(APP)
    api = Client.in_memory(make_server(BOARD))
    project = tmp_path / "p"
    api.generate_project(
        model_for_tvm(tmp_path), project, {"project_type": "app", "sources": str(sources)}
    )
    return api, project


def test_compile_definitions_and_warnings_as_errors_reach_the_build(
    app_project: tuple[Client, Path],
) -> None:
    api, _ = app_project
    with pytest.raises(RemoteError, match="compile_definitions did not reach the compiler"):
        api.build({})
    definitions = {"compile_definitions": "-DMEMPLACE_TVM_FLAG=7"}  # tvmc sends text
    assert "output" not in api.build(definitions)
    with pytest.raises(RemoteError) as caught:
        api.build({**definitions, "warning_as_error": True})
    assert caught.value.name == "ToolError" and "unused variable 'unused'" in str(caught.value)
    built = api.build({**definitions, "verbose": True})
    assert "-DMEMPLACE_TVM_FLAG=7" in built["output"] and "-Werror" not in built["output"]


def test_cmsis_path_reaches_cmake(app_project: tuple[Client, Path], tmp_path: Path) -> None:
    api, project = app_project
    cmsis = tmp_path / "CMSIS_5"
    cmsis.mkdir()
    api.build({"compile_definitions": ["-DMEMPLACE_TVM_FLAG=7"], "cmsis_path": str(cmsis)})
    assert f"CMSIS_PATH:UNINITIALIZED={cmsis}" in (project / "build" / "CMakeCache.txt").read_text()


@pytest.mark.parametrize(
    ("options", "key", "message"),
    [
        ({"compile_definitions": ["FLAG=1"]}, "compile_definitions", "'FLAG=1' is not -DNAME"),
        ({"compile_definitions": ["-D1X"]}, "compile_definitions", "'-D1X' is not -DNAME"),
        ({"compile_definitions": ["-DA=x y"]}, "compile_definitions", "holds spaces or quotes"),
        ({"cmsis_path": "/no/cmsis"}, "cmsis_path", "no folder /no/cmsis"),
    ],
)
def test_bad_build_options_are_input_errors(
    app_project: tuple[Client, Path], options: dict[str, Any], key: str, message: str
) -> None:
    api, _ = app_project
    with pytest.raises(RemoteError) as caught:
        api.build(options)
    assert caught.value.name == "InputError" and caught.value.data["key"] == key
    assert message in caught.value.data["message"] and caught.value.data["exit_code"] == 2


def test_compile_definitions_text_that_does_not_split_is_invalid_params(
    app_project: tuple[Client, Path],
) -> None:
    api, _ = app_project
    with pytest.raises(InvalidParams, match="option compile_definitions: cannot split"):
        api.build({"compile_definitions": "-DA='x"})


def test_build_settings_given_at_generate_stay_with_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As TVM's platforms bake them into their projects: tvmc's `micro build` sends only
    the options given to it, and `memplace build DIR` sends none."""
    sources = tmp_path / "app"
    sources.mkdir()
    (sources / "main.c").write_text(APP)
    api = Client.in_memory(make_server(BOARD))
    project = tmp_path / "p"
    options = {"project_type": "app", "sources": str(sources)}
    options["compile_definitions"] = "-DMEMPLACE_TVM_FLAG=7"
    api.generate_project(model_for_tvm(tmp_path), project, options)
    saved = json.loads((project / "project_api" / "build_settings.json").read_text())
    assert saved == {
        "compile_definitions": ["-DMEMPLACE_TVM_FLAG=7"],
        "warning_as_error": False,
        "cmsis_path": None,
    }
    assert "-DMEMPLACE_TVM_FLAG=7" in api.build({"verbose": True})["output"]
    with pytest.raises(RemoteError, match="unused variable"):  # added at build: both count
        api.build({"warning_as_error": True})
    assert run_cli(capsys, "build", project)[0] == 0
    (project / "project_api" / "build_settings.json").write_text("{}")
    assert "build_settings.json is not what memplace wrote" in cli_error(capsys, "build", project)


def test_a_project_generated_without_build_settings_keeps_none(
    app_project: tuple[Client, Path],
) -> None:
    _, project = app_project
    assert not (project / "project_api" / "build_settings.json").exists()
