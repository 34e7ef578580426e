"""Putting a rendered project on disk, and reading one back.

The writer is all or nothing: files are written to a scratch folder beside the project and
moved into place only when every one was written. It refuses to overwrite a file the user
has edited since memplace wrote it, unless told to (`force`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memplace.board import Board
from memplace.errors import InputError, ToolError
from memplace.imagemap import ImageMap
from memplace.planner.model import Plan
from memplace.project_files import IMAGE_MAP, MANIFEST, PROJECT_VERSION, USER_OWNED

# What memplace wrote last time, so that a user's edits can be told apart from ours.
WRITTEN = ".memplace-written.json"
LOCK = ".memplace.lock"
"""Held (flock) by the command that writes, builds or runs in a project folder."""
LOCK_WAIT = 10.0
"""Seconds a command waits for another one to be done with the folder before refusing."""
SCRATCH = "memplace-scratch-"
"""Part of the name of the scratch folder a write fills beside the project."""

_held: dict[Path, int] = {}


@contextlib.contextmanager
def locked(folder: Path, wait: float | None = None) -> Iterator[None]:
    """Hold the folder for one command: a second one waits up to `wait` seconds (default
    LOCK_WAIT), then is refused. Holding it again in the same process nests. A folder this
    creates and leaves empty (the command failed before writing) is removed again."""
    key = folder.absolute()
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _acquire(fd, folder, LOCK_WAIT if wait is None else wait)
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]
            if created and [p.name for p in folder.iterdir()] == [LOCK]:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)


def _acquire(fd: int, folder: Path, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise ToolError(
                    f"{folder} is in use by another memplace command (waited {wait:g} s); "
                    "run this one when it is done"
                ) from None
            time.sleep(0.05)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_project(files: Mapping[str, str | bytes], out: Path, force: bool = False) -> list[Path]:
    """Write `files` (text, or bytes as they are) under `out`, and remove the files
    memplace wrote there before and no longer writes; returns the paths written.

    Killed at any point, it leaves a folder the next run accepts: the record of what
    memplace wrote (WRITTEN) first takes both the old and the new digest of every file,
    then the files move into place, then the record keeps only the new ones. Scratch
    folders of killed runs are removed by the next."""
    with locked(out):
        # Files the user owns are written only where missing, and never recorded as ours.
        files = {
            relative: content
            for relative, content in files.items()
            if relative not in USER_OWNED or not (out / relative).exists()
        }
        previous = _previously_written(out)
        stale = sorted(set(previous) - set(files))
        if not force:
            ours = [relative for relative in sorted(files) if relative not in USER_OWNED]
            _refuse_edited(out, [*ours, *stale], previous)
        _remove_scratch(out)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.{SCRATCH}", dir=out.parent))
        try:
            for relative, content in files.items():
                path = scratch / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, str):
                    path.write_text(content, encoding="utf-8")
                else:
                    path.write_bytes(content)
            record = {
                relative: _digest(_bytes(content))
                for relative, content in files.items()
                if relative not in USER_OWNED
            }
            moving = {
                relative: sorted({*previous.get(relative, ()), record.get(relative, "")} - {""})
                for relative in sorted({*record, *previous})
            }
            _write_record(out, moving)
            for relative in files:
                target = out / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(scratch / relative, target)
            for relative in stale:
                (out / relative).unlink(missing_ok=True)
            _write_record(out, record)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [out / relative for relative in files]


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _refuse_edited(out: Path, relatives: Sequence[str], previous: Mapping[str, list[str]]) -> None:
    for relative in relatives:
        target = out / relative
        if target.exists() and _digest(target.read_bytes()) not in previous.get(relative, ()):
            raise InputError(
                f"{target} was changed since memplace wrote it; pass --force to overwrite it",
                key="--out",
            )


def _write_record(out: Path, record: Mapping[str, str | list[str]]) -> None:
    """Replace the record of what memplace wrote in one step (write, then rename)."""
    text = json.dumps(dict(record), indent=2, sort_keys=True) + "\n"
    partial = out / f"{WRITTEN}.partial"
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, out / WRITTEN)


def _remove_scratch(out: Path) -> None:
    """Scratch folders a killed write left beside `out` (the lock says none is in use)."""
    for leftover in out.parent.glob(f".{out.name}.{SCRATCH}*"):
        shutil.rmtree(leftover, ignore_errors=True)


def _previously_written(out: Path) -> dict[str, list[str]]:
    """Per file, the digests memplace may have left it with: one, or two while a write was
    under way."""
    try:
        data = json.loads((out / WRITTEN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(relative): [digest] if isinstance(digest, str) else list(digest)
        for relative, digest in data.items()
    }


@dataclass(frozen=True)
class Project:
    """A generated project as `memplace.json` describes it, with where its images put
    their bytes (`image_map`, from IMAGE_MAP; None in a project generated before memplace
    kept it)."""

    folder: Path
    project_type: str
    board: Board
    plan: Plan
    images: Mapping[str, Path]
    checksums: Mapping[str, int]
    image_map: ImageMap | None = None

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
                board=Board.from_resolved(data["board"], source=str(path)),
                plan=Plan.from_json(data["plan"]),
                images={core: folder / elf for core, elf in data["images"].items()},
                checksums=data.get("checksums", {}),
                image_map=_image_map(folder / IMAGE_MAP),
            )
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path} is missing {exc}", key="memplace") from exc

    def only(self, core: str) -> Project:
        """The same project, checked for the image of one core only (with every core that
        runs that image too)."""
        if core not in self.images:
            raise InputError(
                f"no core {core!r}; the project has {', '.join(self.images)}", key="--core"
            )
        image = self.images[core]
        return replace(self, images={c: p for c, p in self.images.items() if p == image})

    @property
    def qemu_machine(self) -> str | None:
        return self.board.qemu_machine


def _image_map(path: Path) -> ImageMap | None:
    """The project's image map, if it keeps one."""
    if not path.is_file():
        return None
    try:
        return ImageMap.from_data(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"{path} is not an image map memplace wrote ({exc}); regenerate the project",
            key="DIR",
        ) from exc
