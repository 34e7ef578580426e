"""Configuring and building a generated project with CMake and Ninja.

The steps are `memplace.carried.build`, the standard-library routine a
generated project's own server runs too; this holds the folder for the build and adds
memplace's install hints and error class."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memplace import process
from memplace.carried import build as steps
from memplace.carried.build import BuildSettings
from memplace.errors import InputError
from memplace.project import locked

__all__ = ["BuildSettings", "build"]


def build(
    folder: Path,
    settings: BuildSettings | None = None,
    on_line: Callable[[str], None] | None = None,
) -> str:
    """Configure (when needed) and build the project in `folder`; returns the build's
    output, each line of which goes to `on_line` as it comes. The folder is held for the
    build (`project.locked`)."""
    with locked(folder), process.as_memplace_errors():
        try:
            return steps.build(folder, settings, process.find_tool, on_line)
        except steps.SettingError as exc:
            raise InputError(str(exc), key=exc.key) from None
