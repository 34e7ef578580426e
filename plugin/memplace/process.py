"""The one way memplace runs another program: an argv list, logged, with a timeout, and
killed with all its children when it overruns or memplace is interrupted.

The mechanics are `memplace.carried.processes`, the standard-library module a
generated project's own server carries too; this adds the install hints of the build's
tools and memplace's error class (exit code 3). Each runner's tool says how to install it
in its own record (`memplace.runners`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memplace.carried import processes
from memplace.carried.processes import Launched, Running
from memplace.errors import ToolError

__all__ = [
    "INSTALL_HINTS",
    "Completed",
    "Launched",
    "Running",
    "as_memplace_errors",
    "find_tool",
    "launch",
    "run",
    "start",
]

# How to install the tools the build and the verifier run.
INSTALL_HINTS = {
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-objdump": "apt-get install binutils-arm-none-eabi",
    "cmake": "pip install cmake (or apt-get install cmake)",
    "ninja": "pip install ninja (or apt-get install ninja-build)",
}


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    output: str


@contextlib.contextmanager
def as_memplace_errors() -> Iterator[None]:
    """Turns the carried modules' `ToolError` into memplace's own."""
    try:
        yield
    except processes.ToolError as exc:
        raise ToolError(exc.detail) from exc


def _hint(program: str) -> str | None:
    return INSTALL_HINTS.get(Path(program).name)


def find_tool(name: str, hint: str | None = None) -> str:
    """The path of tool `name`: beside the running Python first (a virtual environment's
    bin holds cmake and ninja from PyPI), then on PATH. `hint` says how to install it
    (default: `INSTALL_HINTS`)."""
    with as_memplace_errors():
        return processes.find_tool(name, hint or _hint(name))


def run(
    argv: list[str],
    timeout: float,
    cwd: Path | None = None,
    on_line: Callable[[str], None] | None = None,
) -> Completed:
    """Run `argv` to completion; stdout and stderr come back together as text, and each
    line goes to `on_line` as it comes."""
    with as_memplace_errors():
        returncode, output = processes.run(argv, timeout, cwd, _hint(argv[0]), on_line)
    return Completed(tuple(argv), returncode, output)


def start(argv: list[str], cwd: Path | None = None) -> Running:
    """Start `argv` with pipes to its stdin and from its stdout and stderr (merged), in a
    session of its own so that `Running.stop` reaches its children."""
    with as_memplace_errors():
        return processes.start(argv, cwd, _hint(argv[0]))


def launch(
    argv: list[str],
    pass_fds: tuple[int, ...],
    cwd: Path | None = None,
    stderr: IO[bytes] | int | None = None,
) -> Launched:
    """Start `argv` talking over the inherited file descriptors `pass_fds` (a Project API
    server's pipes), in a session of its own so that `Launched.stop` reaches its
    children."""
    with as_memplace_errors():
        return processes.launch(argv, pass_fds, cwd, stderr, _hint(argv[0]))
