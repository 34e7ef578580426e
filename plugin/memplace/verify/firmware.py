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

With an RTOS (`rtos: freertos` on the core), see `rtos`: each task's bound is its entry's
plus what a context switch leaves on its stack, and the main stack's is the larger of
main's path up to the scheduler start and the handlers' nesting after it, since the port
resets the main stack pointer when the first task starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memplace.board import FIRST_IRQ_EXCEPTION, Board, Context, Core
from memplace.errors import InputError
from memplace.hints import StackHints
from memplace.verify.freertos import FILL, layout_of, task_stacks, untouched, unused_words
from memplace.verify.image import Image
from memplace.verify.report import SWITCH, Finding, Report, StackReport
from memplace.verify.rtos import port_for, task_switch_cost
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
    image = Image.from_file(elf)
    su_files, ci_files = _gcc_files(elf, objects)
    graph = image_graph(image, su_files, ci_files)
    for hint_set in board.stack_hints:
        hints = hint_set if hints is None else hints.merged(hint_set)
    hints = hints or StackHints()
    warnings = hint_warnings(hints, [graph])
    analysis = Analysis(graph, hints)
    contexts = [c for c in board.contexts.values() if c.core == chosen.name]
    nesting = _nesting(contexts, chosen, analysis, exception_frame(chosen), image)
    marks = _marks(image, board, chosen, contexts, run) if run is not None else {}
    findings: list[Finding] = []
    stacks = []
    for context in contexts:
        budget = context.stack_budget()
        if context.kind == "isr" or budget is None:
            continue  # a handler runs on the main stack (or the stacks it preempts)
        if context.kind == "task":
            bound = _task_bound(context, chosen, analysis, image)
        else:
            bound = _main_bound(context, chosen, analysis, image, nesting)
        measured = marks.get(context.name)
        findings += stack_findings(context.name, budget, bound, measured)
        stacks.append(
            StackReport(
                context=context.name,
                budget=budget,
                planned=0,
                static_bound=bound.bytes,
                measured=measured,
                path=bound.path,
                interrupts=bound.interrupts,
            )
        )
    if run is not None and run.exit_code not in (None, 0):
        findings.append(Finding("run", "exit", f"the firmware exited with code {run.exit_code}"))
    return Report(tuple(dict.fromkeys(findings)), tuple(stacks), warnings)


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
    image = Image.from_file(elf)
    top = _initial_stack_pointer(image, chosen)
    budget = main.stack_budget() if main is not None else None
    # QEMU loads the image's sections, zero-filled ones too, and refuses a second write to
    # the same bytes: a stack inside a section is left to the firmware's own startup code.
    if top is not None and budget is not None and not _in_sections(image, top - budget, top):
        paints.append(Paint(top - budget, budget, FILL))
    areas = [
        (memory.address_for(chosen.name), memory.size)
        for memory in board.memories.values()
        if memory.writable() and chosen.name in memory.access
    ]
    calls = semihosting_calls(image)
    return run_and_read(board.run.qemu.machine, elf, paints, areas, timeout, calls)


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


def _marks(
    image: Image, board: Board, core: Core, contexts: Sequence[Context], run: RunMemory
) -> dict[str, int]:
    """Each stack's high-water mark in the run: the main stack's from the paint, each
    task's from its RTOS's fill, found through the RTOS's task lists."""
    marks: dict[str, int] = {}
    main = _main_context(board, core)
    top = _initial_stack_pointer(image, core)
    budget = main.stack_budget() if main is not None else None
    if main is not None and top is not None and budget is not None:
        left = unused_words(run, top - budget, budget)
        if left is not None:
            marks[main.name] = budget - left
    if core.rtos == "freertos":
        stacks = task_stacks(image, run, layout_of(image.path))
        for context in contexts:
            budget = context.stack_budget()
            low = stacks.get(context.task or "") if context.kind == "task" else None
            left = untouched(run, low, budget) if low is not None and budget else None
            if left is not None and budget is not None:
                marks[context.name] = budget - left
    return marks


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
    symbol = image.get_symbol("memplace_vectors")
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
    elif core.rtos != "none" and _starts_scheduler(analysis, core):
        total = max(own.bytes, handlers)
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
    port = port_for(core.rtos, core.cpu, core.float_abi)
    return any(name in analysis.graph.by_name for name in port.start_symbols)


def _task_bound(context: Context, core: Core, analysis: Analysis, image: Image) -> ContextBound:
    findings: list[Finding] = []
    own = _entry_bound(context, analysis, image, findings)
    port = port_for(core.rtos, core.cpu, core.float_abi)
    root = analysis.graph.by_name.get(context.entry)
    uses_fpu = root is None or analysis.graph.reaches_floating(root, analysis.edges)
    switch = task_switch_cost(port, core.cpu, core.float_abi, uses_fpu)
    total = None if own.bytes is None else own.bytes + switch
    switched = ((f"{SWITCH} ({port.rtos} {port.name})", switch),)
    return ContextBound(context.name, total, own.path, switched, tuple(findings))
