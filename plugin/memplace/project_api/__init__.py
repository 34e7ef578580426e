"""The Project API: memplace as a template project for a compiler driver, in the style of
microTVM's Project API (JSON-RPC 2.0, one JSON object per line).

`server`, `client`, `transport`, `processes` and `standalone` use only the standard
library: a generated project carries copies of them (`carry` writes them, and
`standalone` is the server they make). `handler` puts memplace behind the server
(`memplace serve`); import it from there, as it brings in the rest of memplace.
"""

from memplace.project_api.client import Client, ProtocolError, ServerProcess
from memplace.project_api.server import (
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
