"""benchmarks/generate_kills.py: its table, on a few runs (the few hundred are for `make
bench`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_killed_generates_leave_folders_the_next_run_accepts() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_kills", REPO / "benchmarks/generate_kills.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_kills"] = module
    spec.loader.exec_module(module)
    rows = module.table(runs=3, seed=2).splitlines()
    assert rows[2] == "| 3 | none (baseline) | 0 | 0 | 0 |"
    assert rows[3] == "| 3 | at a random moment | 0 | 0 | 0 |"
