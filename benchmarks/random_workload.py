"""Random workloads of any size, as the files a user gives `memplace plan`, from a seed.

    .venv/bin/python benchmarks/random_workload.py COUNT OUT_DIR [--seed N] [--json]

Writes OUT_DIR/board.yaml (one workspace pool of 64 MiB) and OUT_DIR/random-COUNT.yaml
(or .json): COUNT buffers over COUNT / 8 steps, each living 1 to 16 steps (about 64 live
at once), sizes log-uniform from 64 bytes to 64 KiB in multiples of 16, in a random order
of their own. The same COUNT and seed give the same files, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

POOL = 64 * 1024 * 1024
"""Bytes of the one pool: room for the peak of any of these workloads."""

BOARD = """\
memplace: board/v1
name: one-pool
summary: one workspace pool of {POOL} bytes
cores:
  cpu0:
    cpu: cortex-m4
    float_abi: soft
    layout: {{vectors: flash, code: flash, data: sram, load: flash}}
memories:
  flash: {{origin: 0x00000000, size: 4M, attrs: rx, kind: flash, access: [cpu0], latency: 5}}
  sram:  {{origin: 0x20000000, size: 1M, attrs: rwx, kind: sram, access: [cpu0], latency: 2}}
  arena: {{origin: 0x60000000, size: {MEMORY}, attrs: rw, kind: sram, access: [cpu0], latency: 1}}
pools:
  arena_ws: {{memory: arena, size: {POOL}, kind: workspace}}
contexts:
  main: {{core: cpu0, entry: main, stack: {{memory: sram, size: 8K}}}}
"""


def random_lifetimes(count: int, seed: int) -> list[tuple[int, int, int]]:
    """(size, first, last) of `count` buffers, in a random order."""
    rng = random.Random(seed)
    steps = max(1, count // 8)
    found = []
    for _ in range(count):
        first = rng.randrange(steps)
        last = min(steps - 1, first + rng.randrange(16))
        size = max(16, int(2 ** rng.uniform(6, 16)) // 16 * 16)
        found.append((size, first, last))
    rng.shuffle(found)
    return found


def workload_yaml(name: str, buffers: Sequence[tuple[int, int, int]]) -> str:
    """The workload file of `buffers` ((size, first, last) each, 16-byte aligned)."""
    lines = ["memplace: workload/v1", f"name: {name}", "buffers:"]
    lines += [
        f"  - {{name: b{i}, size: {size}, live: [{first}, {last}]}}"
        for i, (size, first, last) in enumerate(buffers)
    ]
    return "\n".join(lines) + "\n"


def workload_json(name: str, buffers: Sequence[tuple[int, int, int]], align: int = 16) -> str:
    """The same as JSON, with `align` written out where it is not the default 16."""
    extra = "" if align == 16 else f', "align": {align}'
    items = ",\n".join(
        f'    {{"name": "b{i}", "size": {size}, "live": [{first}, {last}]{extra}}}'
        for i, (size, first, last) in enumerate(buffers)
    )
    head = json.dumps({"memplace": "workload/v1", "name": name})[:-1]
    return f'{head}, "buffers": [\n{items}\n]}}\n'


def write_board(path: Path, capacity: int) -> Path:
    """A board of one workspace pool of `capacity` bytes."""
    memory = -(-capacity // 1024) * 1024
    path.write_text(BOARD.format(POOL=capacity, MEMORY=memory), encoding="utf-8")
    return path


def write(count: int, folder: Path, seed: int = 1, as_json: bool = False) -> tuple[Path, Path]:
    """The board and the workload file of `count` random buffers, written in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    board = write_board(folder / "board.yaml", POOL)
    buffers = random_lifetimes(count, seed)
    name = f"random_{count}"
    if as_json:
        workload = folder / f"random-{count}.json"
        workload.write_text(workload_json(name, buffers), encoding="utf-8")
    else:
        workload = folder / f"random-{count}.yaml"
        workload.write_text(workload_yaml(name, buffers), encoding="utf-8")
    return board, workload


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="buffers")
    parser.add_argument("out", type=Path, help="folder to write the board and workload in")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="write the workload as JSON")
    args = parser.parse_args(argv)
    board, workload = write(args.count, args.out, args.seed, args.json)
    print(f"{board}\n{workload}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
