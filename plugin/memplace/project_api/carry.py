"""What memplace tells the Project API server a generated project carries, in
`project_api/project.json`: the board's server info, the project options, the images and
the exact argv of each runner. `codegen.server` writes it beside the carried modules.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import Any

from memplace import options as project_options
from memplace.board import Board
from memplace.carried.standalone import DESCRIPTION_VERSION, EMULATOR
from memplace.errors import InputError
from memplace.process import INSTALL_HINTS
from memplace.runners import FlashRequest, QemuRunner, board_flash, default_runner, registry
from memplace.scopes import valid_scopes

log = logging.getLogger("memplace.project_api")

# Tools the carried server runs whatever the board: CMake, Ninja and the compiler.
_BUILD_TOOLS = ("arm-none-eabi-gcc", "cmake", "ninja")


def describer(board: Board) -> Callable[[Mapping[str, str]], dict[str, Any]]:
    """What `render` calls to describe a project for `board` to its own server."""
    return partial(describe_project, board)


def board_info(board: Board | None) -> dict[str, Any]:
    """What `server_info_query` says of the board, or of no board."""
    data = board.to_data() if board else {}
    return {
        "board": data.get("name"),
        "memories": data.get("memories", {}),
        "pools": data.get("pools", {}),
        "contexts": data.get("contexts", {}),
        "valid_scopes": valid_scopes(board) if board else [],
    }


def describe_project(board: Board, images: Mapping[str, str]) -> dict[str, Any]:
    """The content of `project_api/project.json`; `images` are by core, relative to the
    project, the booting core first."""
    commands = runner_commands(board, {core: Path(path) for core, path in images.items()})
    tools = {*_BUILD_TOOLS, *(argv[0] for argv in commands.values())}
    hints = {**INSTALL_HINTS, **registry.install_hints()}
    return {
        "memplace": DESCRIPTION_VERSION,
        "board": board.name,
        "board_info": board_info(board),
        "project_options": [
            option.to_json() for option in project_options.with_defaults(board=board.name)
        ],
        "runner": default_runner(board),
        "commands": commands,
        "flash_settings": [item.name for item in fields(FlashRequest)],
        "images": dict(images),
        "install_hints": {name: hints[name] for name in sorted(tools & hints.keys())},
    }


def runner_commands(board: Board, images: Mapping[str, Path]) -> dict[str, list[str]]:
    """The exact argv of each runner the project can use, run from the project folder:
    QEMU's (as `memplace run` runs it) and the board's own flash command (as `memplace
    flash DIR` runs it), each where the board has one."""
    commands: dict[str, list[str]] = {}
    if board.qemu_machine:
        commands[EMULATOR] = QemuRunner(board.qemu_machine).command(images)
    settings = board_flash(board)
    runners = registry.runners()
    if settings is not None and settings.runner in runners:
        name = settings.runner
        try:
            runner = runners[name].for_flashing(FlashRequest().over(settings))
            commands[name] = runner.flash_command(images)
        except InputError as exc:  # `memplace flash` says so when it is asked to flash
            log.debug("no flash command for board %s: %s", board.name, exc)
    return commands
