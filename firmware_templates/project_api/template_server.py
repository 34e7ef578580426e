"""A memplace template project, where microTVM looks for a template's server.

    python3 microtvm_api_server.py [--read-fd N --write-fd M] [--debug]

`memplace template BOARD --out DIR` wrote this folder: TVM's
`TemplateProject.from_directory(DIR)` and `tvmc micro create-project` launch this file
with their own Python, which need not have memplace. It runs `memplace serve --board
BOARD` with the Python that wrote the folder (both named in `memplace_template.json`,
beside this file), on the same file descriptors: generate_project then plans the model
on the board and writes a project that carries its own server.
"""

import json
import os
import sys
from pathlib import Path

CONFIG = "memplace_template.json"
VERSION = "template/v1"

if __name__ == "__main__":
    path = Path(__file__).resolve().parent / CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        if config.get("memplace") != VERSION:
            raise ValueError("not a " + VERSION + " file")
        python, board = str(config["python"]), str(config["board"])
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        print("microtvm_api_server.py: " + str(path) + ": " + str(exc), file=sys.stderr)
        sys.exit(2)
    if not os.access(python, os.X_OK):
        print(
            "microtvm_api_server.py: the Python with memplace, " + python + ", is gone; "
            "write the template again with `memplace template`",
            file=sys.stderr,
        )
        sys.exit(2)
    argv = [python, "-m", "memplace.cli", "serve", "--board", board, *sys.argv[1:]]
    os.execv(python, argv)  # the pipes TVM passed stay open across exec
