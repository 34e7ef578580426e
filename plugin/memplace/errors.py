"""The one error hierarchy of memplace.

Every error a user can trigger is one of these. The command line turns them into an exit
code and one line of text (`cli.py`); the Project API turns them into JSON-RPC errors.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    """A position in an input file; line and column count from 1."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class MemplaceError(Exception):
    """Root of every error memplace raises on purpose."""

    exit_code = 3


class InputError(MemplaceError):
    """A board, workload, plan or command line that memplace cannot accept."""

    exit_code = 2

    def __init__(self, message: str, mark: Mark | None = None, key: str | None = None) -> None:
        self.message = message
        self.mark = mark
        self.key = key
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.mark}: " if self.mark else ""
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


class PlanningError(MemplaceError):
    """The inputs are valid, but some buffer fits in none of its candidate places."""

    exit_code = 1

    def __init__(self, message: str, buffer: str, shortfalls: dict[str, int]) -> None:
        self.buffer = buffer
        self.shortfalls = shortfalls
        super().__init__(message)


class SearchStopped(MemplaceError):
    """The user's time limit stopped the search before every buffer found a place: not a
    proof that they do not fit (`PlanningError`), only that this search ran out of time."""

    exit_code = 4

    def __init__(self, message: str, nodes: int, place: str, needs: int, capacity: int) -> None:
        self.nodes = nodes
        self.place = place
        self.needs = needs
        self.capacity = capacity
        super().__init__(message)

    def to_json(self) -> dict[str, object]:
        return {
            "reason": "time limit",
            "nodes": self.nodes,
            "place": self.place,
            "needs": self.needs,
            "capacity": self.capacity,
        }


class CheckFailed(MemplaceError):
    """A verification found the firmware disagreeing with the plan or a budget."""

    exit_code = 1


class ToolError(MemplaceError):
    """An external tool is missing, failed or timed out."""

    exit_code = 3
