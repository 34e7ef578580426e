"""Rendering a Board and a Plan into the files of a firmware project.

`render` is pure: it returns {relative path: text} and writes nothing. The C, linker and
CMake text lives in `firmware_templates/`; `context.py` computes what fills it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import jinja2
import yaml

from memplace import contract, resources
from memplace.board import Board
from memplace.board.checks import check_generated_isrs, check_generated_startup
from memplace.codegen.context import ProjectContext, RenderOptions, project_context
from memplace.codegen.relax import check_relax, relax_context
from memplace.codegen.relax import model_files as relax_files
from memplace.codegen.server import Describe, server_files
from memplace.codegen.tvm import (
    DEMO,
    DEMO_SOURCE,
    MODEL_TYPES,
    check_model,
    model_files,
    tvm_context,
)
from memplace.errors import InputError
from memplace.hints import StackHints
from memplace.imagemap import ImageMap
from memplace.imagemap import image_map as compute_image_map
from memplace.importers.relax import RelaxModel
from memplace.planner.model import Plan
from memplace.project_files import (
    HINTS_DIR,
    IMAGE_MAP,
    MANIFEST,
    POOL_STORAGE,
    PROJECT_VERSION,
    USER_CMAKE,
)
from memplace.source import suggest

__all__ = ["POOL_STORAGE", "PROJECT_TYPES", "RenderOptions", "render"]


Renderer = Callable[[jinja2.Environment, ProjectContext], dict[str, str]]


def _exerciser(env: jinja2.Environment, context: ProjectContext) -> dict[str, str]:
    template = env.get_template("exerciser/exerciser.c.j2")
    names = context.template_vars()
    files = {
        f"src/exerciser_{core.name}.c": template.render({**names, "core": core})
        for core in context.cores
    }
    if any(core.threads for core in context.cores):
        # The exerciser runs worker threads through a call verify must not count twice.
        hints = env.get_template("exerciser/stack_hints.yaml.j2").render(names)
        files[f"{HINTS_DIR}/exerciser.yaml"] = hints
    return files


def _app(env: jinja2.Environment, context: ProjectContext) -> dict[str, str]:
    return {}


def _library(env: jinja2.Environment, context: ProjectContext) -> dict[str, str]:
    return {"memplace/targets.cmake": _render(env, "targets.cmake", context.template_vars())}


def _aot_demo(env: jinja2.Environment, context: ProjectContext) -> dict[str, str]:
    return {}  # its main comes with the model's files (codegen.tvm)


PROJECT_TYPES: dict[str, Renderer] = {
    "exerciser": _exerciser,
    "app": _app,
    "library": _library,
    DEMO: _aot_demo,
}
# Project types that come with a CMake project of their own.
STANDALONE = ("exerciser", "app", DEMO)


def render(
    board: Board,
    plan: Plan,
    project_type: str = "exerciser",
    options: RenderOptions | None = None,
    users: Mapping[str, tuple[str, ...]] | None = None,
    describe: Describe | None = None,
    image_map: ImageMap | None = None,
) -> dict[str, str]:
    """Every file of the project, by path relative to the project folder.

    `users` maps buffer names to their users (contexts and devices), which decides the core
    that exercises each buffer; without it every buffer is exercised by the first core.
    `describe` tells the project's own Project API server about the project (see
    `codegen.server`); a project with a CMake project of its own carries that server
    when it is given. `image_map` says where each image puts its bytes (`memplace.imagemap`;
    without it, the map of the board and plan with no measured sizes); the project keeps it
    (`IMAGE_MAP`) for the verifier.
    """
    options = replace(options or RenderOptions(), project_type=project_type)
    if project_type not in PROJECT_TYPES:
        raise InputError(
            f"no project type {project_type!r}; {suggest(project_type, PROJECT_TYPES)}",
            key="--project-type",
        )
    if options.pool_storage not in POOL_STORAGE:
        raise InputError(
            f"pool storage is {' or '.join(POOL_STORAGE)}, not {options.pool_storage!r}",
            key="--pool-storage",
        )
    if project_type == "app" and not options.sources:
        raise InputError(
            "an app project needs --sources DIR with the application's C files", key="--sources"
        )
    check_generated_startup(board)
    check_generated_isrs(board, exerciser=project_type == "exerciser")
    if isinstance(options.model, RelaxModel):
        check_relax(board, project_type, options.model)
    else:
        check_model(board, project_type, options.model)
    if image_map is None:
        image_map = compute_image_map(board, plan, options.arena)
    env = _environment()
    model = options.model if project_type in MODEL_TYPES else None
    tvm: dict[str, Any] | None = None
    if isinstance(model, RelaxModel):
        tvm = relax_context(model, plan)
    elif model is not None:
        tvm = tvm_context(model, options.standalone_crt)
    model_sources: tuple[str, ...] = ()
    if tvm is not None:
        model_sources = (*tvm["sources"], *([DEMO_SOURCE] if project_type == DEMO else []))
    context = project_context(
        board, plan, options, dict(users or {}), image_map, tvm, model_sources
    )
    names = context.template_vars()
    name = plan.workload
    files: dict[str, str] = {}
    for core in context.cores:
        core_names = {**names, "core": core}
        if core.image != core.name:
            # It runs another core's image: startup code of its own, linked into that image.
            files[f"memplace/{core.name}/startup.c"] = _render(env, "startup_joined.c", core_names)
            continue
        for template in ("linker.ld", "startup.c"):
            files[f"memplace/{core.name}/{template}"] = _render(env, template, core_names)
    files[f"memplace/include/{name}_memplace.h"] = _render(env, "memplace.h", names)
    files["memplace/include/memplace_runtime.h"] = _render(env, "memplace_runtime.h", names)
    files[f"memplace/src/{name}_pools.c"] = _render(env, "pools.c", names)
    files.update(PROJECT_TYPES[project_type](env, context))
    if isinstance(model, RelaxModel):
        files.update(relax_files(env, names, model))
    elif model is not None:
        files.update(model_files(env, names, model, options.standalone_crt is not None))
    if project_type in STANDALONE:
        files["CMakeLists.txt"] = _render(env, "CMakeLists.txt", names)
        files[USER_CMAKE] = _render(env, "user.cmake", names)
        toolchain = resources.data_dir("cmake") / "arm-none-eabi.cmake"
        files["cmake/arm-none-eabi.cmake"] = toolchain.read_text(encoding="utf-8")
    files.update(_hint_files(board.stack_hints, options.workload_hints))
    files[MANIFEST] = _manifest(board, plan, options)
    files[IMAGE_MAP] = image_map.dumps()
    if project_type in STANDALONE and describe is not None:
        files.update(server_files(json.loads(files[MANIFEST])["images"], describe))
    return dict(sorted(files.items()))


def _render(env: jinja2.Environment, template: str, context: dict[str, Any]) -> str:
    return env.get_template(f"project/{template}.j2").render(context)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.data_dir("firmware_templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["hex32"] = lambda value: f"0x{value:08x}"
    return env


def _hint_files(board: Sequence[StackHints], workload: Sequence[StackHints]) -> dict[str, str]:
    """One stack hints file per `stack_hints:` entry of the board and workload files, which
    `memplace verify DIR` reads as `check` does."""
    files = {}
    for role, hint_sets in (("board", board), ("workload", workload)):
        for index, hints in enumerate(hint_sets):
            origin = Path(hints.source).name
            text = yaml.safe_dump(hints.to_data(), sort_keys=False, width=100)
            header = f"# From stack_hints[{index}] of the {role} file {origin}; regenerate with\n"
            header += "# `memplace generate` after changing it there.\n"
            files[f"{HINTS_DIR}/{role}-{index}.yaml"] = header + text
    return files


def _manifest(board: Board, plan: Plan, options: RenderOptions) -> str:
    data = {
        "memplace": PROJECT_VERSION,
        "project_type": options.project_type,
        "board": board.to_data(),
        "plan": plan.to_json(),
        "images": {name: f"build/{core.image_name}.elf" for name, core in board.cores.items()},
        "checksums": {
            p.name: contract.fnv1a(p.contents) for p in plan.placements if p.contents is not None
        },
    }
    return json.dumps(data, indent=2) + "\n"
