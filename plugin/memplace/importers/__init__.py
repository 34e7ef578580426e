"""Front ends: workload files and models turned into workloads.

`load_workload` reads what a WORKLOAD argument names through the importer that claims it
(`registry`: one record per importer, each in its module: `workload_file`, `tflite`,
`mlf`, `relax`); the workload it returns carries what it was read from as its `origin`.
`import_model` reads a TFLite model into a `Workload` in memory (what a WORKLOAD argument
naming a `.tflite` file gets); `import_to_file` writes it as a workload file with its
weights as data files beside it (`memplace import`), all or nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memplace.errors import InputError
from memplace.importers.mlf import ModelArchive
from memplace.importers.registry import Importer, importer_for, importers, register
from memplace.importers.relax import RelaxModel
from memplace.workload import Workload

if TYPE_CHECKING:
    from memplace.board import Board
    from memplace.importers.tflite import Model

__all__ = [
    "Imported",
    "Importer",
    "Model",
    "ModelArchive",
    "data_dir_for",
    "import_model",
    "import_to_file",
    "importer_for",
    "importers",
    "load_workload",
    "model_code",
    "read_model",
    "register",
]


def __getattr__(name: str) -> object:
    if name == "Model":
        from memplace.importers import tflite

        return tflite.Model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_workload(
    path: str | Path,
    data_root: str | Path | None = None,
    board: Board | None = None,
    frontend: str | None = None,
) -> Workload:
    """What the file (or folder) at `path` holds, as a workload, read by the importer that
    claims it (or that `frontend` names): a workload file (YAML or JSON), a model such as a
    `.tflite` file, an MLF archive. `data_root` is the folder `data_file`s may come from
    (default: the file's own); `board`, when known, pins an MLF archive's memory pools to
    the board's pools of the same names."""
    path = Path(path)
    root = None if data_root is None else Path(data_root)
    return importer_for(path, frontend).read(path, board, root)


def model_code(workload: Workload) -> ModelArchive | RelaxModel | None:
    """The model whose code a generated project compiles and runs (an MLF archive, a Relax
    model): the workload's origin, when it is one."""
    origin = workload.origin
    return origin if isinstance(origin, ModelArchive | RelaxModel) else None


def read_model(path: Path) -> Model:
    """The TFLite model at `path` (what `memplace import` reads)."""
    from memplace.importers.tflite import IMPORTER, read_tflite

    if not path.name.lower().endswith(IMPORTER.suffixes):
        raise InputError(
            f"memplace imports {', '.join(IMPORTER.suffixes)} models, "
            f"not {path.suffix or path.name!r}",
            key=str(path),
        )
    if not path.is_file():
        raise InputError(f"no model file at {path}", key="MODEL")
    return read_tflite(path)


def import_model(path: Path) -> Workload:
    """A model as a workload, its weights' bytes held in memory."""
    return read_model(path).workload(base_dir=path.parent)


@dataclass(frozen=True)
class Imported:
    """What `import_to_file` wrote."""

    model: Model
    workload: Path
    data_dir: Path


def data_dir_for(out: Path) -> Path:
    """Where the weights of workload file `out` go: `<stem>.data/` beside it."""
    return out.with_name(f"{out.stem}.data")


def import_to_file(model_path: Path, out: Path, force: bool = False) -> Imported:
    """Write the model's workload to `out` and its weights to `<stem>.data/` beside it.

    Everything is written to a scratch folder next to `out`, read back as a workload, and
    only then moved into place; on any error nothing is left behind. Existing outputs are
    replaced only with `force`."""
    model = read_model(model_path)
    data_dir = data_dir_for(out)
    _check_outputs(out, data_dir, force)
    scratch = Path(tempfile.mkdtemp(prefix=".memplace-import-", dir=out.parent))
    try:
        new_data = scratch / data_dir.name
        new_data.mkdir()
        for weight in model.weights:
            (new_data / f"{weight.name}.bin").write_bytes(weight.data)
        new_workload = scratch / out.name
        new_workload.write_text(model.yaml(data_dir.name), encoding="utf-8")
        Workload.from_file(new_workload)  # what was written reads back
        _commit(scratch, new_data, data_dir, new_workload, out)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror}", key="--out") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Imported(model, out, data_dir)


def _check_outputs(out: Path, data_dir: Path, force: bool) -> None:
    if not out.parent.is_dir():
        raise InputError(f"no folder {out.parent} to write {out.name} in", key="--out")
    if out.is_dir():
        raise InputError(f"{out} is a folder; name the workload file to write", key="--out")
    if data_dir.exists() and not data_dir.is_dir():
        raise InputError(f"{data_dir} is in the way of the weights' folder", key="--out")
    if not force:
        for path in (out, data_dir):
            if path.exists():
                raise InputError(f"{path} exists; pass --force to replace it", key="--out")


def _commit(scratch: Path, new_data: Path, data_dir: Path, new_workload: Path, out: Path) -> None:
    """Move the new weights and workload into place, putting the old ones back on failure."""
    old_data = scratch / "replaced"
    if data_dir.exists():
        data_dir.rename(old_data)
    try:
        new_data.rename(data_dir)
        os.replace(new_workload, out)
    except OSError:
        if old_data.exists():
            if data_dir.exists():
                shutil.rmtree(data_dir, ignore_errors=True)
            old_data.rename(data_dir)
        raise
