"""memplace: plan where every buffer of a firmware lives, generate the glue, prove it.

The pure core, for compilers that call memplace as a library:

    board = memplace.load_board("qemu-mps3-an547")
    workload = memplace.load_workload("workload.yaml")   # or a .tflite model
    plan = memplace.plan(board, workload)
    files = memplace.render(board, plan)

A workload can also be built in code with `WorkloadBuilder` (see docs/python-api.md), and
`explain(board, workload)` says why each buffer went where it did.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memplace.board import Board, load_board
    from memplace.codegen import render
    from memplace.errors import CheckFailed, InputError, MemplaceError, PlanningError, ToolError
    from memplace.importers import load_workload
    from memplace.planner import plan
    from memplace.planner.explain import Explanation, explain
    from memplace.planner.model import Placement, Plan
    from memplace.workload import Buffer, Workload, WorkloadBuilder

# Each public name, by the module that holds it: loaded on first use, so that importing
# memplace (or only its errors) does not load the planner, the generator and Jinja2.
_WHERE = {
    "Board": "board",
    "load_board": "board",
    "render": "codegen",
    "CheckFailed": "errors",
    "InputError": "errors",
    "MemplaceError": "errors",
    "PlanningError": "errors",
    "ToolError": "errors",
    "Explanation": "planner.explain",
    "explain": "planner.explain",
    "load_workload": "importers",
    "plan": "planner",
    "Placement": "planner.model",
    "Plan": "planner.model",
    "Buffer": "workload",
    "Workload": "workload",
    "WorkloadBuilder": "workload",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    if name not in _WHERE:
        raise AttributeError(f"module 'memplace' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memplace.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def _version() -> str:
    """The installed distribution's version (pyproject.toml's, through its metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memplace")
    except PackageNotFoundError:  # a copy on sys.path that was never installed
        return "0+unknown"


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "Board",
    "Buffer",
    "CheckFailed",
    "Explanation",
    "InputError",
    "MemplaceError",
    "Placement",
    "Plan",
    "PlanningError",
    "ToolError",
    "Workload",
    "WorkloadBuilder",
    "explain",
    "load_board",
    "load_workload",
    "plan",
    "render",
]
