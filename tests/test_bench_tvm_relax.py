"""benchmarks/tvm_relax.py: what it plans and how it reports (the five MLPerf Tiny models
under QEMU are for `make bench`)."""

from __future__ import annotations

from conftest import benchmark
from memplace.board import load_board
from memplace.importers.relax import from_relax
from memplace.planner import plan
from relax_models import WEIGHTS, scoped_module


def test_the_storages_alone_are_planned_in_one_pool_against_their_bound() -> None:
    bench = benchmark("tvm_relax")
    model = from_relax(scoped_module(), {"w": WEIGHTS}, name="scoped")
    workload = bench.storages_only(model)
    assert [b.name for b in workload.buffers] == ["alloc", "b"]
    usage = {p.name: p for p in plan(load_board(bench.BOARD), workload).pools}[bench.POOL]
    assert usage.used == usage.lower_bound == 64  # alloc and b live together at step 1


def test_the_table_says_where_outputs_differ() -> None:
    row = {"model": "m", "steps": 3, "tvm": 96, "memplace": 64, "bound": 64, "workspace": 0}
    rows = [
        {**row, "check": 0, "fill": 0, "random": 1},
        {**row, "check": 1, "fill": None, "random": None},
    ]
    lines = benchmark("tvm_relax").markdown(rows).splitlines()
    assert lines[2] == "| m | 3 | 96 | 64 | 64 | 0 | passed | equal | within 1 (int8 steps) |"
    assert lines[3] == "| m | 3 | 96 | 64 | 64 | 0 | exit 1 | no outputs | no outputs |"
