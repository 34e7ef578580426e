"""The Project API modules a generated project carries: the protocol (`server`), its
client, the console transport, the process wrapper, the build routine and the server a
project runs (`standalone`).

Standard library only, and Python 3.8 or newer: TVM runs a generated project's server
with its own Python. Codegen copies these files byte for byte into each project's
`project_api/` folder (`memplace.codegen.server`), where they import one another
relatively; `make test` checks both rules (tests/test_project_api_carried.py).
"""
