"""The planner on the shared benchmark instances: MiniMalloc's challenging set inside its
1 MiB capacity, TVM USMP's instances at their lower bounds. Skipped without ../shared."""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

import pytest

from memplace.board import Board
from memplace.planner import ALGORITHMS, Budget, plan
from memplace.planner.blocks import Block, lower_bound
from memplace.planner.check import placement_problems
from memplace.workload import Workload

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
CAPACITY = 1048576

pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no benchmark data at {SHARED}")


def _read(path: Path) -> list[Block]:
    with path.open(newline="") as handle:
        return [
            Block(int(row["size"]), int(row["lower"]), int(row["upper"]) - 1)
            for row in csv.DictReader(handle)
        ]


def _instances(group: str) -> list[Path]:
    return sorted((SHARED / group).glob("*.csv")) if SHARED.is_dir() else []


@pytest.mark.parametrize("path", _instances("minimalloc"), ids=lambda p: p.name.split(".")[0])
def test_minimalloc_challenging_instances_fit_their_capacity(path: Path) -> None:
    blocks = _read(path)
    found = ALGORITHMS["auto"](blocks, Budget(capacity=CAPACITY, nodes=200_000))
    assert found.peak <= CAPACITY
    names = [str(i) for i in range(len(blocks))]
    assert placement_problems(blocks, found.offsets, CAPACITY, names) == []
    if lower_bound(blocks) == CAPACITY:
        assert found.optimal


# TVM's own numbers for deep_speech: hill climbing 102416, greedy by size 149504.
TVM_BOUNDS = {"alloc_max": 67600, "simple": 216096, "five": 176923, "deep_speech": 100352}


@pytest.mark.parametrize("name", sorted(TVM_BOUNDS))
def test_tvm_usmp_instances_reach_their_lower_bound(name: str) -> None:
    path = SHARED / "tvm-usmp" / f"{name}.csv"
    if not path.is_file():
        pytest.skip(f"no {path}")
    blocks = _read(path)
    assert lower_bound(blocks) == TVM_BOUNDS[name]
    found = ALGORITHMS["auto"](blocks, Budget(nodes=200_000))
    assert (found.peak, found.optimal) == (TVM_BOUNDS[name], True)


# MiniMalloc's D: the exact search fits 1 MiB at once, but neither finds nor rules out
# anything between its lower bound (986112) and that within its node budget (some seconds).
HARD = "D.1048576.csv"


def test_the_exact_search_stops_at_its_time_limit_with_its_best_answer() -> None:
    blocks = _read(SHARED / "minimalloc" / HARD)
    start = min(ALGORITHMS[name](blocks).peak for name in ("greedy-size", "greedy-conflicts"))
    started = time.monotonic()
    # Nodes without end: only the clock can stop it.
    found = ALGORITHMS["exact"](blocks, Budget(capacity=CAPACITY, time_limit=0.5, nodes=10**12))
    assert time.monotonic() - started < 5
    assert found.optimal is False
    assert lower_bound(blocks) < found.peak <= start
    names = [str(i) for i in range(len(blocks))]
    assert placement_problems(blocks, found.offsets, found.peak, names) == []


def test_a_plan_cut_short_by_its_time_limit_is_not_proven_optimal(
    board_data: dict[str, Any],
) -> None:
    blocks = _read(SHARED / "minimalloc" / HARD)
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "D",
            "steps": max(b.last for b in blocks) + 1,
            "buffers": [
                {"name": f"b{i}", "size": b.size, "live": [b.first, b.last], "pools": ["ddr_ws"]}
                for i, b in enumerate(blocks)
            ],
        }
    )
    started = time.monotonic()
    result = plan(Board.from_data(board_data), workload, algorithm="exact", time_limit=0.5)
    # Its node budget alone would take seconds longer.
    assert time.monotonic() - started < 5
    ddr = result.to_json()["pools"][[p.name for p in result.pools].index("ddr_ws")]
    assert (ddr["optimal"], ddr["algorithm"], ddr["lower_bound"]) == (False, "exact", 986112)
    start = min(ALGORITHMS[name](blocks).peak for name in ("greedy-size", "greedy-conflicts"))
    assert 986112 < ddr["used"] <= start
