"""The Project API protocol: JSON-RPC 2.0, one JSON object per line, one request at a time.

This module uses only the Python standard library and imports nothing from memplace, so a
generated project can carry a copy of it and be driven without memplace's dependencies.
It holds the errors that travel over the wire, the declaration of a project option, the
signature of every method, and `Server`, which turns request lines into reply lines
around a handler object that does the work.

Errors: -32700 the line is not JSON, -32600 it is not a request, -32601 no such method,
-32602 bad parameters or options, -32603 a result that cannot travel; -32000 a server
error whose `message` is the name of its class (`IoTimeoutError`, `TransportClosedError`,
or whatever the handler's `describe` accepts) and whose `data` holds the details. As in
TVM's own server (`tvm.micro.project_api.server`), whose wording the messages follow, an
unexpected exception is a plain -32000 `ServerError` whose message is `calling method
NAME` and whose `data` holds the exception and its traceback, and a request without an
`id` is answered (with `id` null), not taken for a notification.

Also as in TVM's server, the project options are the handler's business: the server
serves the options the handler's `server_info_query` reply lists and hands each method's
`options` object to the handler as it came; a handler checks it with `check_options`
against the options it declares. Unlike TVM's server, this one answers a line that is not
JSON (-32700) and goes on serving, where TVM's stops reading without a reply.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import os
import re
import shlex
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, Protocol

log = logging.getLogger("memplace.project_api")

PROTOCOL_VERSION = 1
# A request line longer than this is refused without being parsed (bytes).
MAX_LINE = 64 * 1024 * 1024
# The most bytes one read_transport may ask for: its reply (Base85, 5 characters for every
# 4 bytes) then stays well under MAX_LINE, the longest line either side reads.
MAX_READ = 16 * 1024 * 1024
# The longest timeout_sec a request may give (seconds; a day). null waits without limit.
MAX_TIMEOUT = 24 * 3600

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000


class RPCError(Exception):
    """A JSON-RPC error: what the server replies, and what the client raises."""

    code = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        # `data` null rather than left out, as TVM's server sends it.
        return {"code": self.code, "message": self.message, "data": self.data}

    def __str__(self) -> str:
        return self.message


class ParseError(RPCError):
    code = PARSE_ERROR


class InvalidRequest(RPCError):
    code = INVALID_REQUEST


class MethodNotFound(RPCError):
    code = METHOD_NOT_FOUND


class InvalidParams(RPCError):
    code = INVALID_PARAMS


class InternalError(RPCError):
    code = INTERNAL_ERROR


# The exit code the `memplace` command ends with for each error a server sends by the
# name of its class; it travels in the error's `data` (memplace's own errors.py holds
# the same numbers for its classes: tests/test_project_api.py keeps the two equal).
EXIT_CODES = {"CheckFailed": 1, "PlanningError": 1, "InputError": 2, "ToolError": 3}


class ServerError(RPCError):
    """An error of the work itself (-32000): its message is the name of its class, and
    `data["message"]` says what went wrong (`data["exit_code"]` too, for the classes of
    `EXIT_CODES`)."""

    code = SERVER_ERROR

    def __init__(self, detail: str = "", data: Mapping[str, Any] | None = None) -> None:
        payload = dict(data or {})
        payload.setdefault("message", detail)
        if type(self).__name__ in EXIT_CODES:
            payload.setdefault("exit_code", EXIT_CODES[type(self).__name__])
        super().__init__(type(self).__name__, payload)

    @property
    def detail(self) -> str:
        message = self.data.get("message") if isinstance(self.data, dict) else None
        return message if isinstance(message, str) else ""

    def __str__(self) -> str:
        return f"{self.message}: {self.detail}" if self.detail else self.message


class IoTimeoutError(ServerError):
    """No byte could be read, or not every byte written, before the timeout."""


class TransportClosedError(ServerError):
    """The transport is not open, or its other end has gone."""


class UnsupportedTVMVersionError(ServerError):
    """The caller's TVM version cannot be served."""


# Server errors a client turns back into their own class, by name.
SERVER_ERRORS: dict[str, type[ServerError]] = {
    cls.__name__: cls for cls in (IoTimeoutError, TransportClosedError, UnsupportedTVMVersionError)
}
_CODES: dict[int, type[RPCError]] = {
    cls.code: cls
    for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError)
}


def error_from_json(error: Mapping[str, Any]) -> RPCError:
    """The exception a reply's `error` member stands for."""
    code, message, data = error.get("code"), str(error.get("message", "")), error.get("data")
    if code == SERVER_ERROR:
        cls = SERVER_ERRORS.get(message)
        if cls is not None:
            return cls(data=data if isinstance(data, dict) else None)
        return RemoteError(message, data)
    if isinstance(code, int) and code in _CODES:
        return _CODES[code](message, data)
    return RemoteError(message, data, code=code if isinstance(code, int) else INTERNAL_ERROR)


class RemoteError(RPCError):
    """An error the server reported under a name this side has no class for (for
    memplace: `InputError`, `PlanningError`, `ToolError`, ...). `name` is that class name."""

    def __init__(self, message: str, data: Any = None, code: int = SERVER_ERROR) -> None:
        super().__init__(message, data)
        self.code = code
        self.name = message

    def __str__(self) -> str:
        detail = self.data.get("message") if isinstance(self.data, dict) else None
        return f"{self.message}: {detail}" if detail else self.message


# -- project options -------------------------------------------------------------------

OPTION_TYPES = ("bool", "int", "float", "str", "path", "list")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


@dataclass(frozen=True)
class ProjectOption:
    """One project option: what it is, its type and default, and which methods require
    or accept it. Declared once, as data: a handler serves its options in its
    `server_info_query` reply and checks requests against them (`check_options`); the
    command line and the docs read them too."""

    name: str
    type: str
    help: str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option {self.name}: type {self.type!r} is not one of {OPTION_TYPES}")
        for method in (*self.required, *self.optional):
            if method not in OPTION_METHODS:
                raise ValueError(f"option {self.name}: {method!r} takes no options")

    def accepted_by(self, method: str) -> bool:
        return method in self.required or method in self.optional

    def convert(self, value: Any) -> Any:
        """`value` as this option's type; raises ValueError saying what was expected."""
        converted = _CONVERTERS[self.type](value)
        if self.choices is not None and converted not in self.choices:
            choices = ", ".join(str(choice) for choice in self.choices)
            raise ValueError(f"{converted!r} is not one of: {choices}")
        return converted

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "default": self.default,
            "choices": list(self.choices) if self.choices is not None else None,
            "required": list(self.required) or None,
            "optional": list(self.optional) or None,
            "help": self.help,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProjectOption:
        """The option `to_json` described (as a generated project stores its options)."""
        return cls(
            name=data["name"],
            type=data["type"],
            help=data["help"],
            default=data.get("default"),
            choices=None if data.get("choices") is None else tuple(data["choices"]),
            required=tuple(data.get("required") or ()),
            optional=tuple(data.get("optional") or ()),
        )


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected a bool (true or false), got {value!r}")


def _to_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip(), 0)
        except ValueError:
            pass
    raise ValueError(f"expected an integer, got {value!r}")


def _to_float(value: Any) -> float:
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise ValueError(f"expected a number, got {value!r}")
    return number


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a string, got {value!r}")


def _to_path(value: Any) -> Path:
    if isinstance(value, (str, Path)) and str(value).strip() and "\0" not in str(value):
        return Path(value)
    raise ValueError(f"expected a path, got {value!r}")


def _to_list(value: Any) -> list[str]:
    """A list of strings; a string is split as a shell splits it (tvmc sends text)."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot split {value!r}: {exc}") from None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise ValueError(f"expected a list of strings, got {value!r}")


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "str": _to_str,
    "path": _to_path,
    "list": _to_list,
}


def check_options(
    declared: Sequence[ProjectOption], method: str, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The options `method` takes among `given`, converted to their types, defaults
    filled in; raises InvalidParams naming the option. Options of other methods are let
    through unread, as TVM sends every option to every method; names none of `declared`
    has are refused."""
    by_name = {option.name: option for option in declared}
    unknown = sorted(name for name in given if name not in by_name)
    if unknown:
        known = ", ".join(by_name) or "none"
        raise InvalidParams(f"{method}: no option {', '.join(unknown)}; options: {known}")
    values: dict[str, Any] = {}
    for option in declared:
        if not option.accepted_by(method):
            continue
        value = given.get(option.name)
        if value is None:
            if option.default is None and method in option.required:
                raise InvalidParams(f"{method}: option {option.name} is required")
            values[option.name] = option.default
            continue
        try:
            values[option.name] = option.convert(value)
        except ValueError as exc:
            raise InvalidParams(f"{method}: option {option.name}: {exc}") from None
    return values


# -- methods ---------------------------------------------------------------------------

_NONE = type(None)


@dataclass(frozen=True)
class Param:
    """A parameter of a method: its name and the JSON types it takes."""

    name: str
    types: tuple[type, ...]
    describe: str


_OPTIONS = Param("options", (dict,), "an object of project options")
_TIMEOUT = Param("timeout_sec", (int, float, _NONE), "seconds, or null to wait without limit")

# Every method, with its parameters in order (by-position params follow this order).
METHODS: dict[str, tuple[Param, ...]] = {
    "server_info_query": (Param("tvm_version", (str,), "a string"),),
    "generate_project": (
        Param("model_library_format_path", (str,), "a path"),
        Param("standalone_crt_dir", (str, _NONE), "a path or null"),
        Param("project_dir", (str,), "a path"),
        _OPTIONS,
    ),
    "build": (_OPTIONS,),
    "flash": (_OPTIONS,),
    "open_transport": (_OPTIONS,),
    "close_transport": (),
    "read_transport": (Param("n", (int,), "a positive integer"), _TIMEOUT),
    "write_transport": (Param("data", (str,), "Base85 text"), _TIMEOUT),
}
OPTION_METHODS = tuple(
    name for name, params in METHODS.items() if any(p.name == "options" for p in params)
)


class Handler(Protocol):
    """What does the work behind the server, called as TVM's server calls its handler.
    Parameters arrive checked and converted (paths as `Path`, transport data as bytes);
    `options` arrives as the client sent it, for the handler to check (`check_options`).
    `server_info_query` lists the handler's options under `project_options`
    (`ProjectOption`s or their JSON). Raise `ServerError` subclasses, `InvalidParams`
    for options the handler cannot take, or errors the server's `describe` accepts."""

    def server_info_query(self, tvm_version: str) -> dict[str, Any]: ...

    def generate_project(
        self,
        model_library_format_path: Path,
        standalone_crt_dir: Path | None,
        project_dir: Path,
        options: dict[str, Any],
    ) -> Any: ...

    def build(self, options: dict[str, Any]) -> Any: ...

    def flash(self, options: dict[str, Any]) -> Any: ...

    def open_transport(self, options: dict[str, Any]) -> dict[str, Any]: ...

    def close_transport(self) -> None: ...

    def read_transport(self, n: int, timeout_sec: float | None) -> bytes: ...

    def write_transport(self, data: bytes, timeout_sec: float | None) -> None: ...


def _no_description(exc: BaseException) -> dict[str, Any] | None:
    return None


@dataclass
class Server:
    """Turns request lines into reply lines around a `Handler`.

    `describe` names the handler's own expected errors: for an exception it returns the
    `data` of a -32000 reply (its message is the exception's class name), or None for an
    unexpected one, which becomes TVM's plain -32000 `ServerError` (`calling method
    NAME`) with its traceback.
    """

    handler: Handler
    describe: Callable[[BaseException], dict[str, Any] | None] = _no_description

    def serve(self, read_file: BinaryIO, write_file: BinaryIO) -> None:
        """Answer requests until `read_file` ends."""
        while True:
            line = read_file.readline(MAX_LINE)
            if not line:
                return
            if len(line) >= MAX_LINE and not line.endswith(b"\n"):
                while (rest := read_file.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
                reply = _encode(
                    _error_reply(None, ParseError(f"request line longer than {MAX_LINE} bytes"))
                )
            else:
                reply = self.handle_line(line)
            write_file.write(reply)
            write_file.flush()

    def handle_line(self, line: bytes) -> bytes:
        """The reply line to one request line."""
        try:
            message = _parse(line)
        except ParseError as exc:
            log.warning("unreadable request: %s", exc.message)
            return _encode(_error_reply(None, exc))
        return _encode(self.handle(message))

    def handle(self, message: Any) -> Any:
        """The reply to a parsed request, or to a batch (a list) of them."""
        if isinstance(message, list):
            if not message:
                return _error_reply(None, InvalidRequest("an empty batch is not a request"))
            return [self._one(item) for item in message]
        return self._one(message)

    def _one(self, request: Any) -> dict[str, Any]:
        try:
            method, params, request_id = _check_request(request)
        except InvalidRequest as exc:
            request_id = request.get("id") if isinstance(request, dict) else None
            return _error_reply(request_id if _valid_id(request_id) else None, exc)
        log.info("request %s (id %r)", method, request_id)
        try:
            result = self._dispatch(method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except RPCError as exc:
            log.warning("%s failed: %s", method, exc)
            return _error_reply(request_id, exc)
        except Exception as exc:
            return _error_reply(request_id, self._server_error(method, exc))
        try:
            _line(reply)
        except (TypeError, ValueError) as exc:  # a result that cannot travel: our bug
            log.error("%s: the result cannot travel", method, exc_info=exc)
            return _error_reply(request_id, InternalError(f"method {method}: result: {exc}"))
        return reply

    def _server_error(self, method: str, exc: Exception) -> RPCError:
        data = self.describe(exc)
        if data is not None:
            log.warning("%s failed: %s: %s", method, type(exc).__name__, exc)
            return RemoteError(type(exc).__name__, data)
        log.error("%s failed unexpectedly", method, exc_info=exc)
        trace = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return RemoteError(
            f"calling method {method}",
            {"message": f"{type(exc).__name__}: {exc}", "traceback": "".join(trace)},
        )

    def _dispatch(self, method: str, params: Any) -> Any:
        if method not in METHODS:
            raise MethodNotFound(f"{method}: no such method; methods: {', '.join(METHODS)}")
        values = _bind(method, params)
        handler = self.handler
        if method == "server_info_query":
            info = dict(handler.server_info_query(values["tvm_version"]))
            info.setdefault("protocol_version", PROTOCOL_VERSION)  # as TVM's server
            info["project_options"] = [
                option.to_json() if isinstance(option, ProjectOption) else option
                for option in info.get("project_options") or ()
            ]
            return info
        # The options go to the handler as they came, which is the one to judge them.
        if method == "generate_project":
            crt = values["standalone_crt_dir"]
            return handler.generate_project(
                _path(values, "model_library_format_path"),
                None if crt is None else _path(values, "standalone_crt_dir"),
                _path(values, "project_dir"),
                values["options"],
            )
        if method == "build":
            return handler.build(options=values["options"])  # by name, as TVM's server
        if method == "flash":
            return handler.flash(options=values["options"])
        if method == "open_transport":
            return {"timeouts": handler.open_transport(values["options"])}
        if method == "close_transport":
            handler.close_transport()
            return None
        timeout = _timeout(values["timeout_sec"])
        if method == "read_transport":
            if not 1 <= values["n"] <= MAX_READ:
                raise InvalidParams(
                    f"read_transport: n is from 1 to {MAX_READ} (bytes), got {values['n']}"
                )
            data = handler.read_transport(values["n"], timeout)
            return {"data": base64.b85encode(data).decode("ascii")}
        handler.write_transport(_b85decode(values["data"]), timeout)
        return None


def fd_problem(read_fd: int | None, write_fd: int | None) -> str | None:
    """What is wrong with the file descriptors a server is told to use, or None."""
    if (read_fd is None) != (write_fd is None):
        return "--read-fd and --write-fd go together"
    if read_fd is not None and read_fd == write_fd:
        return (
            f"--read-fd and --write-fd are both {read_fd}: requests come in on one pipe and "
            "replies go out on another"
        )
    for fd in (read_fd, write_fd):
        if fd is not None:
            try:
                os.fstat(fd)
            except OSError:
                return f"file descriptor {fd} is not open"
    return None


def serve_on(server: Server, read_fd: int | None = None, write_fd: int | None = None) -> None:
    """Answer requests from `read_fd` on `write_fd` (default: stdin and stdout) until the
    client closes its end or SIGTERM or SIGHUP comes (SystemExit 128 + the signal), then
    close any open transport. While serving on stdout, anything else printed goes to
    stderr, so nothing but replies reaches the reply stream."""
    if read_fd is None or write_fd is None:
        read_fd, write_fd = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    previous = {sig: signal.signal(sig, _terminate) for sig in TERMINATING}
    try:
        with os.fdopen(read_fd, "rb") as requests, os.fdopen(write_fd, "wb") as replies:
            server.serve(requests, replies)
    except BrokenPipeError:
        log.info("the client closed its end")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        try:
            server.handler.close_transport()
        except Exception as exc:  # ending anyway: say so, and let the first error through
            log.warning("could not close the transport: %s", exc)


TERMINATING = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end memplace as Ctrl-C does: every child it started is stopped first."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _parse(line: bytes) -> Any:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"request is not UTF-8: {exc}") from None
    if not text.strip():
        raise ParseError("empty line: a request is one JSON object")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"request is not JSON: {exc}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _valid_id(value: Any) -> bool:
    # JSON's 1e400 reads as infinity, which no reply can carry back.
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


_METHOD_NAME = re.compile("^[a-zA-Z0-9_]+$")


def _check_request(request: Any) -> tuple[str, Any, Any]:
    """(method, params, id) of a valid request object. The messages are TVM's."""
    if not isinstance(request, dict):
        raise InvalidRequest(f"request: want dict; got {request!r}")
    jsonrpc = request.get("jsonrpc")
    if jsonrpc != "2.0":
        raise InvalidRequest(f'request["jsonrpc"]: want "2.0"; got {jsonrpc!r}')
    method = request.get("method")
    if not isinstance(method, str):
        raise InvalidRequest(f'request["method"]: want str; got {method!r}')
    if not _METHOD_NAME.match(method):
        raise InvalidRequest(
            f'request["method"]: should match regex {_METHOD_NAME.pattern}; got {method!r}'
        )
    if not _valid_id(request.get("id")):
        raise InvalidRequest(f'request["id"]: want str, number, null; got {request["id"]!r}')
    params = request.get("params", {})
    if not isinstance(params, (dict, list)):  # by name (TVM), or by position
        raise InvalidRequest(f'request["params"]: want dict; got {type(params)}')
    return method, params, request.get("id")


def _bind(method: str, params: dict[str, Any] | list[Any]) -> dict[str, Any]:
    """The parameters of `method` by name, each checked against its type."""
    signature = METHODS[method]
    if isinstance(params, list):
        if len(params) > len(signature):
            raise InvalidParams(f"{method} takes {len(signature)} parameters, got {len(params)}")
        params = {param.name: value for param, value in zip(signature, params)}
    names = [param.name for param in signature]
    extra = sorted(name for name in params if name not in names)
    if extra:
        raise InvalidParams(
            f"{method}: extra parameters: {', '.join(extra)}; it takes: {', '.join(names)}"
        )
    values: dict[str, Any] = {}
    for param in signature:
        if param.name not in params:
            if _NONE in param.types:
                values[param.name] = None
                continue
            raise InvalidParams(f"method {method}: parameter {param.name} not given")
        value = params[param.name]
        if isinstance(value, bool) or not isinstance(value, param.types):
            want = repr(param.types[0]) if len(param.types) == 1 else param.describe
            raise InvalidParams(
                f"method {method}: parameter {param.name}: want {want}, got {type(value)!r} "
                f"({param.name} is {param.describe}, got {value!r})"
            )
        values[param.name] = value
    return values


def _path(values: Mapping[str, Any], name: str) -> Path:
    try:
        return _to_path(values[name])
    except ValueError as exc:
        raise InvalidParams(f"parameter {name}: {exc}") from None


def _timeout(value: float | None) -> float | None:
    # Compared, not converted: an integer too big for a float must not raise here, and
    # infinity (JSON's 1e400) fails the comparison like any other out-of-range value.
    if value is not None and not 0 <= value <= MAX_TIMEOUT:
        raise InvalidParams(
            f"timeout_sec is from 0 to {MAX_TIMEOUT} (seconds), or null to wait without "
            f"limit; got {value!r}"
        )
    return None if value is None else float(value)


def _b85decode(text: str) -> bytes:
    try:
        return base64.b85decode(text)
    except (ValueError, binascii.Error) as exc:
        raise InvalidParams(f"write_transport: data is not Base85: {exc}") from None


def _error_reply(request_id: Any, error: RPCError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


def _line(reply: Any) -> bytes:
    return (json.dumps(reply, allow_nan=False) + "\n").encode("utf-8")


def _encode(reply: Any) -> bytes:
    try:
        return _line(reply)
    except (TypeError, ValueError) as exc:  # never the end of the server: say what failed
        log.error("a reply cannot travel", exc_info=exc)
        error = InternalError(f"the reply cannot be written as JSON: {exc}")
        return (json.dumps(_error_reply(None, error)) + "\n").encode("utf-8")
