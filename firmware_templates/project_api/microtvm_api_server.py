"""The Project API server of this memplace project, where microTVM looks for one.

    python3 microtvm_api_server.py [--read-fd N --write-fd M]

JSON-RPC 2.0, one JSON object per line, on the two pipes given (or stdin and stdout);
logs go to stderr. It builds this project with CMake and Ninja, runs it under QEMU (the
transport is the firmware's console) or flashes it with the board's own command. It
needs only Python's standard library: the modules it runs on are in `project_api/`,
and `project_api/project.json` describes this project to them (see memplace's
docs/project-api.md).
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    # `python3 -I` leaves this file's folder off sys.path; the modules live beside it.
    HERE = Path(__file__).resolve().parent
    sys.path.insert(0, str(HERE))
    from project_api.standalone import main

    sys.exit(main(HERE))
