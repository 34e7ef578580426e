"""The stages right of `render`, chained: write, build, run, verify.

The command line and the Project API both drive memplace through these functions.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memplace import contract
from memplace.board import Board
from memplace.build import build
from memplace.carried.standalone import MODEL_ARCHIVE
from memplace.codegen import STANDALONE, RenderOptions, render
from memplace.errors import InputError, ToolError
from memplace.imagemap import ImageMap, image_holders, image_map, shared_image_memories
from memplace.importers import ModelArchive, model_code
from memplace.names import check_derived
from memplace.planner import DEFAULT_ALGORITHM, plan
from memplace.planner.model import Plan
from memplace.project import Project, locked, write_project
from memplace.project_api.carry import describer
from memplace.project_files import DEFAULT_TIMEOUT, build_dir, run_record
from memplace.runners import FlashRequest, QemuRunner, board_flash, default_runner, registry
from memplace.source import suggest
from memplace.verify import Report, RunLog, StackHints, parse_run, verify
from memplace.verify.image import Image
from memplace.workload import Workload

TFLM_TIME_LIMIT: float | None = None
"""No wall clock: the model's arena plan, like every plan, depends on its inputs alone."""

Lines = Callable[[str], None]
"""Where a stage sends what it has to say as it goes: progress lines, or a console's."""


def _say(progress: Lines | None, line: str) -> None:
    if progress is not None:
        progress(line)


def build_steps(progress: Lines | None) -> Lines | None:
    """What a build's output gives `progress`: ninja's `[n/N]` lines."""
    if progress is None:
        return None
    return lambda line: progress("  " + line) if NINJA_STEP.match(line) else None


NINJA_STEP = re.compile(r"^\[\d+/\d+\] ")


@dataclass(frozen=True)
class ProjectRequest:
    """What `generate` is asked to write, and `check` to write, build, run and verify.

    `workload` is planned on `board` and the project written to `out` (replaced, when it
    holds an earlier project, only with `force`). `sources` is the folder of an `app`
    project's C files; the project refers to it by a path relative to `out`, so the
    generated files name no absolute location. A workload read from a Model Library Format
    archive or a Relax model (its `origin`) puts the model's code into the project, with the
    headers of TVM's `standalone_crt` folder when given. `timeout` bounds `check`'s run
    and `stack_hints` bound what its verifier cannot work out from the call graph alone."""

    board: Board
    workload: Workload
    out: Path
    project_type: str = "exerciser"
    algorithm: str = DEFAULT_ALGORITHM
    force: bool = False
    sources: Path | None = None
    pool_storage: str = "generated"
    standalone_crt: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    stack_hints: StackHints | None = None


def generate(request: ProjectRequest, progress: Lines | None = None) -> Plan:
    """Plan the request's workload and write its project; each stage says so to `progress`
    as it starts."""
    board, workload, out = request.board, request.workload, request.out
    project_type, sources = request.project_type, request.sources
    check_derived(board, workload)
    tasks = [c for c in board.contexts.values() if c.kind == "task"]
    if tasks and project_type == "exerciser":
        raise InputError(
            f"the exerciser does not start RTOS tasks ({', '.join(c.name for c in tasks)}): "
            "generate an app or library project (--project-type), whose RTOS creates them on "
            "the stacks memplace places",
            tasks[0].mark,
            key=f"contexts.{tasks[0].name}" if tasks[0].mark else "--project-type",
        )
    _say(progress, f"plan: workload {workload.name} on board {board.name}")
    result = plan(board, workload, algorithm=request.algorithm)
    if sources is not None and not sources.is_dir():
        raise InputError(f"no folder of sources at {sources}", key="--sources")
    relative = None if sources is None else os.path.relpath(sources.resolve(), out.resolve())
    options = RenderOptions(
        project_type,
        sources=relative,
        pool_storage=request.pool_storage,
        tflm_arena=tflm_arena(board, workload, result),
        workload_hints=workload.stack_hints,
        model=model_code(workload),
        standalone_crt=crt_include(request.standalone_crt, out),
    )
    users = dict(result.users)
    _say(progress, f"render: {project_type} project into {out}")
    images = _image_map(board, result, options, users, out)
    rendered = render(board, result, project_type, options, users, describer(board), images)
    files: dict[str, str | bytes] = dict(rendered)
    if isinstance(options.model, ModelArchive) and options.model.archive:
        # Where TVM's own project templates keep the archive a project was made from.
        files[MODEL_ARCHIVE] = options.model.archive
    write_project(files, out, force=request.force)
    return result


def crt_include(standalone_crt: Path | None, out: Path) -> str | None:
    """The include folder of TVM's standalone CRT, relative to the project `out`."""
    if standalone_crt is None:
        return None
    header = standalone_crt / "include" / "tvm" / "runtime" / "c_backend_api.h"
    if not header.is_file():
        raise InputError(
            f"no TVM standalone CRT at {standalone_crt} (it has no "
            "include/tvm/runtime/c_backend_api.h); pass the folder "
            "tvm.micro.get_standalone_crt_dir() names",
            key="standalone_crt_dir",
        )
    return os.path.relpath((standalone_crt / "include").resolve(), out.resolve())


def _image_map(
    board: Board, result: Plan, options: RenderOptions, users: dict[str, tuple[str, ...]], out: Path
) -> ImageMap:
    """The project's image map, with the bytes each image takes of every memory several
    images share measured from a build of the project in which each image has all the
    room there: link, measure, and the map gives each image a slice of its own sized so.
    A library project has no build of its own: its images share such memories evenly."""
    shared = shared_image_memories(board)
    if not shared or options.project_type not in STANDALONE:
        return image_map(board, result, options.arena)
    # Beside `out`, so an app's sources are at the same relative path from it; a folder of
    # its own, so two generates never build in one.
    parent = out.resolve().parent
    made = [folder for folder in (parent, *parent.parents) if not folder.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.memplace-sizing-", dir=parent))
    try:
        sizing = image_map(board, result, options.arena, sizing=True)
        files = render(board, result, options.project_type, options, users, image_map=sizing)
        write_project(files, scratch)
        try:
            build(scratch)
        except ToolError as exc:
            raise ToolError(
                f"measuring the images that share {', '.join(shared)} (each linked with all "
                f"the room there): {exc}"
            ) from exc
        sizes = {
            memory: {
                core: image_bytes(board, memory, core, Image.from_file(_elf(scratch, core)))
                for core in image_holders(board, memory)
            }
            for memory in shared
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for folder in made:  # deepest first: only what this made, and only if empty
            with contextlib.suppress(OSError):
                folder.rmdir()
    return image_map(board, result, options.arena, sizes)


def _elf(folder: Path, core: str) -> Path:
    return build_dir(folder) / f"{core}.elf"


def image_bytes(board: Board, memory: str, core: str, image: Image) -> int:
    """Bytes from the first to the last byte the image's own sections take in `memory`
    (where they run, and their load copies), as `core` sees it; pools and stacks have
    areas of their own and do not count."""
    seen = board.memories[memory]
    low, high = seen.address_for(core), seen.address_for(core) + seen.size
    spans = []
    for section in image.sections:
        if not contract.is_area(section.name):
            spans.append((section.address, section.end))
        if section.copied:
            spans.append((section.lma, section.lma + section.size))
    inside = [(start, end) for start, end in spans if low <= start < high and end > start]
    if not inside:
        return 0
    return max(end for _, end in inside) - min(start for start, _ in inside)


def tflm_arena(board: Board, workload: Workload, result: Plan) -> tuple[str, int, str] | None:
    """A TFLite model's TensorFlow Lite Micro arena, in the one pool that holds its
    activations, the figure `memplace tflm --pool` prints, and a warning when part of it
    is a margin for what memplace does not know (None for other workloads, or when that
    pool cannot hold the arena)."""
    from memplace.importers.tflite import Model

    if not isinstance(workload.origin, Model) or workload.origin.graph is None:
        return None
    pools = {p.pool for p in result.placements if p.kind == "buffer" and p.pool}
    if len(pools) != 1:
        return None
    from memplace.tflm import fit_model, margin_note  # the runtime's rules load when used

    (pool,) = pools
    arena = fit_model(board, workload.origin.graph, pool, time_limit=TFLM_TIME_LIMIT)
    return None if arena is None else (pool, arena.arena, margin_note(arena))


def run(folder: Path, timeout: float = DEFAULT_TIMEOUT, console: Lines | None = None) -> RunLog:
    """Run a built project under QEMU; the run is recorded for `verify`, and each line of
    the firmware's console goes to `console` as it comes."""
    with locked(folder):
        return _run(folder, timeout, console)


def _run(folder: Path, timeout: float, console: Lines | None = None) -> RunLog:
    project = Project.load(folder)
    if project.qemu_machine is None:
        raise InputError(
            f"board {project.board.name} does not run under QEMU; use `memplace flash`",
            key="DIR",
        )
    require_images(project)
    result = QemuRunner(project.qemu_machine).run(project.images, timeout, console)
    record = {"exit_code": result.exit_code, "output": result.output}
    run_record(folder).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return parse_run(result.output, result.exit_code)


def recorded_run(folder: Path) -> RunLog | None:
    """The last run of the project, if it has one and it is newer than every image."""
    path = run_record(folder)
    if not path.is_file():
        return None
    project = Project.load(folder)
    newest_image = max(
        (p.stat().st_mtime for p in project.images.values() if p.is_file()), default=0.0
    )
    if path.stat().st_mtime < newest_image:
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return parse_run(record["output"], record["exit_code"])


@dataclass(frozen=True)
class CheckResult:
    plan: Plan
    run: RunLog | None
    report: Report


def check(
    request: ProjectRequest, progress: Lines | None = None, console: Lines | None = None
) -> CheckResult:
    """Everything, for CI: generate, build, run where QEMU can, verify. The folder is held
    throughout, so two checks into one folder never mix their projects. Each stage says so
    to `progress` as it starts (the build each of ninja's steps too); the run's console
    goes to `console`."""
    out, machine = request.out, request.board.qemu_machine
    with locked(out):
        result = generate(request, progress)
        _say(progress, f"build: {out}")
        build(out, on_line=build_steps(progress))
        log = None
        if machine:
            _say(progress, f"run: under QEMU ({machine})")
            log = run(out, request.timeout, console)
        _say(progress, "verify: placements and stack budgets")
        report = verify(Project.load(out), log, request.stack_hints)
    return CheckResult(plan=result, run=log, report=report)


def flash(folder: Path, runner: str | None = None, request: FlashRequest | None = None) -> str:
    """Program a built project into its board with `runner` (default: the board's own,
    `run.flash`); the board's flash settings fill what `request` leaves unset. Returns
    the name of the runner used."""
    project = Project.load(folder)
    name = runner or default_runner(project.board)
    if name is None:
        raise InputError(
            f"board {project.board.name} says nothing of how to flash it: add run.flash to "
            f"the board file, or pass --runner ({', '.join(registry.runners())})",
            key="--runner",
        )
    runners = registry.runners()
    if name not in runners:
        raise InputError(f"no runner {name!r}; {suggest(name, runners)}", key="--runner")
    request = request or FlashRequest()
    settings = board_flash(project.board)
    if settings is not None and settings.runner == name:
        request = request.over(settings)
    chosen = runners[name].for_flashing(request)
    require_images(project)
    chosen.flash(project.images)
    return name


def require_images(project: Project) -> None:
    """Refuse a project whose images are not built yet."""
    for image in project.images.values():
        if not image.is_file():
            raise InputError(
                f"no image {image}: build the project first (memplace build {project.folder})",
                key="DIR",
            )
