"""Unpacking a tar archive into a project without letting it write anywhere else."""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath

from memplace.errors import InputError


def unpack_archive(archive: Path, into: Path, key: str = "extra_files_tar") -> list[Path]:
    """Unpack the tar archive `archive` (compressed or not) into the folder `into`.

    Every member is checked before anything is written: it must stay inside `into`, be a
    plain file or folder (no links, devices or pipes) and not replace a file already
    there. Returns the files written."""
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            root = into.resolve()
            targets = [_target(member, root, archive, key) for member in members]
            written: list[Path] = []
            for member, target in zip(members, targets, strict=True):
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                source = tar.extractfile(member)
                if source is None:
                    raise InputError(f"{archive}: cannot read member {member.name!r}", key=key)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with source, target.open("xb") as out:
                        out.write(source.read())
                except FileExistsError:
                    raise InputError(
                        f"{archive}: member {member.name!r} would replace {target}", key=key
                    ) from None
                written.append(target)
    except (OSError, tarfile.TarError) as exc:
        raise InputError(f"cannot unpack {archive}: {exc}", key=key) from exc
    return written


def _target(member: tarfile.TarInfo, root: Path, archive: Path, key: str) -> Path:
    """Where `member` would land under `root`; refuses what must not be unpacked."""
    name = PurePosixPath(member.name)
    if name.is_absolute() or member.name.startswith(("/", "\\")):
        raise InputError(f"{archive}: member {member.name!r} is an absolute path", key=key)
    if not (member.isfile() or member.isdir()):
        kind = "a link" if member.issym() or member.islnk() else "not a file or folder"
        raise InputError(f"{archive}: member {member.name!r} is {kind}", key=key)
    target = (root / name).resolve()
    if target != root and root not in target.parents:
        raise InputError(f"{archive}: member {member.name!r} would land outside {root}", key=key)
    return target
