"""memplace at scale: random workloads of 10k, 100k and 1M buffers through the command line.

    .venv/bin/python benchmarks/scale.py [--sizes 10000,100000,1000000] [--minimalloc]
        [--markdown FILE]

For each size, the seeded instance of benchmarks/random_workload.py (one pool, random
lifetimes and sizes) is written as YAML and JSON, then:

- `memplace plan BOARD WORKLOAD.json --json` runs as its own process: its wall time, its
  peak memory (and per buffer), and the pool's peak against the lower bound (the most
  bytes live at one step) from the plan it prints;
- the same command runs again inside this process, with a clock around each stage:
  reading the workload, assigning pools, computing offsets, checking the plan and writing
  its JSON (the CPU seconds each took);
- the YAML file is read alone (`Workload.from_file`), to compare the two formats;
- omnimalloc's allocators (PyPI, the `bench` extra: a benchmark-only dependency) place the
  same buffers in this process: `omni` (its default), greedy by size, telamalloc, and
  supermalloc with 10 s, each where it finishes in reasonable time at that size.

With --minimalloc, instead: MiniMalloc's challenging instances A-K (../shared/benchmarks)
written as the files a user gives (a board of one 1 MiB pool, a JSON workload, 1-byte
alignment), each through `memplace plan BOARD WORKLOAD --json` as its own process (the
median wall time of three runs), beside MiniMalloc's own seconds on this kind of machine
(`benchmarks/planner.py`); and a 100-buffer random workload, for the command's fixed cost.

Prints one markdown table (and writes it to FILE with --markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from random_workload import (
    POOL,
    random_lifetimes,
    workload_json,
    write,
    write_board,
)

import memplace.cli
import memplace.planner
from memplace.planner.model import Plan
from memplace.workload import Workload

SIZES = (10_000, 100_000, 1_000_000)
SEED = 1
STAGES = ("read", "assign", "offsets", "check", "write")
OMNIMALLOC = (
    ("omni", "OmniAllocator", {}, 1_000_000),
    ("greedy by size", "GreedyBySizeAllocator", {}, 1_000_000),
    ("telamalloc", "TelamallocAllocator", {}, 100_000),
    ("supermalloc 10 s", "SupermallocAllocator", {"timeout": 10.0, "num_threads": 1}, 100_000),
)
"""omnimalloc's allocators measured: name, class, arguments, the most buffers given it."""


LAUNCHER = """\
import os, sys
pid = os.spawnv(os.P_NOWAIT, sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
      file=sys.stderr)
"""
"""Runs a command and prints its exit code, CPU seconds and peak resident kilobytes. A
child's peak counts the memory of the process it was forked from, so the command is
forked from this small interpreter rather than from the benchmark, which holds the
workloads and omnimalloc's placements by then."""


def cli_run(board: Path, workload: Path) -> tuple[float, float, int, dict[str, Any]]:
    """`memplace plan BOARD WORKLOAD --json` as a process: wall seconds, CPU seconds (user
    and system), peak resident bytes, and the first pool of the plan it printed."""
    memplace = Path(sys.executable).with_name("memplace")
    command = [str(memplace), "plan", str(board), str(workload), "--json"]
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        launched = subprocess.run(
            [sys.executable, "-c", LAUNCHER, *command],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - start
        code, cpu, kilobytes = launched.stderr.split()[-3:]
        if int(code) != 0:
            raise SystemExit(f"memplace plan failed on {workload}: exit {code}")
        out.seek(0)
        pool = json.load(out)["pools"][0]
    return seconds, float(cpu), int(kilobytes) * 1024, pool


@contextlib.contextmanager
def clocked(owner: Any, name: str, totals: dict[str, float], stage: str) -> Iterator[None]:
    """`owner.name` timed (CPU seconds, added to `totals[stage]`) while inside."""
    original = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            totals[stage] += time.process_time() - start

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def stage_seconds(board: Path, workload: Path) -> dict[str, float]:
    """The CPU seconds of each stage of `memplace plan BOARD WORKLOAD --json`, run in this
    process by the command line's own `main`."""
    totals = dict.fromkeys(STAGES, 0.0)
    planner = memplace.planner
    with contextlib.ExitStack() as stack:
        stack.enter_context(clocked(memplace.cli, "load_workload", totals, "read"))
        stack.enter_context(clocked(planner, "assign_places", totals, "assign"))
        stack.enter_context(clocked(planner, "_search", totals, "offsets"))
        stack.enter_context(clocked(planner, "_check", totals, "check"))
        stack.enter_context(clocked(Plan, "write_json", totals, "write"))
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        start = time.process_time()
        code = memplace.cli.main(["plan", str(board), str(workload), "--json"])
        total = time.process_time() - start
    if code != 0:
        raise SystemExit(f"memplace plan failed on {workload}: exit {code}")
    totals["total"] = total
    return totals


def read_seconds(path: Path) -> float:
    start = time.process_time()
    Workload.from_file(path)
    return time.process_time() - start


def omnimalloc_cells(count: int, bound: int) -> list[str]:
    """Each omnimalloc allocator's peak against the bound and its seconds (blank where the
    size is past what it is given)."""
    if importlib.util.find_spec("omnimalloc") is None:
        return ["not installed"] * len(OMNIMALLOC)
    import omnimalloc
    from omnimalloc import allocators

    allocations = [
        omnimalloc.Allocation(id=i, size=size, start=first, end=last + 1)
        for i, (size, first, last) in enumerate(random_lifetimes(count, SEED))
    ]
    cells = []
    for _, name, kwargs, most in OMNIMALLOC:
        if count > most:
            cells.append("-")
            continue
        allocator: Callable[..., Any] = getattr(allocators, name)
        start, cpu = time.perf_counter(), time.process_time()
        placed = omnimalloc.allocate(allocations, allocator(**kwargs))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = max(a.offset + a.size for a in placed)
        cells.append(f"{peak / bound:.4f}x, {seconds:.1f} s ({cpu:.1f} s CPU)")
    return cells


def row(count: int, folder: Path) -> str:
    board, as_yaml = write(count, folder, SEED)
    _, as_json = write(count, folder, SEED, as_json=True)
    load = os.getloadavg()[0]
    wall, cpu, rss, pool = cli_run(board, as_json)
    used, bound = pool["used"], pool["lower_bound"]
    stages = stage_seconds(board, as_json)
    split = ", ".join(f"{stage} {stages[stage]:.2f}" for stage in STAGES)
    cells = [
        f"{count:,}",
        f"{used / bound:.4f}x ({pool['algorithm']})",
        f"{wall:.1f} s ({cpu:.1f} s CPU, load {load:.1f})",
        f"{stages['total']:.1f} s: {split}",
        f"{read_seconds(as_yaml):.2f} s",
        f"{rss / 2**20:.0f} MB ({rss / count / 1024:.1f} KB)",
        *omnimalloc_cells(count, bound),
    ]
    return "| " + " | ".join(cells) + " |"


def table(sizes: Sequence[int]) -> str:
    version = "-"
    if importlib.util.find_spec("omnimalloc") is not None:
        import omnimalloc

        version = omnimalloc.__version__
    head = [
        "buffers",
        "memplace: peak / bound",
        "wall (CPU, load average)",
        "CPU seconds by stage (JSON workload)",
        "read as YAML",
        "peak memory (per buffer)",
        *(f"omnimalloc {version} {name}" for name, *_ in OMNIMALLOC),
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    with tempfile.TemporaryDirectory() as scratch:
        for count in sizes:
            lines.append(row(count, Path(scratch)))
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


MINIMALLOC_CAPACITY = 1048576
RUNS = 3


def minimalloc_table(shared: Path) -> str:
    from planner import MINIMALLOC_SECONDS, read_csv

    lines = [
        "| instance | buffers | lower bound | memplace used | proven optimal | wall (median "
        "of 3) | CPU (median of 3) | MiniMalloc's seconds |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        board = write_board(folder / "board.yaml", MINIMALLOC_CAPACITY)
        large = write_board(folder / "large.yaml", POOL)
        cases = [
            (path.name.split(".")[0], [(b.size, b.first, b.last) for b in read_csv(path)], 1)
            for path in sorted((shared / "benchmarks" / "minimalloc").glob("*.csv"))
        ]
        cases.append(("random 100", random_lifetimes(100, SEED), 16))
        for name, buffers, align in cases:
            workload = folder / f"{name.replace(' ', '_')}.json"
            text = workload_json(f"w_{name.replace(' ', '_')}", buffers, align)
            workload.write_text(text, encoding="utf-8")
            runs = [cli_run(board if align == 1 else large, workload) for _ in range(RUNS)]
            wall = sorted(run[0] for run in runs)[len(runs) // 2]
            cpu = sorted(run[1] for run in runs)[len(runs) // 2]
            pool = runs[0][3]
            reference = MINIMALLOC_SECONDS.get(name)
            lines.append(
                f"| {name} | {len(buffers)} | {pool['lower_bound']} | {pool['used']} | "
                f"{'yes' if pool['optimal'] else 'no'} | {wall:.2f} s | {cpu:.2f} s | "
                f"{'' if reference is None else f'{reference:.2f} s'} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(size) for size in SIZES),
        help="buffers per instance, comma-separated",
    )
    parser.add_argument("--minimalloc", action="store_true", help="MiniMalloc's A-K instead")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    if args.minimalloc:
        text = minimalloc_table(Path(__file__).resolve().parents[2] / "shared")
    else:
        text = table([int(size) for size in args.sizes.split(",")])
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
