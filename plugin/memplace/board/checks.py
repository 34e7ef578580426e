"""The rules of a board file that tie its parts together: each takes the parts read so far
and the nodes they came from, and refuses a board with an `InputError` at the file:line:col
of the key to change. A new rule about the board (can this isr be raised, does this table
fit) goes here, called from `reader.BoardReader.read` once the parts it needs are read."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from memplace import names
from memplace.board.addresses import ContextSpec
from memplace.board.parts import (
    COPIERS,
    CPUS,
    CPUS_WITHOUT_VTOR,
    FIRST_IRQ_EXCEPTION,
    RELEASE_HANDSHAKES,
    VERSION,
    Context,
    Core,
    ImageLayout,
    Memory,
    Pool,
    Run,
    Stack,
    vector_align,
)
from memplace.source import Node, suggest

if TYPE_CHECKING:  # a Board is made of what the reader checks here
    from memplace.board.model import Board

# The handlers of the 16 core exceptions in memplace's startup code.
# fmt: off
CORE_HANDLERS = (
    "Reset_Handler", "NMI_Handler", "HardFault_Handler", "MemManage_Handler",
    "BusFault_Handler", "UsageFault_Handler", "SecureFault_Handler", "SVC_Handler",
    "DebugMon_Handler", "PendSV_Handler", "SysTick_Handler", "Default_Handler",
)
# fmt: on


def check_version(node: Node) -> None:
    version = node.get("memplace")
    if version is None:
        raise node.error(f"missing 'memplace: {VERSION}' at the top of the board file")
    if version.value != VERSION:
        raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")


def check_macro_names(pools_node: Node) -> None:
    """Pools whose names differ only in case would give the header the same macros."""
    seen: dict[str, str] = {}
    for key, item in pools_node.items():
        other = seen.setdefault(key.upper(), key)
        if other != key:
            raise item.key_error(
                f"pools {other!r} and {key!r} would give the generated header the same "
                f"macros ({key.upper()}_...); rename one of them"
            )


def check_runs_in_place(node: Node, chosen: Mapping[str, str]) -> None:
    """Without a `copy`, nothing moves vectors or code: they run where they are programmed."""
    for part in ("vectors", "code"):
        if chosen[part] == chosen["load"]:
            continue
        if part == "vectors":
            # The core reads its vector table at reset, before any code of the image could
            # copy it anywhere: it must be where the image is programmed.
            raise node.child("vectors").error(
                f"the vector table must be in the load memory {chosen['load']!r}, where the "
                f"image is when the core starts; set vectors: {chosen['load']}, or say what "
                f"copies it there (copy: {', '.join(COPIERS)})"
            )
        raise node.child("code").error(
            f"code runs from {chosen['code']!r} but is programmed into {chosen['load']!r}, and "
            f"nothing is declared to copy it there; say what does (copy: {', '.join(COPIERS)}) "
            f"or set code: {chosen['load']}"
        )


def check_copied_parts(
    node: Node, copy: str, chosen: Mapping[str, str], memories: Mapping[str, Memory]
) -> None:
    """A copy has something to copy, into memories the copier can write."""
    moved = [part for part in ("vectors", "code") if chosen[part] != chosen["load"]]
    if not moved:
        raise node.child("copy").error(
            f"vectors and code are already in the load memory {chosen['load']!r}: there is "
            f"nothing to copy (data is copied at reset anyway); remove copy"
        )
    for part in moved:
        memory = memories[chosen[part]]
        if not memory.writable():
            raise node.child(part).error(
                f"{part} is copied into {memory.name!r} before it runs, but {memory.name!r} is "
                f"{memory.attrs!r}; add w to its attrs"
            )
    if copy == "boot-rom" and chosen["vectors"] != chosen["code"]:
        # A boot ROM copies one block and starts the core on the vector table at its start.
        raise node.child("vectors").error(
            f"the boot ROM copies one block from {chosen['load']!r}: put vectors and code in "
            f"one memory (vectors: {chosen['code']})"
        )


def check_vector_move(node: Node, cpu: str, layout: ImageLayout) -> None:
    if layout.copy == "reset" and layout.vectors != layout.load and cpu in CPUS_WITHOUT_VTOR:
        raise node.child("vectors").error(
            f"{cpu} has no VTOR, so its vector table stays where it boots; "
            f"set vectors: {layout.load}"
        )


def check_layout_attrs(node: Node, part: str, memory: Memory) -> None:
    needs = {"vectors": "r", "code": "rx", "data": "rw", "load": "r"}[part]
    missing = [letter for letter in needs if letter not in memory.attrs]
    if missing:
        raise node.error(
            f"{part} needs a memory with {needs!r}; {memory.name!r} is {memory.attrs!r} "
            f"(add the missing letters to its attrs, or pick another memory)"
        )


def check_vector_tables(cores_node: Node, cores: Mapping[str, Core]) -> None:
    """A table with device lines starts on its own size's power-of-two boundary (VTOR), as
    the core sees it. A core whose reset code moves VTOR boots from a table of the 16 core
    exceptions; the linker aligns the copy it moves to."""
    for name, core in cores.items():
        if not core.interrupts or core.boot % vector_align(core.interrupts) == 0:
            continue
        if core.layout.copy == "reset" and core.layout.vectors != core.layout.load:
            continue
        node = cores_node.child(name)
        place = node.child("boot") if node.has("boot") else node.child("interrupts")
        entries = FIRST_IRQ_EXCEPTION + core.interrupts
        raise place.error(
            f"a vector table of {entries} entries starts on a {vector_align(core.interrupts)}"
            f"-byte boundary (VTOR); core {name!r} boots from 0x{core.boot:08x}"
        )


def check_irqs(specs: list[ContextSpec], cores: Mapping[str, Core]) -> None:
    """Each isr with a line is wired to a line its core's vector table has, one isr per
    line, and through an entry of its own (a core exception's handler has its own entry)."""
    wired: dict[tuple[str, int], str] = {}
    for spec in specs:
        if spec.irq is None:
            continue
        node = spec.node.child("irq")
        lines = cores[spec.core].interrupts
        if not lines:
            raise node.error(
                f"core {spec.core!r} declares no device interrupt lines; add "
                f"`interrupts: N` to it (how many lines its vector table has)"
            )
        if spec.irq >= lines:
            raise node.error(
                f"core {spec.core!r} has {lines} device interrupt lines (0..{lines - 1}); "
                f"there is no line {spec.irq}"
            )
        first = wired.setdefault((spec.core, spec.irq), spec.name)
        if first != spec.name:
            raise node.error(
                f"context {first!r} is already wired to irq {spec.irq} of core {spec.core!r}; "
                "a line has one handler"
            )
        if spec.entry in CORE_HANDLERS:
            raise (spec.node.get("entry") or spec.node).error(
                f"{spec.entry} is the handler of a core exception; the handler of irq "
                f"{spec.irq} (exception {FIRST_IRQ_EXCEPTION + spec.irq}) needs a name of its own"
            )
        problem = names.handler_problem(spec.entry)
        if problem is not None:
            raise (spec.node.get("entry") or spec.node).error(
                f"{problem}; the handler of irq {spec.irq} needs a name of its own"
            )


def check_alloca(item: Node, alloca: int, stack: tuple[str, int] | None) -> None:
    if stack is None and alloca:
        raise item.child("max_stack_alloca").error(
            "this context has no stack of its own to plan buffers on; set it to 0 or add a stack"
        )
    if stack is not None and alloca > stack[1]:
        raise item.child("max_stack_alloca").error(
            f"{alloca} is more than the whole stack ({stack[1]} bytes)"
        )


def check_releases(cores_node: Node, cores: Mapping[str, Core]) -> None:
    """A released core is released by a core that itself starts at reset (so some core
    always does)."""
    for name, core in cores.items():
        if core.release is None:
            continue
        by_node = cores_node.child(name).child("release").child("by")
        if core.release.by not in cores or core.release.by == name:
            others = [other for other in cores if other != name]
            raise by_node.error(
                f"no other core {core.release.by!r}; {suggest(core.release.by, others)}"
            )
        if cores[core.release.by].release is not None:
            raise by_node.error(
                f"core {core.release.by!r} is itself released by another; "
                f"name a core that starts at reset"
            )


def check_copiers(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """An image its releaser copies has a releaser that reaches both where the image is
    programmed and where it runs; a boot ROM starts only a core that starts at reset."""
    for name, core in cores.items():
        if core.image is not None:
            continue  # it runs another core's image, laid out (and copied) by that core
        layout = core.layout
        layout_node = cores_node.child(name).child("layout")
        if layout.copy == "boot-rom" and core.release is not None:
            raise layout_node.child("copy").error(
                f"a boot ROM starts only the cores that start at reset; core {name!r} is "
                f"released by {core.release.by!r}: use copy: releaser"
            )
        if layout.copy != "releaser":
            continue
        if core.release is None:
            raise layout_node.child("copy").error(
                f"copy: releaser needs a core that releases core {name!r}; add "
                f"release: {{by: CORE, steps: [...]}}, or use copy: reset"
            )
        by = core.release.by
        for part in ("load", "vectors", "code"):
            memory = memories[getattr(layout, part)]
            if by not in memory.access:
                raise layout_node.child(part).error(
                    f"core {by!r} copies this image before it releases core {name!r}, but "
                    f"cannot reach memory {memory.name!r}; add {by} to its access list"
                )


def check_rom_copies(cores_node: Node, cores: Mapping[str, Core], run: Run) -> None:
    """QEMU starts a core on the image as it is loaded: no boot ROM copies it anywhere."""
    if run.qemu is None:
        return
    for name, core in cores.items():
        if core.image is None and core.layout.copy == "boot-rom":
            raise (
                cores_node.child(name)
                .child("layout")
                .child("copy")
                .error(
                    f"QEMU machine {run.qemu.machine!r} has no boot ROM that copies images; "
                    f"use copy: reset"
                )
            )


def check_shared_layouts(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """Images may share a memory: memplace gives each its own range of it (`codegen`), one
    after another, each starting at its vector table where that is in the memory. So two
    vector tables in one memory need two boot addresses."""
    first: dict[tuple[str, int], str] = {}
    for name, core in cores.items():
        if core.image is not None:
            continue  # it runs another core's image: nothing of its own to place
        vectors = memories[core.layout.vectors]
        system = core.boot - vectors.address_for(name) + vectors.origin
        other = first.setdefault((vectors.name, system), name)
        if other != name:
            node = cores_node.child(name)
            raise (node.child("boot") if node.has("boot") else node.child("layout")).error(
                f"cores {other!r} and {name!r} both start from a vector table at "
                f"0x{core.boot:08x} in memory {core.layout.vectors!r}; their images share that "
                f"memory one after the other: give core {name!r} a `boot` address past the "
                f"image of core {other!r}"
            )


def check_views(memories_node: Node, cores: Iterable[str], memories: Mapping[str, Memory]) -> None:
    """No core may see two memories at overlapping addresses. The error points at the
    address (the core's view, or else the origin) of the one declared later."""
    order = list(memories)
    for core in cores:
        seen = sorted(
            (memory.address_for(core), memory.address_for(core) + memory.size, memory.name)
            for memory in memories.values()
            if core in memory.access
        )
        for (low_start, low_end, low), (high_start, high_end, high) in itertools.pairwise(seen):
            if high_start >= low_end:
                continue
            later = max(low, high, key=order.index)
            node = memories_node.child(later)
            views = node.get("views")
            address = views.child(core) if views and views.has(core) else node.child("origin")
            raise address.error(
                f"core {core!r} sees memories {low!r} and {high!r} at overlapping addresses "
                f"([0x{low_start:08x}, 0x{low_end:08x}) and [0x{high_start:08x}, "
                f"0x{high_end:08x})); move one"
            )


def check_contexts(
    contexts_node: Node, specs: list[ContextSpec], cores: Mapping[str, Core]
) -> None:
    by_name = {spec.name: spec for spec in specs}
    for spec in specs:
        _check_preempts(spec, by_name)
        _check_thread_names(spec, by_name)
    for core in cores:
        on_core = [spec for spec in specs if spec.core == core]
        if not any(spec.kind == "thread" for spec in on_core):
            raise contexts_node.error(
                f"core {core!r} has no thread context to start on; add one with core: {core}"
            )
        tasks: dict[str, str] = {}
        for spec in on_core:
            if spec.kind != "task" or spec.task is None:
                continue
            named = tasks.setdefault(spec.task, spec.name)
            if named != spec.name:
                raise (spec.node.get("task") or spec.node).error(
                    f"context {named!r} on core {core!r} is already the RTOS task "
                    f"{spec.task!r}; give each task a name of its own (`task: NAME`)"
                )
        entries: dict[str, str] = {}
        for spec in on_core:
            if spec.kind == "task":
                continue  # an RTOS may start several tasks at one function
            first = entries.setdefault(spec.entry, spec.name)
            if first != spec.name:
                raise (spec.node.get("entry") or spec.node).error(
                    f"context {first!r} on core {core!r} already starts at {spec.entry}(); "
                    f"give each context an entry of its own"
                )
    for spec in specs:
        # Under an RTOS every handler runs on the main stack (`verify.firmware`).
        on_main_stack = cores[spec.core].rtos != "none"
        if spec.kind == "isr" and spec.stack is None and not spec.preempts and not on_main_stack:
            raise spec.node.error(
                "an isr runs on the stacks of the contexts it preempts: list them in "
                "`preempts`, or give it a stack of its own (under an RTOS: the main stack)"
            )


def _check_thread_names(spec: ContextSpec, by_name: Mapping[str, ContextSpec]) -> None:
    """A worker thread's stack is named in C as `<context>_thread<N>`
    (memplace_stack_main_thread0): no context may take that name too."""
    for index in range(spec.threads):
        twin = by_name.get(f"{spec.name}_thread{index}")
        if twin is not None:
            raise twin.node.key_error(
                f"the stack of thread {index} of context {spec.name!r} has the C name "
                f"{twin.name} (memplace_stack_{twin.name}); give this context another name"
            )


def _check_preempts(spec: ContextSpec, by_name: Mapping[str, ContextSpec]) -> None:
    node = spec.node.get("preempts")
    if node is None:
        return
    for index, other in enumerate(spec.preempts):
        place = node.child(index) if isinstance(node.value, list) else node
        if other not in by_name:
            raise place.error(f"no context {other!r}; {suggest(other, by_name)}")
        if other == spec.name:
            raise place.error("a context cannot preempt itself")
        target = by_name[other]
        if target.core != spec.core:
            raise place.error(
                f"context {other!r} runs on core {target.core!r}, not {spec.core!r}; "
                f"a context preempts only contexts of its own core"
            )
        if spec.kind == "isr" and target.kind == "isr" and spec.priority >= target.priority:
            raise place.error(
                f"an exception preempts only a less urgent one: give {spec.name!r} a priority "
                f"below {target.priority} (lower is more urgent)"
            )


def check_tables_below_areas(
    cores_node: Node,
    cores: Mapping[str, Core],
    memories: Mapping[str, Memory],
    pools: Mapping[str, Pool],
    stacks: Mapping[tuple[str, int], Stack],
) -> None:
    """The vector table a core starts from lies in the room its image grows in: below the
    pools and stacks that take the top of that memory."""
    for name, core in cores.items():
        memory = memories[core.layout.boot_memory]
        start = core.boot - memory.shift(name)
        end = start + 4 * (FIRST_IRQ_EXCEPTION + core.interrupts)
        areas = [(p.address, p.size, f"pool {p.name!r}") for p in pools.values()]
        areas += [(s.address, s.size, "a stack") for s in stacks.values()]
        for address, size, what in areas:
            inside = memory.origin <= address < memory.origin + memory.size
            if inside and start < address + size and address < end:
                node = cores_node.child(name)
                raise (node.child("boot") if node.has("boot") else node).error(
                    f"the vector table of core {name!r} (from 0x{core.boot:08x}) runs into "
                    f"{what} at [0x{address + memory.shift(name):08x}, "
                    f"0x{address + size + memory.shift(name):08x}) in memory "
                    f"{memory.name!r}; move `boot` below it, or make the pool smaller"
                )


def check_image_tables(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """The vector tables of one image lie at fixed addresses in its vectors memory: each one
    (16 + its lines, 4 bytes an entry) ends before the next begins, and inside the memory."""
    for owner in cores.values():
        if owner.image is not None:
            continue
        tables = sorted(
            (core.boot, core.name)
            for core in cores.values()
            if core.name == owner.name or core.image == owner.name
        )
        if len(tables) < 2:
            continue
        vectors = memories[owner.layout.vectors]
        end_of_memory = vectors.address_for(owner.name) + vectors.size
        follows = [(start, name) for start, name in tables[1:]] + [(end_of_memory, None)]
        for (start, name), (next_start, next_name) in zip(tables, follows, strict=True):
            core = cores[name]
            end = start + 4 * (FIRST_IRQ_EXCEPTION + core.interrupts)
            if end <= next_start:
                continue
            what = (
                f"the end of memory {vectors.name!r} at 0x{next_start:08x}"
                if next_name is None
                else f"the vector table of core {next_name!r} at 0x{next_start:08x}"
            )
            if core.image is None:
                # The owner's table runs into a joining core's: that one's `boot` moves it.
                node = cores_node.child(str(next_name))
                raise (node.child("boot") if node.has("boot") else node).error(
                    f"the vector table of core {name!r} ({FIRST_IRQ_EXCEPTION + core.interrupts} "
                    f"entries from 0x{start:08x}) runs into {what}; set `boot` of core "
                    f"{next_name!r} further on"
                )
            node = cores_node.child(name)
            place = node.child("interrupts") if node.has("interrupts") else node.child("image")
            raise place.error(
                f"the vector table of core {name!r} ({FIRST_IRQ_EXCEPTION + core.interrupts} "
                f"entries from 0x{start:08x}) runs into {what}; give core {name!r} fewer "
                f"interrupt lines, or a `boot` with room for them"
            )


def check_joined_memories(
    node: Node, name: str, owner: Core, memories: Mapping[str, Memory]
) -> None:
    """The image is linked as its owner sees memory: the core that joins it must reach every
    memory of the image, and see every memory both reach at the same address."""
    for memory in dict.fromkeys(owner.layout.memories()):
        if name not in memories[memory].access:
            raise node.error(
                f"core {name!r} cannot access memory {memory!r}, which holds the image of core "
                f"{owner.name!r}; add it to that memory's access list"
            )
    for seen in memories.values():
        if name in seen.access and owner.name not in seen.access:
            raise node.error(
                f"core {name!r} reaches memory {seen.name!r}, which core {owner.name!r} does "
                f"not: the image they share is linked with one memory map; add {owner.name} to "
                f"that memory's access list"
            )
        both = name in seen.access and owner.name in seen.access
        if both and seen.address_for(name) != seen.address_for(owner.name):
            raise node.error(
                f"cores {owner.name!r} and {name!r} see memory {seen.name!r} at different "
                f"addresses, so one image cannot serve both"
            )


def check_image_entries(specs: list[ContextSpec], cores: Mapping[str, Core]) -> None:
    """Contexts of different cores that run one image start at functions of that one image:
    each needs an entry of its own."""
    entries: dict[tuple[str, str], ContextSpec] = {}
    for spec in specs:
        core = cores[spec.core]
        first = entries.setdefault((core.image_name, spec.entry), spec)
        if first.core != spec.core:
            raise (spec.node.get("entry") or spec.node).error(
                f"context {first.name!r} of core {first.core!r} already starts at "
                f"{spec.entry}() in the image core {spec.core!r} runs too; give this context an "
                f"entry of its own (entry: NAME)"
            )


# What the project memplace generates for a board can do with it: rules checked when a
# project is generated (the board may serve other ends, such as `memplace stacks` on firmware
# memplace did not write), at the place in the board file the board was read from.

# Core exceptions the exerciser can raise by itself (ICSR bit that pends each one), and
# where its priority field lies: the System Handler Priority Register word and the field's
# first bit. Armv6-M allows only word accesses to these registers.
PENDABLE = {
    "SysTick_Handler": {"icsr_bit": 26, "shpr": 0xE000ED20, "shift": 24},
    "PendSV_Handler": {"icsr_bit": 28, "shpr": 0xE000ED20, "shift": 16},
}
# Priority bits every core of an architecture implements (the top bits of each 8-bit
# field): exactly 2 on Armv6-M and Armv8-M Baseline, at least 3 elsewhere. Priorities are
# written into those bits only, so they mean the same on every implementation.
PRIORITY_BITS = {"armv6-m": 2, "armv8-m.base": 2}
DEFAULT_PRIORITY_BITS = 3
# The cores one core's startup code releases: the mailbox they report to has a slot for
# each and one for the releaser, 16 bytes each, in 128 bytes.
MAX_RELEASED = 7


def priority_bits(core: Core) -> int:
    return PRIORITY_BITS.get(CPUS[core.cpu], DEFAULT_PRIORITY_BITS)


def main_context(board: Board, core: str) -> Context:
    """The thread a core starts on: its first thread context with a stack."""
    for context in board.contexts.values():
        if context.core == core and context.kind == "thread" and context.stack:
            return context
    raise board.error("contexts", f"core {core!r} has no thread context with a stack to start on")


def check_generated_startup(board: Board) -> None:
    """The startup code memplace generates starts every core on a thread context's stack,
    and releases every released core, all from one core, by the board's steps or handshake."""
    released = [core for core in board.cores.values() if core.release is not None]
    for core in released:
        if core.release is None or core.release.steps or core.release.handshake:
            continue
        raise board.error(
            f"cores.{core.name}.release",
            f"core {core.name} is released by {core.release.by}, but the board lists no "
            f"release steps or handshake, so the generated startup code cannot start it; add "
            f"the register `steps` that release it, or `handshake: {RELEASE_HANDSHAKES[0]}`",
        )
    if len(released) > MAX_RELEASED:
        raise board.error("cores", f"memplace releases at most {MAX_RELEASED} cores")
    releasers = {core.release.by for core in released if core.release is not None}
    if len(releasers) > 1:
        raise board.error(
            "cores",
            f"cores are released by {', '.join(sorted(releasers))}; memplace's "
            "startup code releases them all from one core",
        )
    for name in board.cores:
        main_context(board, name)


def check_generated_isrs(board: Board, exerciser: bool) -> None:
    """The startup code programs each device isr's priority, and the exerciser raises every
    isr context itself, at the priority the board gives it: on a core exception it can pend,
    or on a device line, and at a level in the priority bits every core of the architecture
    implements."""
    for isr in board.contexts.values():
        if isr.kind != "isr":
            continue
        core = board.cores[isr.core]
        if exerciser and isr.entry not in PENDABLE and isr.irq is None:
            raise board.error(
                f"contexts.{isr.name}.entry",
                f"the exerciser can raise ISR contexts on {' or '.join(PENDABLE)}, or on a "
                f"device interrupt line (give the context `irq: LINE`), not {isr.entry!r}",
            )
        if exerciser:
            _check_level(board, isr, core, "the exerciser sets ISR priorities")
        elif isr.irq is not None:
            who = "the startup code programs device interrupt priorities"
            _check_level(board, isr, core, who)


def _check_level(board: Board, isr: Context, core: Core, who: str) -> None:
    bits = priority_bits(core)
    if isr.priority >= 1 << bits:
        raise board.error(
            f"contexts.{isr.name}.priority",
            f"{who} in the {bits} priority bits that every {CPUS[core.cpu]} core implements, "
            f"0..{(1 << bits) - 1}; got {isr.priority} on {core.cpu}",
        )
