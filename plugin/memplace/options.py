"""The project options, declared once.

The Project API serves them (`server_info_query`) and checks requests against them; the
command line takes its flags from them (`add_arguments`); the options table of
docs/project-api.md is `markdown_table()` (a test keeps the two equal).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memplace.carried.server import ProjectOption
from memplace.planner import ALGORITHMS, DEFAULT_ALGORITHM
from memplace.project_files import POOL_STORAGE, PROJECT_TYPE_NAMES
from memplace.runners import registry

_GENERATE = ("generate_project",)
_FLASH = ("flash",)
_BUILD = ("generate_project", "build")  # TVM sends them to both; the build reads them
# TVM's project types: `aot_standalone_demo` runs the model once and reports (the Model
# Library Format firmware); `host_driven` needs TVM's RPC server in the firmware, which
# memplace's firmware does not carry: generate_project refuses it, saying so.
TVM_PROJECT_TYPES = ("aot_standalone_demo", "host_driven")

_DECLARED: tuple[ProjectOption, ...] = (
    ProjectOption(
        "board",
        "str",
        "bundled board name, or path to a board file",
        required=_GENERATE,
    ),
    ProjectOption(
        "project_type",
        "str",
        "what the project runs: the exerciser, the user's app, or the glue only (library)",
        default="exerciser",
        choices=tuple(sorted({*PROJECT_TYPE_NAMES, *TVM_PROJECT_TYPES})),
        optional=_GENERATE,
    ),
    ProjectOption(
        "sources",
        "path",
        "folder of the app's C files (project type app); they provide int app_main(void)",
        optional=_GENERATE,
    ),
    ProjectOption(
        "pool_storage",
        "str",
        "who defines the workspace pool arrays: the generated C, or the application",
        default="generated",
        choices=POOL_STORAGE,
        optional=_GENERATE,
    ),
    ProjectOption(
        "algorithm",
        "str",
        "offset algorithm",
        default=DEFAULT_ALGORITHM,
        choices=tuple(sorted(ALGORITHMS)),
        optional=_GENERATE,
    ),
    ProjectOption(
        "extra_files_tar",
        "path",
        "tar archive unpacked into the new project; members that would land outside it, "
        "links and files that would replace generated ones are refused",
        optional=_GENERATE,
    ),
    ProjectOption(
        "verbose",
        "bool",
        "build with verbose output: every command the build runs, logged by the server",
        default=False,
        optional=_BUILD,
    ),
    ProjectOption(
        "warning_as_error",
        "bool",
        "treat compiler warnings as errors in the build",
        default=False,
        optional=_BUILD,
    ),
    ProjectOption(
        "compile_definitions",
        "list",
        "extra definitions for the compiler, as TVM sends them: -DNAME or -DNAME=VALUE "
        "strings (a list, or text split as a shell does)",
        optional=_BUILD,
    ),
    ProjectOption(
        "cmsis_path",
        "path",
        "root of a CMSIS checkout; the build gets it as the CMake variable CMSIS_PATH, for "
        "projects whose code includes CMSIS headers",
        optional=_BUILD,
    ),
    ProjectOption(
        "runner",
        "str",
        "what flashes or runs the project; default: the board's run.flash runner, "
        "else qemu for a board that runs under QEMU",
        choices=(),  # the runners' names, filled in by `declared`
        optional=("flash", "open_transport"),
    ),
    ProjectOption(
        "target",
        "str",
        "pyOCD target type; default: the board's run.flash.target",
        optional=_FLASH,
    ),
    ProjectOption(
        "config",
        "str",
        "OpenOCD configuration file; default: the board's run.flash.config",
        optional=_FLASH,
    ),
    ProjectOption(
        "probe",
        "str",
        "serial number (unique ID) of the debug probe to use",
        optional=_FLASH,
    ),
    ProjectOption("frequency", "int", "SWD/JTAG clock in Hz", optional=_FLASH),
    ProjectOption(
        "erase",
        "bool",
        "erase the whole chip before programming",
        default=False,
        optional=_FLASH,
    ),
)


def declared() -> tuple[ProjectOption, ...]:
    """The options, the runners' names as `runner`'s choices (`runners.registry`)."""
    runners = tuple(registry.runners())
    return tuple(
        replace(option, choices=runners) if option.name == "runner" else option
        for option in _DECLARED
    )


def __getattr__(name: str) -> Any:
    # `OPTIONS` and `BY_NAME` are made when asked, so they name every runner registered.
    if name == "OPTIONS":
        return declared()
    if name == "BY_NAME":
        return {option.name: option for option in declared()}
    raise AttributeError(f"module 'memplace.options' has no attribute {name!r}")


if TYPE_CHECKING:
    OPTIONS: tuple[ProjectOption, ...]
    BY_NAME: dict[str, ProjectOption]

# TVM's common options that set how the Project API builds (`carried.build.settings_from`);
# the command line has no flags for them.
BUILD_SETTINGS = ("verbose", "warning_as_error", "compile_definitions", "cmsis_path")


def accepted_by(method: str) -> list[str]:
    """The names of the options `method` requires or accepts, in declaration order."""
    return [option.name for option in declared() if option.accepted_by(method)]


def with_defaults(**defaults: Any) -> tuple[ProjectOption, ...]:
    """The options with some defaults set at run time (`memplace serve --board`). An
    option given a default is no longer required: TVM's tools insist on required ones."""
    return tuple(
        _defaulted(option, defaults[option.name]) if option.name in defaults else option
        for option in declared()
    )


def _defaulted(option: ProjectOption, default: Any) -> ProjectOption:
    if default is None:
        return option
    optional = (*option.required, *option.optional)
    return replace(option, default=default, required=(), optional=optional)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser, *names: str) -> None:
    """A command-line flag for each named option; its value lands in `args.<name>`."""
    by_name = {option.name: option for option in declared()}
    for name in names:
        option = by_name[name]
        if option.type == "bool":
            parser.add_argument(
                flag(name),
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=option.default,
                help=option.help,
            )
            continue
        parser.add_argument(
            flag(name),
            dest=name,
            default=option.default,
            choices=option.choices,
            type=_argument_type(option),
            metavar=None if option.choices else name.upper(),
            help=option.help if option.default is None else f"{option.help} (default: %(default)s)",
        )


def _argument_type(option: ProjectOption) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return option.convert(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = option.type
    return convert


def markdown_table() -> str:
    """The options as the Markdown table of docs/project-api.md."""
    rows = [
        "| option | type | default | choices | required by | accepted by | help |",
        "|---|---|---|---|---|---|---|",
    ]
    for option in declared():
        cells = [
            f"`{option.name}`",
            option.type,
            "" if option.default is None else f"`{_json_text(option.default)}`",
            ", ".join(f"`{choice}`" for choice in option.choices or ()),
            ", ".join(option.required),
            ", ".join(option.optional),
            option.help,
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _json_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
