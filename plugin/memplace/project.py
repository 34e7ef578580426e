"""Putting a rendered project on disk, and reading one back.

The writer is all or nothing: files are written to a scratch folder beside the project and
moved into place only when every one was written. It refuses to overwrite a file the user
has edited since memplace wrote it, unless told to (`force`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memplace.codegen import MANIFEST, PROJECT_VERSION
from memplace.errors import InputError
from memplace.planner.model import Plan

# What memplace wrote last time, so that a user's edits can be told apart from ours.
WRITTEN = ".memplace-written.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_project(files: Mapping[str, str], out: Path, force: bool = False) -> list[Path]:
    """Write `files` under `out`; returns the paths written."""
    previous = _previously_written(out)
    if not force:
        for relative in sorted(files):
            target = out / relative
            if not target.exists():
                continue
            if _digest(target.read_bytes()) != previous.get(relative):
                raise InputError(
                    f"{target} was changed since memplace wrote it; pass --force to overwrite it",
                    key="--out",
                )
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for relative, text in files.items():
            path = scratch / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        record = {relative: _digest(text.encode("utf-8")) for relative, text in files.items()}
        (scratch / WRITTEN).write_text(
            json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        if not out.exists():
            os.replace(scratch, out)
        else:
            for relative in [*files, WRITTEN]:
                target = out / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(scratch / relative, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [out / relative for relative in files]


def _previously_written(out: Path) -> dict[str, str]:
    try:
        data = json.loads((out / WRITTEN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Project:
    """A generated project as `memplace.json` describes it."""

    folder: Path
    project_type: str
    board: Mapping[str, Any]
    plan: Plan
    images: Mapping[str, Path]
    checksums: Mapping[str, int]

    @classmethod
    def load(cls, folder: Path) -> Project:
        path = folder / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"no memplace project here: cannot read {path}", key="DIR") from exc
        except ValueError as exc:
            raise InputError(f"{path} is not valid JSON: {exc}", key="DIR") from exc
        if not isinstance(data, dict) or data.get("memplace") != PROJECT_VERSION:
            raise InputError(f"{path} is not a {PROJECT_VERSION} manifest", key="memplace")
        try:
            return cls(
                folder=folder,
                project_type=data["project_type"],
                board=data["board"],
                plan=Plan.from_json(data["plan"]),
                images={core: folder / elf for core, elf in data["images"].items()},
                checksums=data.get("checksums", {}),
            )
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path} is missing {exc}", key="memplace") from exc

    def only(self, core: str) -> Project:
        """The same project, checked for the image of one core only."""
        if core not in self.images:
            raise InputError(
                f"no core {core!r}; the project has {', '.join(self.images)}", key="--core"
            )
        return replace(self, images={core: self.images[core]})

    @property
    def qemu_machine(self) -> str | None:
        machine = self.board.get("qemu_machine")
        return machine if isinstance(machine, str) else None
