"""Random lines thrown at memplace's server: each gets one well-formed reply (a request
without id too, as TVM's server answers it), never an internal error, and the server
keeps serving; and reads and writes of any size and timeout on an open transport."""

from __future__ import annotations

import base64
import json
import os
import select
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import PATIENCE
from memplace import options as project_options
from memplace import process
from memplace.board import load_board
from memplace.carried.server import MAX_READ, MAX_TIMEOUT, METHODS
from memplace.carried.transport import ConsoleTransport
from memplace.project_api import Server
from memplace.project_api.handler import MemplaceHandler, describe, make_server

CODES = {-32700, -32600, -32601, -32602, -32000}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
param_names = sorted({p.name for params in METHODS.values() for p in params})
option_names = [option.name for option in project_options.OPTIONS]
requests = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]) | json_values,
        "method": st.sampled_from([*METHODS, "nope", "rpc.discover"]) | json_values,
        "params": st.dictionaries(
            st.sampled_from(param_names) | st.text(max_size=8),
            json_values
            | st.dictionaries(st.sampled_from(option_names), json_values | st.text(max_size=12)),
            max_size=4,
        )
        | st.lists(json_values, max_size=5)
        | json_values,
        "id": st.integers() | st.text(max_size=8) | st.none() | json_values,
    },
)
# Far past any bound: they must come back as invalid params, not as internal errors.
huge_numbers = (
    st.integers(2**24, 10**400)
    | st.integers(-(10**400), -1)
    | st.floats(min_value=86400.001, allow_infinity=False)
    | st.sampled_from([2**45, 10**30, 1e300, 2**63, 2**64])
)
paths = st.text(max_size=30) | st.sampled_from(["", ".", "/", "p", "model.tar", "w.tflite"])
option_values = st.dictionaries(
    st.sampled_from(option_names), json_values | st.sampled_from(["true", "false", "pyocd", "7"])
)
VALUES = {
    "tvm_version": st.text(max_size=10),
    "model_library_format_path": paths,
    "standalone_crt_dir": st.none() | paths,
    "project_dir": paths,
    "options": option_values,
    "n": st.integers(-2, 100) | huge_numbers,
    "timeout_sec": st.none() | st.floats(0, 0.01) | st.integers(-1, 0) | huge_numbers,
    "data": st.text(max_size=20) | st.binary(max_size=20).map(lambda b: b.hex()),
}
# Requests with the right shape and random parameters, so that most reach the handler.
well_formed = st.sampled_from(sorted(METHODS)).flatmap(
    lambda method: st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "method": st.just(method),
            "id": st.integers(0, 1000),
            "params": st.fixed_dictionaries(
                {p.name: VALUES[p.name] | json_values for p in METHODS[method]}
            ),
        }
    )
)
lines = (
    well_formed.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=120)
    | st.text(max_size=120).map(str.encode)
    | json_values.map(lambda value: json.dumps(value).encode())
    | requests.map(lambda value: json.dumps(value).encode())
    | st.lists(requests, max_size=3).map(lambda value: json.dumps(value).encode())
).map(lambda line: line.replace(b"\n", b" "))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The real handler, working in a folder of its own so nothing lands in the checkout."""
    folder = tmp_path_factory.mktemp("fuzz")
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield make_server("qemu-mps3-an547")
    finally:
        os.chdir(previous)


def _check_reply(reply: Any) -> None:
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", reply
    assert "id" in reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert error["code"] in CODES, error
        assert isinstance(error["message"], str) and error["message"]
        if error["code"] == -32000:
            assert isinstance(error["data"]["message"], str)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=lines)
def test_every_line_gets_a_well_formed_answer(server: Server, line: bytes) -> None:
    raw = server.handle_line(line)  # every request is answered, one without id too (TVM)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    reply = json.loads(raw)
    for item in reply if isinstance(reply, list) else [reply]:
        _check_reply(item)
        event(str(item.get("error", {}).get("code", "result")))
    info = server.handle_line(
        b'{"jsonrpc": "2.0", "method": "server_info_query", "params": {"tvm_version": ""}, "id": 1}'
    )
    assert info is not None and json.loads(info)["result"]["protocol_version"] == 1


@pytest.fixture(scope="module")
def console_server() -> Iterator[tuple[Server, ConsoleTransport]]:
    """The real handler with a transport open on a program that always has output and
    drains its input, so that reads and writes with valid arguments return at once."""
    handler = MemplaceHandler(load_board("qemu-mps3-an547"))
    transport = ConsoleTransport(process.start(["sh", "-c", "cat > /dev/null & exec yes memplace"]))
    handler.transport = transport
    try:
        yield Server(handler, describe=describe), transport
    finally:
        handler.close_transport()


# Reads and writes of any size and timeout, the valid ones kept short.
transport_calls = st.one_of(
    st.fixed_dictionaries(
        {
            "method": st.just("read_transport"),
            "params": st.fixed_dictionaries(
                {
                    "n": st.integers(-(10**40), 10**40) | huge_numbers | st.just(MAX_READ),
                    "timeout_sec": st.none() | st.floats(0, 1) | huge_numbers,
                }
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "method": st.just("write_transport"),
            "params": st.fixed_dictionaries(
                {
                    "data": st.binary(max_size=64).map(lambda b: base64.b85encode(b).decode()),
                    "timeout_sec": st.floats(0, 1) | huge_numbers,
                }
            ),
        }
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=transport_calls)
def test_transport_arguments_out_of_range_are_invalid_params(
    console_server: tuple[Server, ConsoleTransport], call: dict[str, Any]
) -> None:
    server, transport = console_server
    # The program's output (or room for input) is there before the call, however loaded the
    # machine is: a valid call with a timeout of 0 returns at once.
    reading = [transport.running.stdout] if call["method"] == "read_transport" else []
    writing = [transport.running.stdin] if call["method"] == "write_transport" else []
    assert select.select(reading, writing, [], PATIENCE) != ([], [], [])
    raw = server.handle_line(json.dumps({"jsonrpc": "2.0", "id": 1, **call}).encode())
    assert raw is not None
    reply = json.loads(raw)
    params = call["params"]
    timeout = params["timeout_sec"]
    n = params.get("n", 1)
    valid = (timeout is None or 0 <= timeout <= MAX_TIMEOUT) and (
        isinstance(n, int) and 1 <= n <= MAX_READ
    )
    if not valid:
        assert reply["error"]["code"] == -32602, reply
        event("invalid params")
        return
    assert "result" in reply, reply
    if call["method"] == "read_transport":
        data = base64.b85decode(reply["result"]["data"])
        assert 1 <= len(data) <= params["n"]
        assert set(data) <= set(b"memplace\n")
    event(call["method"])
