"""Runners: the programs that run or flash a built image, one small module each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memplace.runners.base import Capabilities, FlashRequest, Runner, RunResult
from memplace.runners.openocd import OpenocdRunner
from memplace.runners.pyocd import PyocdRunner
from memplace.runners.qemu import QemuRunner

RUNNERS: dict[str, type[Runner]] = {
    runner.name: runner for runner in (QemuRunner, PyocdRunner, OpenocdRunner)
}


def board_flash(board: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `run.flash` settings of a resolved board (a project's `board` data), if any."""
    run = board.get("run")
    for candidate in (run.get("flash") if isinstance(run, Mapping) else None, board.get("flash")):
        if isinstance(candidate, Mapping) and isinstance(candidate.get("runner"), str):
            return candidate
    return None


def default_runner(board: Mapping[str, Any]) -> str | None:
    """The board's own runner: its flash runner, else `qemu` if it runs under QEMU."""
    flash = board_flash(board)
    if flash is not None:
        return str(flash["runner"])
    run = board.get("run")
    if board.get("qemu_machine") or (isinstance(run, Mapping) and run.get("qemu")):
        return QemuRunner.name
    return None


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
