"""Static worst-case stack bounds: per function from the call graph, per context with the
exception frames and the nesting of the ISRs that land on its stack.

For a function, the bound is the deepest its own frame goes, or the depth at one of its
calls plus the callee's bound, whichever is more. A cycle of calls (recursion) with a
hinted depth N costs N times the frames of every function on it, plus the costliest way
out of it. An indirect call costs its costliest hinted target. What no hint bounds (an
indirect call, recursion, a dynamic frame, a stack pointer the disassembly cannot
follow) makes every bound that reaches it unbounded, and is reported with the call path.

A context's bound adds, on the stack it owns: its root's bound (the reset handler for the
context a core starts on), at least the bytes planned on that stack, and for every ISR
that can land there an exception frame plus the ISR's own bound. ISRs nest by priority:
a more urgent one (lower number) can preempt a less urgent one, so at most one ISR per
priority level is active at once, and the worst case takes the costliest of each level.

A worker thread's stack (`main.thread0`) is bounded from the function the thread starts
in (`memplace_thread_main_thread0`, which the generated header declares and the exerciser
defines), at least the bytes planned on it, plus one exception frame when an ISR preempts
the thread's context (its `preempts`): a thread runs on the process stack, where an
exception stacks its frame, while the handler, and any ISR nested in it, run on the main
stack.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memplace import contract, process
from memplace.board import Context, Core
from memplace.errors import InputError, ToolError
from memplace.files import read_input
from memplace.hints import FunctionHint, StackHints, absent_function
from memplace.project import Project
from memplace.project_files import build_dir
from memplace.verify.callgraph import CallGraph, gcc_files, merge, parse_ci, parse_su
from memplace.verify.cortexm import ENTRY_ALIGNMENT, EXCEPTION_FRAME, EXCEPTION_FRAME_FP, FPU_CPUS
from memplace.verify.cxx import exception_index, resolve
from memplace.verify.frames import Instruction, parse_objdump, read_frames
from memplace.verify.image import Image, LineTable
from memplace.verify.report import Finding
from memplace.verify.rtos import port_of, switch_label, task_switch_cost

OBJDUMP = "arm-none-eabi-objdump"
MAX_PASS_STEPS = 200_000
"""Paths walked at most through one recursion's component for its deepest pass."""
OBJDUMP_TIMEOUT = 120.0


def exception_frame(core: Core) -> int:
    """Bytes one exception entry can take on the stack it interrupts, on `core`."""
    floating = core.float_abi != "soft" and core.cpu in FPU_CPUS
    return (EXCEPTION_FRAME_FP if floating else EXCEPTION_FRAME) + ENTRY_ALIGNMENT


@dataclass(frozen=True)
class Problem:
    """What makes a bound unbounded, at one function."""

    kind: str  # indirect, recursion, dynamic, unknown, missing
    function: int
    message: str
    location: str | None = None


@dataclass(frozen=True)
class Bound:
    bytes: int | None  # None: unbounded, see `problems`
    path: tuple[str, ...] = ()  # the deepest call path, root first
    problems: tuple[Problem, ...] = ()


@dataclass
class Analysis:
    """Bounds of the functions of one call graph, under some hints."""

    graph: CallGraph
    hints: StackHints = field(default_factory=StackHints)

    def __post_init__(self) -> None:
        # The runtime's recursion depths hold for its own cycles only: one bounds a cycle
        # when it names every function of it (a cycle the program joins is the program's).
        self.closed: tuple[FunctionHint, ...] = ()
        if self.graph.runtime_hints is not None:
            self.closed = self.graph.runtime_hints.recursion
            self.hints = self.hints.merged(replace(self.graph.runtime_hints, recursion=()))
        self.edges: dict[int, list[tuple[int, int]]] = {}  # caller → (depth, callee)
        self.own: dict[int, list[Problem]] = {}
        self.frames: dict[int, int] = {}
        self.starts = sorted(self.graph.nodes)
        self.copies: dict[int, int] = {}  # a caller's copy (negative) → its address
        for address, node in self.graph.nodes.items():
            self._expand(address, node)
        for cut in self.hints.cut_calls:
            if cut.called_from is not None and cut.caller is not None:
                self._cut_from(cut.caller, cut.callee, cut.called_from)
        self.cost: dict[int, int | None] = {}
        self.problems: dict[int, frozenset[Problem]] = {}
        self.best: dict[int, int | None] = {}
        self.recursion: dict[int, int] = {}  # member of a bounded cycle → depth
        self.cycles: dict[int, tuple[str, ...]] = {}  # member of a cycle → the cycle
        self._solve()

    def _expand(self, address: int, node: Any) -> None:
        names = node.function.names
        problems = []
        frame = node.frame
        extra = 0
        fixed = self.hints.frame_size(names)
        if fixed is not None:
            frame = fixed
        elif node.unknown:
            problems.append(Problem("unknown", address, f"in {node.name}: {node.unknown}"))
        if node.dynamic and fixed is None:
            size = self.hints.alloca_size(names)
            if size is None:
                where = ", ".join(node.dynamic)
                problems.append(
                    Problem(
                        "dynamic",
                        address,
                        f"{node.name} allocates on the stack at run time ({where}); "
                        f"bound it with an alloca hint",
                    )
                )
            else:
                extra = size
        edges = []
        for call in node.calls:
            depth = (min(call.depth, frame) if fixed is not None else call.depth) + extra
            if call.target is not None:
                # A branch into another function's body (a shared error path, as libgcc's
                # division takes) costs at most that whole function.
                target = self._containing(call.target)
                if target is not None and self._cut(names, target):
                    continue  # a hint says this call is never made
                if target is not None:
                    edges.append((depth, target))
                else:
                    problems.append(
                        Problem(
                            "missing",
                            address,
                            f"{node.name} calls 0x{call.target:x} at 0x{call.address:x}, "
                            f"which is no function of the image",
                        )
                    )
                continue
            targets = self.hints.targets(names, call.location)
            where = call.location or f"0x{call.address:x}"
            if targets is None and call.address in self.graph.resolved:
                edges += [
                    (depth, target)
                    for target in self.graph.resolved[call.address]
                    if not self._cut(names, target)
                ]
                continue
            if targets is None:
                problems.append(
                    Problem(
                        "indirect",
                        address,
                        f"indirect call in {node.name} at {where} reaches functions no hint "
                        f"names; list them in the stack hints (indirect_calls)",
                        call.location,
                    )
                )
                continue
            for name in targets:
                target = self.graph.by_name.get(name)
                if target is not None and not self._cut(names, target):
                    edges.append((depth, target))
        self.edges[address] = edges
        self.own[address] = problems
        self.frames[address] = frame + extra

    def _cut_from(self, caller: str, callee: str, source: str) -> None:
        """The call from `caller` to `callee` cut only where `source` calls `caller`: those
        calls go to a copy of `caller` without it."""
        nodes = self.graph.nodes
        for address in sorted(a for a, n in nodes.items() if caller in n.function.names):
            copy = -1 - len(self.copies)
            self.copies[copy] = address
            self.edges[copy] = [
                (depth, target)
                for depth, target in self.edges[address]
                if callee not in self._node(target).function.names
            ]
            self.own[copy] = self.own[address]
            self.frames[copy] = self.frames[address]
            for at in [a for a, n in nodes.items() if source in n.function.names]:
                self.edges[at] = [
                    (depth, copy if target == address else target)
                    for depth, target in self.edges[at]
                ]

    def _node(self, address: int) -> Any:
        """The node of an address, or of the function a copy was made of."""
        return self.graph.nodes[self.copies.get(address, address)]

    def _cut(self, caller: tuple[str, ...], target: int) -> bool:
        return bool(self.hints.cut_calls) and self.hints.is_cut(
            caller, self.graph.nodes[target].function.names
        )

    def _containing(self, address: int) -> int | None:
        if address in self.graph.nodes:
            return address
        index = bisect.bisect_right(self.starts, address) - 1
        if index >= 0 and address < self.graph.nodes[self.starts[index]].function.end:
            return self.starts[index]
        return None

    def _solve(self) -> None:
        for component in _components(self.edges):
            members = set(component)
            cyclic = len(component) > 1 or any(
                target == component[0] for _, target in self.edges[component[0]]
            )
            problems: set[Problem] = set()
            for member in component:
                problems.update(self.own[member])
                for _, target in self.edges[member]:
                    if target not in members:
                        problems.update(self.problems[target])
            if cyclic:
                self._solve_cycle(component, members, problems)
                continue
            address = component[0]
            cost, best = self.frames[address], None
            for depth, target in self.edges[address]:
                callee = self.cost[target]
                if callee is not None and depth + callee > cost:
                    cost, best = depth + callee, target
            self.problems[address] = frozenset(problems)
            self.cost[address] = None if problems else cost
            self.best[address] = best

    def _solve_cycle(self, component: list[int], members: set[int], problems: set[Problem]) -> None:
        names = tuple(n for m in component for n in self._node(m).function.names)
        depth = self.hints.recursion_depth(names)
        if depth is None and self.closed:
            depth = self._closed_depth(component)
        cycle_names = tuple(self._cycle(component))
        for member in component:
            self.cycles[member] = cycle_names
        if depth is None:
            cycle = " > ".join(cycle_names)
            problems.add(
                Problem(
                    "recursion",
                    min(component),
                    f"recursion {cycle} has no depth; bound it with a recursion hint",
                )
            )
        trip = self._deepest_pass(component, members)
        exit_cost, best = 0, None
        for member in component:
            for call_depth, target in self.edges[member]:
                callee = self.cost.get(target) if target not in members else None
                if callee is None:
                    continue
                over = call_depth - self.frames[member] + callee
                if over > exit_cost:
                    exit_cost, best = over, target
        for member in component:
            self.problems[member] = frozenset(problems)
            self.cost[member] = None if problems or depth is None else depth * trip + exit_cost
            self.best[member] = best
            if depth is not None:
                self.recursion[member] = depth

    def _closed_depth(self, component: list[int]) -> int | None:
        """The runtime's depth for a cycle all of whose functions it names; None otherwise."""
        depths = []
        for member in component:
            names = self._node(member).function.names
            found = [h.value for h in self.closed if h.function in names]
            if not found:
                return None
            depths.append(max(found))
        return max(depths)

    def _deepest_pass(self, component: list[int], members: set[int]) -> int:
        """The stack one pass through a recursion takes: the deepest simple call path
        inside its component (the call depths along it, then the last function's frame).
        A component whose paths are too many to walk within MAX_PASS_STEPS is charged all
        its frames, which holds for any path."""
        best, steps = 0, 0
        for start in component:
            stack = [(start, frozenset((start,)), 0)]
            while stack:
                at, seen, depth = stack.pop()
                steps += 1
                if steps > MAX_PASS_STEPS:
                    return sum(self.frames[m] for m in component)
                best = max(best, depth + self.frames[at])
                for call_depth, target in self.edges[at]:
                    if target in members and target not in seen:
                        stack.append((target, seen | {target}, depth + call_depth))
        return best

    def _cycle(self, component: list[int]) -> list[str]:
        """A cycle through the component's first function, by name."""
        members = set(component)
        start = component[0]
        before: dict[int, int | None] = {start: None}
        queue = deque([start])
        while queue:
            at = queue.popleft()
            for _, target in self.edges[at]:
                if target == start:
                    path: list[int] = []
                    step: int | None = at
                    while step is not None:
                        path.append(step)
                        step = before[step]
                    return [self._node(a).name for a in [*reversed(path), start]]
                if target in members and target not in before:
                    before[target] = at
                    queue.append(target)
        return [self._node(start).name] * 2

    def bound(self, root: int) -> Bound:
        problems = tuple(sorted(self.problems[root], key=lambda p: (p.kind, p.message)))
        return Bound(self.cost[root], self._path(root), problems)

    def _path(self, root: int) -> tuple[str, ...]:
        path: list[str] = []
        seen: set[int] = set()
        at: int | None = root
        while at is not None and at not in seen:
            seen.add(at)
            name = self._node(at).name
            if at in self.recursion:
                cycle = " > ".join(self.cycles[at])
                name += f" (recursion x{self.recursion[at]}: {cycle})"
            path.append(name)
            at = self.best.get(at)
        return tuple(path)

    def path_to(self, root: int, goal: int) -> tuple[str, ...]:
        """The shortest call path from `root` to `goal`, by name."""
        before: dict[int, int | None] = {root: None}
        queue = deque([root])
        while queue:
            at = queue.popleft()
            if at == goal:
                break
            for _, target in self.edges[at]:
                if target not in before:
                    before[target] = at
                    queue.append(target)
        if goal not in before:
            return (self._node(goal).name,)
        path = []
        step: int | None = goal
        while step is not None:
            path.append(self._node(step).name)
            step = before[step]
        return tuple(reversed(path))


def _components(edges: Mapping[int, list[tuple[int, int]]]) -> Iterator[list[int]]:
    """Strongly connected components, callees before callers (Tarjan, without recursion)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for _, child in children:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


# --- contexts --------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextBound:
    """The static bound of one stack, and what it is made of."""

    context: str
    bytes: int | None
    path: tuple[str, ...] = ()
    interrupts: tuple[tuple[str, int | None], ...] = ()  # (ISR context, its cost here)
    findings: tuple[Finding, ...] = ()


def stack_findings(
    context: str, budget: int, bound: ContextBound, measured: int | None
) -> list[Finding]:
    """The findings about one stack: its bound's own, a bound over budget, a measured use
    above the bound or filling the whole budget."""
    findings = list(bound.findings)
    if bound.bytes is not None and bound.bytes > budget:
        findings.append(
            Finding(
                "stack-bound",
                context,
                f"can use {bound.bytes} bytes, over its budget of {budget} "
                f"(deepest path: {' > '.join(bound.path)})",
            )
        )
    if measured is not None and bound.bytes is not None and measured > bound.bytes:
        findings.append(
            Finding(
                "stack-analysis",
                context,
                f"the run used {measured} bytes, more than the static bound of {bound.bytes}: "
                f"the analysis missed a frame",
            )
        )
    if measured is not None and measured >= budget:
        # Painting cannot see past the stack's own area: a stack written to its last word
        # has overflowed, or is one push away from it.
        findings.append(
            Finding(
                "stack-budget",
                context,
                f"used all {budget} bytes of its budget: the stack overflowed",
            )
        )
    return findings


def graph_of(project: Project, core: str, image: Image, objects: Path | None = None) -> CallGraph:
    """The merged call graph of one image of a built project, with the .su and .ci files
    GCC wrote beside the image's objects: under `objects` when given (a build of the user's
    own, such as a target the CMake module was given), else in the generated project's
    build."""
    su_files, ci_files = gcc_reports(project, core, objects)
    return image_graph(image, su_files, ci_files)


def image_graph(image: Image, su_files: Iterable[Path], ci_files: Iterable[Path]) -> CallGraph:
    """The call graph of an image: its disassembly, merged with GCC's .su and .ci files."""
    objdump = process.find_tool(OBJDUMP)
    result = process.run([objdump, "-d", "--no-show-raw-insn", str(image.path)], OBJDUMP_TIMEOUT)
    if result.returncode != 0:
        said = result.output.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        raise ToolError(f"{OBJDUMP} could not read {image.path}: {said[0]}")

    def read_word(address: int) -> int | None:
        data = image.read(address, 4)
        return None if data is None else int(struct.unpack("<I", data)[0])

    instructions = parse_objdump(result.output)
    index = exception_index(image)
    frames = read_frames(image.iter_functions(), instructions, read_word, index.handlers)
    units = [parse_ci(_read(p), str(p)) for p in ci_files]
    su = [f for p in su_files for f in parse_su(_read(p), str(p))]
    graph = merge(frames, units, su, LineTable(image.path))
    graph = replace(
        graph,
        floating=_floating(image, instructions),
        code=tuple(instructions),
        symbols=frozenset(symbol.name for symbol in image.symbols),
    )
    resolution = resolve(image, graph, index)
    return replace(
        graph,
        resolved=resolution.sites,
        runtime_hints=resolution.hints,
        assumptions=resolution.assumptions,
    )


def _floating(image: Image, instructions: Sequence[Instruction]) -> frozenset[int]:
    """The functions whose code holds a floating-point instruction (VFP: `v...`)."""
    starts = [i.address for i in instructions]
    found = set()
    for function in image.iter_functions():
        first = bisect.bisect_left(starts, function.address)
        last = bisect.bisect_left(starts, function.end)
        if any(i.mnemonic.startswith("v") and not i.is_data for i in instructions[first:last]):
            found.add(function.address)
    return frozenset(found)


def gcc_reports(
    project: Project, core: str, objects: Path | None = None
) -> tuple[list[Path], list[Path]]:
    """The .su and .ci files of one image, in a stable order. A folder the user names must
    hold them: without them the bound would quietly rest on the disassembly alone."""
    if objects is None:
        # The CMake target is the image's, named after the core whose image it is.
        return gcc_files(build_dir(project.folder), project.images[core].stem)
    if not objects.is_dir():
        raise InputError(f"no folder of objects at {objects}", key="--objects")
    su_files = sorted(objects.rglob("*.su"))
    if not su_files:
        raise InputError(
            f"no .su files under {objects}: compile the image with -fstack-usage "
            f"-fcallgraph-info=su,da",
            key="--objects",
        )
    return su_files, sorted(objects.rglob("*.ci"))


def _read(path: Path) -> str:
    return read_input(path).decode("utf-8", errors="replace")


def hint_warnings(hints: StackHints, graphs: Iterable[CallGraph]) -> tuple[str, ...]:
    """A warning for each function the hints name that none of the images has."""
    known: set[str] = set()
    for graph in graphs:
        known.update(graph.by_name)
    return tuple(
        absent_function(name, mark, sorted(known))
        for name, mark in hints.names()
        if name not in known
    )


def context_bounds(
    project: Project,
    images: Mapping[str, Image],
    graphs: Mapping[str, CallGraph],
    hints: StackHints | None = None,
) -> dict[str, ContextBound]:
    """The static bound of every planned stack whose core's image is at hand."""
    hints = hints or StackHints()
    contexts = project.board.contexts
    stacks = {s.context for s in project.plan.stacks}
    analyses = {core: Analysis(graph, hints) for core, graph in graphs.items()}
    results = {}
    landing = _landing(contexts, stacks)
    for stack in project.plan.stacks:
        core = contexts[stack.owner].core
        if core not in images:
            continue
        if stack.thread is not None:
            results[stack.context] = _thread_bound(project, stack, images[core], analyses[core])
        else:
            results[stack.context] = _context_bound(
                project, stack, images[core], analyses[core], landing
            )
    return results


def _landing(contexts: Mapping[str, Context], stacks: set[str]) -> dict[str, set[str]]:
    """For each context, the stacks (by owning context) its frames land on."""
    memo: dict[str, set[str]] = {}

    def lands_on(name: str, seen: frozenset[str]) -> set[str]:
        if name in stacks:
            return {name}
        if name in memo:
            return memo[name]
        found: set[str] = set()
        for other in contexts[name].preempts:
            if other not in seen:
                found |= lands_on(other, seen | {name})
        memo[name] = found
        return found

    return {name: lands_on(name, frozenset()) for name in contexts}


def _context_bound(
    project: Project, stack: Any, image: Image, analysis: Analysis, landing: Mapping[str, set[str]]
) -> ContextBound:
    contexts = project.board.contexts
    context = contexts[stack.owner]
    core = project.board.cores[context.core]
    findings: list[Finding] = []
    root = _root(image, analysis.graph, stack, context)
    if root is None:
        findings.append(
            Finding(
                "stack-unbounded",
                stack.context,
                f"its entry function {context.entry}() is not in {image.path.name}",
            )
        )
        own: Bound = Bound(None)
    else:
        own = analysis.bound(root)
        findings += _problem_findings(stack.context, analysis, root, own)
    total = None if own.bytes is None else max(own.bytes, stack.planned)
    frame = exception_frame(core)
    interrupts: list[tuple[str, int | None]] = []
    if context.kind == "task":
        switch = _switch(core)  # what the RTOS's context switch leaves on its stack
        interrupts.append(switch)
        total = None if total is None else total + switch[1]
    own_stacks = {s.context for s in project.plan.stacks}
    levels: dict[int, list[int | None]] = {}
    for name, other in contexts.items():
        if other.kind != "isr" or stack.context not in landing.get(name, set()):
            continue
        if name in own_stacks:
            cost: int | None = frame  # its handler runs on a stack of its own
        else:
            cost = _isr_cost(stack.context, name, other, image, analysis, findings, frame)
        interrupts.append((name, cost))
        levels.setdefault(other.priority, []).append(cost)
    for costs in levels.values():
        worst = None if None in costs else max(c for c in costs if c is not None)
        total = None if total is None or worst is None else total + worst
    return ContextBound(
        context=stack.context,
        bytes=total,
        path=own.path if total is not None else (),
        interrupts=tuple(interrupts),
        findings=tuple(findings),
    )


def _switch(core: Core) -> tuple[str, int]:
    """How a task stack's report names its RTOS's context switch, and its bytes."""
    port = port_of(core)
    return switch_label(port), task_switch_cost(port, core.cpu, core.float_abi)


def _thread_bound(project: Project, stack: Any, image: Image, analysis: Analysis) -> ContextBound:
    contexts = project.board.contexts
    core = project.board.cores[contexts[stack.owner].core]
    function = contract.thread_function(stack.c_name)
    root = analysis.graph.by_name.get(function)
    findings: list[Finding] = []
    if root is None:
        findings.append(
            Finding(
                "stack-unbounded",
                stack.context,
                f"the thread's function {function}() is not in {image.path.name}: start the "
                f"thread in a function of that name (the generated header declares it)",
            )
        )
        own = Bound(None)
    else:
        own = analysis.bound(root)
        findings += _problem_findings(stack.context, analysis, root, own)
    total = None if own.bytes is None else max(own.bytes, stack.planned)
    frame = exception_frame(core)
    # Only an ISR that preempts the thread's context is taken on the thread's stack; one
    # that preempts such an ISR is taken on the main stack, where that ISR runs.
    interrupts = tuple(
        (name, frame)
        for name, other in contexts.items()
        if other.kind == "isr" and stack.owner in other.preempts
    )
    if total is not None and interrupts:
        total += frame  # one frame however the ISRs nest: the nested ones stack on MSP
    return ContextBound(
        context=stack.context,
        bytes=total,
        path=own.path if total is not None else (),
        interrupts=interrupts,
        findings=tuple(findings),
    )


def _isr_cost(
    host: str,
    name: str,
    context: Context,
    image: Image,
    analysis: Analysis,
    findings: list[Finding],
    frame: int,
) -> int | None:
    entry = context.entry
    root = analysis.graph.by_name.get(entry)
    if root is None:
        findings.append(
            Finding(
                "stack-unbounded",
                host,
                f"ISR context {name} lands on this stack, but its entry function {entry}() "
                f"is not in {image.path.name}",
            )
        )
        return None
    bound = analysis.bound(root)
    findings += _problem_findings(host, analysis, root, bound)
    return None if bound.bytes is None else frame + bound.bytes


def _root(image: Image, graph: CallGraph, stack: Any, context: Context) -> int | None:
    """The reset handler for the context whose stack the vector table starts the core on;
    the context's entry function for any other."""
    symbol = image.get_symbol(contract.stack_symbol(stack.c_name))
    vectors = image.get_section(contract.vectors_section())
    initial = image.read(vectors.address, 4) if vectors else None
    if symbol is not None and initial is not None:
        (sp,) = struct.unpack("<I", initial)
        if sp == symbol.address + symbol.size and image.entry in graph.nodes:
            return image.entry
    # A core that runs another core's image starts from a vector table of its own.
    joined = image.get_section(contract.vectors_section(context.core))
    table = image.read(joined.address, 8) if joined else None
    if symbol is not None and table is not None:
        sp, reset = struct.unpack("<II", table)
        start = int(reset) & ~1
        if sp == symbol.address + symbol.size and start in graph.nodes:
            return start
    return graph.by_name.get(context.entry)


def _problem_findings(context: str, analysis: Analysis, root: int, bound: Bound) -> list[Finding]:
    findings = []
    for problem in bound.problems:
        path = " > ".join(analysis.path_to(root, problem.function))
        file, line = _file_line(problem.location)
        findings.append(
            Finding(
                "stack-unbounded",
                context,
                f"{problem.message} (call path: {path})",
                file=file,
                line=line,
            )
        )
    return findings


def _file_line(location: str | None) -> tuple[str | None, int | None]:
    if not location:
        return None, None
    parts = location.split(":")
    if len(parts) >= 2 and parts[1].isdigit():
        return parts[0], int(parts[1])
    return location, None
