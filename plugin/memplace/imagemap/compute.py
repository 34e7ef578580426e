"""The image map computed from a board, a plan and, where images share a memory, the
bytes each image was measured to take there.

One project holds one image per core (a core may run another core's image instead). Pool
storage is defined in exactly one image, the first core's (in board order) that reaches
the pool's memory; the others name it at the same address. Where several images keep
their own sections in one memory, each takes a slice of that memory's image part: from
its vector table when it boots from there, else after the image before it, sized by the
measured bytes (or evenly, unmeasured), so private sections of different images never
overlap.
"""

from __future__ import annotations

from collections.abc import Mapping

from memplace import contract
from memplace.board import Board, Context, Core, vector_align
from memplace.board import Release as BoardRelease
from memplace.board.checks import MAX_RELEASED, check_generated_startup, main_context
from memplace.imagemap.model import (
    CoreMap,
    FreeSection,
    ImageMap,
    Mailbox,
    Region,
    Release,
    ReleaseEntry,
    ReleaseStep,
    ReleaseTable,
    Slice,
    VectorTable,
)
from memplace.planner.model import Plan, PoolUsage

# Images that share a memory start on this boundary: past VTOR's 128 bytes, and a flash page
# of the RP2040's (and most QSPI flashes).
IMAGE_ALIGN = 256
MAILBOX_SLOT = 16
MAILBOX_BYTES = (MAX_RELEASED + 1) * MAILBOX_SLOT
MAILBOX_DONE = 0x600DD0E5

Slices = dict[tuple[str, str], tuple[int, int]]
"""(memory, core) -> [start, end) of that core's image part, in system addresses."""


def image_map(
    board: Board,
    plan: Plan,
    arena: tuple[str, int] | None = None,
    sizes: Mapping[str, Mapping[str, int]] | None = None,
    sizing: bool = False,
) -> ImageMap:
    """The map of every image of the project of `board` and `plan`.

    `arena`: a pool whose storage grows past what the plan uses to hold an arena (the
    TensorFlow Lite Micro arena), and its bytes. `sizes`: the measured bytes of each image
    in each memory several images share (memory -> core -> bytes); without them such a
    memory is shared evenly. `sizing` gives every image all the room from its start, for
    the build that measures them."""
    check_generated_startup(board)
    reserved = _reserved(plan)
    slices = _image_slices(board, reserved, sizes, sizing)
    box = mailbox(board, reserved)
    return ImageMap(
        cores=tuple(
            _core_map(board, plan, core, slices, box, arena) for core in board.cores.values()
        ),
        mailbox=box,
        shared_memories=tuple(shared_image_memories(board)),
        image_sizes=None if sizes is None else {m: dict(s) for m, s in sizes.items()},
    )


def storage_bytes(used: int) -> int:
    """Bytes of a pool's storage for `used` bytes: whole 8-byte words."""
    return -(-used // 8) * 8


def pool_storage(usage: PoolUsage, arena: tuple[str, int] | None) -> int:
    """Bytes of a pool's storage: what the plan uses, or the arena it must hold."""
    held = arena[1] if arena is not None and arena[0] == usage.name else 0
    return storage_bytes(max(usage.used, held))


def pool_owner(board: Board, pool: PoolUsage) -> str:
    """The core whose image defines a pool's storage: the image of the first core (in board
    order) that reaches the pool's memory."""
    first = next(core for core in board.cores if core in board.memories[pool.memory].access)
    return board.cores[first].image_name


def mailbox(board: Board, reserved: Mapping[str, int]) -> Mailbox | None:
    """Where released cores hand their result to the core that released them: the last
    bytes below the pools and stacks of a writable memory that all those cores reach; the
    releasing core's data memory when it qualifies, else the first such memory."""
    released = [core for core in board.cores.values() if core.release is not None]
    if not released:
        return None
    # One core releases them all (`board.checks.check_generated_startup`).
    by = board.cores[next(core.release.by for core in released if core.release is not None)]
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
            return Mailbox(
                memory=memory.name,
                releaser=by.name,
                size=MAILBOX_BYTES,
                system_address=end - MAILBOX_BYTES,
                done=MAILBOX_DONE,
                cores=tuple(core.name for core in released),
                slots=len(released) + 1,
            )
    raise board.error(
        "cores",
        f"no writable memory that cores {', '.join(involved)} all reach has room "
        "for the mailbox released cores report to",
    )


def _reserved(plan: Plan) -> dict[str, int]:
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
    board: Board,
    reserved: Mapping[str, int],
    sizes: Mapping[str, Mapping[str, int]] | None,
    sizing: bool,
) -> Slices:
    slices = {}
    for memory in board.memories.values():
        holders = image_holders(board, memory.name)
        end = reserved.get(memory.name, memory.origin + memory.size)
        if len(holders) < 2:
            slices.update({(memory.name, core): (memory.origin, end) for core in holders})
            continue
        for core, span in image_ranges(board, memory.name, end, sizes, sizing).items():
            slices[(memory.name, core)] = span
    return slices


def image_holders(board: Board, memory: str) -> list[str]:
    """The cores whose own image puts sections (vectors, code, data or load copies) in
    `memory`, in board order."""
    return [
        core.name
        for core in board.cores.values()
        if core.image is None and memory in core.layout.memories()
    ]


def shared_image_memories(board: Board) -> list[str]:
    """The memories in which several images put sections of their own."""
    return [name for name in board.memories if len(image_holders(board, name)) > 1]


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
            raise board.error(
                f"cores.{core}.boot",
                f"memory {memory!r} holds the images of cores {', '.join(holders)}: the image "
                f"of core {before!r} takes [0x{starts[before]:08x}, 0x{cursor:08x}), past "
                f"0x{start:08x} where the vector table of core {core!r} starts; give core "
                f"{core!r} a later `boot`, or its image a memory of its own",
            )
        starts[core] = start
        cursor = start + measured.get(core, 0) if sizes is not None else start
    ranges = {}
    for index, core in enumerate(holders):
        stop = end if sizing or index + 1 == len(holders) else starts[holders[index + 1]]
        if starts[core] + measured.get(core, 0) > stop:
            raise board.error(
                f"memories.{memory}",
                f"memory {memory!r} holds the images of cores {', '.join(holders)}, "
                f"{sum(measured.values())} bytes in all ("
                + ", ".join(f"{c}: {measured.get(c, 0)}" for c in holders)
                + f"), more than its {end - here.origin} bytes left for images",
            )
        ranges[core] = (starts[core], stop)
    return ranges


def _align(address: int) -> int:
    return -(-address // IMAGE_ALIGN) * IMAGE_ALIGN


def _core_map(
    board: Board,
    plan: Plan,
    core: Core,
    slices: Slices,
    box: Mailbox | None,
    arena: tuple[str, int] | None,
) -> CoreMap:
    reached = [m for m in board.memories.values() if core.name in m.access]
    reached_names = {m.name for m in reached}
    regions = []
    for memory in reached:
        if (memory.name, core.name) not in slices:
            continue  # its free room, if any, is in free_areas
        start, end = slices[(memory.name, core.name)]
        if box is not None and memory.name == box.memory:
            end = min(end, box.system_address)
        origin = start + _view(board, memory.name, core.name)
        regions.append(Region(memory.name, memory.name, memory.attrs, origin, end - start))
    # Every pool's reservation is a region, used or not (an unused one holds no section),
    # unless an image's part of the memory already covers it (an unused pool reserves nothing).
    for pool in [p for p in plan.pools if p.memory in reached_names and p.capacity]:
        if pool_owner(board, pool) != core.name or _in_image_part(pool, slices):
            continue
        regions.append(
            Region(
                f"pool_{pool.name}",
                pool.memory,
                board.memories[pool.memory].attrs,
                pool.address + _view(board, pool.memory, core.name),
                # The pool's whole reservation, so ld's memory report shows how full it is.
                max(pool.capacity, pool_storage(pool, arena)),
            )
        )
    joined = [other.name for other in board.cores.values() if other.image == core.name]
    for stack in plan.stacks:
        if board.contexts[stack.owner].core not in (core.name, *joined):
            continue
        regions.append(
            Region(
                f"stack_{stack.c_name}",
                stack.memory,
                board.memories[stack.memory].attrs,
                stack.address + _view(board, stack.memory, core.name),
                stack.budget,
            )
        )
    # Own stacks first, then those of each joined core: the order the linker script had.
    free = free_areas(board, plan, core, slices, box)
    regions += free
    free_sections = _free_sections(board, free)
    load = core.layout.load
    own_constants = [
        p
        for p in plan.pools
        if p.used
        and p.memory in reached_names
        and pool_owner(board, p) == core.name
        and p.kind == "constant"
        and p.memory != load
    ]
    copies = [*reset_copies(core), contract.DATA, *(f"{f.section}.data" for f in free_sections)]
    copies += [contract.pool_section(p.name) for p in own_constants]
    isrs = [c for c in board.contexts.values() if c.core == core.name and c.kind == "isr"]
    return CoreMap(
        core=core.name,
        image=core.image_name,
        regions=tuple(sorted(regions, key=lambda r: (r.origin, r.name))),
        slices=tuple(
            Slice(memory, *span) for (memory, holder), span in slices.items() if holder == core.name
        ),
        vectors=VectorTable(
            symbol=contract.vectors_symbol(None if core.image is None else core.name),
            address=core.boot,
            align=vector_align(core.interrupts),
            lines=tuple(vector_lines(core, isrs)),
        ),
        copies=tuple(copies),
        zeroes=(contract.BSS, *(f"{f.section}.bss" for f in free_sections)),
        free=tuple(free_sections),
        release_table=_release_table(board, core),
        releases=tuple(
            _release(board, other, other.release, slices)
            for other in board.cores.values()
            if other.release is not None and other.release.by == core.name
        ),
    )


def _in_image_part(pool: PoolUsage, slices: Slices) -> bool:
    """Whether an unused pool lies in some image's part of its memory."""
    end = pool.address + pool.capacity
    return not pool.used and any(
        memory == pool.memory and start < end and pool.address < stop
        for (memory, _), (start, stop) in slices.items()
    )


def free_areas(
    board: Board, plan: Plan, core: Core, slices: Slices, box: Mailbox | None
) -> list[Region]:
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
        taken.setdefault(box.memory, []).append((box.system_address, box.system_address + box.size))
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
            origin = start + _view(board, memory.name, core.name)
            areas.append(Region(name, memory.name, memory.attrs, origin, end - start))
    return areas


def _free_sections(board: Board, free: list[Region]) -> list[FreeSection]:
    """The application's sections in the free room: one .data and one .bss per writable
    memory, in its largest free region (`MEMPLACE_DATA_IN_<MEMORY>`, `..._BSS_IN_...`)."""
    largest: dict[str, Region] = {}
    for area in free:
        best = largest.get(area.memory)
        if board.memories[area.memory].writable() and (best is None or area.length > best.length):
            largest[area.memory] = area
    return [
        FreeSection(
            memory=memory,
            region=area.name,
            section=contract.free_section(memory),
            macro=memory.upper(),
            bytes=area.length,
        )
        for memory, area in largest.items()
    ]


def _release(board: Board, core: Core, release: BoardRelease, slices: Slices) -> Release:
    """How `core`'s releaser starts it (`release`, the core's own)."""
    main = main_context(board, core.name)
    budget = main.stack.size if main.stack is not None else 0
    by = release.by
    vectors = board.memories[core.layout.vectors]
    return Release(
        core=core.name,
        context=main.name,
        budget=budget,
        handshake=release.handshake,
        # The vector table the core starts from, as it sees it and as its releaser does.
        vectors=core.boot,
        vectors_seen=core.boot - vectors.address_for(core.name) + vectors.address_for(by),
        steps=tuple(ReleaseStep(s.action, s.address, s.value) for s in release.steps),
        copy_table=_release_table_address(board, core, slices),
    )


def boot_sections(core: Core) -> list[str]:
    """The sections of `core`'s image that run apart from their load copy and that its
    copier (`layout.copy`) moves before they run."""
    layout = core.layout
    moved = [contract.VECTORS] if layout.vectors != layout.load else []
    return moved + (list(contract.code_sections()) if layout.code != layout.load else [])


def reset_copies(core: Core) -> list[str]:
    """The boot sections the core's own reset code copies (the others' copier is the
    releasing core or the boot ROM)."""
    return boot_sections(core) if core.layout.copy == "reset" else []


def _release_table(board: Board, core: Core) -> ReleaseTable | None:
    """For an image its releaser copies: each section's load copy and run address as the
    releaser sees them, which the linker script writes at the start of the image's part of
    the load memory."""
    if core.layout.copy != "releaser" or core.release is None:
        return None
    by = core.release.by
    layout = core.layout

    def shift(memory: str) -> str:
        seen = board.memories[memory]
        delta = seen.address_for(by) - seen.address_for(core.name)
        return "" if delta == 0 else f" {'+' if delta > 0 else '-'} 0x{abs(delta):08x}"

    parts = contract.layout_sections()
    return ReleaseTable(
        releaser=by,
        magic=contract.RELEASE_TABLE_MAGIC,
        entries=tuple(
            ReleaseEntry(name, shift(layout.load), shift(getattr(layout, parts[name])))
            for name in boot_sections(core)
        ),
    )


def _release_table_address(board: Board, core: Core, slices: Slices) -> int | None:
    """Where the releaser reads the release table of `core`'s image, as it sees it."""
    if core.layout.copy != "releaser" or core.release is None:
        return None
    load = core.layout.load
    start, _ = slices[(load, core.name)]
    return start + _view(board, load, core.release.by)


def vector_lines(core: Core, isrs: list[Context]) -> list[str]:
    """The handler of each device interrupt line of the core's vector table: the entry of
    the isr wired to it, else the line's CMSIS name (`Core.line_handler`), a weak alias of
    the default handler, which reports the line that fired."""
    wired = {isr.irq: isr.entry for isr in isrs if isr.irq is not None}
    return [wired.get(line, core.line_handler(line)) for line in range(core.interrupts)]
