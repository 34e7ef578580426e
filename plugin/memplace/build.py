"""Configuring and building a generated project with CMake and Ninja."""

from __future__ import annotations

from pathlib import Path

from memplace import process
from memplace.errors import ToolError
from memplace.layout import BUILD_DIR
from memplace.project import locked

TIMEOUT = 600.0


def build(folder: Path) -> str:
    """Configure (once) and build the project in `folder`; returns the build's output.
    The folder is held for the build (`project.locked`)."""
    with locked(folder):
        return _build(folder)


def _build(folder: Path) -> str:
    cmake = process.find_tool("cmake")
    process.find_tool("arm-none-eabi-gcc")
    build_dir = folder / BUILD_DIR
    output = ""
    if not (build_dir / "CMakeCache.txt").is_file():
        ninja = process.find_tool("ninja")
        configure = process.run(
            [
                cmake,
                "-S",
                str(folder),
                "-B",
                str(build_dir),
                "-G",
                "Ninja",
                f"-DCMAKE_MAKE_PROGRAM={ninja}",
            ],
            timeout=TIMEOUT,
        )
        output += configure.output
        if configure.returncode != 0:
            raise ToolError(f"CMake could not configure {folder}:\n{_tail(configure.output)}")
    result = process.run([cmake, "--build", str(build_dir)], timeout=TIMEOUT)
    output += result.output
    if result.returncode != 0:
        raise ToolError(f"the build of {folder} failed:\n{_tail(result.output)}")
    return output


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
