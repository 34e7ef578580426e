"""Runners: the programs that run or flash a built image, one small module each."""

from __future__ import annotations

from memplace.runners.base import Runner, RunResult
from memplace.runners.qemu import QemuRunner

RUNNERS: dict[str, type[Runner]] = {QemuRunner.name: QemuRunner}

__all__ = ["RUNNERS", "QemuRunner", "RunResult", "Runner"]
