"""Workload files (YAML or JSON, `workload/v1`), read as they are: `Workload.from_file`.

Its importer also reads a file whose suffix no other importer claims."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memplace.errors import InputError
from memplace.importers.registry import WORKLOAD_FILE, Importer
from memplace.workload import Workload

if TYPE_CHECKING:
    from memplace.board import Board


def read_workload_file(path: Path, board: Board | None, data_root: Path | None) -> Workload:
    if not path.is_file():
        raise InputError(f"no workload file at {path}", key="WORKLOAD")
    return Workload.from_file(path, data_root)


IMPORTER = Importer(
    name=WORKLOAD_FILE,
    suffixes=(".yaml", ".yml", ".json"),
    describes="a workload file",
    read=read_workload_file,
)
