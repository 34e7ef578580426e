"""Rendering a Board and a Plan into the files of a firmware project.

`render` is pure: it returns {relative path: text} and writes nothing. The C, linker and
CMake text lives in `firmware_templates/`; this module only computes what fills it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jinja2

from memplace import resources
from memplace.board import POOL_ALIGN, Board, Core
from memplace.errors import InputError
from memplace.planner.model import Placement, Plan
from memplace.source import suggest

PROJECT_VERSION = "project/v1"
MANIFEST = "memplace.json"


@dataclass(frozen=True)
class RenderOptions:
    """Choices of the generated project beyond the board and the plan."""

    project_type: str = "exerciser"


def fnv1a(data: bytes) -> int:
    """The checksum the exerciser computes over a constant's bytes."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def render(
    board: Board, plan: Plan, project_type: str = "exerciser", options: RenderOptions | None = None
) -> dict[str, str]:
    """Every file of the project, by path relative to the project folder."""
    options = options or RenderOptions(project_type=project_type)
    if project_type not in PROJECT_TYPES:
        raise InputError(
            f"no project type {project_type!r}; {suggest(project_type, PROJECT_TYPES)}",
            key="--project-type",
        )
    env = _environment()
    context = _context(board, plan, project_type)
    files: dict[str, str] = {}
    name = plan.workload
    for core in context["cores"]:
        core_context = {**context, "core": core}
        files[f"memplace/{core['name']}/linker.ld"] = env.get_template(
            "project/linker.ld.j2"
        ).render(core_context)
        files[f"memplace/{core['name']}/startup.c"] = env.get_template(
            "project/startup.c.j2"
        ).render(core_context)
    files[f"memplace/include/{name}_memplace.h"] = env.get_template("project/memplace.h.j2").render(
        context
    )
    files["memplace/include/memplace_runtime.h"] = env.get_template(
        "project/memplace_runtime.h.j2"
    ).render(context)
    files[f"memplace/src/{name}_pools.c"] = env.get_template("project/pools.c.j2").render(context)
    files.update(PROJECT_TYPES[project_type](env, context))
    files["CMakeLists.txt"] = env.get_template("project/CMakeLists.txt.j2").render(context)
    toolchain = resources.data_dir("cmake") / "arm-none-eabi.cmake"
    files["cmake/arm-none-eabi.cmake"] = toolchain.read_text(encoding="utf-8")
    files[MANIFEST] = _manifest(board, plan, options)
    return dict(sorted(files.items()))


def _render_exerciser(env: jinja2.Environment, context: dict[str, Any]) -> dict[str, str]:
    return {"src/exerciser.c": env.get_template("exerciser/exerciser.c.j2").render(context)}


PROJECT_TYPES: dict[str, Callable[[jinja2.Environment, dict[str, Any]], dict[str, str]]] = {
    "exerciser": _render_exerciser,
}
PROJECT_SOURCES = {"exerciser": ["src/exerciser.c"]}


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


def _manifest(board: Board, plan: Plan, options: RenderOptions) -> str:
    data = {
        "memplace": PROJECT_VERSION,
        "project_type": options.project_type,
        "board": board.to_data(),
        "plan": plan.to_json(),
        "images": {name: f"build/{name}.elf" for name in board.cores},
        "checksums": {p.name: fnv1a(p.contents) for p in plan.placements if p.contents is not None},
    }
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def _pool_symbol(workload: str, pool: str) -> str:
    return f"{workload}_pool_{pool}"


def _context(board: Board, plan: Plan, project_type: str) -> dict[str, Any]:
    name = plan.workload
    pools = [_pool_context(board, plan, pool.name) for pool in plan.pools]
    placements = [
        {
            "name": p.name,
            "pool": p.pool,
            "offset": p.offset,
            "size": p.size,
            "address": plan.address(p) or 0,
            "symbol": _pool_symbol(name, p.pool or ""),
        }
        for p in plan.placements
    ]
    stacks = [{"context": s.context, "budget": s.budget, "address": s.address} for s in plan.stacks]
    buffers = [
        _buffer_expr(name, p) for p in plan.placements if p.kind == "buffer" and p.pool is not None
    ]
    constants = [
        {**_buffer_expr(name, p), "checksum": fnv1a(p.contents or b"")}
        for p in plan.placements
        if p.kind == "constant"
    ]
    locals_ = [
        {"name": p.name, "context": p.stack, "size": p.size, "first": p.first, "seed": 1000 + index}
        for index, p in enumerate(plan.placements)
        if p.stack is not None
    ]
    local_steps: dict[int, list[str]] = {}
    for p in plan.placements:
        if p.stack is not None:
            local_steps.setdefault(p.first, []).append(p.name)
    return {
        "name": name,
        "NAME": name.upper(),
        "board": board.name,
        "steps": list(plan.steps),
        "pools": pools,
        "placements": placements,
        "stacks": stacks,
        "buffers": buffers,
        "constants": constants,
        "locals": locals_,
        "local_steps": sorted(local_steps.items()),
        "entry": _main_context(board, next(iter(board.cores))).entry,
        "cores": [
            _core_context(board, plan, core, PROJECT_SOURCES[project_type])
            for core in board.cores.values()
        ],
    }


def _buffer_expr(workload: str, placement: Placement) -> dict[str, Any]:
    return {
        "name": placement.name,
        "size": placement.size,
        "first": placement.first,
        "last": placement.last,
        "expr": f"&{_pool_symbol(workload, placement.pool or '')}[{placement.offset}]",
    }


def _pool_context(board: Board, plan: Plan, pool_name: str) -> dict[str, Any]:
    usage = plan.pool(pool_name)
    storage = -(-usage.used // 8) * 8
    context: dict[str, Any] = {
        "name": usage.name,
        "kind": usage.kind,
        "capacity": usage.capacity,
        "used": usage.used,
        "storage": storage,
        "address": usage.address,
        "symbol": _pool_symbol(plan.workload, usage.name),
        "align": POOL_ALIGN,
        "rows": [],
    }
    if usage.kind == "constant" and storage:
        image = bytearray(storage)
        for placement in plan.in_place(pool_name):
            image[placement.offset : placement.offset + placement.size] = placement.contents or b""
        context["rows"] = [
            " ".join(f"0x{byte:02x}," for byte in image[row : row + 16])
            for row in range(0, storage, 16)
        ]
    return context


def _main_context(board: Board, core: str) -> Any:
    for context in board.contexts.values():
        if context.core == core and context.kind == "thread" and context.stack:
            return context
    raise InputError(
        f"core {core!r} has no thread context with a stack to start on", key="contexts"
    )


def _arch_flags(core: Core) -> list[str]:
    flags = [f"-mcpu={core.cpu}", "-mthumb", f"-mfloat-abi={core.float_abi}"]
    return flags


def _core_context(board: Board, plan: Plan, core: Core, sources: list[str]) -> dict[str, Any]:
    main = _main_context(board, core.name)
    reached = [m for m in board.memories.values() if core.name in m.access]
    pools = [p for p in plan.pools if p.used and p.memory in {m.name for m in reached}]
    stacks = [s for s in plan.stacks if board.contexts[s.context].core == core.name]
    reserved: dict[str, int] = {}
    for area_memory, address in [
        *((p.memory, p.address) for p in pools),
        *((s.memory, s.address) for s in stacks),
    ]:
        reserved[area_memory] = min(reserved.get(area_memory, address), address)
    regions = []
    for memory in reached:
        view = memory.address_for(core.name) - memory.origin
        end = reserved.get(memory.name, memory.origin + memory.size)
        if end == memory.origin and memory.name not in core.layout.memories():
            continue
        regions.append(
            {
                "name": memory.name,
                "attrs": memory.attrs,
                "origin": memory.origin + view,
                "length": end - memory.origin,
            }
        )
    for pool in pools:
        view = (
            board.memories[pool.memory].address_for(core.name) - board.memories[pool.memory].origin
        )
        regions.append(
            {
                "name": f"pool_{pool.name}",
                "attrs": board.memories[pool.memory].attrs,
                "origin": pool.address + view,
                "length": -(-pool.used // 8) * 8,
            }
        )
    for stack in stacks:
        view = (
            board.memories[stack.memory].address_for(core.name)
            - board.memories[stack.memory].origin
        )
        regions.append(
            {
                "name": f"stack_{stack.context}",
                "attrs": board.memories[stack.memory].attrs,
                "origin": stack.address + view,
                "length": stack.budget,
            }
        )
    load = core.layout.load
    copies = [".data"]
    copies += [
        f".memplace.pool.{p.name}" for p in pools if p.kind == "constant" and p.memory != load
    ]
    if core.layout.code != load:
        copies.insert(0, ".text")
    return {
        "name": core.name,
        "cpu": core.cpu,
        "fpu": core.float_abi != "soft",
        "arch_flags": _arch_flags(core),
        "layout": {
            "vectors": core.layout.vectors,
            "code": core.layout.code,
            "data": core.layout.data,
            "load": load,
        },
        "regions": sorted(regions, key=lambda r: (r["origin"], r["name"])),
        "copies": copies,
        "pools": [
            {
                "name": p.name,
                "kind": p.kind,
                "used": p.used,
                "capacity": p.capacity,
                "region": f"pool_{p.name}",
                "copied": p.kind == "constant" and p.memory != load,
            }
            for p in pools
        ],
        "stacks": [
            {
                "context": s.context,
                "budget": s.budget,
                "address": s.address,
                "region": f"stack_{s.context}",
            }
            for s in stacks
        ],
        "main_stack": main.name,
        "entry": main.entry,
        "sources": [
            f"memplace/{core.name}/startup.c",
            f"memplace/src/{plan.workload}_pools.c",
            *sources,
        ],
    }
