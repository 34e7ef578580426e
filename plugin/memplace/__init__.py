"""memplace: plan where every buffer of a firmware lives, generate the glue, prove it.

The pure core, for compilers that call memplace as a library:

    board = memplace.load_board("qemu-mps3-an547")
    workload = memplace.load_workload("workload.yaml")
    plan = memplace.plan(board, workload)
    files = memplace.render(board, plan)
"""

from memplace.board import Board, load_board
from memplace.codegen import render
from memplace.errors import CheckFailed, InputError, MemplaceError, PlanningError, ToolError
from memplace.planner import plan
from memplace.planner.model import Placement, Plan
from memplace.workload import Buffer, Workload, load_workload

__all__ = [
    "Board",
    "Buffer",
    "CheckFailed",
    "InputError",
    "MemplaceError",
    "Placement",
    "Plan",
    "PlanningError",
    "ToolError",
    "Workload",
    "load_board",
    "load_workload",
    "plan",
    "render",
]
