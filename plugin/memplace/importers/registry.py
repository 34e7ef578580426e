"""The importers: one record per kind of file a WORKLOAD argument may name.

Each module of `memplace.importers` that turns files into workloads declares one `Importer`
as its `IMPORTER`: its name, the suffixes it claims, how the CLI's help and the docs say
what it reads, and its reader. A reader takes the path (and the board, when known) and
returns the workload, whose `origin` is what it was read from (the model, the archive), so
nothing later reads the file again. The registry is found on first use, by looking in the
package, so adding an importer is adding its module (with its tests and its docs): nothing
else names it. `register` adds one from outside (a plugin, a test).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memplace.errors import InputError

if TYPE_CHECKING:
    from memplace.board import Board
    from memplace.workload import Workload

WORKLOAD_FILE = "workload"
"""The importer of workload files, which also reads a file of a suffix no importer claims."""


class Reader(Protocol):
    """Reads the file (or folder) at `path` into a workload that carries its origin.

    `board`, when known, is the board the workload is for (an importer may pin buffers to
    its pools); `data_root` is the folder data files may come from (None: the file's own).
    Every problem with the file is an `InputError` naming it."""

    def __call__(self, path: Path, board: Board | None, data_root: Path | None, /) -> Workload: ...


@dataclass(frozen=True)
class Importer:
    """One kind of input: what it is called, which files are its, and how it is read."""

    name: str
    suffixes: tuple[str, ...]  # lower case, with the dot: ".tflite", ".tar.gz"
    describes: str  # for the CLI's help and the docs: "a TFLite model"
    read: Reader
    folder: Callable[[Path], bool] | None = None  # whether a folder is one of its inputs
    project_type: str = "exerciser"  # what `generate` writes for its workloads by default
    frontend: str | None = None  # chosen by `--frontend NAME` alone, never by suffix

    def claim(self, path: Path) -> int:
        """How strongly it claims `path`: 0 not at all, else the length of the longest of
        its suffixes the name ends with; a folder it recognises, more than any suffix."""
        if self.frontend is not None:
            return 0
        if path.is_dir():
            return 1_000 if self.folder is not None and self.folder(path) else 0
        name = path.name.lower()
        return max((len(suffix) for suffix in self.suffixes if name.endswith(suffix)), default=0)

    @property
    def formats(self) -> str:
        """What it reads, for people: "a TFLite model (.tflite)"."""
        folder = ", or its unpacked folder" if self.folder is not None else ""
        return f"{self.describes} ({', '.join(self.suffixes)}{folder})"


_found: dict[str, Importer] = {}
_added: dict[str, Importer] = {}


def importers() -> dict[str, Importer]:
    """Every importer by name: those of this package's modules, in the order of their names,
    then those `register`ed."""
    if not _found:
        package = importlib.import_module("memplace.importers")
        for module in sorted(info.name for info in pkgutil.iter_modules(package.__path__)):
            if module.startswith("_") or module == "registry":
                continue
            loaded = importlib.import_module(f"memplace.importers.{module}")
            record = getattr(loaded, "IMPORTER", None)
            if isinstance(record, Importer):
                _found[record.name] = record
    return {**_found, **_added}


@contextmanager
def register(importer: Importer) -> Iterator[Importer]:
    """`importer` in the registry while the `with` block runs."""
    known = importers()
    if importer.name in known:
        raise ValueError(f"an importer named {importer.name!r} is registered already")
    _added[importer.name] = importer
    try:
        yield importer
    finally:
        del _added[importer.name]


def importer_for(path: Path, frontend: str | None = None) -> Importer:
    """The importer of `path`: the one `frontend` names, else the one whose folder test or
    longest suffix claims it, else the workload file's."""
    known = importers()
    if frontend is not None:
        chosen = [i for i in known.values() if i.frontend == frontend]
        if not chosen:
            fronts = sorted(i.frontend for i in known.values() if i.frontend)
            raise InputError(
                f"no frontend {frontend!r}; choose from {', '.join(fronts) or 'none'}",
                key="--frontend",
            )
        return chosen[0]
    best = max(known.values(), key=lambda importer: importer.claim(path))
    return best if best.claim(path) else known[WORKLOAD_FILE]


def frontends() -> dict[str, Importer]:
    """The importers `--frontend` chooses, by frontend name."""
    return {i.frontend: i for i in importers().values() if i.frontend is not None}


def formats_text() -> str:
    """What a WORKLOAD argument may name, in a sentence (the CLI's help)."""
    known = sorted(importers().values(), key=lambda i: i.name != WORKLOAD_FILE)
    by_suffix = [i.formats for i in known if i.frontend is None]
    text = ", ".join(by_suffix[:-1]) + (" or " if len(by_suffix) > 1 else "") + by_suffix[-1]
    for importer in known:
        if importer.frontend is not None:
            text += f"; with --frontend {importer.frontend}, {importer.formats}"
    return text
