"""One call graph per image: GCC's own account of the code it compiled, merged with the
disassembly of everything that was linked.

GCC writes, beside each object, `<source>.su` (`-fstack-usage`: the frame of every
function) and `<source>.ci` (`-fcallgraph-info=su,da`: a VCG graph of calls, with frames,
dynamic allocations and indirect calls by source location). Neither knows about library
code, calls made from inline assembly, or the register save area of variadic functions;
the disassembly knows all of those but not the source. The merged graph takes, for every
function of the image, the larger frame of the two, and the union of their calls.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from memplace.errors import InputError
from memplace.files import integer
from memplace.hints import StackHints
from memplace.verify.frames import Call, Frame, Instruction
from memplace.verify.image import Function, LineTable

INDIRECT = "__indirect_call"

_NODE = re.compile(r'node: \{ title: "([^"]*)" label: "((?:[^"\\]|\\.)*)"(.*)\}')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)"(?: label: "([^"]*)")?')
_SIZE = re.compile(r"^(\d+) bytes \(([\w,]+)\)$")
_QUALIFIER = re.compile(r"^[\w,]+$")


@dataclass(frozen=True)
class GccFunction:
    """A function as GCC reported it: `name` as the symbol table spells it (clones keep
    their `.constprop.0`), `file` set for a static function."""

    name: str
    location: str
    frame: int | None = None
    qualifier: str = "static"  # static, dynamic, or dynamic,bounded
    file: str | None = None
    dynamic_objects: tuple[str, ...] = ()

    @property
    def dynamic(self) -> bool:
        return self.qualifier == "dynamic"


@dataclass(frozen=True)
class GccCall:
    caller: str  # a node title
    callee: str  # a node title, or INDIRECT
    location: str | None = None


@dataclass
class GccUnit:
    """What GCC said about one translation unit."""

    functions: dict[str, GccFunction] = field(default_factory=dict)  # by node title
    calls: list[GccCall] = field(default_factory=list)
    external: dict[str, str] = field(default_factory=dict)  # title → name of callees


def parse_ci(text: str, path: str = "<ci>") -> GccUnit:
    """A `-fcallgraph-info` file (VCG)."""
    unit = GccUnit()
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _NODE.match(line.strip()):
            title, label, rest = match[1], match[2].split("\\n"), match[3]
            if "ellipse" in rest or len(label) < 3:
                unit.external[title] = label[0]
                continue
            size = _SIZE.match(label[2])
            if size is None:
                raise InputError(f"unexpected call graph node: {line.strip()}", key=path)
            file, name = _split_title(title)
            unit.functions[title] = GccFunction(
                name=name,
                location=label[1],
                frame=integer(size[1], f"{path}:{number}"),
                qualifier=size[2],
                file=file,
                dynamic_objects=tuple(item.strip() for item in label[4:] if item.strip()),
            )
        elif match := _EDGE.match(line.strip()):
            unit.calls.append(GccCall(match[1], match[2], match[3]))
        elif line.strip().startswith(("node:", "edge:")):
            raise InputError(
                f"line {number}: unexpected call graph entry: {line.strip()}", key=path
            )
    return unit


def parse_su(text: str, path: str = "<su>") -> list[GccFunction]:
    """A `-fstack-usage` file: `file:line:column:name<TAB>bytes<TAB>qualifier` lines. Read
    by splitting, not by a regular expression, so a long line costs its length once."""
    functions = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.rstrip().split("\t")
        if len(fields) != 3 or not _QUALIFIER.match(fields[2]):
            continue
        located = _su_location(fields[0])
        if located is None or not fields[1].isdigit():
            continue
        file, line_number, position, name = located
        functions.append(
            GccFunction(
                name=name,
                location=f"{file}:{line_number}:{position}",
                frame=integer(fields[1], f"{path}:{number}"),
                qualifier=fields[2],
                file=file,
            )
        )
    return functions


def _su_location(text: str) -> tuple[str, str, str, str] | None:
    """`file:line:column:name` split at the last line and column that leave a name with no
    white space (a C++ name may hold colons); None if there is none."""
    parts = text.split(":")
    for i in range(len(parts) - 3, 0, -1):
        if parts[i].isdigit() and parts[i + 1].isdigit():
            name = ":".join(parts[i + 2 :])
            if name and not any(c.isspace() for c in name):
                return ":".join(parts[:i]), parts[i], parts[i + 1], name
            return None
    return None


def _split_title(title: str) -> tuple[str | None, str]:
    file, colon, name = title.rpartition(":")
    return (file, name) if colon else (None, title)


def gcc_files(build: Path, core: str) -> tuple[list[Path], list[Path]]:
    """The .su and .ci files CMake's build of `core` left under `build`."""
    folder = build / "CMakeFiles" / f"{core}.dir"
    if not folder.is_dir():
        return [], []
    return sorted(folder.rglob("*.su")), sorted(folder.rglob("*.ci"))


@dataclass(frozen=True)
class Node:
    """A function of the merged graph."""

    function: Function
    frame: int
    calls: tuple[Call, ...] = ()
    dynamic: tuple[str, ...] = ()  # where it allocates on the stack at run time
    unknown: str | None = None
    gcc: bool = False  # whether GCC described it (.su or .ci)

    @property
    def name(self) -> str:
        return self.function.name


@dataclass(frozen=True)
class CallGraph:
    nodes: Mapping[int, Node]
    by_name: Mapping[str, int]  # every name of every function → its address
    floating: frozenset[int] = frozenset()  # functions with floating-point instructions
    code: tuple[Instruction, ...] = ()  # the image's instructions, in address order
    symbols: frozenset[str] = frozenset()  # every symbol's name (an RTOS port's tells)
    # Indirect calls the image itself resolves (`cxx.py`: the C++ runtime's, virtual
    # calls): the call's address → its targets; the hints that go with them (the bundled
    # set for the runtime), and what they assume, as the reports list it.
    resolved: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    runtime_hints: StackHints | None = None
    assumptions: tuple[str, ...] = ()

    def reaches_floating(self, root: int, edges: Mapping[int, Iterable[tuple[int, int]]]) -> bool:
        """Whether `root` or any function it calls (along `edges`) uses the FPU."""
        seen, todo = {root}, [root]
        while todo:
            at = todo.pop()
            if at in self.floating:
                return True
            for _, target in edges.get(at, ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return False

    def node(self, name: str) -> Node | None:
        address = self.by_name.get(name)
        return None if address is None else self.nodes[address]


def merge(
    frames: Mapping[int, Frame],
    units: Iterable[GccUnit],
    su: Iterable[GccFunction] = (),
    lines: LineTable | None = None,
) -> CallGraph:
    """The call graph of one image from its frames and GCC's reports."""
    frames = _qualified(frames)
    functions = [frame.function for frame in frames.values()]
    resolver = _Resolver(functions)
    reported: dict[int, GccFunction] = {}
    extra_calls: dict[int, list[tuple[int | None, str | None]]] = {}
    for unit in units:
        for function in unit.functions.values():
            address = resolver.find(function.name, function.file)
            if address is not None:
                reported[address] = _larger(reported.get(address), function)
        for call in unit.calls:
            caller = unit.functions.get(call.caller)
            if caller is None:
                continue
            caller_address = resolver.find(caller.name, caller.file)
            if caller_address is None:
                continue
            if call.callee == INDIRECT:
                extra_calls.setdefault(caller_address, []).append((None, call.location))
                continue
            callee = unit.functions.get(call.callee)
            name, file = (
                (callee.name, callee.file) if callee else (_split_title(call.callee)[1], None)
            )
            target = resolver.find(name, file)
            if target is not None:
                extra_calls.setdefault(caller_address, []).append((target, call.location))
    for function in su:
        address = resolver.find_su(function.name, function.file)
        if address is not None:
            reported[address] = _larger(reported.get(address), function)
    nodes = {
        address: _node(frame, reported.get(address), extra_calls.get(address, []), lines)
        for address, frame in frames.items()
    }
    return CallGraph(nodes=nodes, by_name=resolver.names)


def _qualified(frames: Mapping[int, Frame]) -> dict[int, Frame]:
    """The frames, with each function whose name another function of the image has too
    (static functions of different files) named by its file first: `echo.c:prvServer`.
    Its plain name stays one of its names, so a hint naming it holds for all of them."""
    counts = Counter(frame.function.name for frame in frames.values())
    qualified = {}
    for address, frame in frames.items():
        function = frame.function
        if counts[function.name] > 1 and function.file is not None:
            name = f"{Path(function.file).name}:{function.name}"
            frame = replace(frame, function=replace(function, names=(name, *function.names)))
        qualified[address] = frame
    return qualified


def _larger(old: GccFunction | None, new: GccFunction) -> GccFunction:
    if old is None or (new.frame or 0) > (old.frame or 0):
        return new
    return old


def _node(
    frame: Frame,
    gcc: GccFunction | None,
    extra: list[tuple[int | None, str | None]],
    lines: LineTable | None,
) -> Node:
    size = frame.size
    calls = list(frame.calls)
    dynamic = [f"0x{address:x}" for address in frame.dynamic]
    if gcc is not None and gcc.frame is not None and gcc.frame > size:
        # GCC counted bytes the walk did not see: count them under every call too.
        more = gcc.frame - size
        calls = [replace(call, depth=call.depth + more) for call in calls]
        size = gcc.frame
    if gcc is not None:
        if gcc.qualifier == "dynamic,bounded":
            dynamic = []  # GCC's frame already holds the largest allocation
            calls = [replace(call, dynamic=False) for call in calls]
        elif gcc.dynamic:
            dynamic = list(gcc.dynamic_objects) or [gcc.location]
    indirect_sites = [call for call in calls if call.target is None]
    gcc_indirect = [location for target, location in extra if target is None]
    calls = [_locate(call, gcc_indirect, len(indirect_sites), lines) for call in calls]
    known = {call.target for call in calls}
    for target, location in extra:
        if target is None and not indirect_sites:
            calls.append(Call(frame.function.address, size, None, location=location))
        elif target is not None and target not in known:
            # A call GCC knows and the disassembly does not show (or shows as something
            # else): counted from the deepest point of the frame.
            calls.append(Call(frame.function.address, size, target, location=location))
            known.add(target)
    return Node(
        function=frame.function,
        frame=size,
        calls=tuple(calls),
        dynamic=tuple(dynamic),
        unknown=frame.unknown,
        gcc=gcc is not None,
    )


def _locate(
    call: Call, gcc_indirect: list[str | None], sites: int, lines: LineTable | None
) -> Call:
    if call.target is not None:
        return call
    if lines is not None and (found := lines.lookup(call.address)) is not None:
        file, line, column = found
        return replace(call, location=f"{file}:{line}:{column}" if column else f"{file}:{line}")
    if sites == 1 and len(set(gcc_indirect)) == 1:
        return replace(call, location=gcc_indirect[0])
    return call


class _Resolver:
    """GCC's names → addresses of the image's functions."""

    def __init__(self, functions: Iterable[Function]) -> None:
        self.names: dict[str, int] = {}
        self.statics: dict[tuple[str, str], int] = {}
        for function in functions:
            for name in function.names:
                self.names.setdefault(name, function.address)
                if function.file is not None:
                    self.statics[(Path(function.file).name, name)] = function.address

    def find(self, name: str, file: str | None) -> int | None:
        if file is not None:
            found = self.statics.get((Path(file).name, name))
            if found is not None:
                return found
        return self.names.get(name)

    def find_su(self, name: str, file: str | None) -> int | None:
        """A .su name drops a clone's number: `f.constprop` is `f.constprop.0`."""
        found = self.find(name, file)
        if found is not None or "." not in name:
            return found
        for number in range(8):
            found = self.find(f"{name}.{number}", file)
            if found is not None:
                return found
        return None
