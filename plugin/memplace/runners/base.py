"""What every runner has in common."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunResult:
    """A finished run: the image's exit code and everything it printed."""

    exit_code: int
    output: str


class Runner(ABC):
    """Runs (or flashes) the images of one project."""

    name: str = ""

    @abstractmethod
    def run(self, images: Mapping[str, Path], timeout: float) -> RunResult:
        """Run the images to completion; the first core's image is the one that boots."""
