"""Configuring and building a generated project with CMake and Ninja: the one build
routine, run by `memplace build` and by the server a generated project carries.

Standard library only, like `server`: it travels with the project. Tools are looked up
with the `find_tool` given (memplace's adds its install hints); a failing step raises
`ToolError` with the end of the tool's output.
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .processes import check, find_tool

log = logging.getLogger("memplace.build")

BUILD_DIR = "build"
# The settings a project was generated with (TVM bakes them into its projects): every
# later build uses them, with what the build's own options add.
SAVED = "project_api/build_settings.json"
TIMEOUT = 600.0  # seconds, for configuring and for building
# The cache entries memplace sets when it configures, which a later build compares.
_SETTINGS = ("CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS", "CMSIS_PATH")


@dataclass(frozen=True)
class BuildSettings:
    """What a build may change (TVM's common project options): `compile_definitions` as
    TVM sends them (`-DNAME=VALUE` strings), warnings as errors, the CMSIS root the
    project's CMake reads as `CMSIS_PATH`, and whether the tools print every command."""

    compile_definitions: tuple[str, ...] = ()
    warning_as_error: bool = False
    cmsis_path: Path | None = None
    verbose: bool = False

    def cache(self) -> dict[str, str]:
        """The CMake cache entries these settings give."""
        flags = [*self.compile_definitions, *(["-Werror"] if self.warning_as_error else [])]
        text = " ".join(flags)
        return {
            "CMAKE_C_FLAGS": text,
            "CMAKE_CXX_FLAGS": text,
            "CMSIS_PATH": "" if self.cmsis_path is None else str(self.cmsis_path),
        }

    def over(self, saved: BuildSettings) -> BuildSettings:
        """These settings on top of those a project was generated with: definitions add
        up, warnings stay errors once asked, a CMSIS root given now wins."""
        added = tuple(d for d in self.compile_definitions if d not in saved.compile_definitions)
        return BuildSettings(
            compile_definitions=saved.compile_definitions + added,
            warning_as_error=saved.warning_as_error or self.warning_as_error,
            cmsis_path=self.cmsis_path or saved.cmsis_path,
            verbose=self.verbose,
        )


def save_settings(folder: Path, settings: BuildSettings) -> None:
    """Keep what the build of the project in `folder` must always use; nothing is written
    when there is nothing to keep."""
    data = {
        "compile_definitions": list(settings.compile_definitions),
        "warning_as_error": settings.warning_as_error,
        "cmsis_path": None if settings.cmsis_path is None else str(settings.cmsis_path),
    }
    if settings.compile_definitions or settings.warning_as_error or settings.cmsis_path:
        (folder / SAVED).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def saved_settings(folder: Path) -> BuildSettings:
    """What `save_settings` kept for the project in `folder` (none: the defaults)."""
    path = folder / SAVED
    if not path.is_file():
        return BuildSettings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        cmsis = data["cmsis_path"]
        return BuildSettings(
            compile_definitions=check_definitions(data["compile_definitions"]),
            warning_as_error=bool(data["warning_as_error"]),
            cmsis_path=None if cmsis is None else Path(cmsis),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SettingError(SAVED, f"{path} is not what memplace wrote: {exc}") from None


class SettingError(ValueError):
    """A build option that cannot be used; `key` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def settings_from(options: Mapping[str, Any]) -> BuildSettings:
    """The build settings among a Project API request's options (TVM's names); raises
    `SettingError` naming the option that is wrong and why."""
    cmsis = options.get("cmsis_path")
    if cmsis is not None and not Path(cmsis).is_dir():
        raise SettingError("cmsis_path", f"no folder {cmsis}")
    try:
        definitions = check_definitions(options.get("compile_definitions") or ())
    except ValueError as exc:
        raise SettingError("compile_definitions", str(exc)) from None
    return BuildSettings(
        compile_definitions=definitions,
        warning_as_error=bool(options.get("warning_as_error")),
        cmsis_path=None if cmsis is None else Path(cmsis).resolve(),
        verbose=bool(options.get("verbose")),
    )


def check_definitions(values: Sequence[str]) -> tuple[str, ...]:
    """`values` as compile definitions; raises ValueError naming the first that is not
    `-DNAME` or `-DNAME=VALUE` (TVM's form) or that would split in a shell."""
    for value in values:
        name = value[2:].partition("=")[0]
        if not value.startswith("-D") or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise ValueError(f"{value!r} is not -DNAME or -DNAME=VALUE")
        if shlex.split(value) != [value]:
            raise ValueError(f"{value!r} holds spaces or quotes")
    return tuple(values)


def build(
    folder: Path,
    settings: BuildSettings | None = None,
    tool: Callable[[str], str] = find_tool,
    on_line: Callable[[str], None] | None = None,
) -> str:
    """Configure the project in `folder` (when it never was, or the settings changed),
    then build it, with `settings` over those the project was generated with
    (`save_settings`); returns the tools' output. `on_line` sees each line of the build's
    output as it comes (ninja's `[n/N]` progress among them)."""
    cmake = tool("cmake")
    tool("arm-none-eabi-gcc")  # the toolchain file looks for it on PATH
    build_dir = folder / BUILD_DIR
    settings = (settings or BuildSettings()).over(saved_settings(folder))
    wanted: dict[str, str | None] = dict(settings.cache())
    output = ""
    if _cached(build_dir) != wanted:
        configure = [cmake, "-S", str(folder), "-B", str(build_dir), "-G", "Ninja"]
        configure.append(f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}")
        configure += [f"-D{name}={value}" for name, value in wanted.items()]
        output += check(configure, TIMEOUT, f"CMake could not configure {folder}")
    command = [cmake, "--build", str(build_dir), *(["--verbose"] if settings.verbose else [])]
    output += check(command, TIMEOUT, f"the build of {folder} failed", on_line=on_line)
    if settings.verbose:
        log.info("%s", output.rstrip())
    return output


def _cached(build_dir: Path) -> dict[str, str | None] | None:
    """The settings the build folder was configured with, or None if it never was."""
    try:
        lines = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found: dict[str, str | None] = dict.fromkeys(_SETTINGS)
    for line in lines:
        name, _, value = line.partition("=")
        name = name.partition(":")[0]
        if name in found:
            found[name] = value
    return found
