"""How long `make test` takes on this machine: at rest, or beside busy loops on every core.

    .venv/bin/python benchmarks/suite.py [--busy N] [--command "make test"] [--log FILE]

Runs the command from the checkout's root and prints one row of the table in
docs/benchmarks.md: the machine's cores, the load average (1 minute) before the run and the
highest seen during it (the machine may be shared: others' jobs count), the busy loops
started beside it (`--busy 2`: two processes spinning for the whole run, the "under load"
row), the wall time, the processor time the command and everything it started used (user
and system, all cores: what the suite costs, whatever the load; on an idle machine the wall
time cannot be much below it divided by the cores), and the last line pytest printed;
`--log` keeps all it printed. The busy loops end with the run, also when the benchmark is
interrupted or terminated.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    "| command | cores | busy loops | load before, highest during | wall time | processor time "
    "| result |\n|---|---:|---:|---|---:|---:|---|"
)
SPIN = [sys.executable, "-c", "while True: pass"]


@dataclass(frozen=True)
class Run:
    command: str
    busy: int
    load_before: float
    load_highest: float
    seconds: float
    cpu_seconds: float
    exit_code: int
    result: str
    output: str

    def row(self) -> str:
        return (
            f"| `{self.command}` | {os.cpu_count()} | {self.busy} "
            f"| {self.load_before:.1f}, {self.load_highest:.1f} "
            f"| {_minutes(self.seconds)} | {_minutes(self.cpu_seconds)} "
            f"| {self.result} (exit {self.exit_code}) |"
        )


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _children_cpu() -> float:
    """Processor time of the children waited for so far (theirs included)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _load() -> float:
    return os.getloadavg()[0]


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # the `finally` below ends the busy loops and the command


def measure(command: Sequence[str], busy: int, cwd: Path = ROOT) -> Run:
    """Run `command` in `cwd` with `busy` spinning processes beside it: what it printed is
    in `Run.output`."""
    highest = [_load()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(5.0):
            highest.append(_load())

    sampler = threading.Thread(target=sample, daemon=True)
    previous = signal.signal(signal.SIGTERM, _terminated)
    loops: list[subprocess.Popen[bytes]] = []
    child: subprocess.Popen[str] | None = None
    try:
        loops = [subprocess.Popen(SPIN) for _ in range(busy)]
        before = highest[0]
        sampler.start()
        started, cpu = time.monotonic(), _children_cpu()
        child = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # ended with all it started, should we be
        )
        output, _ = child.communicate()  # and waited for: the busy loops are not, yet
        seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    finally:
        signal.signal(signal.SIGTERM, previous)
        done.set()
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        for loop in loops:
            loop.kill()
            loop.wait()
    sampler.join()
    summaries = [line.strip("= ") for line in output.splitlines() if re.search(r"\d+ passed", line)]
    result = summaries[-1] if summaries else "no pytest summary"
    code = child.returncode
    return Run(shlex.join(command), busy, before, max(highest), seconds, cpu, code, result, output)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the run")
    parser.add_argument("--command", default="make test", help="what to time")
    parser.add_argument("--log", type=Path, help="write what the command printed here")
    args = parser.parse_args(argv)
    run = measure(shlex.split(args.command), args.busy)
    if args.log is not None:
        args.log.write_text(run.output)
    print(HEADER)
    print(run.row())
    return 0


if __name__ == "__main__":
    sys.exit(main())
