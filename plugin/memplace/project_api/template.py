"""A template project folder for microTVM: `memplace template BOARD --out DIR`.

TVM finds a template's server as `DIR/microtvm_api_server.py` and launches it with its
own Python (`TemplateProject.from_directory`, `tvmc micro create-project`). The script
(`firmware_templates/project_api/template_server.py`, copied byte for byte) runs
`memplace serve --board BOARD` with the Python that wrote the folder;
`memplace_template.json` names both.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from memplace import resources
from memplace.board import load_board
from memplace.codegen.server import SCRIPT
from memplace.errors import InputError

CONFIG = "memplace_template.json"
VERSION = "template/v1"


def write_template(board: str, out: Path) -> dict[str, str]:
    """Write the template folder for `board` (a bundled name or a board file) to `out`,
    which must not exist or be empty; the files written, by name. A board file is named
    by its absolute path, so the folder works from anywhere."""
    loaded = load_board(board)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file, not a folder", key="--out")
    if out.is_dir() and any(out.iterdir()):
        raise InputError(f"{out} is not empty; a template is written to a new folder", key="--out")
    named = str(Path(board).resolve()) if Path(board).is_file() else loaded.name
    config = {"memplace": VERSION, "board": named, "python": sys.executable}
    script = resources.data_dir("firmware_templates") / "project_api" / "template_server.py"
    files = {
        SCRIPT: script.read_text(encoding="utf-8"),
        CONFIG: json.dumps(config, indent=2) + "\n",
    }
    # Written whole or not at all: a folder beside `out`, renamed onto it (absent or empty).
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:  # say what the user named, not the scratch folder's name
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    try:
        for name, text in files.items():
            (scratch / name).write_text(text, encoding="utf-8")
        (scratch / SCRIPT).chmod(0o755)
        umask = os.umask(0)
        os.umask(umask)
        scratch.chmod(0o777 & ~umask)
        os.replace(scratch, out)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return files
