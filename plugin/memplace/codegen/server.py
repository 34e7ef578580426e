"""The files of the Project API server a generated project carries: the script microTVM
looks for (`microtvm_api_server.py`), byte copies of the standard-library modules it runs
on (`memplace/carried/`, read as plain files, not imported) and
`project_api/project.json`, which tells them what memplace knows of the project.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memplace import resources

SCRIPT = "microtvm_api_server.py"
PACKAGE = "project_api"
DESCRIPTION = f"{PACKAGE}/project.json"
# Where the carried modules live in memplace: a folder of plain files to copy.
CARRIED_DIR = Path(__file__).resolve().parent.parent / "carried"

Describe = Callable[[Mapping[str, str]], Mapping[str, Any]]
"""What makes the content of `project.json` from the project's images (by core, relative
to the project, the booting core first)."""


def carried_modules() -> tuple[str, ...]:
    """The file names of the modules a project carries, sorted."""
    return tuple(sorted(p.name for p in CARRIED_DIR.glob("*.py") if p.name != "__init__.py"))


def server_files(images: Mapping[str, str], describe: Describe) -> dict[str, str]:
    """The files, by path in the project, that let a project serve itself."""
    templates = resources.data_dir("firmware_templates") / PACKAGE
    files = {
        SCRIPT: (templates / SCRIPT).read_text(encoding="utf-8"),
        f"{PACKAGE}/__init__.py": (templates / "__init__.py").read_text(encoding="utf-8"),
    }
    for name in carried_modules():
        files[f"{PACKAGE}/{name}"] = (CARRIED_DIR / name).read_text(encoding="utf-8")
    files[DESCRIPTION] = json.dumps(describe(images), indent=2) + "\n"
    return files
