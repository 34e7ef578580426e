"""What the `tflite-micro` package's host runtime needs for a model, measured.

The runtime is a 64-bit host build; its recording allocator prints the arena's planned
part (head) and persistent part (tail) to the C library's stderr, so memplace runs it in a
child process (`python -m memplace.tflm.runtime MODEL`), which also finds the smallest
arena the interpreter accepts, by bisection. The child prints one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from memplace import process
from memplace.errors import ToolError

PACKAGE = "tflite_micro"
_MARK = "memplace-tflm-runtime: "
_USAGE = re.compile(r"Arena allocation (head|tail) (\d+) bytes")
TIMEOUT = 120.0


@dataclass(frozen=True)
class Measured:
    """Bytes the host runtime used: planned part, persistent part, smallest arena."""

    head: int
    tail: int
    arena: int
    version: str


class RuntimeFailed(ToolError):
    """The host runtime could not run a model; `reason` says how, naming no file."""

    def __init__(self, model: Path, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the tflite-micro runtime could not run {model}: {reason}")


def available() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def measure(model: Path) -> Measured:
    """Run the host runtime on `model` in a child process."""
    argv = [sys.executable, "-W", "ignore::RuntimeWarning", "-m", "memplace.tflm.runtime"]
    argv.append(str(model))
    done = process.run(argv, TIMEOUT)
    for line in done.output.splitlines():
        if line.startswith(_MARK):
            found = json.loads(line[len(_MARK) :])
            return Measured(
                found["head"],
                found["tail"],
                found["arena"],
                found["version"],
            )
    last = done.output.strip().splitlines()[-1:]
    if done.returncode < 0:
        last = [f"it ended on {signal.Signals(-done.returncode).name}", *last]
    raise RuntimeFailed(model, last[0] if last else "no output")


def works(data: bytes, arena: int) -> bool:
    """Whether the interpreter accepts an arena of `arena` bytes. Each try runs in a forked
    child: this runtime crashes on some arenas that are a little too small."""
    import os

    from tflite_micro import runtime

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            runtime.Interpreter.from_bytes(data, arena_size=arena)
        except BaseException:  # whatever it raises, the child never returns into memplace
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _smallest(data: bytes, start: int) -> int:
    """The smallest arena the interpreter accepts, near `start` (head + tail)."""
    low, high = max(start - 1024, 0), start
    while not works(data, high):
        low, high = high, high * 2
    while low > 0 and works(data, low):
        low //= 2
    while high - low > 1:
        middle = (low + high) // 2
        if works(data, middle):
            high = middle
        else:
            low = middle
    return high


def _probe(path: Path) -> dict[str, object]:
    import os

    import tflite_micro
    from tflite_micro import runtime

    data = path.read_bytes()
    # A whole number of pages: the allocator aligns the arena's start only, so an arena
    # whose end is not aligned would move the persistent part's padding.
    size = -(-(len(data) * 10 + (1 << 22)) // 4096) * 4096
    interpreter = runtime.Interpreter.from_bytes(data, arena_size=size)
    sys.stdout.flush()
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        interpreter.print_allocations()
    finally:
        os.dup2(saved, 2)
        os.close(write)
    printed = os.read(read, 1 << 20).decode("utf-8", "replace")
    usage = {kind: int(size) for kind, size in _USAGE.findall(printed)}
    head, tail = usage["head"], usage["tail"]
    return {
        "head": head,
        "tail": tail,
        "arena": _smallest(data, head + tail),
        "version": str(tflite_micro.__version__),
    }


if __name__ == "__main__":
    print(_MARK + json.dumps(_probe(Path(sys.argv[1]))), flush=True)
