"""Runners: the programs that run or flash a built image, one small module each.

Each runner module holds its class and the class's record (`registry`); the registry
finds them, and everything that lists runners asks it. The classes load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memplace.board import Board, FlashRun
    from memplace.runners.base import FlashRequest, Runner, RunResult
    from memplace.runners.qemu import QemuRunner
    from memplace.runners.registry import Capabilities, Record

    RUNNERS: dict[str, type[Runner]]

_WHERE = {
    "Capabilities": "registry",
    "Record": "registry",
    "FlashRequest": "base",
    "Runner": "base",
    "RunResult": "base",
    "QemuRunner": "qemu",
}


def __getattr__(name: str) -> Any:
    if name == "RUNNERS":  # asked each time: a runner registered later is in it
        return importlib.import_module("memplace.runners.registry").runners()
    if name not in _WHERE:
        raise AttributeError(f"module 'memplace.runners' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memplace.runners.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def board_flash(board: Board) -> FlashRun | None:
    """The board file's `run.flash` settings, if any."""
    return board.run.flash


def default_runner(board: Board) -> str | None:
    """The board's own runner: its flash runner, else `qemu` if it runs under QEMU."""
    if board.run.flash is not None:
        return board.run.flash.runner
    return "qemu" if board.qemu_machine else None


__all__ = [
    "RUNNERS",
    "Capabilities",
    "FlashRequest",
    "QemuRunner",
    "Record",
    "RunResult",
    "Runner",
    "board_flash",
    "default_runner",
]
