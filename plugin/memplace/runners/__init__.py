"""Runners: the programs that run or flash a built image, one small module each.

What each runner needs and takes is declared in `capabilities.py` (standard library only,
read by the board loader too); the runner classes load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memplace.board import Board, FlashRun
    from memplace.runners.base import FlashRequest, Runner, RunResult
    from memplace.runners.capabilities import Capabilities
    from memplace.runners.openocd import OpenocdRunner
    from memplace.runners.pyocd import PyocdRunner
    from memplace.runners.qemu import QemuRunner

    RUNNERS: dict[str, type[Runner]]

_WHERE = {
    "Capabilities": "capabilities",
    "FlashRequest": "base",
    "Runner": "base",
    "RunResult": "base",
    "OpenocdRunner": "openocd",
    "PyocdRunner": "pyocd",
    "QemuRunner": "qemu",
}


def __getattr__(name: str) -> Any:
    if name == "RUNNERS":
        classes = [__getattr__(cls) for cls in ("QemuRunner", "PyocdRunner", "OpenocdRunner")]
        value: Any = {runner.name: runner for runner in classes}
    elif name in _WHERE:
        value = getattr(importlib.import_module(f"memplace.runners.{_WHERE[name]}"), name)
    else:
        raise AttributeError(f"module 'memplace.runners' has no attribute {name!r}")
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
    "OpenocdRunner",
    "PyocdRunner",
    "QemuRunner",
    "RunResult",
    "Runner",
    "board_flash",
    "default_runner",
]
