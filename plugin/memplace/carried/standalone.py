"""The Project API server a generated project carries, as microTVM's template projects
carry theirs: `<project>/microtvm_api_server.py` runs `main`, with a copy of this module,
`server`, `transport` and `processes` in `<project>/project_api/`.

Standard library only: it serves the one project it sits in, with no memplace installed.
What it needs to know, memplace wrote at generate time into `project_api/project.json`
(`DESCRIPTION`): the board's server info, the project options, the images, and the exact
argv of each runner (the QEMU command line that `memplace run` uses, and the board's
default flash command). `build` runs CMake and Ninja; `flash` and the transport run the
stored argv from the project folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .build import SettingError, settings_from
from .build import build as build_project
from .processes import check, find_tool, start
from .server import (
    EXIT_CODES,
    ProjectOption,
    Server,
    ServerError,
    check_options,
    fd_problem,
    serve_on,
)
from .transport import TIMEOUTS, ConsoleTransport, TransportMethods

log = logging.getLogger("memplace.project_api")

PLATFORM_NAME = "memplace"
# Where a project keeps the Model Library Format archive it was made from (TVM's place).
MODEL_ARCHIVE = "model.tar"
DESCRIPTION = "project_api/project.json"
DESCRIPTION_VERSION = "project-api/v1"
# The runner whose command runs the images (an emulator); every other runner flashes.
EMULATOR = "qemu"
FLASH_TIMEOUT = 300.0  # seconds


class InputError(ServerError):
    """A request this project cannot serve; named as memplace's own input errors are."""

    def __init__(self, detail: str, key: str) -> None:
        super().__init__(detail, {"key": key})


@dataclass(frozen=True)
class CarriedProject:
    """A generated project as its `project_api/project.json` describes it. `commands`
    holds the argv of each runner the project can use: the one that runs the images
    (`EMULATOR`) or the board's flash command; `flash_settings` are the options that
    would change a flash command. Paths in it (images, and the image arguments of the
    commands) are relative to `folder`."""

    folder: Path
    board: str
    board_info: Mapping[str, Any]
    options: tuple[ProjectOption, ...]
    runner: str | None
    commands: Mapping[str, tuple[str, ...]]
    flash_settings: tuple[str, ...]
    images: Mapping[str, str]
    install_hints: Mapping[str, str]

    @classmethod
    def load(cls, folder: Path) -> CarriedProject:
        """Raises OSError, or ValueError saying what is wrong with the description."""
        path = folder / DESCRIPTION
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("memplace") != DESCRIPTION_VERSION:
            raise ValueError(f"{path} is not a {DESCRIPTION_VERSION} description")
        try:
            return cls(
                folder=folder,
                board=data["board"],
                board_info=data["board_info"],
                options=tuple(ProjectOption.from_json(o) for o in data["project_options"]),
                runner=data["runner"],
                commands={name: tuple(argv) for name, argv in data["commands"].items()},
                flash_settings=tuple(data["flash_settings"]),
                images=data["images"],
                install_hints=data["install_hints"],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path} is missing or misstates {exc}") from None

    def tool(self, name: str) -> str:
        return find_tool(name, self.install_hints.get(name))


def archive_path(folder: Path) -> str:
    """Where a project keeps the Model Library Format archive it was made from, as TVM's
    servers say it; "" when it was made from something else (a workload file, a model)."""
    archive = folder / MODEL_ARCHIVE
    return str(archive) if archive.is_file() else ""


class ProjectHandler(TransportMethods):
    """The work behind each Project API method, for the project the server sits in. It
    serves the project options memplace stored and checks each request's against them."""

    def __init__(self, project: CarriedProject) -> None:
        self.project = project
        self.transport: ConsoleTransport | None = None

    def server_info_query(self, tvm_version: str) -> dict[str, Any]:
        return {
            "platform_name": PLATFORM_NAME,
            "is_template": False,
            "model_library_format_path": archive_path(self.project.folder),
            "project_dir": str(self.project.folder),
            "project_options": list(self.project.options),
            **self.project.board_info,
        }

    def generate_project(
        self,
        model_library_format_path: Path,
        standalone_crt_dir: Path | None,
        project_dir: Path,
        options: dict[str, Any],
    ) -> Any:
        options = check_options(self.project.options, "generate_project", options)
        if options.get("project_type") == "host_driven":
            raise InputError(host_driven(), key="project_type")
        raise InputError(
            f"this server serves the project in {self.project.folder} and is no template; "
            "generate a project with `memplace generate` or `memplace serve --board`",
            key="project_dir",
        )

    def build(self, options: dict[str, Any]) -> dict[str, Any]:
        """Configure the project with CMake and Ninja (when needed), then build it, with
        the settings TVM's options give (`build.settings_from`)."""
        options = check_options(self.project.options, "build", options)
        try:
            settings = settings_from(options)
            output = build_project(self.project.folder, settings, self.project.tool)
        except SettingError as exc:
            raise InputError(str(exc), key=exc.key) from None
        result: dict[str, Any] = {
            "images": {core: str(path) for core, path in self._images().items()}
        }
        if settings.verbose:
            result["output"] = output
        return result

    def flash(self, options: dict[str, Any]) -> dict[str, Any]:
        """Program the board with its own flash command; for a board that runs under QEMU
        there is nothing to do, as QEMU loads the images when the transport opens."""
        options = check_options(self.project.options, "flash", options)
        runner = self._runner(options)
        if runner == EMULATOR:
            return {"runner": runner, "flashed": False}
        given = [name for name in self.project.flash_settings if options.get(name)]
        argv = self.project.commands.get(runner)
        if given or argv is None:
            why = f"option {', '.join(given)}" if given else f"runner {runner}"
            raise InputError(
                f"this project's server flashes with the board's own settings only, which "
                f"{why} would change; use `memplace flash {self.project.folder}`",
                key=given[0] if given else "runner",
            )
        self._require_images()
        check(
            [self.project.tool(argv[0]), *argv[1:]],
            FLASH_TIMEOUT,
            f"{runner} could not flash the board",
            cwd=self.project.folder,
        )
        return {"runner": runner, "flashed": True}

    def open_transport(self, options: dict[str, Any]) -> dict[str, Any]:
        """Start the firmware under QEMU with the stored command; its console is the
        transport."""
        options = check_options(self.project.options, "open_transport", options)
        runner = self._runner(options)
        argv = self.project.commands.get(EMULATOR)
        if runner != EMULATOR or argv is None:
            raise InputError(
                f"the transport is the console of the firmware under QEMU; board "
                f"{self.project.board} runs with {runner}, which has none here",
                key="runner",
            )
        self._require_images()
        self.close_transport()
        started = start([self.project.tool(argv[0]), *argv[1:]], cwd=self.project.folder)
        self.transport = ConsoleTransport(started)
        return dict(TIMEOUTS)

    def _runner(self, options: Mapping[str, Any]) -> str:
        runner = options.get("runner") or self.project.runner
        if runner is None:
            raise InputError(
                f"board {self.project.board} says nothing of how to run or flash it; "
                "flash it with `memplace flash DIR --runner NAME`",
                key="runner",
            )
        return str(runner)

    def _images(self) -> dict[str, Path]:
        return {core: self.project.folder / path for core, path in self.project.images.items()}

    def _require_images(self) -> None:
        for image in self._images().values():
            if not image.is_file():
                raise InputError(f"no image {image}: build the project first", key="DIR")


def host_driven() -> str:
    """Why project type `host_driven` is refused."""
    return (
        "project type host_driven needs TVM's RPC server in the firmware, which memplace's "
        "firmware does not carry; use aot_standalone_demo (the model runs once on the "
        "target and reports) or exerciser"
    )


def describe(exc: BaseException) -> dict[str, Any] | None:
    """The `data` of the -32000 error an unexpected exception travels as: errors of the
    file system travel (with their errno); anything else is a bug (-32603)."""
    if isinstance(exc, OSError):
        return {"message": str(exc), "errno": exc.errno}
    return None


def make_server(project: CarriedProject) -> Server:
    return Server(ProjectHandler(project), describe=describe)


def main(folder: Path, argv: Sequence[str] | None = None) -> int:
    """`microtvm_api_server.py [--read-fd N --write-fd M]`: serve the project in `folder`
    until the client closes its end; logs go to stderr."""
    parser = argparse.ArgumentParser(
        prog="microtvm_api_server.py",
        description=f"Project API server of the memplace project in {folder}",
    )
    parser.add_argument("--read-fd", type=int, help="read requests here (default: stdin)")
    parser.add_argument("--write-fd", type=int, help="write replies here (default: stdout)")
    parser.add_argument("--debug", action="store_true", help="log debug detail")
    args = parser.parse_args(argv)
    problem = fd_problem(args.read_fd, args.write_fd)
    if problem is not None:
        parser.error(problem)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.debug else logging.INFO,
        format="%(name)s: %(message)s",
    )
    try:
        project = CarriedProject.load(folder)
    except (OSError, ValueError) as exc:
        print(f"microtvm_api_server.py: {exc}", file=sys.stderr)
        return EXIT_CODES["InputError"]
    log.info("serving the Project API of the project in %s", folder)
    serve_on(make_server(project), args.read_fd, args.write_fd)
    return 0
