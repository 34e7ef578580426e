"""memplace: plan where every buffer of a firmware lives, generate the glue, prove it.

The pure core, for compilers that call memplace as a library:

    board = memplace.load_board("qemu-mps3-an547")
    workload = memplace.load_workload("workload.yaml")   # or a .tflite model
    plan = memplace.plan(board, workload)
    files = memplace.render(board, plan)

A workload can also be built in code with `WorkloadBuilder` (see docs/python-api.md), and
`explain(board, workload)` says why each buffer went where it did.
"""

from memplace.board import Board, load_board
from memplace.codegen import render
from memplace.errors import CheckFailed, InputError, MemplaceError, PlanningError, ToolError
from memplace.explain import Explanation, explain
from memplace.planner import plan
from memplace.planner.model import Placement, Plan
from memplace.workload import Buffer, Workload, WorkloadBuilder, load_workload

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
