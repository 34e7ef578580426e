"""memplace's planner on the shared benchmark instances, real models and random workloads.

    .venv/bin/python benchmarks/planner.py [--quick] [--time-limit S] [--markdown FILE]

Prints two tables (markdown):

1. Every instance in ../shared/benchmarks (MiniMalloc's challenging set A-K with its
   capacity of 1048576 bytes; TVM USMP's four instances) and, when `memplace.importers`
   is there, the activation buffers of each MLPerf Tiny model in ../shared/models: buffers,
   lower bound, greedy-size peak, memplace's peak (the default algorithm, `auto`, with the
   instance's capacity as its first target), seconds, whether it is proven optimal, and a
   baseline run in the same process: omnimalloc (PyPI) when it is installed, its default
   allocator and its `supermalloc` search with 3 s; otherwise none.
   For the instances with a capacity, also the seconds `auto` takes to fit it when told
   that fitting is enough (`Budget.goal`), which is what MiniMalloc's own timings measure.
2. Time against size for random workloads of 1k, 10k and 100k buffers: greedy-size and
   `auto` on one unbounded place, and `plan()` end to end (scopes, pool assignment,
   offsets, the independent check) with each, on the bundled board, with how many of the
   pools `plan()` with `auto` used are proven optimal.

Instance files are CSV `id,lower,upper,size` with half-open step intervals [lower, upper);
memplace's lifetimes are inclusive, so a block lives from `lower` to `upper - 1`.
`--quick` skips the omnimalloc search and the 100k row.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memplace.board import load_board
from memplace.planner import ALGORITHMS, DEFAULT_ALGORITHM, Budget, plan
from memplace.planner.blocks import Block, lower_bound, peak
from memplace.planner.check import placement_problems
from memplace.workload import Buffer, Workload

SHARED = Path(__file__).resolve().parents[2] / "shared"
MINIMALLOC_CAPACITY = 1048576
SIZES = (1_000, 10_000, 100_000)


@dataclass(frozen=True)
class Instance:
    group: str
    name: str
    blocks: tuple[Block, ...]
    capacity: int | None


@dataclass(frozen=True)
class Row:
    instance: Instance
    bound: int
    greedy: int
    peak: int
    seconds: float
    optimal: bool
    baseline: str
    fit_seconds: float | None


def read_csv(path: Path, align: int = 1) -> tuple[Block, ...]:
    """An instance file as blocks; [lower, upper) becomes first = lower, last = upper - 1."""
    with path.open(newline="") as handle:
        return tuple(
            Block(int(row["size"]), int(row["lower"]), int(row["upper"]) - 1, align)
            for row in csv.DictReader(handle)
        )


def instances(shared: Path) -> list[Instance]:
    found = [
        Instance("minimalloc", path.name.split(".")[0], read_csv(path), MINIMALLOC_CAPACITY)
        for path in sorted((shared / "benchmarks" / "minimalloc").glob("*.csv"))
    ]
    found += [
        Instance("tvm-usmp", path.stem, read_csv(path), None)
        for path in sorted((shared / "benchmarks" / "tvm-usmp").glob("*.csv"))
    ]
    return found + model_instances(shared)


def model_instances(shared: Path) -> list[Instance]:
    """The activation buffers (one arena) of each MLPerf Tiny model, if memplace can import
    models; none otherwise."""
    if importlib.util.find_spec("memplace.importers") is None:
        return []
    from memplace.importers import import_model

    found = []
    for path in sorted((shared / "models" / "mlperf-tiny").glob("*.tflite")):
        workload = import_model(path)
        blocks = tuple(
            Block(b.size, b.first, b.last, b.align) for b in workload.buffers if b.kind == "buffer"
        )
        found.append(Instance("mlperf-tiny", path.stem, blocks, None))
    return found


def solve(instance: Instance, time_limit: float, baseline: Callable[[Instance], str]) -> Row:
    blocks = instance.blocks
    start = time.perf_counter()
    result = ALGORITHMS[DEFAULT_ALGORITHM](
        blocks, Budget(capacity=instance.capacity, time_limit=time_limit)
    )
    seconds = time.perf_counter() - start
    names = [str(i) for i in range(len(blocks))]
    capacity = max(result.peak, instance.capacity or 0)
    if placement_problems(blocks, result.offsets, capacity, names):
        raise SystemExit(f"{instance.name}: unsound placement")
    fit_seconds = None
    if instance.capacity is not None:
        start = time.perf_counter()
        ALGORITHMS[DEFAULT_ALGORITHM](
            blocks,
            Budget(capacity=instance.capacity, time_limit=time_limit, goal=instance.capacity),
        )
        fit_seconds = time.perf_counter() - start
    return Row(
        instance=instance,
        bound=lower_bound(blocks),
        greedy=ALGORITHMS["greedy-size"](blocks).peak,
        peak=result.peak,
        seconds=seconds,
        optimal=result.optimal,
        baseline=baseline(instance),
        fit_seconds=fit_seconds,
    )


def omnimalloc_baseline(quick: bool) -> tuple[str, Callable[[Instance], str]]:
    """The baseline column's title and how to fill it."""
    if importlib.util.find_spec("omnimalloc") is None:
        return "baseline (omnimalloc not installed)", lambda instance: ""
    import omnimalloc
    from omnimalloc.allocators import SupermallocAllocator

    def run(instance: Instance, allocator: object) -> tuple[int, float]:
        allocations = [
            omnimalloc.Allocation(id=i, size=b.size, start=b.first, end=b.last + 1)
            for i, b in enumerate(instance.blocks)
        ]
        start = time.perf_counter()
        placed = omnimalloc.allocate(allocations, allocator)  # type: ignore[arg-type]
        seconds = time.perf_counter() - start
        return max(a.offset + a.size for a in placed), seconds

    def cell(instance: Instance) -> str:
        default, _ = run(instance, None)
        if quick:
            return f"{default}"
        searched, seconds = run(instance, SupermallocAllocator(timeout=3.0, num_threads=1))
        return f"{default} / {searched} ({seconds:.1f} s)"

    version = omnimalloc.__version__
    title = f"omnimalloc {version}: default" + ("" if quick else " / supermalloc 3 s")
    return title, cell


def instance_table(rows: Sequence[Row], baseline_title: str) -> str:
    lines = [
        f"| instance | buffers | lower bound | greedy-size | memplace | seconds | proven "
        f"optimal | fits capacity (seconds to fit) | {baseline_title} |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for row in rows:
        instance = row.instance
        fits = ""
        if instance.capacity is not None:
            fits = "yes" if row.peak <= instance.capacity else "NO"
            fits += f" ({row.fit_seconds:.2f})"
        lines.append(
            f"| {instance.group}/{instance.name} | {len(instance.blocks)} | {row.bound} | "
            f"{row.greedy} | {row.peak} | {row.seconds:.2f} | "
            f"{'yes' if row.optimal else 'no'} | {fits} | {row.baseline} |"
        )
    return "\n".join(lines)


def random_buffers(count: int, seed: int = 1) -> list[Buffer]:
    """A layer-by-layer workload: count / 8 steps, each buffer living 1 to 16 steps (about
    64 live at once), sizes log-uniform from 64 bytes to 64 KiB, 16-byte aligned."""
    rng = random.Random(seed)
    steps = max(1, count // 8)
    buffers = []
    for index in range(count):
        first = rng.randrange(steps)
        last = min(steps - 1, first + rng.randrange(16))
        size = int(2 ** rng.uniform(6, 16)) // 16 * 16
        buffers.append(
            Buffer(
                name=f"b{index}",
                kind="buffer",
                size=size,
                align=16,
                first=first,
                last=last,
                scope="global",
                users=(),
            )
        )
    return buffers


def scaling_table(sizes: Sequence[int], time_limit: float) -> str:
    board = load_board("qemu-mps3-an547")
    lines = [
        "| buffers | lower bound | greedy-size peak | seconds | auto peak | seconds "
        "| plan() greedy-size seconds | plan() auto seconds | plan() auto: pools proven optimal |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for count in sizes:
        buffers = random_buffers(count)
        blocks = [Block(b.size, b.first, b.last, b.align) for b in buffers]
        cells = [str(count), str(lower_bound(blocks))]
        for algorithm in ("greedy-size", "auto"):
            start = time.perf_counter()
            found = ALGORITHMS[algorithm](blocks, Budget(time_limit=time_limit))
            cells += [str(peak(blocks, found.offsets)), f"{time.perf_counter() - start:.2f}"]
        steps = tuple(str(i) for i in range(max(b.last for b in buffers) + 1))
        workload = Workload(name="random", steps=steps, buffers=tuple(buffers))
        for algorithm in ("greedy-size", "auto"):
            start = time.perf_counter()
            result = plan(board, workload, algorithm=algorithm, time_limit=time_limit)
            cells.append(f"{time.perf_counter() - start:.2f}")
        used = [pool for pool in result.pools if pool.used]
        cells.append(f"{sum(pool.optimal for pool in used)} of {len(used)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip omnimalloc's search and 100k")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared/ folder")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--only", help="instance names to run, comma separated")
    args = parser.parse_args(argv)
    chosen = instances(args.shared)
    if args.only:
        chosen = [i for i in chosen if i.name in args.only.split(",")]
    title, baseline = omnimalloc_baseline(args.quick)
    rows = []
    for instance in chosen:
        rows.append(solve(instance, args.time_limit, baseline))
        print(f"{instance.group}/{instance.name}: done", file=sys.stderr)
    tables = [instance_table(rows, title)]
    if not args.only:
        sizes = SIZES[:2] if args.quick else SIZES
        tables.append(scaling_table(sizes, args.time_limit))
    text = "\n\n".join(tables) + "\n"
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
