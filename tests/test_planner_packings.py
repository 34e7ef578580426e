"""plan() on workloads built so that a perfect packing exists, pool by pool.

Each workspace pool of a small board gets a rectangle (its capacity in bytes by a number of
steps) cut into blocks; every block becomes a buffer whose candidates (`pools:`) include the
pool it was cut from, in any order of the others. A feasible assignment with every pool
exactly full therefore exists, and plan() must find one: assignment and offset search
together, not first fit alone.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace import resources
from memplace.board import Board
from memplace.planner import plan
from memplace.workload import Workload

POOLS = {"dtcm_ws": 1024, "sram_ws": 768, "ddr_ws": 512}
STEPS = 8


@pytest.fixture(scope="module")
def tight_board() -> Board:
    data = yaml.safe_load(resources.bundled_boards()["qemu-mps3-an547"].read_text())
    for name, size in POOLS.items():
        data["pools"][name]["size"] = size
    return Board.from_data(data)


def cut(capacity: int, steps: int, pieces: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """A rectangle of `capacity` bytes by `steps` steps cut into about `pieces` blocks,
    each (size, first, last); sizes are multiples of 16 so any cut keeps alignment."""
    blocks = [(capacity, 0, steps - 1)]
    while len(blocks) < pieces:
        k = rng.randrange(len(blocks))
        size, first, last = blocks[k]
        if rng.random() < 0.5 and size >= 32:
            at = 16 * rng.randrange(1, size // 16)
            blocks[k : k + 1] = [(at, first, last), (size - at, first, last)]
        elif last > first:
            at = rng.randrange(first, last)
            blocks[k : k + 1] = [(size, first, at), (size, at + 1, last)]
        elif all(s < 32 and f == la for s, f, la in blocks):
            break
    return blocks


def packed_workload(seed: int, pieces: int, choices: int) -> Workload:
    rng = random.Random(seed)
    buffers: list[dict[str, Any]] = []
    for pool, capacity in POOLS.items():
        for size, first, last in cut(capacity, STEPS, pieces, rng):
            others = rng.sample([p for p in POOLS if p != pool], choices)
            buffers.append(
                {
                    "name": f"b{len(buffers)}",
                    "size": size,
                    "align": 16,
                    "live": [first, last],
                    "pools": sorted([pool, *others]),
                }
            )
    rng.shuffle(buffers)
    return Workload.from_data({"memplace": "workload/v1", "name": "packed", "buffers": buffers})


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(3, 12), st.integers(0, 2))
def test_a_perfect_packing_is_always_found(
    tight_board: Board, seed: int, pieces: int, choices: int
) -> None:
    result = plan(tight_board, packed_workload(seed, pieces, choices))
    for pool, capacity in POOLS.items():
        assert result.pool(pool).used <= capacity
