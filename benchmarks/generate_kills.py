"""`memplace generate` killed at random moments: does the next run accept what it left?

    .venv/bin/python benchmarks/generate_kills.py [--runs N] [--seed S]

Each run starts `memplace generate` into one project folder, with one of two workloads in
turn, and sends it SIGKILL after a random delay (0 to 1.5 s: before, during and after the
write); then the same `generate` runs again to completion, without --force. Counted:

- refused: the second run refused the folder (a file memplace wrote looked edited: the
  record of what it wrote and the files disagreed), a mixed state;
- scratch left: scratch folders of a killed write still beside the project after it;
- stale files: files of the other workload still in the project after it.

The same is done without the kill as the baseline, in the same run. Prints a table.
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BOARD = "qemu-mps3-an547"
WORKLOADS = {
    "first": "memplace: workload/v1\nname: first\nbuffers:\n  - {name: a, size: 1K, live: 0}\n",
    "second": "memplace: workload/v1\nname: second\nbuffers:\n  - {name: b, size: 2K, live: 0}\n",
}
MEMPLACE = [sys.executable, "-m", "memplace.cli"]


def generate(workload: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*MEMPLACE, "generate", BOARD, str(workload), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def one_run(folder: Path, name: str, kill_after: float | None) -> tuple[bool, int, int]:
    """(refused, scratch folders left, stale files left) after one killed (or not) run."""
    workload = folder / f"{name}.yaml"
    out = folder / "project"
    if kill_after is not None:
        child = generate(workload, out)
        time.sleep(kill_after)
        child.send_signal(signal.SIGKILL)
        child.wait()
    again = generate(workload, out)
    _, err = again.communicate()
    refused = again.returncode != 0
    if refused:
        print(f"refused: {err.decode().strip()}", file=sys.stderr)
    scratch = sum(1 for p in folder.iterdir() if p.name.startswith(".project."))
    other = next(w for w in WORKLOADS if w != name)
    stale = sum(1 for p in out.rglob(f"{other}*")) if out.is_dir() else 0
    return refused, scratch, stale


def table(runs: int, seed: int) -> str:
    rng = random.Random(seed)
    lines = [
        "| runs | SIGKILL | refused (mixed state) | scratch folders left | stale files left |",
        "|---:|---|---:|---:|---:|",
    ]
    for killed in (False, True):
        totals = [0, 0, 0]
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            for name, text in WORKLOADS.items():
                (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
            for index in range(runs):
                name = list(WORKLOADS)[index % 2]
                delay = rng.uniform(0.0, 1.5) if killed else None
                for k, value in enumerate(one_run(folder, name, delay)):
                    totals[k] += int(value)
        kill = "at a random moment" if killed else "none (baseline)"
        lines.append(f"| {runs} | {kill} | {totals[0]} | {totals[1]} | {totals[2]} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs of each kind")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill delays")
    args = parser.parse_args(argv)
    print(table(args.runs, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
