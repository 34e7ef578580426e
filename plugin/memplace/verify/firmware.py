"""Stack budgets of firmware memplace did not generate: `memplace stacks`.

The firmware is the user's own: its startup code, linker script, RTOS and build. The board
file describes its contexts (the main stack, RTOS tasks with their entry functions and
stack sizes, interrupt handlers with their priorities); the ELF and GCC's
`-fstack-usage -fcallgraph-info=su,da` files are the evidence. Only stacks are checked:
memplace placed none of the firmware's sections.

On a core without an RTOS, every handler runs on the main stack over whatever `main` has
there: the main stack's bound is main's (from the reset handler, when the image's entry
reaches it) plus the nesting of the handlers. Handlers nest by priority: a more urgent one
(lower number) can preempt a less urgent one, so at most one per priority level is active
at once, and the worst case takes the costliest of each level, each with its exception
frame. An isr wired to a device interrupt line (`irq`) is bounded from the handler the
vector table holds for that line, and a table that holds another function there (or none)
is a finding.

With an RTOS (`rtos: <name>` on the core; `memplace.rtos` holds one record per RTOS, its
ports and its kernel's tasks), see `rtos`: each task's bound is its entry's plus what a
context switch leaves on its stack, and the main stack's is the larger of main's path up
to the scheduler start and the handlers' nesting after it, since the port resets the main
stack pointer when the first task starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memplace import contract
from memplace.board import FIRST_IRQ_EXCEPTION, Board, Context, Core
from memplace.errors import InputError
from memplace.hints import StackHints
from memplace.rtos import KernelStack
from memplace.verify.callgraph import CallGraph
from memplace.verify.image import Image
from memplace.verify.report import Finding, Report, StackReport
from memplace.verify.rtos import port_of, rtos_of, switch_label, task_switch_cost
from memplace.verify.stack import (
    Analysis,
    Bound,
    ContextBound,
    exception_frame,
    hint_warnings,
    image_graph,
    stack_findings,
)
from memplace.verify.target_memory import Paint, RunMemory, run_and_read, semihosting_calls
from memplace.verify.tasks import CreatedTask

PAINT = 0xA5
"""What the main stack is painted with before a run."""


def check_stacks(
    elf: Path,
    board: Board,
    core: str | None = None,
    objects: Sequence[Path] = (),
    hints: StackHints | None = None,
    run: RunMemory | None = None,
) -> Report:
    """Every stack of the board's contexts on `core` (the board's only core by default),
    bounded from `elf` and the .su and .ci files under `objects` (default: the ELF's
    folder), checked against its budget, and against its mark in `run` when given
    (`run_firmware`)."""
    chosen = _core(board, core)
    image = Image.from_file(elf, key="FIRMWARE.elf")
    su_files, ci_files = _gcc_files(elf, objects)
    graph = image_graph(image, su_files, ci_files)
    for hint_set in board.stack_hints:
        hints = hint_set if hints is None else hints.merged(hint_set)
    hints = hints or StackHints()
    warnings = hint_warnings(hints, [graph])
    analysis = Analysis(graph, hints)
    contexts = [c for c in board.contexts.values() if c.core == chosen.name]
    nesting = _nesting(contexts, chosen, analysis, exception_frame(chosen), image)
    findings: list[Finding] = []
    tasks: list[TaskStack] = []
    running: dict[str, tuple[int, ...]] | None = None
    switcher = rtos_of(chosen)
    kernel = switcher.kernel(image) if switcher is not None else None
    if kernel is not None:
        port = port_of(chosen, graph.symbols)
        if run is not None:
            kernel.check_run(port)
        found = kernel.created_tasks(graph)
        if run is not None:
            found = (*found, *_created_at_run(run, graph))
            running = kernel.running_tasks(run)
        tasks, findings = _task_stacks(contexts, found, graph, running)
    stacks = []
    main = _main_context(board, chosen)
    for context in contexts:
        budget = context.stack_budget()
        if context.kind != "thread" or budget is None:
            continue
        bound = _main_bound(context, chosen, analysis, image, nesting, hints.masked_until_scheduler)
        on_main = context is main and run is not None
        measured = _main_mark(image, chosen, budget, run) if on_main and run else None
        findings += stack_findings(context.name, budget, bound, measured)
        stacks.append(_stack_report(context.name, budget, bound, measured))
    owned = _stacks_created(run, graph) if run is not None else {}
    for task in tasks:
        bound = _task_bound(task, chosen, analysis, image)
        measured = None
        if running is not None and run is not None and switcher is not None:
            measured, unread = _task_mark(task, running, run, owned, switcher.fill)
            findings += unread
        findings += stack_findings(task.context, task.budget, bound, measured)
        stacks.append(_stack_report(task.context, task.budget, bound, measured))
    for kept in kernel.kernel_stacks(graph) if kernel is not None else ():
        bound = _kernel_stack_bound(kept, chosen, analysis)
        findings += stack_findings(kept.name, kept.size, bound, None)
        stacks.append(_stack_report(kept.name, kept.size, bound, None))
    if run is not None and run.exit_code not in (None, 0):
        findings.append(Finding("run", "exit", f"the firmware exited with code {run.exit_code}"))
    checks = STACK_CHECKS + (RUN_CHECKS if run is not None else ())
    return Report(
        tuple(dict.fromkeys(findings)),
        tuple(stacks),
        warnings,
        hints.assumptions() + graph.assumptions,
        checks,
    )


STACK_CHECKS = ("stack-unbounded", "stack-bound", "vector", "task")
"""The checks `memplace stacks` runs from the image alone; a run adds RUN_CHECKS."""
RUN_CHECKS = ("stack-analysis", "stack-budget", "stack-mark", "run")


def _created_at_run(run: RunMemory, graph: CallGraph) -> tuple[CreatedTask, ...]:
    """The task creations the run made, as the calls were given them (the image's
    constants may not say: a depth computed, a name built)."""
    return tuple(
        CreatedTask("the run", 0, "a creation call", task.entry, task.name, task.words)
        for task in run.created
        if task.entry in graph.nodes and task.words
    )


def _stacks_created(
    run: RunMemory, graph: CallGraph
) -> dict[tuple[str, str, int], set[int | None]]:
    """The low ends of the stacks the run's creation calls gave (None: one the run did not
    see), by the task's name, entry function and stack size (bytes): which stacks are
    whose when tasks share a name."""
    owned: dict[tuple[str, str, int], set[int | None]] = {}
    for task in run.created:
        node = graph.nodes.get(task.entry)
        if node is not None:
            owned.setdefault((task.name, node.name, 4 * task.words), set()).add(task.stack)
    return owned


def _kernel_stack_bound(kept: KernelStack, core: Core, analysis: Analysis) -> ContextBound:
    """A stack the kernel keeps beside the tasks': the deepest of the functions that run on
    it, plus the exception frame copied there."""
    findings: list[Finding] = []
    worst: Bound = Bound(0)
    for address in kept.roots:
        bound = analysis.bound(address)
        findings += _problems(kept.name, analysis, address, bound)
        if bound.bytes is not None and (worst.bytes is None or bound.bytes > worst.bytes):
            worst = bound
    frame = exception_frame(core)
    total = None if findings or worst.bytes is None else worst.bytes + frame
    copied = ((kept.frame_label, frame),)
    return ContextBound(kept.name, total, worst.path, copied, tuple(findings))


def _stack_report(name: str, budget: int, bound: ContextBound, measured: int | None) -> StackReport:
    return StackReport(
        context=name,
        budget=budget,
        planned=0,
        static_bound=bound.bytes,
        measured=measured,
        path=bound.path,
        interrupts=bound.interrupts,
    )


@dataclass(frozen=True)
class TaskStack:
    """One task's stack to check: a task the firmware creates (found in its code), one the
    board lists, or both (the board's entry matched by the task's name)."""

    context: str  # the board's context, else the task's name
    task: str  # the name the RTOS knows it by
    entry: str  # its task function
    budget: int  # the board's size, else the size the firmware creates it with
    size: int | None  # the size the firmware creates it with, where a constant says
    shared: bool = False  # tasks of other code or sizes have its name: no mark tells


def _task_stacks(
    contexts: Sequence[Context],
    found: Sequence[CreatedTask],
    graph: CallGraph,
    running: Mapping[str, Sequence[int]] | None,
) -> tuple[list[TaskStack], list[Finding]]:
    """Every task to check, and what does not add up between the board's tasks, the ones
    the firmware's code creates and (after a run) the ones its kernel's lists hold."""
    variants: dict[str, list[tuple[int, int]]] = {}
    for task in found:
        if task.complete and task.name is not None and task.entry is not None and task.size:
            variants.setdefault(task.name, []).append((task.entry, task.size))
    # One stack per distinct task of a name (entry and size): several tasks may share a
    # name, as FreeRTOS allows; each is told apart by its code and size.
    created = {name: sorted(set(found_)) for name, found_ in variants.items()}
    first = {t.name: t for t in reversed(found) if t.complete and t.name is not None}
    listed = [c for c in contexts if c.kind == "task"]
    stacks: list[TaskStack] = []
    findings: list[Finding] = []
    for context in listed:
        name = context.task or context.name
        if name not in created:
            stacks += _listed_only(context, name, found, graph, running, findings)
            continue
        match, kinds = first[name], created[name]
        entries = [graph.nodes[entry].name for entry, _ in kinds]
        if context.entry not in entries and graph.by_name.get(context.entry) not in {
            entry for entry, _ in kinds
        }:
            where = f"it at {entries[0]}() ({match.via} in {match.creator})"
            if len(entries) > 1:
                where = "the tasks of that name at " + ", ".join(f"{e}()" for e in entries)
            message = (
                f"the board starts task {name!r} at {context.entry}(), but the firmware "
                f"creates {where}"
            )
            findings.append(Finding("task", context.name, message))
        for (_, size), entry in zip(kinds, entries, strict=True):
            label = context.name if len(kinds) == 1 else f"{context.name} ({entry}, {size} bytes)"
            budget = context.stack_budget()
            if budget is not None and budget > size:
                message = (
                    f"the board gives it {budget} bytes, more than the {size} bytes of stack "
                    f"the firmware creates task {name!r} with ({match.via} in "
                    f"{match.creator}); its budget is the real stack's"
                )
                findings.append(Finding("task", label, message))
                budget = size
            stacks.append(TaskStack(label, name, entry, budget or size, size, len(kinds) > 1))
    taken = {stack.task for stack in stacks}
    for name in sorted(set(created) - taken):
        kinds = created[name]
        for entry_address, bytes_ in kinds:
            entry = graph.nodes[entry_address].name
            label = name if len(kinds) == 1 else f"{name} ({entry}, {bytes_} bytes)"
            stacks.append(TaskStack(label, name, entry, bytes_, bytes_, len(kinds) > 1))
    taken |= set(created)
    covered = {graph.by_name.get(c.entry) for c in listed}
    for task in found if running is None else ():  # (a run shows what was created)
        if not task.complete and task.entry not in covered and task.entry is not None and task.size:
            # Its name alone is made at run time (FreeRTOS 11's idle task, "IDLE" and the
            # core's number copied into a buffer): its stack is known all the same.
            label = graph.nodes[task.entry].name + "()"
            if label not in {stack.context for stack in stacks}:
                stacks.append(TaskStack(label, label, label[:-2], task.size, task.size))
            continue
        if not task.complete and task.entry not in covered:
            what = graph.nodes[task.entry].name + "()" if task.entry is not None else "a task"
            message = (
                f"{task.creator} creates {what} through {task.via} at 0x{task.call:x} with "
                "a name or stack depth that is no constant in the image: list the task in the "
                "board (kind: task, entry, task: its name, stack: {size: BYTES})"
            )
            findings.append(Finding("task", f"created at 0x{task.call:x}", message))
    for name in sorted(set(running or {}) - taken):
        message = (
            f"the kernel runs task {name!r}, which no task creation memplace follows and no board "
            "task names: list it in the board (kind: task, entry, task, stack: {size: BYTES})"
        )
        findings.append(Finding("task", name, message))
    return stacks, findings


def _listed_only(
    context: Context,
    name: str,
    found: Sequence[CreatedTask],
    graph: CallGraph,
    running: Mapping[str, Sequence[int]] | None,
    findings: list[Finding],
) -> list[TaskStack]:
    """A board task no constant creation names: bounded from the board's entry and size,
    and a finding when the firmware creates its entry under other names, or a run shows
    no task of its name."""
    entry = graph.by_name.get(context.entry)
    others = sorted({t.name for t in found if t.entry == entry and t.name and entry is not None})
    never = running is not None and name not in running
    if others or never:
        names = ", ".join(repr(other) for other in others)
        created = f"; it creates {context.entry}() as {names}" if others else ""
        seen = f"; the run's tasks: {', '.join(sorted(running or {})) or 'none'}" if never else ""
        message = f"the firmware creates no task named {name!r}{created}{seen}"
        findings.append(Finding("task", context.name, message))
    budget = context.stack_budget()
    if budget is None:
        message = (
            f"task {name!r} has no stack size: no constant creation gives it; give it in the "
            "board (stack: {size: BYTES})"
        )
        findings.append(Finding("task", context.name, message))
        return []
    return [TaskStack(context.name, name, context.entry, budget, None)]


def run_firmware(
    elf: Path, board: Board, core: str | None = None, timeout: float = 10.0
) -> RunMemory:
    """Run `elf` unchanged under the board's QEMU machine until it exits or `timeout`
    seconds pass, with the main stack painted first, and read the core's writable memories
    at the end (`target_memory`)."""
    if board.run.qemu is None:
        raise InputError(f"board {board.name} does not run under QEMU", key="--run")
    chosen = _core(board, core)
    main = _main_context(board, chosen)
    paints = []
    image = Image.from_file(elf, key="FIRMWARE.elf")
    top = _initial_stack_pointer(image, chosen)
    budget = main.stack_budget() if main is not None else None
    # QEMU loads the image's sections, zero-filled ones too, and refuses a second write to
    # the same bytes: a stack inside a section is left to the firmware's own startup code.
    if top is not None and budget is not None and not _in_sections(image, top - budget, top):
        paints.append(Paint(top - budget, budget, PAINT))
    areas = [
        (memory.address_for(chosen.name), memory.size)
        for memory in board.memories.values()
        if memory.writable() and chosen.name in memory.access
    ]
    if top is not None and budget is not None and not _inside(areas, top - budget, top):
        raise InputError(
            f"the main stack, [0x{top - budget:08x}, 0x{top:08x}) below the initial stack "
            f"pointer of {elf.name}'s vector table, is in none of board {board.name}'s "
            "writable memories: add the memory it is in to the board (or correct the "
            "main stack's size)",
            key="--run",
        )
    calls = semihosting_calls(image)
    switcher = rtos_of(chosen)
    late = switcher.kernel(image).paints() if switcher is not None else None
    return run_and_read(board.run.qemu.machine, elf, paints, areas, timeout, calls, late)


def _inside(areas: Sequence[tuple[int, int]], low: int, high: int) -> bool:
    return any(start <= low and high <= start + size for start, size in areas)


def _in_sections(image: Image, low: int, high: int) -> bool:
    return any(s.address < high and low < s.end for s in image.sections if s.size)


def _main_context(board: Board, core: Core) -> Context | None:
    for context in board.contexts.values():
        if context.core == core.name and context.kind == "thread":
            return context
    return None


def _initial_stack_pointer(image: Image, core: Core) -> int | None:
    """The main stack's top: the first word of the vector table the core boots from."""
    data = image.read(core.boot, 4)
    return None if data is None else int.from_bytes(data, "little")


def _main_mark(image: Image, core: Core, budget: int, run: RunMemory) -> int | None:
    """The main stack's high-water mark in the run, from the paint below its top."""
    top = _initial_stack_pointer(image, core)
    if top is None:
        return None
    left = unused_words(run, top - budget, budget)
    return None if left is None else budget - left


def _task_mark(
    task: TaskStack,
    running: Mapping[str, Sequence[int]],
    run: RunMemory,
    owned: Mapping[tuple[str, str, int], set[int | None]],
    fill: int,
) -> tuple[int | None, list[Finding]]:
    """A task's high-water mark: its stack's size less the bytes at its low end that still
    hold the fill (the largest of the tasks of its name, entry and size). Where tasks of
    other code or sizes share its name, only the stacks the run's creations of this one
    got (`owned`) count (a creation whose stack the run did not see matters only where a
    running task of the name has a stack no creation got). None when no such task was
    running at the end, or when its stack's low end holds no fill at all (nothing filled
    it: no mark, rather than a false overflow)."""
    lows = running.get(task.task, ())
    if task.shared and lows:
        mine = owned.get((task.task, task.entry, task.size or task.budget), set())
        seen = {low for key, stacks in owned.items() if key[0] == task.task for low in stacks}
        if None in mine and any(low not in seen for low in lows):
            message = (
                f"no mark: tasks of other code or stack sizes are named {task.task!r} too, "
                "and the run did not see which stack each was given"
            )
            return None, [Finding("stack-mark", task.context, message)]
        lows = tuple(low for low in lows if low in mine)  # none: not created in the run
    size = task.size or task.budget
    marks = []
    for low in lows:
        left = untouched(run, low, size, fill)
        if left is None:
            message = (
                f"no mark: task {task.task!r}'s stack, [0x{low:08x}, 0x{low + size:08x}), "
                "is in none of the board's memories the run read: add the memory it is in"
            )
            return None, [Finding("stack-mark", task.context, message)]
        if left == 0 and not run.was_painted(low):
            message = (
                f"no mark: the lowest bytes of task {task.task!r}'s stack at 0x{low:08x} hold "
                f"no fill (0x{fill:02X}), so the run cannot tell how deep it went"
            )
            return None, [Finding("stack-mark", task.context, message)]
        marks.append(size - left)
    return (max(marks) if marks else None), []


def _core(board: Board, name: str | None) -> Core:
    if name is None:
        if len(board.cores) > 1:
            raise InputError(
                f"board {board.name} has several cores; name the firmware's with --core "
                f"({', '.join(board.cores)})",
                key="--core",
            )
        return next(iter(board.cores.values()))
    if name not in board.cores:
        raise InputError(f"no core {name!r}; the board has {', '.join(board.cores)}", key="--core")
    return board.cores[name]


def _gcc_files(elf: Path, objects: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """GCC's reports of the firmware's objects: under each folder named, else beside the
    ELF. Without them the bound would rest on the disassembly alone: refused."""
    folders = list(objects) or [elf.parent]
    for folder in folders:
        if not folder.is_dir():
            raise InputError(f"no folder of objects at {folder}", key="--objects")
    su_files = sorted({p for folder in folders for p in folder.rglob("*.su")})
    if not su_files:
        where = ", ".join(str(f) for f in folders)
        raise InputError(
            f"no .su files under {where}: compile the firmware with -fstack-usage "
            "-fcallgraph-info=su,da and name the folder of its objects with --objects",
            key="--objects",
        )
    return su_files, sorted({p for folder in folders for p in folder.rglob("*.ci")})


def _entry_bound(
    context: Context, analysis: Analysis, image: Image, findings: list[Finding]
) -> Bound:
    root = analysis.graph.by_name.get(context.entry)
    if root is None:
        findings.append(
            Finding(
                "stack-unbounded",
                context.name,
                f"its entry function {context.entry}() is not in {image.path.name}",
            )
        )
        return Bound(None)
    bound = analysis.bound(root)
    findings += _problems(context.name, analysis, root, bound)
    return bound


def _handler_bound(
    context: Context, core: Core, analysis: Analysis, image: Image, findings: list[Finding]
) -> Bound:
    """An isr's bound: from its entry, or for one wired to a device interrupt line, from
    the handler the vector table holds for that line (what runs when it fires)."""
    if context.irq is None:
        return _entry_bound(context, analysis, image, findings)
    root = _vector_handler(context, context.irq, core, analysis, image, findings)
    if root is None:
        return Bound(None)
    bound = analysis.bound(root)
    findings += _problems(context.name, analysis, root, bound)
    return bound


def _vector_handler(
    context: Context,
    irq: int,
    core: Core,
    analysis: Analysis,
    image: Image,
    findings: list[Finding],
) -> int | None:
    """The function entry 16 + irq of the vector table the core boots from points at; a
    finding when it is not the context's entry, or no function at all."""
    exception = FIRST_IRQ_EXCEPTION + irq
    table = _vector_table(image, core)
    where = f"entry {exception} (irq {irq}) of the vector table at 0x{table:08x}"
    entries = _vector_entries(image, table)
    data = image.read(table + 4 * exception, 4)
    if data is None or (entries is not None and exception >= entries):
        size = f" (it has {entries} entries)" if entries is not None else ""
        message = f"isr {context.name}: {image.path.name} has no {where}{size}"
        findings.append(Finding("vector", context.name, message))
        return None
    handler = int.from_bytes(data, "little") & ~1
    node = analysis.graph.nodes.get(handler)
    held = node.name if node is not None else f"0x{handler:08x}"
    if not handler:
        held = "no handler (0)"
    if analysis.graph.by_name.get(context.entry) != handler:
        message = f"isr {context.name}: {where} holds {held}, not {context.entry}()"
        findings.append(Finding("vector", context.name, message))
    if node is None and handler:
        message = f"isr {context.name}: {where} holds 0x{handler:08x}, no function of the image"
        findings.append(Finding("stack-unbounded", context.name, message))
    return handler if node is not None else None


def _vector_table(image: Image, core: Core) -> int:
    """Where the vector table that interrupts go through is: at the core's `boot`, or,
    when its reset code copies the table out of its load memory (`copy: reset`), the copy
    VTOR is pointed at (memplace's startup names it `memplace_vectors`; else `.vectors`)."""
    if not core.layout.moves_vectors:
        return core.boot
    symbol = image.get_symbol(contract.vectors_symbol())
    # Else the section most startup code (CMSIS's, memplace's own) keeps its table in.
    section = image.get_section(".vectors")
    if symbol is not None:
        return symbol.address
    return section.address if section is not None else core.boot


def _vector_entries(image: Image, boot: int) -> int | None:
    """How many entries the vector table at `boot` has, when a data symbol of a size
    starts there (the startup code's table); None when nothing says."""
    for symbol in image.symbols:
        if symbol.address == boot and symbol.kind == "object" and symbol.size:
            return symbol.size // 4
    return None


def _problems(name: str, analysis: Analysis, root: int, bound: Bound) -> list[Finding]:
    found = []
    for problem in bound.problems:
        path = " > ".join(analysis.path_to(root, problem.function))
        found.append(Finding("stack-unbounded", name, f"{problem.message} (call path: {path})"))
    return found


def _nesting(
    contexts: Sequence[Context], core: Core, analysis: Analysis, frame: int, image: Image
) -> tuple[int | None, tuple[tuple[str, int | None], ...], list[Finding]]:
    """The handlers' worst nesting on the main stack, each handler's cost, and what kept a
    handler unbounded."""
    findings: list[Finding] = []
    levels: dict[int, list[int | None]] = {}
    costs = []
    for context in contexts:
        if context.kind != "isr":
            continue
        bound = _handler_bound(context, core, analysis, image, findings)
        cost = None if bound.bytes is None else frame + bound.bytes
        costs.append((context.name, cost))
        levels.setdefault(context.priority, []).append(cost)
    total: int | None = 0
    for level in levels.values():
        worst = None if None in level else max(c for c in level if c is not None)
        total = None if total is None or worst is None else total + worst
    return total, tuple(costs), findings


def _main_bound(
    context: Context,
    core: Core,
    analysis: Analysis,
    image: Image,
    nesting: tuple[int | None, tuple[tuple[str, int | None], ...], list[Finding]],
    masked: bool = False,
) -> ContextBound:
    findings: list[Finding] = []
    own = _entry_bound(context, analysis, image, findings)
    root = analysis.graph.by_name.get(context.entry)
    below = _frames_below(analysis, image.entry, root) if root is not None else None
    if own.bytes is not None and below is not None:
        # The frames from the reset handler down to main are under main's. (Not their other
        # calls: the C library's start-up runs and returns before main, its indirect calls
        # bounded by nothing.)
        path, extra = below
        own = Bound(own.bytes + extra, (*path, *own.path))
    handlers, costs, handler_findings = nesting
    findings += [
        Finding(f.check, context.name, f.message, f.file, f.line) for f in handler_findings
    ]
    if own.bytes is None or handlers is None:
        total = None
    elif rtos_of(core) is not None and _starts_scheduler(analysis, core):
        # The port resets the main stack pointer when the first task starts: after that
        # only the handlers nest there. Before, an interrupt lands on main's frames, unless
        # the firmware keeps interrupts masked until then (a hint says so).
        total = max(own.bytes if masked else own.bytes + handlers, handlers)
    else:
        total = own.bytes + handlers
    return ContextBound(context.name, total, own.path, costs, tuple(findings))


def _frames_below(analysis: Analysis, entry: int, root: int) -> tuple[tuple[str, ...], int] | None:
    """The functions on the shortest call path from the image's entry to `root`, and their
    frames; None when the entry does not reach `root` (or is `root`)."""
    if entry not in analysis.graph.nodes or entry == root:
        return None
    path = analysis.path_to(entry, root)
    if len(path) < 2:
        return None
    names = path[:-1]
    by_name = analysis.graph.by_name
    return names, sum(analysis.frames[by_name[name]] for name in names if name in by_name)


def _starts_scheduler(analysis: Analysis, core: Core) -> bool:
    """Whether the image holds the port's start of the first task, which resets the main
    stack pointer; without it, main's frames and the handlers add up."""
    port = port_of(core, analysis.graph.symbols)
    return any(name in analysis.graph.by_name for name in port.start_symbols)


def _task_bound(task: TaskStack, core: Core, analysis: Analysis, image: Image) -> ContextBound:
    findings: list[Finding] = []
    root = analysis.graph.by_name.get(task.entry)
    if root is None:
        message = f"its entry function {task.entry}() is not in {image.path.name}"
        findings.append(Finding("stack-unbounded", task.context, message))
        own = Bound(None)
    else:
        own = analysis.bound(root)
        findings += _problems(task.context, analysis, root, own)
    port = port_of(core, analysis.graph.symbols)
    uses_fpu = root is None or analysis.graph.reaches_floating(root, analysis.edges)
    switch = task_switch_cost(port, core.cpu, core.float_abi, uses_fpu)
    total = None if own.bytes is None else own.bytes + switch
    switched = ((switch_label(port), switch),)
    return ContextBound(task.context, total, own.path, switched, tuple(findings))


def untouched(memory: RunMemory, low: int, size: int, fill: int) -> int | None:
    """Bytes at the low end of a stack of `size` bytes from `low` that still hold `fill`;
    None when the run did not read them."""
    data = memory.read(low, size)
    if data is None:
        return None
    count = 0
    while count < len(data) and data[count] == fill:
        count += 1
    return count


def unused_words(memory: RunMemory, low: int, size: int, fill: int = PAINT) -> int | None:
    """Bytes at the low end of a painted stack that still hold a fill, word by word: the
    one painted before the run, or the firmware's own (startup code that paints its stack
    itself, such as memplace's 0x5A5AA5A5, paints over the first; the lowest word then holds
    its pattern, as long as the stack never reached it). None when the run did not read
    them."""
    data = memory.read(low, size)
    if data is None or len(data) < 4:
        return None
    ours = bytes([fill]) * 4
    theirs = data[:4] if data[:4] != bytes(4) else ours
    count = 0
    while count + 4 <= len(data) and data[count : count + 4] in (ours, theirs):
        count += 4
    return count
