"""Stack hints: what a user knows about the code that the call graph cannot tell.

A static stack bound stops at an indirect call (which functions can it reach?), at
recursion (how deep?) and at a dynamic frame (alloca, a VLA: how large?). A hints file
bounds them; the analysis uses nothing else from it.

```yaml
memplace: stack_hints/v1
indirect_calls:                # the functions an indirect call can reach
  - caller: dispatch           # the function that makes the call
    at: src/ops.c:42           # optional: only the call at this line (file:line[:column])
    targets: [op_add, op_mul]  # [] says the call is never made
recursion:                     # at most `depth` activations of each function of the cycle
  - {function: walk_tree, depth: 12}
alloca:                        # bytes of alloca and VLAs one activation takes at most
  - {function: format_row, size: 256}
frames:                        # a function's own frame, where its code cannot be followed
  - {function: switch_stacks, size: 64}
cut_calls:                     # calls the code holds but never makes (an assumption,
  - {caller: prvLog, callee: vDumpAll}          # reported with the bounds); without a
  - {callee: vAssertCalled}                     # caller, from everywhere; with called_from,
  - {caller: xTaskIncrementTick, callee: vApplicationTickHook, called_from: xTaskResumeAll}
interrupts_masked_until_scheduler: true   # an RTOS firmware takes no interrupt before its
                                          # scheduler starts: main's frames and the
                                          # handlers' never share the main stack
```

Function names are as the symbol table spells them (`nm`): a static clone is
`helper.constprop.0`. Where static functions of several files share a name, `file.c:name`
names one of them (reports name them so), and the plain name all of them. A name that is
in none of the images is a warning (a build at another optimisation level may inline it or
leave it out), with the nearest name that is.

A board or workload file may hold hints too, under `stack_hints:`: a list whose items are
what a hints file holds (`memplace: stack_hints/v1` may be left out, the file they sit in is
versioned already). `read_stack_hints` reads them with this file's reader, so the two cannot
drift apart; errors keep the position in that file and the whole key
(`stack_hints[0].recursion[0].depth`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memplace.errors import InputError, Mark
from memplace.source import Document, Node, suggest

VERSION = "stack_hints/v1"
KEYS = (
    "memplace",
    "indirect_calls",
    "recursion",
    "alloca",
    "frames",
    "cut_calls",
    "interrupts_masked_until_scheduler",
)

# A name as the symbol table spells it, or `file.c:name` for one of several static
# functions of that name.
_FUNCTION = re.compile(r"^(?:[\w.+-]+:)?[A-Za-z_.$][A-Za-z0-9_.$]*$")
_SITE = re.compile(r"^(.+?):(\d+)(?::(\d+))?$")


@dataclass(frozen=True)
class Site:
    """A source position `file:line[:column]`; `file` matches by its last path parts."""

    file: str
    line: int
    column: int | None = None

    def matches(self, location: str | None) -> bool:
        if location is None:
            return False
        found = _SITE.match(location)
        if found is None:
            return False
        file, line, column = found[1], int(found[2]), found[3]
        if line != self.line or not _same_file(file, self.file):
            return False
        return self.column is None or column is None or int(column) == self.column

    def __str__(self) -> str:
        column = f":{self.column}" if self.column is not None else ""
        return f"{self.file}:{self.line}{column}"


def _same_file(found: str, wanted: str) -> bool:
    found_parts, wanted_parts = Path(found).parts, Path(wanted).parts
    return found_parts[-len(wanted_parts) :] == wanted_parts


@dataclass(frozen=True)
class IndirectHint:
    caller: str
    targets: tuple[str, ...]
    at: Site | None
    mark: Mark
    target_marks: tuple[Mark, ...] = ()


@dataclass(frozen=True)
class FunctionHint:
    """A recursion depth, an alloca size or a frame size for one function."""

    function: str
    value: int
    mark: Mark


@dataclass(frozen=True)
class CutCall:
    """A call the code holds that is never made: its edge leaves the call graph."""

    caller: str | None  # None: every caller (an assertion's handler, say)
    callee: str
    mark: Mark
    callee_mark: Mark
    called_from: str | None = None
    """Only where `caller` is called from this function (its other callers keep the call)."""
    called_from_mark: Mark | None = None

    def __str__(self) -> str:
        where = f" when called from {self.called_from}" if self.called_from else ""
        if self.caller is None:
            return f"no function calls {self.callee} ({self.mark})"
        return f"{self.caller} never calls {self.callee}{where} ({self.mark})"


@dataclass(frozen=True)
class StackHints:
    indirect_calls: tuple[IndirectHint, ...] = ()
    recursion: tuple[FunctionHint, ...] = ()
    alloca: tuple[FunctionHint, ...] = ()
    frames: tuple[FunctionHint, ...] = ()
    cut_calls: tuple[CutCall, ...] = ()
    masked_until_scheduler: bool = False
    source: str = "<none>"
    # Files whose hints may name functions no image links (the bundled library sets).
    lenient: frozenset[str] = frozenset()

    def merged(self, other: StackHints) -> StackHints:
        """Both sets; where both bound one function, the larger bound holds."""
        return StackHints(
            indirect_calls=self.indirect_calls + other.indirect_calls,
            recursion=self.recursion + other.recursion,
            alloca=self.alloca + other.alloca,
            frames=self.frames + other.frames,
            cut_calls=self.cut_calls + other.cut_calls,
            masked_until_scheduler=self.masked_until_scheduler or other.masked_until_scheduler,
            source=f"{self.source}, {other.source}",
            lenient=self.lenient | other.lenient,
        )

    @classmethod
    def from_file(cls, path: Path) -> StackHints:
        return cls.from_document(Document.from_file(path))

    @classmethod
    def from_text(cls, text: str, file: str = "<hints>") -> StackHints:
        return cls.from_document(Document.from_text(text, file))

    @classmethod
    def from_document(cls, doc: Document) -> StackHints:
        root = Node(doc)
        if not isinstance(root.value, dict):
            raise root.error("expected a mapping with 'memplace: stack_hints/v1'")
        version = root.get("memplace")
        if version is None:
            raise root.error(f"missing 'memplace: {VERSION}' at the top of the stack hints file")
        if version.value != VERSION:
            raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")
        root.mapping(KEYS)
        return cls(
            indirect_calls=tuple(_indirect(item) for item in _items(root, "indirect_calls")),
            recursion=_function_hints(root, "recursion", "depth", minimum=1),
            alloca=_function_hints(root, "alloca", "size", minimum=0),
            frames=_function_hints(root, "frames", "size", minimum=0),
            cut_calls=tuple(_cut(item) for item in _items(root, "cut_calls")),
            masked_until_scheduler=_flag(root, "interrupts_masked_until_scheduler"),
            source=doc.file,
        )

    def to_data(self) -> dict[str, Any]:
        """The hints as a stack hints file spells them."""
        data: dict[str, Any] = {"memplace": VERSION}
        if self.indirect_calls:
            data["indirect_calls"] = [_indirect_data(hint) for hint in self.indirect_calls]
        groups = (
            ("recursion", "depth", self.recursion),
            ("alloca", "size", self.alloca),
            ("frames", "size", self.frames),
        )
        for key, value_key, group in groups:
            if group:
                data[key] = [{"function": h.function, value_key: h.value} for h in group]
        if self.cut_calls:
            data["cut_calls"] = [_cut_data(cut) for cut in self.cut_calls]
        if self.masked_until_scheduler:
            data["interrupts_masked_until_scheduler"] = True
        return data

    def names(self) -> list[tuple[str, Mark]]:
        """Every function the hints of a user's file name, with where (bundled sets, made
        for whatever a library may link, are left out)."""
        found: list[tuple[str, Mark]] = []
        for hint in self.indirect_calls:
            found.append((hint.caller, hint.mark))
            found += list(zip(hint.targets, hint.target_marks, strict=True))
        for group in (self.recursion, self.alloca, self.frames):
            found += [(hint.function, hint.mark) for hint in group]
        for cut in self.cut_calls:
            found.append((cut.callee, cut.callee_mark))
            if cut.caller is not None:
                found.append((cut.caller, cut.mark))
            if cut.called_from is not None and cut.called_from_mark is not None:
                found.append((cut.called_from, cut.called_from_mark))
        return [(name, mark) for name, mark in found if mark.file not in self.lenient]

    def is_cut(self, caller: tuple[str, ...], callee: tuple[str, ...]) -> bool:
        """Whether a hint says the call from `caller` to `callee` is never made."""
        return any(
            (c.caller is None or c.caller in caller) and c.callee in callee and not c.called_from
            for c in self.cut_calls
        )

    def assumptions(self) -> tuple[str, ...]:
        """What the hints assume that no analysis checks, as the reports say it."""
        said = [f"call cut: {cut}" for cut in self.cut_calls]
        if self.masked_until_scheduler:
            said.append(f"interrupts stay masked until the scheduler starts ({self.source})")
        return tuple(said)

    def recursion_depth(self, names: tuple[str, ...]) -> int | None:
        depths = [h.value for h in self.recursion if h.function in names]
        return max(depths) if depths else None

    def alloca_size(self, names: tuple[str, ...]) -> int | None:
        sizes = [h.value for h in self.alloca if h.function in names]
        return max(sizes) if sizes else None

    def frame_size(self, names: tuple[str, ...]) -> int | None:
        sizes = [h.value for h in self.frames if h.function in names]
        return max(sizes) if sizes else None

    def targets(self, caller: tuple[str, ...], location: str | None) -> list[str] | None:
        """The functions an indirect call of `caller` at `location` reaches; None when no
        hint covers it. A hint with `at` wins over one without."""
        hints = [h for h in self.indirect_calls if h.caller in caller]
        exact = [h for h in hints if h.at is not None and h.at.matches(location)]
        chosen = exact or [h for h in hints if h.at is None]
        if not chosen:
            return None
        return sorted({target for hint in chosen for target in hint.targets})


def _cut_data(cut: CutCall) -> dict[str, Any]:
    data: dict[str, Any] = {"callee": cut.callee}
    if cut.caller is not None:
        data["caller"] = cut.caller
    if cut.called_from is not None:
        data["called_from"] = cut.called_from
    return data


def _indirect_data(hint: IndirectHint) -> dict[str, Any]:
    data: dict[str, Any] = {"caller": hint.caller}
    if hint.at is not None:
        data["at"] = str(hint.at)
    data["targets"] = list(hint.targets)
    return data


BUNDLED_DIR = Path(__file__).parent / "stack_hints"


def bundled_hints() -> dict[str, Path]:
    """The hint sets memplace ships, by name (for libraries the toolchain links)."""
    return {path.stem: path for path in sorted(BUNDLED_DIR.glob("*.yaml"))}


def load_hints(specs: Sequence[str | Path]) -> StackHints | None:
    """The hints of every file in `specs` (a path, or a bundled set's name), merged; None
    when there are none. A bundled set may name functions an image does not link."""
    merged: StackHints | None = None
    bundled = bundled_hints()
    for spec in specs:
        text = str(spec)
        if text in bundled:
            hints = StackHints.from_file(bundled[text])
            hints = replace(hints, lenient=frozenset({hints.source}))
        elif Path(text).is_file():
            hints = StackHints.from_file(Path(text))
        else:
            raise InputError(
                f"no stack hints file at {text}; bundled sets: {', '.join(bundled) or 'none'}",
                key="--stack-hints",
            )
        merged = hints if merged is None else merged.merged(hints)
    return merged


def _flag(root: Node, key: str) -> bool:
    node = root.get(key)
    if node is None:
        return False
    if not isinstance(node.value, bool):
        raise node.error(f"expected true or false, got {node.value!r}")
    return node.value


def _items(root: Node, key: str) -> list[Node]:
    node = root.get(key)
    return [] if node is None else list(node.elements())


def _function(node: Node) -> str:
    text = node.string()
    if not _FUNCTION.match(text):
        raise node.error(f"{text!r} is not a function name as the symbol table spells it")
    return text


def _indirect(item: Node) -> IndirectHint:
    item.mapping(("caller", "at", "targets"), required=("caller", "targets"))
    at = None
    if item.has("at"):
        at_node = item.child("at")
        match = _SITE.match(at_node.string())
        if match is None:
            raise at_node.error(f"expected file:line or file:line:column, got {at_node.value!r}")
        at = Site(match[1], int(match[2]), int(match[3]) if match[3] else None)
    targets_node = item.child("targets")
    targets = [targets_node] if isinstance(targets_node.value, str) else targets_node.elements()
    names, marks = [], []
    for target in targets:
        names.append(_function(target))
        marks.append(target.doc.mark(target.path))
    return IndirectHint(
        caller=_function(item.child("caller")),
        targets=tuple(names),
        at=at,
        mark=item.doc.mark(item.child("caller").path),
        target_marks=tuple(marks),
    )


def _cut(item: Node) -> CutCall:
    item.mapping(("caller", "callee", "called_from"), required=("callee",))
    caller, callee = item.get("caller"), item.child("callee")
    source = item.get("called_from")
    if source is not None and caller is None:
        raise source.error("called_from says where the caller is called from: name the caller")
    return CutCall(
        caller=None if caller is None else _function(caller),
        callee=_function(callee),
        mark=item.doc.mark((caller or callee).path),
        callee_mark=item.doc.mark(callee.path),
        called_from=None if source is None else _function(source),
        called_from_mark=None if source is None else item.doc.mark(source.path),
    )


def _function_hints(root: Node, key: str, value_key: str, minimum: int) -> tuple[FunctionHint, ...]:
    hints: list[FunctionHint] = []
    seen: dict[str, Mark] = {}
    for item in _items(root, key):
        item.mapping(("function", value_key), required=("function", value_key))
        function_node = item.child("function")
        function = _function(function_node)
        mark = item.doc.mark(function_node.path)
        if function in seen:
            raise function_node.error(
                f"{function} is given twice in {key} (first at {seen[function]})"
            )
        seen[function] = mark
        value = item.child(value_key).integer(minimum=minimum)
        hints.append(FunctionHint(function, value, mark))
    return tuple(hints)


def absent_function(name: str, mark: Mark, known: list[str]) -> str:
    """The warning for a hint naming a function the images do not have: one an
    optimisation level inlined or never linked, so one hints file serves every build type
    (or a misspelt name, hence the suggestion)."""
    return (
        f"{mark}: stack hints: no function {name!r} in this build (inlined, or not linked), "
        f"so the hint is not used; {_short(suggest(name, known))}"
    )


def _short(text: str) -> str:
    """A suggestion without the list of every function of the image."""
    return text.split("valid:")[0].strip() or "check the name with arm-none-eabi-nm"


def read_stack_hints(node: Node | None) -> tuple[StackHints, ...]:
    """The hint sets of a board's or workload's `stack_hints:` list (none when absent)."""
    if node is None:
        return ()
    hints = []
    for item in node.elements():
        if not isinstance(item.value, dict):
            raise item.error(
                "a stack hints entry is a mapping of indirect_calls, recursion, alloca "
                "and frames, as in a stack hints file"
            )
        data = {"memplace": VERSION, **item.value}
        hints.append(StackHints.from_document(item.doc.part(item.path, data)))
    return tuple(hints)
