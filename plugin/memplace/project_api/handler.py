"""memplace behind the Project API: the handler that does the work of each method, and
`serve`, which runs a server on two file descriptors (`memplace serve`).

A server is a template for a board (`--board`) until it generates a project, and from
then on serves that project; `--project DIR` starts it on a project generated earlier.
memplace's own errors travel as -32000 errors named by their class, with the message,
exit code and structured fields (key, file, line, column, buffer, shortfalls) in `data`.
The handler serves the project options of `memplace.options` and checks each request's
options against them: the server hands them over as the client sent them, as TVM's does.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memplace import options as project_options
from memplace import resources, workflow
from memplace.board import Board, load_board
from memplace.build import build
from memplace.carried.build import (
    BuildSettings,
    SettingError,
    save_settings,
    settings_from,
)
from memplace.carried.server import (
    ProjectOption,
    Server,
    check_options,
    fd_problem,
    serve_on,
)
from memplace.carried.standalone import PLATFORM_NAME, archive_path, host_driven
from memplace.carried.transport import TIMEOUTS, ConsoleTransport, TransportMethods
from memplace.codegen.server import SCRIPT as SERVER_SCRIPT
from memplace.errors import InputError, MemplaceError
from memplace.importers import importer_for
from memplace.project import Project
from memplace.project_api.archive import unpack_archive
from memplace.project_api.carry import board_info
from memplace.runners import FlashRequest, QemuRunner, default_runner

log = logging.getLogger("memplace.project_api")


def describe(exc: BaseException) -> dict[str, Any] | None:
    """The `data` of the -32000 error an exception travels as; None for a bug. memplace's
    own errors travel, and so do those of the file system (`OSError` and its kin)."""
    if isinstance(exc, OSError):
        return {"message": str(exc), "errno": exc.errno}
    if not isinstance(exc, MemplaceError):
        return None
    data: dict[str, Any] = {"message": str(exc), "exit_code": exc.exit_code}
    mark = getattr(exc, "mark", None)
    if mark is not None:
        data.update(file=mark.file, line=mark.line, column=mark.column)
    for field in ("key", "buffer", "shortfalls"):
        value = getattr(exc, field, None)
        if value is not None:
            data[field] = value
    return data


class MemplaceHandler(TransportMethods):
    """The work behind each Project API method. `options` are the project options it
    serves and takes (by default those of `memplace.options`); each method refuses an
    option it does not know or a value it cannot take before doing anything."""

    def __init__(
        self,
        board: Board | None = None,
        project: Path | None = None,
        options: Sequence[ProjectOption] = project_options.OPTIONS,
    ) -> None:
        self.board = board
        self.project = project
        self.options = tuple(options)
        self.transport: ConsoleTransport | None = None

    @classmethod
    def for_project(cls, folder: Path, board: str | None = None) -> MemplaceHandler:
        """A handler serving the project in `folder`; its board is `board` (a bundled name
        or a path) or, by default, the bundled board the project names, which is then the
        default of option `board`."""
        name = Project.load(folder).board.name
        if board is None and name not in resources.bundled_boards():
            raise InputError(
                f"{folder} is a project for board {name!r}, which is not bundled; "
                "pass its board file with --board",
                key="--project",
            )
        loaded = load_board(board or name)
        if loaded.name != name:
            raise InputError(
                f"{folder} is a project for board {name!r}, not {loaded.name!r}", key="--board"
            )
        return cls(loaded, folder, project_options.with_defaults(board=board or name))

    def server_info_query(self, tvm_version: str) -> dict[str, Any]:
        return {
            "platform_name": PLATFORM_NAME,
            "is_template": self.project is None,
            # TVM's convention: "" for a template, where a project keeps its archive else.
            "model_library_format_path": (
                "" if self.project is None else archive_path(self.project)
            ),
            "project_dir": None if self.project is None else str(self.project),
            "project_options": list(self.options),
            **board_info(self.board),
        }

    def generate_project(
        self,
        model_library_format_path: Path,
        standalone_crt_dir: Path | None,
        project_dir: Path,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        """Plan the workload (a Model Library Format archive, a workload file or a .tflite
        model) on the board and write the project to `project_dir`, which must not exist.
        An archive's C code is built with the headers of TVM's standalone CRT folder, and
        the project keeps it as `model.tar`. Build settings among the options (TVM's
        `compile_definitions`, `warning_as_error`, `cmsis_path`) stay with the project."""
        given_type = options.get("project_type")
        options = check_options(self.options, "generate_project", options)
        source = model_library_format_path
        importer = importer_for(source)
        if given_type is None and source.exists() and importer.project_type != "exerciser":
            # TVM's own templates require it: left to the default, the exerciser would be
            # built, without the model.
            raise InputError(
                f"{source} is {importer.describes}: say what the project does with "
                "it, option project_type: aot_standalone_demo (runs the model), app (your "
                "sources call it) or exerciser (exercises its buffers, without its code)",
                key="project_type",
            )
        if options["project_type"] == "host_driven":
            raise InputError(host_driven(), key="project_type")
        if project_dir.exists():
            raise InputError(
                f"{project_dir} already exists; generate_project writes a new folder",
                key="project_dir",
            )
        if not source.exists():
            raise InputError(f"no such file: {source}", key="model_library_format_path")
        settings = _build_settings(options)
        board = load_board(options["board"])
        request = workflow.ProjectRequest(
            board,
            importer.read(source, board, None),
            project_dir,
            options["project_type"],
            options["algorithm"],
            sources=options["sources"],
            pool_storage=options["pool_storage"],
            standalone_crt=standalone_crt_dir,
        )
        try:
            result = workflow.generate(request)
            if options["extra_files_tar"] is not None:
                unpack_archive(options["extra_files_tar"], project_dir)
            if (project_dir / SERVER_SCRIPT).is_file():  # a project with a build of its own
                save_settings(project_dir, settings)
        except BaseException:
            shutil.rmtree(project_dir, ignore_errors=True)  # it did not exist: all ours
            raise
        self.close_transport()
        self.board, self.project = board, project_dir
        return {"project_dir": str(project_dir), "plan": result.to_json()}

    def build(self, options: dict[str, Any]) -> dict[str, Any]:
        """Build the project with the settings TVM's options give (`carried.build`)."""
        options = check_options(self.options, "build", options)
        folder = self._project()
        settings = _build_settings(options)
        output = build(folder, settings)
        images = Project.load(folder).images
        result: dict[str, Any] = {"images": {core: str(path) for core, path in images.items()}}
        if settings.verbose:
            result["output"] = output
        return result

    def flash(self, options: dict[str, Any]) -> dict[str, Any]:
        """Program the board; for a board that runs under QEMU there is nothing to do,
        as QEMU loads the images when the transport opens."""
        options = check_options(self.options, "flash", options)
        folder = self._project()
        runner = options["runner"] or default_runner(Project.load(folder).board)
        if runner == QemuRunner.name:
            return {"runner": runner, "flashed": False}
        flashed = workflow.flash(folder, runner, FlashRequest.from_values(options))
        return {"runner": flashed, "flashed": True}

    def open_transport(self, options: dict[str, Any]) -> dict[str, Any]:
        """Start the firmware under QEMU; its console is the transport."""
        options = check_options(self.options, "open_transport", options)
        project = Project.load(self._project())
        runner = options["runner"] or default_runner(project.board)
        if runner != QemuRunner.name or project.qemu_machine is None:
            raise InputError(
                f"the transport is the console of the firmware under QEMU; board "
                f"{project.board.name} runs with {runner or 'no runner'}, which has none here",
                key="runner",
            )
        workflow.require_images(project)
        self.close_transport()
        self.transport = ConsoleTransport(QemuRunner(project.qemu_machine).start(project.images))
        return dict(TIMEOUTS)

    def _project(self) -> Path:
        if self.project is None:
            raise InputError(
                "no project yet: call generate_project first, or start the server with "
                "`memplace serve --project DIR`",
                key="project_dir",
            )
        return self.project


def _build_settings(options: dict[str, Any]) -> BuildSettings:
    try:
        return settings_from(options)
    except SettingError as exc:
        raise InputError(str(exc), key=exc.key) from None


def make_server(board: str | None = None, project: Path | None = None) -> Server:
    """A server for `board` (a template) or for the generated project in `project`."""
    if project is not None:
        handler = MemplaceHandler.for_project(project, board)
    else:
        options = project_options.with_defaults(board=board)
        handler = MemplaceHandler(load_board(board) if board else None, options=options)
    return Server(handler, describe=describe)


def serve(
    read_fd: int | None = None,
    write_fd: int | None = None,
    board: str | None = None,
    project: Path | None = None,
) -> int:
    """Answer requests from `read_fd` on `write_fd` (default: stdin and stdout) until the
    client closes its end (`server.serve_on`)."""
    problem = fd_problem(read_fd, write_fd)
    if problem is not None:
        raise InputError(problem, key="serve")
    server = make_server(board, project)
    log.info("serving the Project API (board %s)", board or "none")
    serve_on(server, read_fd, write_fd)
    return 0
