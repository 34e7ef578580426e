"""Flashing with pyOCD: `pyocd load --target TARGET IMAGE...` (`load` is the newer name of
`pyocd flash`; both take the same arguments)."""

from __future__ import annotations

from memplace.runners.base import Runner
from memplace.runners.registry import Capabilities, Record


class PyocdRunner(Runner):
    record = Record(
        name="pyocd",
        tool="pyocd",
        install="pip install pyocd",
        capabilities=Capabilities(
            flash=True,
            settings=frozenset({"target", "probe", "frequency", "erase"}),
            needs=frozenset({"target"}),
        ),
        usage="`pyocd load --target T [--uid P] [--frequency F] [--erase chip] IMAGE...`",
        rank=10,
    )

    def _flash_argv(self, images: list[str]) -> list[str]:
        """pyOCD places each ELF image at the addresses it was linked for."""
        request = self.request
        argv = [self.record.tool, "load", "--target", str(request.target)]
        if request.probe:
            argv += ["--uid", request.probe]
        if request.frequency:
            argv += ["--frequency", str(request.frequency)]
        if request.erase:
            argv += ["--erase", "chip"]
        return argv + images


RUNNER = PyocdRunner
