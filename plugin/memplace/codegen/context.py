"""What fills the templates: one frozen value per project (`ProjectContext`) holding one
per core (`CoreContext`), computed from a Board, a Plan and the project's image map.

Where bytes go is the image map's (`memplace.imagemap`); section and symbol names are the
contract's (`memplace.contract`), handed to the templates as values. What is left here is
how the generated C names the plan's parts, raises interrupts and walks the timeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from memplace import contract
from memplace.board import CPUS, FIRST_IRQ_EXCEPTION, POOL_ALIGN, Board, Context, Core, ImageLayout
from memplace.board.checks import PENDABLE, main_context, priority_bits
from memplace.contract import Names
from memplace.hints import StackHints
from memplace.imagemap import (
    FreeSection,
    ImageMap,
    Mailbox,
    Region,
    Release,
    ReleaseTable,
    pool_owner,
    pool_storage,
)
from memplace.imagemap.compute import vector_lines
from memplace.importers.mlf import ModelArchive
from memplace.importers.relax import RelaxModel
from memplace.planner.arena import Arena, user_core
from memplace.planner.arena import arenas as plan_arenas
from memplace.planner.model import Placement, Plan, PoolUsage, StackUsage

# The NVIC's registers for device interrupt line K: a bit in the word 4 * (K // 32) of the
# set-enable and set-pending arrays, and byte K of the priority array (written as a word:
# Armv6-M allows only word accesses).
NVIC_ISER = 0xE000E100
NVIC_ISPR = 0xE000E200
NVIC_IPR = 0xE000E400
ICSR = 0xE000ED04
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

    @property
    def arena(self) -> tuple[str, int] | None:
        """The pool whose storage grows to hold the TFLite Micro arena, and its bytes."""
        return None if self.tflm_arena is None else self.tflm_arena[:2]

    def storage(self, usage: PoolUsage) -> int:
        """Bytes of a pool's storage: what the plan uses, or the arena it must hold."""
        return pool_storage(usage, self.arena)


@dataclass(frozen=True)
class PoolView:
    """A pool as the header and the pool storage define it."""

    name: str
    kind: str
    capacity: int
    used: int
    storage: int
    address: int
    memory: str
    symbol: str
    section: str
    align: int
    rows: tuple[str, ...]  # a constant pool's bytes, 16 a row of C
    owner: str | None  # the image that defines its storage (None: it has none)
    generated: bool


@dataclass(frozen=True)
class PlacementView:
    name: str
    pool: str | None
    offset: int
    size: int
    address: int
    symbol: str
    dynamic: bool
    stack: str | None


@dataclass(frozen=True)
class StackView:
    """A stack as the templates name it: `context` is the plan's label (`main.thread0`),
    `name` the C identifier of its symbols, section and region (`main_thread0`); for an
    RTOS task's stack, `task` the name the RTOS gives the task and `entry` its function."""

    task: str | None
    entry: str | None
    context: str
    name: str
    budget: int
    address: int
    planned: int
    owner: str
    thread: int | None
    function: str | None
    region: str
    symbol: str
    section: str
    start: str  # the linker script's symbols at its ends
    end: str


@dataclass(frozen=True)
class Checked:
    """A buffer or constant the exerciser fills or sums and checks."""

    name: str
    size: int
    first: int
    last: int
    offset: int
    checksum: int
    expr: str


@dataclass(frozen=True)
class Raise:
    reg: int
    value: int


@dataclass(frozen=True)
class Isr:
    """An ISR context as the templates raise it: the word to write where (`pend_reg`,
    `pend_value`), the priority field to program (`prio_reg`, `prio_mask`, `prio_value`),
    and for a device line the bit that enables it (`enable_reg`, None for a core exception)."""

    name: str
    entry: str
    priority: int
    preempts: tuple[str, ...]
    irq: int | None
    exception: int | None
    pend_reg: int
    pend_value: int
    enable_reg: int | None
    prio_reg: int
    prio_mask: int
    prio_value: int
    frame: int


@dataclass(frozen=True)
class Thread(StackView):
    """A worker thread the exerciser runs on its own stack, with the buffers planned there
    and the writes that raise the ISR contexts preempting its context."""

    isrs: tuple[str, ...]
    raises: tuple[Raise, ...]
    buffers: tuple[Checked, ...]


@dataclass(frozen=True)
class ArenaBuffer:
    name: str
    size: int
    align: int
    first: int
    last: int


@dataclass(frozen=True)
class ArenaView:
    """A core's arena in a pool: the block the plan reserved for its dynamic buffers."""

    pool: str
    core: str
    symbol: str
    offset: int
    capacity: int
    buffers: tuple[ArenaBuffer, ...]


@dataclass(frozen=True)
class ArenaGroup:
    core: str
    arenas: tuple[ArenaView, ...]


@dataclass(frozen=True)
class OwnPool:
    """A pool whose storage this image defines, as its linker script places it."""

    name: str
    kind: str
    used: int
    capacity: int
    region: str
    section: str
    copied: bool


@dataclass(frozen=True)
class ForeignPool:
    """A pool whose storage another image defines: its symbol at the same address."""

    name: str
    symbol: str
    address: int


@dataclass(frozen=True)
class Joined:
    """A core that runs this image too: its vector table's address, its stacks (which this
    image's linker script places) and its device isrs' entries."""

    name: str
    vectors: int
    section: str  # its vector table's
    stacks: tuple[StackView, ...]
    device_entries: tuple[str, ...]


@dataclass(frozen=True)
class CoreMailbox:
    """The mailbox as one core's image reaches it (`address` in that core's view)."""

    memory: str
    releaser: str
    size: int
    address: int
    done: int
    cores: tuple[str, ...]
    slots: int


@dataclass(frozen=True)
class TflmArena:
    pool: str
    size: int
    symbol: str
    note: str


@dataclass(frozen=True)
class CoreContext:
    """Everything the templates of one core's files read about that core."""

    name: str
    cpu: str
    fpu: bool
    reads_dhcsr: bool  # Armv6-M leaves it to the implementation whether software reads DHCSR
    arch_flags: tuple[str, ...]
    layout: ImageLayout
    regions: tuple[Region, ...]
    copies: tuple[str, ...]
    zeroes: tuple[str, ...]
    free: tuple[FreeSection, ...]
    copier: str | None
    moves_vectors: bool
    release_table: ReleaseTable | None
    pools: tuple[OwnPool, ...]
    foreign_pools: tuple[ForeignPool, ...]
    stacks: tuple[StackView, ...]
    image: str
    runs_other_image: bool
    boot: int
    joined: tuple[Joined, ...]
    runs_define: str
    threads: tuple[Thread, ...]
    main_stack: str
    main_stack_start: str  # the linker script's symbols at the ends of the main stack
    main_stack_end: str
    entry: str
    isrs: tuple[Isr, ...]
    interrupts: int
    vectors_symbol: str  # the vector table the core starts from: its symbol and section
    vectors_section: str
    vector_align: int
    vector_lines: tuple[str, ...]
    handlers: tuple[str, ...]
    device_isrs: tuple[Isr, ...]
    mailbox: CoreMailbox | None
    release_magic: int
    releases: tuple[Release, ...]
    released_slot: int | None
    step_slot: int | None
    buffers: tuple[Checked, ...]
    arenas: tuple[ArenaView, ...]
    constants: tuple[Checked, ...]
    stack_buffers: tuple[Checked, ...]
    stack_area: int
    sources: tuple[str, ...]


@dataclass(frozen=True)
class ProjectContext:
    """Everything the templates read: the project's values, its cores', the names of the
    contract (`names`) and a TVM model's values (`tvm`, `codegen.tvm` and `codegen.relax`)."""

    name: str
    board: str
    project_type: str
    pool_storage: str
    sources: str | None
    tflm_arena: TflmArena | None
    multicore: bool
    shared_image_memories: tuple[str, ...]
    steps: tuple[str, ...]
    pools: tuple[PoolView, ...]
    arenas: tuple[ArenaView, ...]
    arena_pools: tuple[str, ...]
    arena_cores: tuple[ArenaGroup, ...]
    placements: tuple[PlacementView, ...]
    stacks: tuple[StackView, ...]
    cores: tuple[CoreContext, ...]
    free_sections: tuple[FreeSection, ...]
    mailbox: Mailbox | None
    simulator: bool
    on_exit: str
    names: Names
    tvm: Mapping[str, Any] | None

    def template_vars(self) -> dict[str, Any]:
        """The names the templates see: every field, and `NAME`, the upper-cased `name`."""
        found = {field.name: getattr(self, field.name) for field in fields(self)}
        return {**found, "NAME": self.name.upper()}


def project_context(
    board: Board,
    plan: Plan,
    options: RenderOptions,
    users: dict[str, tuple[str, ...]],
    image_map: ImageMap,
    tvm: Mapping[str, Any] | None = None,
    model_sources: tuple[str, ...] = (),
) -> ProjectContext:
    """The project's template values. `model_sources`: the files of a model the first
    core's image compiles too."""
    name = plan.workload
    all_arenas = arenas(board, plan, users)
    cores = tuple(
        _core(board, plan, core, options, users, image_map, model_sources if index == 0 else ())
        for index, core in enumerate(board.cores.values())
    )
    return ProjectContext(
        name=name,
        board=board.name,
        project_type=options.project_type,
        pool_storage=options.pool_storage,
        sources=options.sources,
        tflm_arena=_tflm_arena(plan, options),
        multicore=len(board.cores) > 1,
        shared_image_memories=image_map.shared_memories,
        steps=tuple(plan.steps),
        pools=tuple(_pool(board, plan, usage, options) for usage in plan.pools),
        arenas=all_arenas,
        arena_pools=tuple(sorted({a.pool for a in all_arenas}, key=list(board.pools).index)),
        arena_cores=tuple(
            ArenaGroup(core, tuple(a for a in all_arenas if a.core == core))
            for core in board.cores
            if any(a.core == core for a in all_arenas)
        ),
        placements=tuple(
            PlacementView(
                name=p.name,
                pool=p.pool,
                offset=p.offset,
                size=p.size,
                address=plan.address(p) or 0,
                symbol=contract.pool_symbol(name, p.pool or ""),
                dynamic=p.dynamic,
                stack=p.stack,
            )
            for p in plan.placements
        ),
        stacks=tuple(_stack(s, board) for s in plan.stacks),
        cores=cores,
        free_sections=tuple(f for core in cores for f in core.free),
        mailbox=image_map.mailbox,
        simulator=board.run.is_simulator,
        on_exit=board.run.on_exit,
        names=contract.names(),
        tvm=tvm,
    )


def _pool(board: Board, plan: Plan, usage: PoolUsage, options: RenderOptions) -> PoolView:
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
    return PoolView(
        name=usage.name,
        kind=usage.kind,
        capacity=usage.capacity,
        used=usage.used,
        storage=storage,
        address=usage.address,
        memory=usage.memory,
        symbol=contract.pool_symbol(plan.workload, usage.name),
        section=contract.pool_section(usage.name),
        align=POOL_ALIGN,
        rows=tuple(rows),
        owner=pool_owner(board, usage) if storage else None,
        generated=options.pool_storage == "generated",
    )


def _tflm_arena(plan: Plan, options: RenderOptions) -> TflmArena | None:
    if options.tflm_arena is None:
        return None
    pool, size, note = options.tflm_arena
    return TflmArena(pool, size, contract.pool_symbol(plan.workload, pool), note)


def _view(board: Board, memory: str, core: str) -> int:
    return board.memories[memory].shift(core)


def _core(
    board: Board,
    plan: Plan,
    core: Core,
    options: RenderOptions,
    users: dict[str, tuple[str, ...]],
    image_map: ImageMap,
    model_sources: tuple[str, ...],
) -> CoreContext:
    main = main_context(board, core.name)
    mapped = image_map.core(core.name)
    reached_names = {m.name for m in board.memories.values() if core.name in m.access}
    all_pools = [p for p in plan.pools if p.used and p.memory in reached_names]
    own_pools = [p for p in all_pools if pool_owner(board, p) == core.name]
    foreign_pools = [p for p in all_pools if pool_owner(board, p) != core.name]
    box = image_map.mailbox
    stacks = [s for s in plan.stacks if board.contexts[s.owner].core == core.name]
    mine = [p for p in plan.placements if user_core(board, users.get(p.name, ())) == core.name]
    isrs = [c for c in board.contexts.values() if c.core == core.name and c.kind == "isr"]
    # A core that runs another's image starts at its own context's entry, app or not: the
    # image has one app_main, the owner's.
    entry = "app_main" if options.project_type == "app" and not core.image else main.entry
    load = core.layout.load
    return CoreContext(
        name=core.name,
        cpu=core.cpu,
        fpu=core.float_abi != "soft",
        reads_dhcsr=CPUS[core.cpu] != "armv6-m",
        arch_flags=(f"-mcpu={core.cpu}", "-mthumb", f"-mfloat-abi={core.float_abi}"),
        layout=core.layout,
        regions=mapped.regions,
        copies=mapped.copies,
        zeroes=mapped.zeroes,
        free=mapped.free,
        copier=core.layout.copy,
        moves_vectors=core.layout.moves_vectors,
        release_table=mapped.release_table,
        pools=tuple(
            OwnPool(
                name=p.name,
                kind=p.kind,
                used=p.used,
                capacity=p.capacity,
                region=f"pool_{p.name}",
                section=contract.pool_section(p.name),
                copied=p.kind == "constant" and p.memory != load,
            )
            for p in own_pools
        ),
        foreign_pools=tuple(
            ForeignPool(
                name=p.name,
                symbol=contract.pool_symbol(plan.workload, p.name),
                address=p.address + _view(board, p.memory, core.name),
            )
            for p in foreign_pools
        ),
        stacks=tuple(_stack(s, board) for s in stacks),
        image=core.image_name,
        runs_other_image=core.image is not None,
        boot=core.boot,
        joined=_joined(board, plan, core),
        runs_define=f"MEMPLACE_RUNS_{core.name}",
        threads=tuple(_thread(plan, s, isrs, core, board) for s in stacks if s.thread is not None),
        main_stack=main.name,
        main_stack_start=contract.stack_start(main.name),
        main_stack_end=contract.stack_end(main.name),
        entry=entry,
        isrs=tuple(_isr(isr, core) for isr in isrs),
        interrupts=core.interrupts,
        vectors_symbol=mapped.vectors.symbol,
        vectors_section=contract.vectors_section(None if core.image is None else core.name),
        vector_align=mapped.vectors.align,
        vector_lines=mapped.vectors.lines,
        handlers=tuple(handlers(board, core)) if core.image is None else (),
        device_isrs=tuple(_isr(isr, core) for isr in isrs if isr.irq is not None),
        mailbox=None if box is None else _core_mailbox(board, box, core.name),
        release_magic=contract.RELEASE_TABLE_MAGIC,
        releases=mapped.releases,
        released_slot=(
            box.cores.index(core.name) if box is not None and core.name in box.cores else None
        ),
        step_slot=None if box is None else box.step_slot(core.name),
        buffers=tuple(
            _checked(plan.workload, p)
            for p in mine
            if p.kind == "buffer" and p.pool is not None and not p.dynamic
        ),
        arenas=tuple(a for a in arenas(board, plan, users) if a.core == core.name),
        constants=tuple(_checked(plan.workload, p) for p in mine if p.kind == "constant"),
        stack_buffers=tuple(
            _checked(plan.workload, p) for p in plan.placements if p.stack == main.name
        ),
        stack_area=next((s.planned for s in stacks if s.context == main.name), 0),
        sources=(*_sources(core, plan.workload, options, board), *model_sources),
    )


def _core_mailbox(board: Board, box: Mailbox, core: str) -> CoreMailbox:
    return CoreMailbox(
        memory=box.memory,
        releaser=box.releaser,
        size=box.size,
        address=box.system_address + _view(board, box.memory, core),
        done=box.done,
        cores=box.cores,
        slots=box.slots,
    )


def _stack(stack: StackUsage, board: Board) -> StackView:
    owner = board.contexts[stack.owner]
    is_task = owner.kind == "task" and stack.thread is None
    name = stack.c_name
    return StackView(
        task=owner.task if is_task else None,
        entry=owner.entry if is_task else None,
        context=stack.context,
        name=name,
        budget=stack.budget,
        address=stack.address,
        planned=stack.planned,
        owner=stack.owner,
        thread=stack.thread,
        function=contract.thread_function(name) if stack.thread is not None else None,
        region=f"stack_{name}",
        symbol=contract.stack_symbol(name),
        section=contract.stack_section(name),
        start=contract.stack_start(name),
        end=contract.stack_end(name),
    )


def _thread(plan: Plan, stack: StackUsage, isrs: list[Context], core: Core, board: Board) -> Thread:
    preempting = [_isr(isr, core) for isr in isrs if stack.owner in isr.preempts]
    view = _stack(stack, board)
    return Thread(
        **{field.name: getattr(view, field.name) for field in fields(view)},
        isrs=tuple(isr.name for isr in preempting),
        raises=tuple(Raise(isr.pend_reg, isr.pend_value) for isr in preempting),
        buffers=tuple(
            _checked(plan.workload, p) for p in plan.placements if p.stack == stack.context
        ),
    )


def arenas(board: Board, plan: Plan, users: dict[str, tuple[str, ...]]) -> tuple[ArenaView, ...]:
    """Every core's arena in every pool that holds dynamic buffers of that core: the block
    the plan reserved for them (`planner.arena`), handed out at run time."""
    return tuple(_arena(plan, arena) for arena in plan_arenas(board, plan, users))


def _arena(plan: Plan, arena: Arena) -> ArenaView:
    members = [plan.placement(name) for name in arena.buffers]
    return ArenaView(
        pool=arena.pool,
        core=arena.core,
        symbol=contract.pool_symbol(plan.workload, arena.pool),
        offset=arena.offset,
        capacity=arena.size,
        buffers=tuple(
            ArenaBuffer(p.name, p.size, p.align, p.first, p.last)
            for p in sorted(members, key=lambda p: p.first)
        ),
    )


def _isr(context: Context, core: Core) -> Isr:
    bits = priority_bits(core)
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
    return Isr(
        name=context.name,
        entry=context.entry,
        priority=context.priority,
        preempts=tuple(context.preempts),
        irq=context.irq,
        exception=None if context.irq is None else FIRST_IRQ_EXCEPTION + context.irq,
        pend_reg=pend_reg,
        pend_value=pend_value,
        enable_reg=enable_reg,
        prio_reg=prio_reg,
        prio_mask=0xFF << shift,
        prio_value=level << shift,
        frame=ISR_FRAME,
    )


def handlers(board: Board, core: Core) -> list[str]:
    """Every device handler of the tables of the image `core` owns (its own, then those
    of the cores that join it), each once: the startup code makes each a weak alias."""
    cores = [core, *(other for other in board.cores.values() if other.image == core.name)]
    names: dict[str, None] = {}
    for owner in cores:
        isrs = [c for c in board.contexts.values() if c.core == owner.name and c.kind == "isr"]
        names.update(dict.fromkeys(vector_lines(owner, isrs)))
        names.update(dict.fromkeys(isr.entry for isr in isrs if isr.irq is not None))
    return list(names)


def _checked(workload: str, placement: Placement) -> Checked:
    return Checked(
        name=placement.name,
        size=placement.size,
        first=placement.first,
        last=placement.last,
        offset=placement.offset,
        checksum=contract.fnv1a(placement.contents or b""),
        expr=f"&{contract.pool_symbol(workload, placement.pool or '')}[{placement.offset}]",
    )


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


def _joined(board: Board, plan: Plan, core: Core) -> tuple[Joined, ...]:
    return tuple(
        Joined(
            name=other.name,
            vectors=other.boot,
            section=contract.vectors_section(other.name),
            stacks=tuple(
                _stack(s, board) for s in plan.stacks if board.contexts[s.owner].core == other.name
            ),
            # Its device isrs' entries: weak aliases of this image's Default_Handler, which
            # only this core's startup file (where Default_Handler is defined) can declare.
            device_entries=tuple(
                context.entry
                for context in board.contexts.values()
                if context.core == other.name and context.irq is not None
            ),
        )
        for other in board.cores.values()
        if other.image == core.name
    )
