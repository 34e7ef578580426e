"""benchmarks/generate_kills.py: its table, on two runs of each kind, one per workload (so the
second run also finds the first one's files to remove); the few hundred are for `make
bench`."""

from __future__ import annotations

from conftest import benchmark


def test_killed_generates_leave_folders_the_next_run_accepts() -> None:
    rows = benchmark("generate_kills").table(runs=2, seed=2).splitlines()
    assert rows[2] == "| 2 | none (baseline) | 0 | 0 | 0 |"
    assert rows[3] == "| 2 | at a random moment | 0 | 0 | 0 |"
