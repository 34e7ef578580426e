"""What fills the templates: plain values computed from a Board and a Plan.

One project holds one image per core. Pool storage is defined in exactly one image, the
first core (in board order) that reaches the pool's memory, and every other image that
reaches it gets the same symbol at the same address from its linker script, so a shared
pool has one address everywhere. Where several cores keep their own sections in one
memory, each takes an equal slice of that memory's image part, so private sections of
different images never overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memplace.board import (
    CPUS,
    FIRST_IRQ_EXCEPTION,
    POOL_ALIGN,
    RELEASE_HANDSHAKES,
    Board,
    Context,
    Core,
    vector_align,
)
from memplace.errors import InputError
from memplace.hints import StackHints
from memplace.importers.mlf import ModelArchive
from memplace.importers.relax import RelaxModel
from memplace.layout import fnv1a, thread_function
from memplace.planner.arena import Arena, user_core
from memplace.planner.arena import arenas as plan_arenas
from memplace.planner.model import Placement, Plan, PoolUsage, StackUsage

# Core exceptions the exerciser can raise by itself (ICSR bit that pends each one), and
# where its priority field lies: the System Handler Priority Register word and the field's
# first bit. Armv6-M allows only word accesses to these registers.
PENDABLE = {
    "SysTick_Handler": {"icsr_bit": 26, "shpr": 0xE000ED20, "shift": 24},
    "PendSV_Handler": {"icsr_bit": 28, "shpr": 0xE000ED20, "shift": 16},
}
# The NVIC's registers for device interrupt line K: a bit in the word 4 * (K // 32) of the
# set-enable and set-pending arrays, and byte K of the priority array (written as a word:
# Armv6-M allows only word accesses).
NVIC_ISER = 0xE000E100
NVIC_ISPR = 0xE000E200
NVIC_IPR = 0xE000E400
ICSR = 0xE000ED04
# Priority bits every core of an architecture implements (the top bits of each 8-bit
# field): exactly 2 on Armv6-M and Armv8-M Baseline, at least 3 elsewhere. Priorities are
# written into those bits only, so they mean the same on every implementation.
PRIORITY_BITS = {"armv6-m": 2, "armv8-m.base": 2}
DEFAULT_PRIORITY_BITS = 3
# Bytes of the frame each ISR's own work puts on the stack it lands on.
ISR_FRAME = 64


@dataclass(frozen=True)
class RenderOptions:
    """Choices of the generated project beyond the board and the plan.

    `project_type`: exerciser, app (the user's sources; `sources` is their folder relative
    to the project) or library (glue only, for the CMake module). `pool_storage`:
    "generated" arrays, or "application" when the user's code defines them.
    """

    project_type: str = "exerciser"
    sources: str | None = None
    pool_storage: str = "generated"
    # A TFLite workload's TensorFlow Lite Micro arena: (pool, bytes). The pool's storage
    # grows to hold it, and the header names it for the application's MicroInterpreter.
    tflm_arena: tuple[str, int, str] | None = None  # pool, bytes, a warning or ""
    # The workload file's `stack_hints:`, kept in the project beside the board's.
    workload_hints: tuple[StackHints, ...] = ()
    # A TVM model (Model Library Format, codegen.tvm; or Relax, codegen.relax) whose C code
    # the project compiles, and the include folder of TVM's standalone CRT, relative to the
    # project.
    model: ModelArchive | RelaxModel | None = None
    standalone_crt: str | None = None
    # Bytes each image takes of each memory several images share (memory -> core -> bytes),
    # measured from a build: each image gets a range of that memory sized so
    # (`image_ranges`). `sizing`: the build that measures them, every image given all the room.
    image_sizes: Mapping[str, Mapping[str, int]] | None = None
    sizing: bool = False

    def storage(self, usage: PoolUsage) -> int:
        """Bytes of a pool's storage: what the plan uses, or the arena it must hold."""
        arena = self.tflm_arena[1] if self.tflm_arena and self.tflm_arena[0] == usage.name else 0
        return storage_bytes(max(usage.used, arena))


def storage_bytes(used: int) -> int:
    return -(-used // 8) * 8


def pool_symbol(workload: str, pool: str) -> str:
    return f"{workload}_pool_{pool}"


def main_context(board: Board, core: str) -> Context:
    """The thread a core starts on: its first thread context with a stack."""
    for context in board.contexts.values():
        if context.core == core and context.kind == "thread" and context.stack:
            return context
    raise InputError(
        f"core {core!r} has no thread context with a stack to start on", key="contexts"
    )


def pool_owner(board: Board, pool: PoolUsage) -> str:
    """The core whose image defines a pool's storage: the image of the first core (in board
    order) that reaches the pool's memory."""
    first = next(core for core in board.cores if core in board.memories[pool.memory].access)
    return board.cores[first].image_name


def exercising_core(board: Board, placement: Placement, users: dict[str, tuple[str, ...]]) -> str:
    """The core whose exerciser fills and checks a placement: its first user context's."""
    return user_core(board, users.get(placement.name, ()))


MAILBOX_BYTES = 128
MAILBOX_SLOT = 16
MAILBOX_DONE = 0x600DD0E5


def mailbox(board: Board, reserved: dict[str, int]) -> dict[str, Any] | None:
    """Where released cores hand their result to the core that released them: the last
    bytes below the pools and stacks of a writable memory that all those cores reach; the
    releasing core's data memory when it qualifies, else the first such memory."""
    released = [core for core in board.cores.values() if core.release is not None]
    if not released:
        return None
    # A slot for every released core, and one for the releasing core's step (the last).
    if (len(released) + 1) * MAILBOX_SLOT > MAILBOX_BYTES:
        raise InputError(
            f"memplace releases at most {MAILBOX_BYTES // MAILBOX_SLOT - 1} cores", key="cores"
        )
    releasers = {core.release.by for core in released if core.release is not None}
    if len(releasers) > 1:
        raise InputError(
            f"cores are released by {', '.join(sorted(releasers))}; memplace's "
            "startup code releases them all from one core",
            key="cores",
        )
    by = board.cores[releasers.pop()]
    involved = [by.name, *(core.name for core in released)]
    preferred = [
        board.memories[by.layout.data],
        *(m for m in board.memories.values() if m.name != by.layout.data),
    ]
    for memory in preferred:
        end = reserved.get(memory.name, memory.origin + memory.size)
        if (
            memory.writable()
            and all(core in memory.access for core in involved)
            and end - memory.origin >= 2 * MAILBOX_BYTES
        ):
            return {
                "memory": memory.name,
                "releaser": by.name,
                "size": MAILBOX_BYTES,
                "system_address": end - MAILBOX_BYTES,
                "done": MAILBOX_DONE,
                "cores": [core.name for core in released],
                "slots": len(released) + 1,
            }
    raise InputError(
        f"no writable memory that cores {', '.join(involved)} all reach has room "
        "for the mailbox released cores report to",
        key="cores",
    )


def _step_slot(box: dict[str, Any] | None, core: str) -> int | None:
    """The mailbox slot where `core` says which step it finished (the cores walk the
    timeline together); None on a single core."""
    if box is None:
        return None
    if core in box["cores"]:
        return int(box["cores"].index(core))
    return len(box["cores"]) if core == box["releaser"] else None


def project_context(
    board: Board, plan: Plan, options: RenderOptions, users: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    name = plan.workload
    _check_releases(board)
    pools = [_pool(board, plan, usage, options) for usage in plan.pools]
    all_arenas = arenas(board, plan, users)
    cores = [_core(board, plan, core, options, users) for core in board.cores.values()]
    placements = [
        {
            "name": p.name,
            "pool": p.pool,
            "offset": p.offset,
            "size": p.size,
            "address": plan.address(p) or 0,
            "symbol": pool_symbol(name, p.pool or ""),
            "dynamic": p.dynamic,
            "stack": p.stack,
        }
        for p in plan.placements
    ]
    return {
        "name": name,
        "NAME": name.upper(),
        "board": board.name,
        "project_type": options.project_type,
        "pool_storage": options.pool_storage,
        "sources": options.sources,
        "tflm_arena": _tflm_arena(plan, options),
        "multicore": len(board.cores) > 1,
        "shared_image_memories": shared_image_memories(board),
        "steps": list(plan.steps),
        "pools": pools,
        "arenas": all_arenas,
        "arena_pools": sorted({a["pool"] for a in all_arenas}, key=list(board.pools).index),
        "arena_cores": [
            {"core": core, "arenas": [a for a in all_arenas if a["core"] == core]}
            for core in board.cores
            if any(a["core"] == core for a in all_arenas)
        ],
        "placements": placements,
        "stacks": [_stack(s, board) for s in plan.stacks],
        "cores": cores,
        "free_sections": [f for core in cores for f in core["free"]],
        "mailbox": mailbox(board, _reserved(board, plan)),
        "simulator": board.run.is_simulator,
        "on_exit": board.run.on_exit,
    }


def _pool(board: Board, plan: Plan, usage: PoolUsage, options: RenderOptions) -> dict[str, Any]:
    storage = options.storage(usage)
    rows: list[str] = []
    if usage.kind == "constant" and storage:
        image = bytearray(storage)
        for placement in plan.in_place(usage.name):
            image[placement.offset : placement.offset + placement.size] = placement.contents or b""
        rows = [
            " ".join(f"0x{byte:02x}," for byte in image[row : row + 16])
            for row in range(0, storage, 16)
        ]
    return {
        "name": usage.name,
        "kind": usage.kind,
        "capacity": usage.capacity,
        "used": usage.used,
        "storage": storage,
        "address": usage.address,
        "memory": usage.memory,
        "symbol": pool_symbol(plan.workload, usage.name),
        "align": POOL_ALIGN,
        "rows": rows,
        "owner": pool_owner(board, usage) if storage else None,
        "generated": options.pool_storage == "generated",
    }


def _tflm_arena(plan: Plan, options: RenderOptions) -> dict[str, Any] | None:
    if options.tflm_arena is None:
        return None
    pool, size, note = options.tflm_arena
    return {"pool": pool, "size": size, "symbol": pool_symbol(plan.workload, pool), "note": note}


def _reserved(board: Board, plan: Plan) -> dict[str, int]:
    """memory -> the lowest address its used pools and its stacks take."""
    reserved: dict[str, int] = {}
    areas = [
        *((p.memory, p.address) for p in plan.pools if p.used),
        *((s.memory, s.address) for s in plan.stacks),
    ]
    for memory, address in areas:
        reserved[memory] = min(reserved.get(memory, address), address)
    return reserved


def _view(board: Board, memory: str, core: str) -> int:
    return board.memories[memory].shift(core)


def _image_slices(
    board: Board, reserved: dict[str, int], options: RenderOptions | None = None
) -> dict[tuple[str, str], tuple[int, int]]:
    """(memory, core) -> [start, end) of that core's image part, in system addresses."""
    slices = {}
    for memory in board.memories.values():
        holders = image_holders(board, memory.name)
        end = reserved.get(memory.name, memory.origin + memory.size)
        if len(holders) < 2:
            slices.update({(memory.name, core): (memory.origin, end) for core in holders})
            continue
        sizes = None if options is None else options.image_sizes
        sizing = options is not None and options.sizing
        for core, (start, stop) in image_ranges(board, memory.name, end, sizes, sizing).items():
            slices[(memory.name, core)] = (start, stop)
    return slices


# Images that share a memory start on this boundary: past VTOR's 128 bytes, and a flash page
# of the RP2040's (and most QSPI flashes).
IMAGE_ALIGN = 256


def image_holders(board: Board, memory: str) -> list[str]:
    """The cores whose own image puts sections (vectors, code, data or load copies) in
    `memory`, in board order."""
    return [
        core.name
        for core in board.cores.values()
        if core.image is None and memory in core.layout.memories()
    ]


def _fixed_start(board: Board, memory: str, core: str) -> int | None:
    """Where an image must start in `memory`: at the vector table its core starts from
    (its `boot`), when that is here."""
    here = board.memories[memory]
    own = board.cores[core]
    if own.layout.boot_memory != memory:
        return None
    return own.boot - here.address_for(core) + here.origin


def image_ranges(
    board: Board,
    memory: str,
    end: int,
    sizes: Mapping[str, Mapping[str, int]] | None,
    sizing: bool = False,
) -> dict[str, tuple[int, int]]:
    """[start, end) of each image's own range of a memory several images share, in system
    addresses. An image whose vector table is here starts at it (its `boot`); the others
    start where the image before them ends, rounded up to IMAGE_ALIGN. `sizes` are the
    measured bytes of each image in each memory (memory -> core -> bytes): each image ends
    where the next begins, and the last takes the rest. Without sizes, the images that do
    not start at a vector table share the room between those that do evenly; `sizing` gives
    every image all the room from its start to `end`, for the build that measures them."""
    holders = image_holders(board, memory)
    here = board.memories[memory]
    starts: dict[str, int] = {}
    cursor = here.origin
    measured = (sizes or {}).get(memory, {})
    for index, core in enumerate(holders):
        fixed = _fixed_start(board, memory, core)
        if fixed is not None:
            start = fixed
        elif sizes is not None or sizing:
            start = _align(cursor)
        else:
            start = _align(here.origin + index * ((end - here.origin) // len(holders)))
        if start < cursor and index > 0:
            before = holders[index - 1]
            raise InputError(
                f"memory {memory!r} holds the images of cores {', '.join(holders)}: the image "
                f"of core {before!r} takes [0x{starts[before]:08x}, 0x{cursor:08x}), past "
                f"0x{start:08x} where the vector table of core {core!r} starts; give core "
                f"{core!r} a later `boot`, or its image a memory of its own",
                key=f"cores.{core}.boot",
            )
        starts[core] = start
        cursor = start + measured.get(core, 0) if sizes is not None else start
    ranges = {}
    for index, core in enumerate(holders):
        stop = end if sizing or index + 1 == len(holders) else starts[holders[index + 1]]
        if starts[core] + measured.get(core, 0) > stop:
            raise InputError(
                f"memory {memory!r} holds the images of cores {', '.join(holders)}, "
                f"{sum(measured.values())} bytes in all ("
                + ", ".join(f"{c}: {measured.get(c, 0)}" for c in holders)
                + f"), more than its {end - here.origin} bytes left for images",
                key=f"memories.{memory}",
            )
        ranges[core] = (starts[core], stop)
    return ranges


def shared_image_memories(board: Board) -> list[str]:
    """The memories in which several images put sections of their own."""
    return [name for name in board.memories if len(image_holders(board, name)) > 1]


def _align(address: int) -> int:
    return -(-address // IMAGE_ALIGN) * IMAGE_ALIGN


def _core(
    board: Board, plan: Plan, core: Core, options: RenderOptions, users: dict[str, tuple[str, ...]]
) -> dict[str, Any]:
    main = main_context(board, core.name)
    reached = [m for m in board.memories.values() if core.name in m.access]
    reached_names = {m.name for m in reached}
    all_pools = [p for p in plan.pools if p.used]
    reserved = _reserved(board, plan)
    slices = _image_slices(board, reserved, options)
    box = mailbox(board, reserved)
    if box is not None:
        box["address"] = box["system_address"] + _view(board, box["memory"], core.name)

    regions = []
    for memory in reached:
        if (memory.name, core.name) not in slices:
            continue  # its free room, if any, is in free_areas
        start, end = slices[(memory.name, core.name)]
        if box is not None and memory.name == box["memory"]:
            end = min(end, box["system_address"])
        regions.append(
            {
                "name": memory.name,
                "attrs": memory.attrs,
                "origin": start + _view(board, memory.name, core.name),
                "length": end - start,
            }
        )
    own_pools = [
        p for p in all_pools if p.memory in reached_names and pool_owner(board, p) == core.name
    ]
    foreign_pools = [
        p for p in all_pools if p.memory in reached_names and pool_owner(board, p) != core.name
    ]
    # Every pool's reservation is a region, used or not (an unused one holds no section),
    # unless an image's part of the memory already covers it (an unused pool reserves nothing).
    for pool in [p for p in plan.pools if p.memory in reached_names and p.capacity]:
        if pool_owner(board, pool) != core.name or _in_image_part(pool, slices):
            continue
        regions.append(
            {
                "name": f"pool_{pool.name}",
                "attrs": board.memories[pool.memory].attrs,
                "origin": pool.address + _view(board, pool.memory, core.name),
                # The pool's whole reservation, so ld's memory report shows how full it is.
                "length": max(pool.capacity, options.storage(pool)),
            }
        )
    stacks = [s for s in plan.stacks if board.contexts[s.owner].core == core.name]
    joined = _joined(board, plan, core)
    for stack in [*stacks, *(s for j in joined for s in j["stacks"])]:
        regions.append(
            {
                "name": f"stack_{stack.c_name}",
                "attrs": board.memories[stack.memory].attrs,
                "origin": stack.address + _view(board, stack.memory, core.name),
                "length": stack.budget,
            }
        )
    free = free_areas(board, plan, core, slices, box)
    regions += [{k: area[k] for k in ("name", "attrs", "origin", "length")} for area in free]
    free_sections = _free_sections(free)
    load = core.layout.load
    copies = [*reset_copies(core), ".data", *(f"{f['section']}.data" for f in free_sections)]
    copies += [
        f".memplace.pool.{p.name}" for p in own_pools if p.kind == "constant" and p.memory != load
    ]
    mine = [p for p in plan.placements if exercising_core(board, p, users) == core.name]
    isrs = [c for c in board.contexts.values() if c.core == core.name and c.kind == "isr"]
    if options.project_type == "exerciser":
        for isr in isrs:
            _check_raisable(isr, core)
    for isr in isrs:
        if isr.irq is not None:
            _check_level(isr, core, "the startup code programs device interrupt priorities")
    # A core that runs another's image starts at its own context's entry, app or not: the
    # image has one app_main, the owner's.
    entry = "app_main" if options.project_type == "app" and not core.image else main.entry
    return {
        "name": core.name,
        "cpu": core.cpu,
        "fpu": core.float_abi != "soft",
        # Armv6-M leaves it to the implementation whether software reads DHCSR.
        "reads_dhcsr": CPUS[core.cpu] != "armv6-m",
        "arch_flags": [f"-mcpu={core.cpu}", "-mthumb", f"-mfloat-abi={core.float_abi}"],
        "layout": {
            "vectors": core.layout.vectors,
            "code": core.layout.code,
            "data": core.layout.data,
            "load": load,
        },
        "regions": sorted(regions, key=lambda r: (r["origin"], r["name"])),
        "copies": copies,
        "zeroes": [".bss", *(f"{f['section']}.bss" for f in free_sections)],
        "free": free_sections,
        "copier": core.layout.copy,
        "moves_vectors": core.layout.moves_vectors,
        "release_table": _release_table(board, core),
        "pools": [
            {
                "name": p.name,
                "kind": p.kind,
                "used": p.used,
                "capacity": p.capacity,
                "region": f"pool_{p.name}",
                "copied": p.kind == "constant" and p.memory != load,
            }
            for p in own_pools
        ],
        "foreign_pools": [
            {
                "name": p.name,
                "symbol": pool_symbol(plan.workload, p.name),
                "address": p.address + _view(board, p.memory, core.name),
            }
            for p in foreign_pools
        ],
        "stacks": [_stack(s, board) for s in stacks],
        "image": core.image_name,
        "runs_other_image": core.image is not None,
        "boot": core.boot,
        "joined": [{**j, "stacks": [_stack(s, board) for s in j["stacks"]]} for j in joined],
        "runs_define": f"MEMPLACE_RUNS_{core.name}",
        "threads": [_thread(plan, s, isrs, core, board) for s in stacks if s.thread is not None],
        "main_stack": main.name,
        "entry": entry,
        "isrs": [_isr(isr, core) for isr in isrs],
        "interrupts": core.interrupts,
        "vector_align": vector_align(core.interrupts),
        "vector_lines": _vector_lines(core, isrs),
        "handlers": handlers(board, core) if core.image is None else [],
        "device_isrs": [_isr(isr, core) for isr in isrs if isr.irq is not None],
        "mailbox": box,
        "release_magic": RELEASE_TABLE_MAGIC,
        "releases": [
            _release(board, other, slices)
            for other in board.cores.values()
            if other.release is not None and other.release.by == core.name
        ],
        "released_slot": (
            box["cores"].index(core.name) if box is not None and core.name in box["cores"] else None
        ),
        "step_slot": _step_slot(box, core.name),
        "buffers": [
            _checked(plan.workload, p)
            for p in mine
            if p.kind == "buffer" and p.pool is not None and not p.dynamic
        ],
        "arenas": [a for a in arenas(board, plan, users) if a["core"] == core.name],
        "constants": [_checked(plan.workload, p) for p in mine if p.kind == "constant"],
        "stack_buffers": [
            _checked(plan.workload, p) for p in plan.placements if p.stack == main.name
        ],
        "stack_area": next((s.planned for s in stacks if s.context == main.name), 0),
        "sources": _sources(core, plan.workload, options, board),
    }


def _in_image_part(pool: PoolUsage, slices: dict[tuple[str, str], tuple[int, int]]) -> bool:
    """Whether an unused pool lies in some image's part of its memory."""
    end = pool.address + pool.capacity
    return not pool.used and any(
        memory == pool.memory and start < end and pool.address < stop
        for (memory, _), (start, stop) in slices.items()
    )


def free_areas(
    board: Board,
    plan: Plan,
    core: Core,
    slices: dict[tuple[str, str], tuple[int, int]],
    box: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The regions of `core`'s linker script for what no image part, pool (its whole
    capacity), stack or mailbox takes of the memories it reaches: each such gap belongs to
    the first core (in board order) with an image of its own that reaches the memory, so
    every byte of every memory is in some image's region, and the application may use it."""
    taken: dict[str, list[tuple[int, int]]] = {}
    for (held, _), span in slices.items():
        taken.setdefault(held, []).append(span)
    for pool in plan.pools:
        if not _in_image_part(pool, slices):
            taken.setdefault(pool.memory, []).append((pool.address, pool.address + pool.capacity))
    for stack in plan.stacks:
        taken.setdefault(stack.memory, []).append((stack.address, stack.address + stack.budget))
    if box is not None:
        start = box["system_address"]
        taken.setdefault(box["memory"], []).append((start, start + box["size"]))
    areas = []
    for memory in board.memories.values():
        owners = [c for c in board.cores.values() if c.image is None and c.name in memory.access]
        if not owners or owners[0].name != core.name:
            continue
        cursor, gaps = memory.origin, []
        for start, end in sorted(taken.get(memory.name, [])):
            if start > cursor:
                gaps.append((cursor, start))
            cursor = max(cursor, end)
        if cursor < memory.origin + memory.size:
            gaps.append((cursor, memory.origin + memory.size))
        own_part = (memory.name, core.name) in slices
        for index, (start, end) in enumerate(gaps):
            name = memory.name if index == 0 and not own_part else f"{memory.name}_free"
            if index > 0:
                name = f"{memory.name}_free{index + 1}"
            areas.append(
                {
                    "name": name,
                    "memory": memory.name,
                    "attrs": memory.attrs,
                    "origin": start + _view(board, memory.name, core.name),
                    "length": end - start,
                    "writable": memory.writable(),
                }
            )
    return areas


def _free_sections(free: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The application's sections in the free room: one .data and one .bss per writable
    memory, in its largest free region (`MEMPLACE_DATA_IN_<MEMORY>`, `..._BSS_IN_...`)."""
    largest: dict[str, dict[str, Any]] = {}
    for area in free:
        best = largest.get(area["memory"])
        if area["writable"] and (best is None or area["length"] > best["length"]):
            largest[area["memory"]] = area
    return [
        {
            "memory": memory,
            "region": area["name"],
            "section": f".memplace.free.{memory}",
            "macro": memory.upper(),
            "bytes": area["length"],
        }
        for memory, area in largest.items()
    ]


def _stack(stack: StackUsage, board: Board) -> dict[str, Any]:
    """A stack as the templates name it: `context` is the plan's label (`main.thread0`),
    `name` the C identifier of its symbols, section and region (`main_thread0`); for an
    RTOS task's stack, `task` the name the RTOS gives the task and `entry` its function."""
    owner = board.contexts[stack.owner]
    is_task = owner.kind == "task" and stack.thread is None
    return {
        "task": owner.task if is_task else None,
        "entry": owner.entry if is_task else None,
        "context": stack.context,
        "name": stack.c_name,
        "budget": stack.budget,
        "address": stack.address,
        "planned": stack.planned,
        "owner": stack.owner,
        "thread": stack.thread,
        "function": thread_function(stack.c_name) if stack.thread is not None else None,
        "region": f"stack_{stack.c_name}",
    }


def _thread(
    plan: Plan, stack: StackUsage, isrs: list[Context], core: Core, board: Board
) -> dict[str, Any]:
    """A worker thread the exerciser runs on its own stack, with the buffers planned there
    and the ICSR bits that raise the ISR contexts preempting its context (`isr_bits`)."""
    preempting = [_isr(isr, core) for isr in isrs if stack.owner in isr.preempts]
    return {
        **_stack(stack, board),
        "isrs": [isr["name"] for isr in preempting],
        "raises": [{"reg": isr["pend_reg"], "value": isr["pend_value"]} for isr in preempting],
        "buffers": [
            _checked(plan.workload, p) for p in plan.placements if p.stack == stack.context
        ],
    }


def arenas(board: Board, plan: Plan, users: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """Every core's arena in every pool that holds dynamic buffers of that core: the block
    the plan reserved for them (`planner.arena`), handed out at run time."""
    return [_arena(plan, arena) for arena in plan_arenas(board, plan, users)]


def _arena(plan: Plan, arena: Arena) -> dict[str, Any]:
    members = [plan.placement(name) for name in arena.buffers]
    return {
        "pool": arena.pool,
        "core": arena.core,
        "symbol": pool_symbol(plan.workload, arena.pool),
        "offset": arena.offset,
        "capacity": arena.size,
        "buffers": [
            {"name": p.name, "size": p.size, "align": p.align, "first": p.first, "last": p.last}
            for p in sorted(members, key=lambda p: p.first)
        ],
    }


def _check_releases(board: Board) -> None:
    """Every released core can be started by the code memplace generates."""
    for core in board.cores.values():
        if core.release is None or core.release.steps or core.release.handshake:
            continue
        raise InputError(
            f"core {core.name} is released by {core.release.by}, but the board lists no "
            f"release steps or handshake, so the generated startup code cannot start it; add "
            f"the register `steps` that release it, or `handshake: {RELEASE_HANDSHAKES[0]}`",
            key=f"cores.{core.name}.release",
        )


def _release(
    board: Board, core: Core, slices: dict[tuple[str, str], tuple[int, int]]
) -> dict[str, Any]:
    assert core.release is not None
    main = main_context(board, core.name)
    assert main.stack is not None
    by = core.release.by
    vectors = board.memories[core.layout.vectors]
    return {
        "core": core.name,
        "context": main.name,
        "budget": main.stack.size,
        "handshake": core.release.handshake,
        # The vector table the core starts from, as it sees it and as its releaser does.
        "vectors": core.boot,
        "vectors_seen": core.boot - vectors.address_for(core.name) + vectors.address_for(by),
        "steps": [
            {"action": step.action, "address": step.address, "value": step.value}
            for step in core.release.steps
        ],
        "copy_table": _release_table_address(board, core, slices),
    }


# Image sections each copier moves out of the load memory before the core runs them.
VECTOR_SECTIONS = (".vectors",)
CODE_SECTIONS = (".text", ".ARM.exidx")
# The first word of a released core's copy table, so its releaser knows the image is there.
RELEASE_TABLE_MAGIC = 0x4D504C43


def boot_sections(core: Core) -> list[str]:
    """The sections of `core`'s image that run apart from their load copy and that its
    copier (`layout.copy`) moves before they run."""
    layout = core.layout
    moved = list(VECTOR_SECTIONS) if layout.vectors != layout.load else []
    return moved + (list(CODE_SECTIONS) if layout.code != layout.load else [])


def reset_copies(core: Core) -> list[str]:
    """The boot sections the core's own reset code copies (the others' copier is the
    releasing core or the boot ROM)."""
    return boot_sections(core) if core.layout.copy == "reset" else []


def _release_table(board: Board, core: Core) -> dict[str, Any] | None:
    """For an image its releaser copies: each section's load copy and run address as the
    releaser sees them, which the linker script writes at the start of the image's part of
    the load memory."""
    if core.layout.copy != "releaser" or core.release is None:
        return None
    by = core.release.by
    layout = core.layout

    def shift(memory: str) -> str:
        delta = board.memories[memory].address_for(by) - board.memories[memory].address_for(
            core.name
        )
        return "" if delta == 0 else f" {'+' if delta > 0 else '-'} 0x{abs(delta):08x}"

    run_memory = {".vectors": layout.vectors, ".text": layout.code, ".ARM.exidx": layout.code}
    return {
        "releaser": by,
        "magic": RELEASE_TABLE_MAGIC,
        "entries": [
            {
                "section": name,
                "load_shift": shift(layout.load),
                "run_shift": shift(run_memory[name]),
            }
            for name in boot_sections(core)
        ],
    }


def _release_table_address(
    board: Board, core: Core, slices: dict[tuple[str, str], tuple[int, int]]
) -> int | None:
    """Where the releaser reads the copy table of `core`'s image, as it sees it."""
    if core.layout.copy != "releaser" or core.release is None:
        return None
    load = core.layout.load
    start, _ = slices[(load, core.name)]
    return start + _view(board, load, core.release.by)


def _priority_bits(core: Core) -> int:
    return PRIORITY_BITS.get(CPUS[core.cpu], DEFAULT_PRIORITY_BITS)


def _check_raisable(isr: Context, core: Core) -> None:
    """The exerciser raises an ISR context itself, at the priority the board gives it."""
    if isr.entry not in PENDABLE and isr.irq is None:
        raise InputError(
            f"the exerciser can raise ISR contexts on {' or '.join(PENDABLE)}, or on a device "
            f"interrupt line (give the context `irq: LINE`), not {isr.entry!r}",
            key=f"contexts.{isr.name}.entry",
        )
    _check_level(isr, core, "the exerciser sets ISR priorities")


def _check_level(isr: Context, core: Core, who: str) -> None:
    """An ISR's priority is a level in the priority bits every core of its architecture
    implements: what memplace writes into its priority field."""
    bits = _priority_bits(core)
    if isr.priority >= 1 << bits:
        raise InputError(
            f"{who} in the {bits} priority bits that every {CPUS[core.cpu]} core implements, "
            f"0..{(1 << bits) - 1}; got {isr.priority} on {core.cpu}",
            key=f"contexts.{isr.name}.priority",
        )


def _isr(context: Context, core: Core) -> dict[str, Any]:
    """An ISR context as the templates raise it: the word to write where (`pend_reg`,
    `pend_value`), the priority field to program (`prio_reg`, `prio_mask`, `prio_value`),
    and for a device line the bit that enables it (`enable_reg`, None for a core exception)."""
    bits = _priority_bits(core)
    level = (context.priority << (8 - bits)) & 0xFF
    if context.irq is not None:
        word, bit = divmod(context.irq, 32)
        shift = context.irq % 4 * 8
        pend_reg, pend_value = NVIC_ISPR + 4 * word, 1 << bit
        prio_reg = NVIC_IPR + context.irq // 4 * 4
        enable_reg: int | None = NVIC_ISER + 4 * word
    else:
        pend = PENDABLE.get(context.entry, {"icsr_bit": 0, "shpr": 0, "shift": 0})
        pend_reg, pend_value = ICSR, 1 << pend["icsr_bit"]
        prio_reg, shift, enable_reg = pend["shpr"], pend["shift"], None
    return {
        "name": context.name,
        "entry": context.entry,
        "priority": context.priority,
        "preempts": list(context.preempts),
        "irq": context.irq,
        "exception": None if context.irq is None else FIRST_IRQ_EXCEPTION + context.irq,
        "pend_reg": pend_reg,
        "pend_value": pend_value,
        "enable_reg": enable_reg,
        "prio_reg": prio_reg,
        "prio_mask": 0xFF << shift,
        "prio_value": level << shift,
        "frame": ISR_FRAME,
    }


def _vector_lines(core: Core, isrs: list[Context]) -> list[str]:
    """The handler of each device interrupt line of the core's vector table: the entry of
    the isr wired to it, else the line's CMSIS name (`Core.line_handler`), a weak alias of
    the default handler, which reports the line that fired."""
    wired = {isr.irq: isr.entry for isr in isrs if isr.irq is not None}
    return [wired.get(line, core.line_handler(line)) for line in range(core.interrupts)]


def handlers(board: Board, core: Core) -> list[str]:
    """Every device handler of the tables of the image `core` owns (its own, then those
    of the cores that join it), each once: the startup code makes each a weak alias."""
    cores = [core, *(other for other in board.cores.values() if other.image == core.name)]
    names: dict[str, None] = {}
    for owner in cores:
        isrs = [c for c in board.contexts.values() if c.core == owner.name and c.kind == "isr"]
        names.update(dict.fromkeys(_vector_lines(owner, isrs)))
        names.update(dict.fromkeys(isr.entry for isr in isrs if isr.irq is not None))
    return list(names)


def _checked(workload: str, placement: Placement) -> dict[str, Any]:
    return {
        "name": placement.name,
        "size": placement.size,
        "first": placement.first,
        "last": placement.last,
        "offset": placement.offset,
        "checksum": fnv1a(placement.contents or b""),
        "expr": f"&{pool_symbol(workload, placement.pool or '')}[{placement.offset}]",
    }


def _sources(core: Core, workload: str, options: RenderOptions, board: Board) -> list[str]:
    """The sources of the image `core` runs: its own and those of the cores that join it."""
    sources = [f"memplace/{core.name}/startup.c", f"memplace/src/{workload}_pools.c"]
    if options.project_type == "exerciser":
        sources.append(f"src/exerciser_{core.name}.c")
    for other in board.cores.values():
        if other.image == core.name:
            sources.append(f"memplace/{other.name}/startup.c")
            if options.project_type == "exerciser":
                sources.append(f"src/exerciser_{other.name}.c")
    return sources


def _joined(board: Board, plan: Plan, core: Core) -> list[dict[str, Any]]:
    """The cores that run the image of `core`: the address of each one's vector table, its
    stacks, which this image's linker script places, and its device isrs' entries."""
    return [
        {
            "name": other.name,
            "vectors": other.boot,
            "stacks": [s for s in plan.stacks if board.contexts[s.owner].core == other.name],
            # Its device isrs' entries: weak aliases of this image's Default_Handler, which
            # only this core's startup file (where Default_Handler is defined) can declare.
            "device_entries": [
                context.entry
                for context in board.contexts.values()
                if context.core == other.name and context.irq is not None
            ],
        }
        for other in board.cores.values()
        if other.image == core.name
    ]
