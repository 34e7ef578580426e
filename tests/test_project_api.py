"""The Project API in memory: client and server wired together with no process.

Every JSON-RPC error code, every server error a user can trigger, the options as data
(served and checked by memplace's handler, passed through untouched by the server as
TVM's is, turned into CLI flags and into the docs' table), and memplace's handler
generating, building and refusing projects.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest

from memplace import options as project_options
from memplace.board import Board
from memplace.carried import server as protocol
from memplace.carried.server import MAX_READ, MAX_TIMEOUT, error_from_json
from memplace.cli import main
from memplace.project_api import (
    Client,
    InternalError,
    InvalidParams,
    IoTimeoutError,
    MethodNotFound,
    ProjectOption,
    ProtocolError,
    RemoteError,
    Server,
    TransportClosedError,
    UnsupportedTVMVersionError,
)
from memplace.project_api.handler import MemplaceHandler, describe, make_server
from memplace.resources import demo_workload
from memplace.scopes import valid_scopes

REPO = Path(__file__).resolve().parent.parent
BOARD = "qemu-mps3-an547"
KWS = REPO.parent / "shared" / "models" / "mlperf-tiny" / "kws_ref_model.tflite"


class FakeHandler:
    """A handler that records its calls, for the protocol tests."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.console = b""

    def server_info_query(self, tvm_version: str) -> dict[str, Any]:
        return {
            "platform_name": "fake",
            "is_template": True,
            "model_library_format_path": None,
            "project_options": [ProjectOption("foo", "bool", "Option foo", optional=("build",))],
        }

    def generate_project(
        self,
        model_library_format_path: Path,
        standalone_crt_dir: Path | None,
        project_dir: Path,
        options: dict[str, Any],
    ) -> Any:
        self.calls.append(("generate_project", (model_library_format_path, project_dir, options)))
        return {"ok": True}

    def build(self, options: dict[str, Any]) -> Any:
        self.calls.append(("build", options))
        return None

    def flash(self, options: dict[str, Any]) -> Any:
        self.calls.append(("flash", options))
        return options

    def open_transport(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"session_start_timeout_sec": 1.0}

    def close_transport(self) -> None:
        self.calls.append(("close_transport", None))

    def read_transport(self, n: int, timeout_sec: float | None) -> bytes:
        if not self.console:
            raise IoTimeoutError(f"nothing within {timeout_sec} s")
        data, self.console = self.console[:n], self.console[n:]
        return data

    def write_transport(self, data: bytes, timeout_sec: float | None) -> None:
        self.console += data


@pytest.fixture
def fake() -> FakeHandler:
    return FakeHandler()


@pytest.fixture
def fake_client(fake: FakeHandler) -> Client:
    return Client.in_memory(Server(fake))


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Client:
    """memplace's own server for the default board, in memory, working in tmp_path."""
    monkeypatch.chdir(tmp_path)
    return Client.in_memory(make_server(BOARD))


def _error(reply: Any) -> dict[str, Any]:
    assert isinstance(reply, dict) and reply["jsonrpc"] == "2.0", reply
    assert "result" not in reply
    error: dict[str, Any] = reply["error"]
    return error


def _line(**request: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **request}).encode()


# -- server_info_query -------------------------------------------------------------------


def test_server_info_describes_the_template_board(api: Client, board: Board) -> None:
    info = api.server_info_query("0.18.0")
    data = board.to_data()
    assert info["platform_name"] == "memplace"
    assert info["is_template"] is True
    assert info["model_library_format_path"] == ""  # TVM's value for a template
    assert info["protocol_version"] == 1
    assert info["board"] == BOARD
    assert info["memories"] == data["memories"]
    assert info["pools"] == data["pools"]
    assert info["contexts"] == data["contexts"]
    assert info["valid_scopes"] == valid_scopes(board)
    assert "global.dtcm_ws" in info["valid_scopes"]


def test_project_options_are_served_from_the_declarations(api: Client) -> None:
    served = api.server_info_query()["project_options"]
    assert served == [o.to_json() for o in project_options.with_defaults(board=BOARD)]
    erase = next(o for o in served if o["name"] == "erase")
    assert erase == {
        "name": "erase",
        "type": "bool",
        "default": False,
        "choices": None,
        "required": None,
        "optional": ["flash"],
        "help": "erase the whole chip before programming",
    }
    board = next(o for o in served if o["name"] == "board")
    # With a default it is not required: tvmc insists on every required option.
    assert board["required"] is None and board["default"] == BOARD
    assert board["optional"] == ["generate_project"]


def test_the_server_serves_the_options_the_handler_declares(fake_client: Client) -> None:
    # As TVM's server: the handler's own reply, ProjectOptions put as JSON.
    assert fake_client.server_info_query()["project_options"] == [
        {
            "name": "foo",
            "type": "bool",
            "default": None,
            "choices": None,
            "required": None,
            "optional": ["build"],
            "help": "Option foo",
        }
    ]


def test_a_server_without_a_board_describes_none() -> None:
    info = Client.in_memory(make_server()).server_info_query()
    assert info["board"] is None and info["memories"] == {} and info["valid_scopes"] == []
    assert next(o for o in info["project_options"] if o["name"] == "board")["default"] is None


# -- JSON-RPC errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"hello", "request is not JSON"),
        (b'{"jsonrpc": "2.0", "method": ', "request is not JSON"),
        (b"\xff\xfe{}", "request is not UTF-8"),
        (b"", "empty line"),
        (b"   \t", "empty line"),
        (b'{"jsonrpc": "2.0", "method": "build", "id": NaN}', "NaN is not JSON"),
        (b"[" * 100_000, "request is not JSON"),
    ],
)
def test_lines_that_are_not_json_are_parse_errors(
    fake_client: Client, line: bytes, message: str
) -> None:
    reply = fake_client.raw(line)
    assert reply["id"] is None
    assert _error(reply)["code"] == -32700
    assert message in _error(reply)["message"]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        # TVM's wording (tvm.micro.project_api.server)
        (5, "request: want dict; got 5"),
        ("build", "request: want dict; got 'build'"),
        (None, "request: want dict; got None"),
        ({"method": "build", "id": 1}, 'request["jsonrpc"]: want "2.0"; got None'),
        ({"jsonrpc": "1.0", "method": "build", "id": 1}, 'request["jsonrpc"]: want "2.0"'),
        ({"jsonrpc": "2.0", "method": 7, "id": 1}, 'request["method"]: want str; got 7'),
        ({"jsonrpc": "2.0", "id": 1}, 'request["method"]: want str; got None'),
        (
            {"jsonrpc": "2.0", "method": "bar!", "id": 1},
            "request[\"method\"]: should match regex ^[a-zA-Z0-9_]+$; got 'bar!'",
        ),
        (
            {"jsonrpc": "2.0", "method": "build", "id": {"a": 1}},
            'request["id"]: want str, number, null; got {',
        ),
        ({"jsonrpc": "2.0", "method": "build", "id": True}, 'request["id"]: want str, number'),
        (
            {"jsonrpc": "2.0", "method": "build", "id": 1, "params": "x"},
            "request[\"params\"]: want dict; got <class 'str'>",
        ),
        ([], "an empty batch is not a request"),
    ],
)
def test_objects_that_are_not_requests_are_invalid_requests(
    fake_client: Client, request_: Any, message: str
) -> None:
    reply = fake_client.raw(json.dumps(request_).encode())
    assert _error(reply)["code"] == -32600
    assert message in _error(reply)["message"]
    valid_id = isinstance(request_, dict) and type(request_.get("id")) is int
    assert reply["id"] == (1 if valid_id else None)


def test_an_unknown_method_is_method_not_found(fake_client: Client) -> None:
    reply = fake_client.raw(_line(method="erase_everything", id="x1"))
    assert reply["id"] == "x1"
    assert _error(reply)["code"] == -32601
    assert _error(reply)["message"].startswith("erase_everything: no such method; methods: ")


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("read_transport", {"timeout_sec": 1}, "method read_transport: parameter n not given"),
        (
            "read_transport",
            {"n": "4", "timeout_sec": 1},
            "method read_transport: parameter n: want <class 'int'>, got <class 'str'> "
            "(n is a positive integer, got '4')",
        ),
        ("read_transport", {"n": True, "timeout_sec": 1}, "n is a positive integer, got True"),
        ("read_transport", {"n": 0, "timeout_sec": 1}, "read_transport: n is from 1 to 16777216"),
        ("read_transport", {"n": 2**24 + 1, "timeout_sec": 1}, "(bytes), got 16777217"),
        ("read_transport", {"n": 2**45, "timeout_sec": 1}, "(bytes), got 35184372088832"),
        ("read_transport", {"n": 10**30, "timeout_sec": 1}, "got 1000000000000000000000000000000"),
        (
            "read_transport",
            {"n": 4, "timeout_sec": -1},
            "timeout_sec is from 0 to 86400 (seconds), or null to wait without limit; got -1",
        ),
        ("read_transport", {"n": 4, "timeout_sec": 86400.5}, "to 86400 (seconds)"),
        ("read_transport", {"n": 4, "timeout_sec": 1e300}, "wait without limit; got 1e+300"),
        ("read_transport", {"n": 4, "timeout_sec": 10**400}, "timeout_sec is from 0 to 86400"),
        ("write_transport", {"data": "", "timeout_sec": 1e300}, "timeout_sec is from 0 to 86400"),
        ("read_transport", {"n": 4, "timeout_sec": "soon"}, "parameter timeout_sec: want secon"),
        ("write_transport", {"data": "~~~~", "timeout_sec": 1}, "data is not Base85"),
        ("build", {"options": {}, "verbose": True}, "build: extra parameters: verbose"),
        ("build", {"options": []}, "want <class 'dict'>, got <class 'list'>"),
        ("build", [{}, {}], "build takes 1 parameters, got 2"),
        ("generate_project", {"project_dir": "p", "options": {}}, "model_library_format_path"),
    ],
)
def test_bad_parameters_are_invalid_params(
    fake_client: Client, method: str, params: Any, message: str
) -> None:
    reply = fake_client.raw(_line(method=method, params=params, id=9))
    assert reply["id"] == 9
    assert _error(reply)["code"] == -32602
    assert message in _error(reply)["message"]


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("flash", {"options": {"erase": "maybe"}}, "flash: option erase: expected a bool"),
        ("flash", {"options": {"frequency": "fast"}}, "option frequency: expected an integer"),
        ("flash", {"options": {"runner": "jlink"}}, "option runner: 'jlink' is not one of"),
        ("flash", {"options": {"eraze": True}}, "flash: no option eraze; options: board,"),
        ("build", {"options": {"verbose": "loud"}}, "build: option verbose: expected a bool"),
        ("build", {"options": {"bar": "baz"}}, "build: no option bar; options: board,"),
        ("open_transport", {"options": {"runner": 7}}, "option runner: '7' is not one of"),
        (
            "generate_project",
            {
                "model_library_format_path": "w.yaml",
                "project_dir": "p",
                "options": {"board": "b", "project_type": "firmware"},
            },
            "option project_type: 'firmware' is not one of: aot_standalone_demo, app, "
            "exerciser, host_driven, library",
        ),
    ],
)
def test_memplace_refuses_options_it_cannot_take(
    api: Client, tmp_path: Path, method: str, params: Any, message: str
) -> None:
    # The server hands options over as they came; memplace's handler judges them first,
    # before it looks for a project or a model, and writes nothing.
    reply = api.raw(_line(method=method, params=params, id=9))
    assert reply["id"] == 9
    assert _error(reply)["code"] == -32602
    assert message in _error(reply)["message"]
    assert list(tmp_path.iterdir()) == []


def test_a_required_option_without_a_default_is_invalid_params() -> None:
    api = Client.in_memory(make_server())
    with pytest.raises(InvalidParams, match="generate_project: option board is required"):
        api.generate_project(demo_workload(), "p", {})


def test_params_by_position(fake_client: Client, fake: FakeHandler) -> None:
    reply = fake_client.raw(_line(method="flash", params=[{"erase": "yes"}], id=1))
    assert reply["result"] == {"erase": "yes"}
    reply = fake_client.raw(
        _line(method="generate_project", params=["m.yaml", None, "p", {"board": "b"}], id=2)
    )
    assert reply["result"] == {"ok": True}
    assert fake.calls[-1][1][:2] == (Path("m.yaml"), Path("p"))


def test_a_request_without_id_is_answered_with_a_null_id_as_tvm_does(
    fake_client: Client, fake: FakeHandler
) -> None:
    assert fake_client.raw(_line(method="build", params={"options": {}})) == {
        "jsonrpc": "2.0",
        "id": None,
        "result": None,
    }
    assert [name for name, _ in fake.calls] == ["build"]
    assert _error(fake_client.raw(_line(method="no_such_method")))["code"] == -32601


def test_a_batch_is_answered_by_a_batch(fake_client: Client) -> None:
    batch = [
        {"jsonrpc": "2.0", "method": "flash", "params": {"options": {}}, "id": 1},
        {"jsonrpc": "2.0", "method": "build", "params": {"options": {}}},
        "junk",
        {"jsonrpc": "2.0", "method": "nope", "id": 2},
    ]
    replies = fake_client.raw(json.dumps(batch).encode())
    assert [r["id"] for r in replies] == [1, None, None, 2]
    assert "result" in replies[0] and "result" in replies[1]
    assert [r["error"]["code"] for r in replies[2:]] == [-32600, -32601]


def test_a_bug_in_the_handler_is_a_server_error_with_its_traceback_as_tvm_sends(
    fake: FakeHandler,
) -> None:
    def broken(options: dict[str, Any]) -> Any:
        raise RuntimeError("the handler is broken")

    fake.build = broken  # type: ignore[method-assign]
    api = Client.in_memory(Server(fake))
    with pytest.raises(RemoteError) as caught:
        api.build()
    assert caught.value.code == -32000  # TVM's plain ServerError, named by the call
    assert str(caught.value) == "calling method build: RuntimeError: the handler is broken"
    assert "Traceback" in caught.value.data["traceback"]
    assert api.flash({"erase": True}) == {"erase": True}  # and it keeps serving


def test_a_result_that_cannot_travel_is_an_internal_error(fake: FakeHandler) -> None:
    fake.build = lambda options: {"path": Path("x")}  # type: ignore[method-assign]
    with pytest.raises(InternalError, match="Object of type PosixPath is not JSON serializable"):
        Client.in_memory(Server(fake)).build()


def test_server_errors_travel_by_class_name(fake_client: Client) -> None:
    reply = fake_client.raw(_line(method="read_transport", params={"n": 4, "timeout_sec": 0}, id=3))
    assert _error(reply) == {
        "code": -32000,
        "message": "IoTimeoutError",
        "data": {"message": "nothing within 0.0 s"},
    }
    with pytest.raises(IoTimeoutError) as caught:
        fake_client.read_transport(4, 0)
    assert str(caught.value) == "IoTimeoutError: nothing within 0.0 s"


def test_transport_data_travels_as_base85(fake_client: Client) -> None:
    payload = bytes(range(256)) * 3
    fake_client.write_transport(payload, 1.0)
    line = _line(method="read_transport", params={"n": 5, "timeout_sec": None}, id=1)
    assert fake_client.raw(line)["result"] == {"data": base64.b85encode(payload[:5]).decode()}
    assert fake_client.read_transport(1000, 1.0) == payload[5:]
    assert fake_client.open_transport() == {"timeouts": {"session_start_timeout_sec": 1.0}}


def test_read_and_timeout_bounds_are_inclusive(fake_client: Client, fake: FakeHandler) -> None:
    fake_client.write_transport(b"abc", MAX_TIMEOUT)
    assert fake_client.read_transport(MAX_READ, MAX_TIMEOUT) == b"abc"
    assert fake.console == b""


def test_an_infinite_timeout_is_invalid_params(fake_client: Client) -> None:
    # JSON's 1e400 parses to infinity; null is how a request waits without limit.
    line = b'{"jsonrpc": "2.0", "method": "read_transport", "params": [4, 1e400], "id": 5}'
    error = _error(fake_client.raw(line))
    assert error["code"] == -32602
    assert error["message"].endswith("or null to wait without limit; got inf")


# -- options as data -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "value", "expected"),
    [
        ("bool", "false", False),
        ("bool", "False", False),
        ("bool", "no", False),
        ("bool", "0", False),
        ("bool", 0, False),
        ("bool", "true", True),
        ("bool", " ON ", True),
        ("bool", True, True),
        ("int", "4000000", 4000000),
        ("int", "0x10", 16),
        ("int", 12, 12),
        ("float", "2.5", 2.5),
        ("float", 3, 3.0),
        ("str", "stm32h743xx", "stm32h743xx"),
        ("str", 123456, "123456"),
        ("path", "app/src", Path("app/src")),
    ],
)
def test_option_values_convert_by_type(type_: str, value: Any, expected: Any) -> None:
    converted = ProjectOption("x", type_, "an option").convert(value)
    assert converted == expected and type(converted) is type(expected)


@pytest.mark.parametrize(
    ("type_", "value", "message"),
    [
        ("bool", "maybe", "expected a bool (true or false), got 'maybe'"),
        ("bool", 2, "expected a bool (true or false), got 2"),
        ("int", "1.5", "expected an integer, got '1.5'"),
        ("int", True, "expected an integer, got True"),
        ("float", "nan", "expected a number, got 'nan'"),
        ("float", False, "expected a number, got False"),
        ("str", ["a"], "expected a string, got ['a']"),
        ("str", False, "expected a string, got False"),
        ("path", "", "expected a path, got ''"),
    ],
)
def test_option_values_that_do_not_convert(type_: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ProjectOption("x", type_, "an option").convert(value)


def test_an_option_declared_wrongly_is_refused() -> None:
    with pytest.raises(ValueError, match="type 'dict' is not one of"):
        ProjectOption("x", "dict", "no")
    with pytest.raises(ValueError, match="'close_transport' takes no options"):
        ProjectOption("x", "str", "no", optional=("close_transport",))


def test_options_reach_the_handler_as_they_came(fake_client: Client, fake: FakeHandler) -> None:
    # As TVM's server (its test_build, test_flash, test_open_transport): no filtering, no
    # conversion; the handler judges.
    fake_client.build({"bar": "baz"})
    fake_client.flash({"bar": "baz", "erase": "maybe"})
    fake_client.generate_project("w.yaml", "p", {"bar": 1})
    assert fake.calls == [
        ("build", {"bar": "baz"}),
        ("flash", {"bar": "baz", "erase": "maybe"}),
        ("generate_project", (Path("w.yaml"), Path("p"), {"bar": 1})),
    ]


def test_memplace_converts_the_options_of_each_method_and_lets_others_through(
    api: Client, tmp_path: Path
) -> None:
    # microTVM sends every option to every method: each reads its own, converted by type
    # (tvmc sends text), and ignores the others' unread.
    options = {"compile_definitions": "-DA=1 -DB", "warning_as_error": "yes", "erase": "?"}
    api.generate_project(demo_workload(), "p", options)
    saved = json.loads((tmp_path / "p" / "project_api" / "build_settings.json").read_text())
    assert saved == {
        "compile_definitions": ["-DA=1", "-DB"],
        "warning_as_error": True,
        "cmsis_path": None,
    }
    flashed = api.flash({"erase": "false", "frequency": "4000000", "project_type": "app"})
    assert flashed == {"runner": "qemu", "flashed": False}
    with pytest.raises(RemoteError, match="build the project first"):
        api.open_transport({"runner": "qemu", "erase": "not even a bool", "verbose": "?"})


def test_the_docs_table_is_the_declarations() -> None:
    text = (REPO / "docs" / "project-api.md").read_text()
    table = text.split("<!-- options:begin -->\n")[1].split("<!-- options:end -->")[0]
    assert table == project_options.markdown_table(), (
        "docs/project-api.md is out of date: paste the output of\n"
        "  .venv/bin/python -c 'from memplace.options import markdown_table as t; "
        'print(t(), end="")\'\nbetween its options markers'
    )


@pytest.mark.parametrize(
    ("command", "method"),
    [("generate", "generate_project"), ("check", "generate_project"), ("flash", "flash")],
)
def test_command_line_flags_come_from_the_declarations(
    capsys: pytest.CaptureFixture[str], command: str, method: str
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    wanted = [
        name
        for name in project_options.accepted_by(method)
        if name != "board" and name not in project_options.BUILD_SETTINGS
    ]
    if command == "check":  # check generates in a scratch folder of its own
        wanted = [name for name in wanted if name not in ("pool_storage", "extra_files_tar")]
    if command == "generate":
        wanted.remove("extra_files_tar")  # only the Project API unpacks archives
    for name in wanted:
        option = project_options.BY_NAME[name]
        assert project_options.flag(name) in help_text
        assert " ".join(option.help.split()) in help_text


def test_a_flag_value_that_does_not_convert_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["flash", str(tmp_path), "--frequency", "fast"]) == 2
    assert "argument --frequency: expected an integer, got 'fast'" in capsys.readouterr().err
    assert main(["flash", str(tmp_path), "--runner", "jlink"]) == 2
    assert "argument --runner: 'jlink' is not one of: qemu, pyocd, openocd" in (
        capsys.readouterr().err
    )


# -- memplace's handler -------------------------------------------------------------------


def test_generate_project_writes_a_new_project(api: Client, tmp_path: Path) -> None:
    result = api.generate_project(demo_workload(), "kws", {"algorithm": "greedy-conflicts"})
    assert result["project_dir"] == "kws"
    assert result["plan"]["memplace"] == "plan/v1" and result["plan"]["board"] == BOARD
    assert (tmp_path / "kws" / "memplace.json").is_file()
    info = api.server_info_query()
    assert info["is_template"] is False and info["project_dir"] == "kws"
    assert api.flash() == {"runner": "qemu", "flashed": False}  # QEMU loads it itself


def test_generate_project_refuses_an_existing_folder(api: Client, tmp_path: Path) -> None:
    (tmp_path / "kws").mkdir()
    with pytest.raises(RemoteError) as caught:
        api.generate_project(demo_workload(), "kws", {})
    assert caught.value.name == "InputError"
    assert caught.value.data == {
        "message": "project_dir: kws already exists; generate_project writes a new folder",
        "exit_code": 2,
        "key": "project_dir",
    }


def test_generate_project_says_when_the_model_is_missing(api: Client, tmp_path: Path) -> None:
    with pytest.raises(RemoteError) as caught:
        api.generate_project(tmp_path / "model.tar", "p", {})
    assert str(caught.value) == (
        f"InputError: model_library_format_path: no such file: {tmp_path / 'model.tar'}"
    )
    assert not (tmp_path / "p").exists()


def test_generate_project_refuses_host_driven_saying_why(api: Client, tmp_path: Path) -> None:
    with pytest.raises(RemoteError) as caught:
        api.generate_project(demo_workload(), tmp_path / "p", {"project_type": "host_driven"})
    assert caught.value.data["key"] == "project_type"
    assert "needs TVM's RPC server in the firmware" in caught.value.data["message"]
    assert not (tmp_path / "p").exists()


def test_input_errors_carry_file_line_and_key(api: Client, tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 1K, live: 0, scope: nope}\n"
    )
    with pytest.raises(RemoteError) as caught:
        api.generate_project("w.yaml", "p", {})
    assert caught.value.name == "InputError"
    data = caught.value.data
    assert data["file"] == "w.yaml" and data["line"] == 4 and data["key"] == "a.scope"
    assert "unknown scope 'nope'" in data["message"] and data["exit_code"] == 2
    with pytest.raises(RemoteError, match="InputError: BOARD: no bundled board 'nosuch'"):
        api.generate_project("w.yaml", "p", {"board": "nosuch"})


def test_planning_errors_carry_the_buffer_and_shortfalls(api: Client, tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n"
        "  - {name: big, size: 2M, live: 0, scope: global.sram_ws}\n"
    )
    with pytest.raises(RemoteError) as caught:
        api.generate_project("w.yaml", "p", {})
    assert caught.value.name == "PlanningError"
    assert caught.value.data["buffer"] == "big"
    assert caught.value.data["shortfalls"] == {"sram_ws": 1048576}
    assert caught.value.data["exit_code"] == 1
    assert not (tmp_path / "p").exists()


def test_methods_that_need_a_project_say_so(api: Client) -> None:
    for call in (api.build, api.flash, api.open_transport):
        with pytest.raises(RemoteError, match="no project yet: call generate_project first"):
            call()


def test_the_transport_must_be_open(api: Client) -> None:
    with pytest.raises(TransportClosedError, match="no transport is open; call open_transport"):
        api.read_transport(10, 0.1)
    with pytest.raises(TransportClosedError, match="no transport is open"):
        api.write_transport(b"x", 0.1)
    api.close_transport()  # closing what is not open is fine


def test_open_transport_needs_a_built_project(api: Client) -> None:
    api.generate_project(demo_workload(), "p", {})
    with pytest.raises(RemoteError, match=r"no image p/build/cpu0\.elf: build the project first"):
        api.open_transport()


def test_an_archive_that_escapes_the_project_leaves_nothing(api: Client, tmp_path: Path) -> None:
    archive = tmp_path / "extra.tar"
    with tarfile.open(archive, "w") as tar:
        _add(tar, "notes.txt", b"fine")
        _add(tar, "../escaped.txt", b"not fine")
    with pytest.raises(RemoteError) as caught:
        api.generate_project(demo_workload(), "p", {"extra_files_tar": str(archive)})
    assert caught.value.name == "InputError"
    assert "member '../escaped.txt' would land outside" in caught.value.data["message"]
    assert not (tmp_path / "p").exists()
    assert not (tmp_path / "escaped.txt").exists()


def test_extra_files_are_unpacked_into_the_project(api: Client, tmp_path: Path) -> None:
    archive = tmp_path / "extra.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        _add(tar, "app/notes.txt", b"hello")
    api.generate_project(demo_workload(), "p", {"extra_files_tar": str(archive)})
    assert (tmp_path / "p" / "app" / "notes.txt").read_bytes() == b"hello"
    with tarfile.open(archive, "w:gz") as tar:
        _add(tar, "CMakeLists.txt", b"project(evil)")
    with pytest.raises(RemoteError, match=r"member 'CMakeLists\.txt' would replace"):
        api.generate_project(demo_workload(), "q", {"extra_files_tar": str(archive)})
    assert not (tmp_path / "q").exists()


@pytest.mark.skipif(not KWS.is_file(), reason="the MLPerf Tiny models are not here")
def test_generate_project_from_a_tflite_model(api: Client) -> None:
    result = api.generate_project(KWS, "kws", {})
    assert result["plan"]["workload"] == "kws_ref_model"


def test_a_server_for_a_project_generated_before(api: Client, tmp_path: Path, board: Board) -> None:
    api.generate_project(demo_workload(), "p", {})
    info = Client.in_memory(make_server(project=tmp_path / "p")).server_info_query()
    assert info["is_template"] is False and info["board"] == BOARD
    assert info["valid_scopes"] == valid_scopes(board)


def test_a_project_of_a_board_that_is_not_bundled_needs_its_file(
    api: Client, tmp_path: Path
) -> None:
    (tmp_path / "mine.yaml").write_text(
        f"memplace: board/v1\nextends: {BOARD}\nname: mine\n", encoding="utf-8"
    )
    api.generate_project(demo_workload(), "p", {"board": "mine.yaml"})
    with pytest.raises(Exception, match="for board 'mine', which is not bundled; pass its board"):
        make_server(project=tmp_path / "p")
    assert Client.in_memory(make_server("mine.yaml", tmp_path / "p")).server_info_query()[
        "board"
    ] == ("mine")
    with pytest.raises(Exception, match="is a project for board 'mine', not 'qemu-mps3-an547'"):
        make_server(BOARD, tmp_path / "p")


def test_only_memplace_errors_are_server_errors() -> None:
    assert describe(RuntimeError("bug")) is None
    assert MemplaceHandler().server_info_query("")["board"] is None


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_a_line_over_the_limit_is_refused_and_serving_goes_on(
    fake: FakeHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocol, "MAX_LINE", 128)
    request = _line(method="build", params={"options": {}}, id=7) + b"\n"
    replies = io.BytesIO()
    Server(fake).serve(io.BytesIO(b"x" * 300 + b"\n" + request), replies)
    first, second = (json.loads(line) for line in replies.getvalue().splitlines())
    assert _error(first) == {
        "code": -32700,
        "message": "request line longer than 128 bytes",
        "data": None,  # as TVM's server sends it
    }
    assert second == {"jsonrpc": "2.0", "id": 7, "result": None}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"[]\n", "the reply is not a JSON-RPC 2.0 object: []"),
        (b'{"jsonrpc": "2.0", "id": 99, "result": 1}\n', "the reply is for id 99"),
        (b'{"jsonrpc": "2.0", "id": 1}\n', "the reply holds neither result nor error"),
        (b'{"jsonrpc": "2.0", "id": 1, "error": "bad"}\n', "the error is not an object"),
    ],
)
def test_a_reply_that_breaks_the_protocol_is_a_protocol_error(reply: bytes, message: str) -> None:
    client = Client(lambda line: reply)
    with pytest.raises(ProtocolError, match=re.escape(message)):
        client.build()


def test_a_server_that_goes_away_or_stays_silent_is_a_protocol_error() -> None:
    replies_in, replies_out = os.pipe()
    requests_in, requests_out = os.pipe()
    try:
        silent = Client.over_pipes(replies_in, requests_out, timeout=0.2)
        with pytest.raises(ProtocolError, match=r"no reply from the server within 0\.2 s"):
            silent.build()
        os.close(replies_out)
        with pytest.raises(ProtocolError, match="closed its end of the pipe without replying"):
            silent.build()
        os.close(requests_in)
        with pytest.raises(ProtocolError, match="the server has closed its end of the pipe"):
            silent.build()
    finally:
        for fd in (replies_in, requests_out):
            os.close(fd)


def test_error_codes_come_back_as_their_classes() -> None:
    assert isinstance(error_from_json({"code": -32601, "message": "m"}), MethodNotFound)
    version = error_from_json(
        {"code": -32000, "message": "UnsupportedTVMVersionError", "data": {"message": "0.1"}}
    )
    assert isinstance(version, UnsupportedTVMVersionError) and version.detail == "0.1"
    odd = error_from_json({"code": 12, "message": "odd"})
    assert isinstance(odd, RemoteError) and odd.code == 12 and str(odd) == "odd"


def test_file_system_errors_travel_by_class_name(api: Client, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    with pytest.raises(RemoteError) as caught:
        api.generate_project(demo_workload(), "taken/p", {})
    assert caught.value.name == "NotADirectoryError"
    assert caught.value.data["errno"] == 20 and "taken" in caught.value.data["message"]


def test_the_exit_codes_a_server_sends_are_those_of_the_memplace_command() -> None:
    from memplace import errors

    assert {name: getattr(errors, name).exit_code for name in protocol.EXIT_CODES} == (
        protocol.EXIT_CODES
    )
