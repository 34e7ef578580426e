"""The planner on the shared benchmark instances: MiniMalloc's challenging set inside its
1 MiB capacity, TVM USMP's instances at their lower bounds. Skipped without ../shared."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from memplace.planner import ALGORITHMS, Budget
from memplace.planner.blocks import Block, lower_bound
from memplace.planner.check import placement_problems

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
