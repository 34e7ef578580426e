"""The files a command reads from its user and the files it writes for them.

What memplace reads it reads only from regular files, and only so far: a FIFO would wait
for a writer and a device would never end. What it writes is claimed before any work (not
an input of the same command, not a file memplace did not write, in a folder that takes
it) and then written whole or not at all: a temporary file beside it, renamed over it.
Numbers in input text are checked for length before they are converted, so a number of
thousands of digits is one line naming where it was rather than Python's own limit.
Standard library only, below everything (`memplace.errors` alone).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memplace.errors import InputError

MAX_DIGITS = 40
"""Digits a number in an input may have: more than any address or size of 128 bits."""

MAX_READ = 256 << 20
"""Bytes memplace reads of one input file at most (a report, a model, an ELF)."""


def integer(text: str, where: str, base: int = 10) -> int:
    """`text` as an integer; one of more than MAX_DIGITS digits is an InputError naming
    `where` (a file, a file:line, a key), before Python's conversion is asked."""
    digits = text.strip().lstrip("+-")
    if base == 16 and digits[:2].lower() == "0x":
        digits = digits[2:]
    if len(digits) > MAX_DIGITS:
        raise InputError(
            f"a number of {len(digits)} digits; at most {MAX_DIGITS} are read", key=where
        )
    try:
        return int(text, base)
    except ValueError:
        raise InputError(f"{text!r} is not a number", key=where) from None


def read_input(path: Path, key: str | None = None, limit: int = MAX_READ) -> bytes:
    """The bytes of the input file at `path`: a regular file (or a link to one) of at most
    `limit` bytes; anything else is an InputError naming it, under `key` if given."""
    try:
        # O_NONBLOCK: opening a FIFO returns at once (and is refused below) instead of
        # waiting for a writer; it changes nothing for a regular file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(f"no file {path}", key=key) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", key=key) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InputError(f"{path} is a folder, not a file", key=key)
        raise InputError(f"{path} is not a regular file (a FIFO, socket or device)", key=key)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}", key=key) from None
    if len(data) > limit:
        raise InputError(f"{path} holds more than the {limit} bytes memplace reads", key=key)
    return data


def read_input_text(path: Path, key: str | None = None, limit: int = MAX_READ) -> str:
    """`read_input` decoded as UTF-8; a file that is not is an InputError naming it."""
    data = read_input(path, key, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            key=key,
        ) from None


# -- outputs ----------------------------------------------------------------------------------

Recognise = Callable[[bytes], bool]
"""Whether the first bytes of an existing file are of a file memplace wrote."""


def _contains(*marks: bytes) -> Recognise:
    return lambda head: all(mark in head for mark in marks)


_SVG = re.compile(
    rb'^<svg xmlns="http://www.w3.org/2000/svg" width="\d+" height="\d+" '
    rb'font-family="sans-serif" font-size="11">\n<title>'
)
CONSOLE_HEADER = "# memplace: console of {}\n"

# What memplace writes, by kind: what people call it, and how memplace knows one it wrote.
KINDS: dict[str, tuple[str, Recognise]] = {
    "junit": ("JUnit report", _contains(b"<testsuites ", b'<testsuite name="memplace ')),
    "sarif": (
        "SARIF report",
        _contains(
            b'"$schema": "https://json.schemastore.org/sarif-2.1.0.json"', b'"name": "memplace"'
        ),
    ),
    "svg": ("SVG", lambda head: _SVG.match(head) is not None),
    "console": (
        "console",
        lambda head: head.startswith(CONSOLE_HEADER.split("{", 1)[0].encode()),
    ),
    "workload": ("workload", lambda head: head.startswith(b"# Imported by memplace from ")),
    "tflite": (
        "model",
        lambda head: head[4:8] == b"TFL3" and b"OfflineMemoryAllocation" in head,
    ),
}


@dataclass(frozen=True)
class Output:
    """A file a command is told to write: `option` names it, `kind` says what it holds."""

    option: str
    path: Path
    kind: str


def claim(outputs: Iterable[Output], inputs: Iterable[Path]) -> None:
    """Refuse, before any work, every output that names one of `inputs`, another output, a
    folder, something other than a regular file, or an existing file memplace did not
    write, or that lies in no folder memplace can write."""
    given = {_identity(path): path for path in inputs if path.exists()}
    seen: dict[tuple[int, int] | str, str] = {}
    for out in outputs:
        path, key = out.path, out.option
        noun, ours = KINDS[out.kind]
        identity = _identity(path)
        if identity in given:
            raise InputError(
                f"{path} is an input of this command; memplace never writes over what it reads",
                key=key,
            )
        if identity in seen:
            raise InputError(f"{path} is also named by {seen[identity]}", key=key)
        seen[identity] = key
        _check_folder(path, key)
        if not (path.exists() or path.is_symlink()):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{path} is a folder; name the {noun} file to write", key=key)
        if not stat.S_ISREG(mode):
            raise InputError(
                f"{path} is not a regular file memplace wrote (a link, FIFO or device); "
                "name a new file",
                key=key,
            )
        with path.open("rb") as handle:
            existing = handle.read(MAX_READ)
        if not ours(existing):
            raise InputError(
                f"{path} exists and memplace did not write it; name a new file or remove it",
                key=key,
            )


def _identity(path: Path) -> tuple[int, int] | str:
    try:
        info = path.stat()
    except OSError:
        return str(path.absolute())
    return (info.st_dev, info.st_ino)


def _check_folder(path: Path, key: str) -> None:
    folder = path.absolute().parent
    if not folder.is_dir():
        raise InputError(f"no folder {folder} to write {path.name} in", key=key)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {folder}: the folder is read-only", key=key)


def write_output(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` whole or not at all: a temporary file in the same folder,
    renamed over `path` once complete; the file gets the permissions of a new file."""
    content = data.encode("utf-8") if isinstance(data, str) else data
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.absolute().parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
