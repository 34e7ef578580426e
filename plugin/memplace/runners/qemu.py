"""Running images under QEMU's Cortex-M machines, with semihosting for output and exit,
through the one QEMU launcher (`memplace.qemu`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memplace import qemu
from memplace.runners.base import Runner, RunResult
from memplace.runners.registry import Capabilities, Record

if TYPE_CHECKING:
    from memplace import process


class QemuRunner(Runner):
    record = Record(
        name="qemu",
        tool=qemu.EXECUTABLE,
        install=qemu.INSTALL,
        capabilities=Capabilities(run=True),
        usage="nothing: `memplace run DIR` runs the images",
        rank=0,
    )

    def __init__(self, machine: str) -> None:
        super().__init__()
        self.machine = machine

    def command(self, images: Mapping[str, Path]) -> list[str]:
        """The exact argv (`memplace.qemu.command`): the booting core's image first."""
        return qemu.command(self.machine, [str(image) for image in images.values()])

    def run(
        self,
        images: Mapping[str, Path],
        timeout: float,
        on_line: Callable[[str], None] | None = None,
    ) -> RunResult:
        images_ = [str(image) for image in images.values()]
        completed = qemu.run(self.machine, images_, timeout, on_line)
        return RunResult(exit_code=completed.returncode, output=completed.output)

    def start(self, images: Mapping[str, Path]) -> process.Running:
        """Start the images and leave them running: the firmware's console is QEMU's stdin
        and its stdout and stderr (`memplace.qemu.start`)."""
        return qemu.start(self.machine, [str(image) for image in images.values()])


RUNNER = QemuRunner
