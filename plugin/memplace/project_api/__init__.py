"""The Project API: memplace as a template project for a compiler driver, in the style of
microTVM's Project API (JSON-RPC 2.0, one JSON object per line).

The protocol, its client and the server a generated project runs are in `memplace.carried`
(`server`, `client`, `transport`, `processes`, `build` and `standalone`: standard library
only, Python 3.8); a generated project carries copies of them (`standalone` is the server
they make; `carry` describes the project to it). `handler` puts memplace behind the
server (`memplace serve`); import it from there, as it brings in the rest of memplace.
"""

from memplace.carried.client import Client, ProtocolError, ServerProcess
from memplace.carried.server import (
    PROTOCOL_VERSION,
    InternalError,
    InvalidParams,
    InvalidRequest,
    IoTimeoutError,
    MethodNotFound,
    ParseError,
    ProjectOption,
    RemoteError,
    RPCError,
    Server,
    ServerError,
    TransportClosedError,
    UnsupportedTVMVersionError,
)

__all__ = [
    "PROTOCOL_VERSION",
    "Client",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "IoTimeoutError",
    "MethodNotFound",
    "ParseError",
    "ProjectOption",
    "ProtocolError",
    "RPCError",
    "RemoteError",
    "Server",
    "ServerError",
    "ServerProcess",
    "TransportClosedError",
    "UnsupportedTVMVersionError",
]
