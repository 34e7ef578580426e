"""Running images under QEMU's Cortex-M machines, with semihosting for output and exit."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from memplace import process
from memplace.errors import InputError
from memplace.runners.base import Runner, RunResult
from memplace.runners.capabilities import DECLARED

EXECUTABLE = "qemu-system-arm"


class QemuRunner(Runner):
    name = "qemu"
    executable = EXECUTABLE
    capabilities = DECLARED["qemu"]

    def __init__(self, machine: str) -> None:
        super().__init__()
        self.machine = machine

    def command(self, images: Mapping[str, Path]) -> list[str]:
        """The exact argv: the machine at its default memory size (-m must not change),
        no display, semihosting to QEMU's own stdio, the first image as the kernel."""
        if not images:
            raise InputError("no image to run", key="DIR")
        # Cores that run one image name one file: it is loaded once.
        first, *rest = dict.fromkeys(images.values())
        argv = [
            EXECUTABLE,
            "-M",
            self.machine,
            "-nographic",
            "-monitor",
            "none",
            "-serial",
            "null",
            "-semihosting-config",
            "enable=on,target=native",
            "-kernel",
            str(first),
        ]
        for image in rest:
            argv += ["-device", f"loader,file={image}"]
        return argv

    def run(
        self,
        images: Mapping[str, Path],
        timeout: float,
        on_line: Callable[[str], None] | None = None,
    ) -> RunResult:
        argv = self.command(images)
        argv[0] = process.find_tool(EXECUTABLE)
        completed = process.run(argv, timeout=timeout, on_line=on_line)
        return RunResult(exit_code=completed.returncode, output=completed.output)

    def start(self, images: Mapping[str, Path]) -> process.Running:
        """Start the images and leave them running: the firmware's console is QEMU's stdin
        (semihosting SYS_READ on ":tt") and its stdout and stderr (semihosting writes;
        QEMU 7.2 sends SYS_WRITE0 and SYS_WRITEC to stderr, SYS_WRITE on ":tt" to stdout)."""
        argv = self.command(images)
        argv[0] = process.find_tool(EXECUTABLE)
        return process.start(argv)
