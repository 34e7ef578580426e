"""The workload: the buffers and constants to place, with sizes, lifetimes and scopes.

A lifetime is inclusive: a buffer with `live: [conv1, dw1]` is in use at every step from
conv1 to dw1, both included. Constants live for the whole timeline.

There are three ways in and one set of rules: a workload file (`Workload.from_file`, YAML
or JSON; `memplace.importers.load_workload` also takes a model), plain data
(`Workload.from_data`), and code (`WorkloadBuilder`). All of them pass through
`_WorkloadReader`, so a workload built in Python is refused for exactly what a workload file
is refused for. Scopes, users and pools name things on a board, so they are checked when
the workload meets one (`memplace.scopes`).
"""

from __future__ import annotations

import copy
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, overload

from memplace.errors import InputError, Mark
from memplace.hints import StackHints, read_stack_hints
from memplace.source import (
    MAX_SIZE,
    Document,
    Node,
    Path_,
    fewer_collections,
    name_problem,
    suggest,
)

VERSION = "workload/v1"
WORKLOAD_KEYS = ("memplace", "name", "steps", "buffers", "constants", "stack_hints")
DEFAULT_ALIGN = 16
DEFAULT_SCOPE = "global"
BUFFER_KEYS = ("name", "size", "align", "live", "scope", "users", "pools", "dynamic", "priority")
CONSTANT_KEYS = ("name", "size", "data_file", "align", "scope", "users", "pools", "priority")

Step = int | str
_PLAIN_KEYS = {"name", "size", "live", "align"}


@dataclass(frozen=True)
class Buffer:
    """One thing to place. `kind` is "buffer" (read-write) or "constant" (read-only).

    `first` and `last` are step indices, inclusive. `users` empty means the board's first
    context; `pools` empty means no narrowing. `data` holds a constant's bytes when it
    came with them (a data file, a model); otherwise the plan fills it deterministically.
    A `dynamic` buffer is reserved in its pool and handed out at run time by an arena.
    """

    name: str
    kind: str
    size: int
    align: int
    first: int
    last: int
    scope: str
    users: tuple[str, ...]
    pools: tuple[str, ...] = ()
    data: bytes | None = field(default=None, repr=False)
    dynamic: bool = False
    priority: int = 0  # higher claims the fast pools first (planner.assign); any integer
    marks: Mapping[str, Mark] = field(default_factory=dict, compare=False, repr=False)

    def mark(self, key: str) -> Mark | None:
        """Where `key` (such as "scope" or "users[1]") is written, else where the buffer is."""
        return (
            self.marks.get(key) or self.marks.get(key.partition("[")[0]) or self.marks.get("name")
        )

    def error(self, key: str, message: str) -> InputError:
        return InputError(message, self.mark(key), f"{self.name}.{key}")


class NumberedSteps(Sequence[str]):
    """The steps of a workload that does not name them: "0", "1", ..., as a sequence that
    makes each name when asked, so a timeline of a million steps costs nothing to hold.
    Equal to the tuple of the same names."""

    __slots__ = ("length",)

    def __init__(self, count: int) -> None:
        self.length = count

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(map(str, range(self.length)[index]))
        return str(range(self.length)[index])

    def __iter__(self) -> Iterator[str]:
        return map(str, range(self.length))

    def __contains__(self, value: object) -> bool:
        return (
            isinstance(value, str)
            and value.isdigit()
            and str(int(value)) == value
            and (int(value) < self.length)
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NumberedSteps):
            return self.length == other.length
        if isinstance(other, tuple | list):
            if len(other) != self.length:
                return False
            return all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"NumberedSteps({self.length})"


@dataclass(frozen=True)
class Workload:
    name: str
    steps: Sequence[str]
    buffers: tuple[Buffer, ...]
    source: str = "<data>"
    # Hint sets from the workload file's `stack_hints:` (about the code that runs it).
    stack_hints: tuple[StackHints, ...] = ()
    # What an importer read it from (a model, an archive), so that nothing reads that
    # file again; None for a workload file or data.
    origin: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_file(cls, path: Path, data_root: Path | None = None) -> Workload:
        """The workload file at `path`; its `data_file`s are read from inside its folder,
        or from inside `data_root` when given."""
        with fewer_collections():
            doc = Document.from_file(path)
            workload = _WorkloadReader(doc, path.parent, data_root).read()
        doc.data = None  # the buffers keep the positions only
        return workload

    @classmethod
    def from_data(
        cls, data: Mapping[str, Any], source: str = "<data>", base_dir: Path | None = None
    ) -> Workload:
        return cls.from_document(
            Document.from_data(copy.deepcopy(dict(data)), source), base_dir=base_dir
        )

    @classmethod
    def from_document(cls, doc: Document, base_dir: Path | None = None) -> Workload:
        return _WorkloadReader(doc, base_dir or Path.cwd()).read()

    def buffer(self, name: str) -> Buffer:
        for buffer in self.buffers:
            if buffer.name == name:
                return buffer
        raise KeyError(name)

    def without(self, names: set[str]) -> Workload:
        """The same workload less the named buffers (for what-if questions)."""
        return replace(self, buffers=tuple(b for b in self.buffers if b.name not in names))


class WorkloadBuilder:
    """A workload built in code, for compilers that call memplace as a library.

    Each call adds one buffer or constant; `build()` checks the whole by the rules of a
    workload file and returns the frozen `Workload` (or raises `InputError` naming the
    buffer and key). Sizes take bytes or text such as "12K"; steps and lifetimes take
    names or indices, as in a file.
    """

    def __init__(
        self,
        name: str,
        steps: Sequence[str] | int | None = None,
        base_dir: Path | None = None,
        source: str = "<python>",
        origin: object = None,
    ) -> None:
        self._data: dict[str, Any] = {"memplace": VERSION, "name": name}
        if steps is not None:
            self._data["steps"] = steps if isinstance(steps, int) else list(steps)
        self._buffers: list[dict[str, Any]] = []
        self._constants: list[dict[str, Any]] = []
        self._base_dir = base_dir
        self._source = source
        self._origin = origin

    def buffer(
        self,
        name: str,
        size: int | str,
        live: Step | Sequence[Step],
        *,
        align: int | None = None,
        scope: str | None = None,
        users: Sequence[str] | None = None,
        pools: Sequence[str] | None = None,
        dynamic: bool | None = None,
    ) -> WorkloadBuilder:
        """Add a buffer live from step `live[0]` to `live[1]` inclusive (or at one step)."""
        spec = {"name": name, "size": size, "live": _plain(live), "align": align}
        spec.update(scope=scope, users=_plain(users), pools=_plain(pools), dynamic=dynamic)
        self._buffers.append({key: value for key, value in spec.items() if value is not None})
        return self

    def constant(
        self,
        name: str,
        *,
        size: int | str | None = None,
        data: bytes | None = None,
        data_file: str | Path | None = None,
        align: int | None = None,
        scope: str | None = None,
        users: Sequence[str] | None = None,
        pools: Sequence[str] | None = None,
    ) -> WorkloadBuilder:
        """Add a constant: its bytes (`data`), a file holding them, or a `size` to fill."""
        spec = {"name": name, "size": size, "data": data, "align": align, "scope": scope}
        spec.update(data_file=None if data_file is None else str(data_file))
        spec.update(users=_plain(users), pools=_plain(pools))
        self._constants.append({key: value for key, value in spec.items() if value is not None})
        return self

    def build(self) -> Workload:
        data = dict(self._data, buffers=self._buffers, constants=self._constants)
        doc = _CodeDocument(copy.deepcopy(data), file=self._source)
        workload = _WorkloadReader(doc, self._base_dir or Path.cwd()).read()
        return workload if self._origin is None else replace(workload, origin=self._origin)


def _plain(value: Any) -> Any:
    """Tuples become lists, as a YAML loader would give them."""
    if isinstance(value, str | bytes) or value is None:
        return value
    if isinstance(value, Sequence):
        return [_plain(item) for item in value]
    return value


class _CodeDocument(Document):
    """Data built in Python: errors name the buffer and key, with no file position."""

    def error(self, path: Path_, message: str, at_key: bool = False) -> InputError:
        return InputError(message, None, self._key_by_name(path) or None)

    def _key_by_name(self, path: Path_) -> str:
        if len(path) >= 2 and path[0] in ("buffers", "constants") and isinstance(path[1], int):
            items = self.data.get(path[0])
            item = items[path[1]] if isinstance(items, list) and path[1] < len(items) else None
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and name:
                return self.key_name((name, *path[2:]))
        return self.key_name(path)


class _WorkloadReader:
    def __init__(self, doc: Document, base_dir: Path, data_root: Path | None = None) -> None:
        self.doc = doc
        self.root = Node(doc)
        self.base_dir = base_dir
        self.data_root = data_root
        self.from_code = isinstance(doc, _CodeDocument)
        self.step_index: dict[str, int] = {}

    def read(self) -> Workload:
        root = self.root
        if not isinstance(root.value, dict):
            raise root.error("a workload file is a mapping")
        version = root.get("memplace")
        if version is None:
            raise root.error(f"missing 'memplace: {VERSION}' at the top of the workload file")
        if version.value != VERSION:
            raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")
        root.mapping(WORKLOAD_KEYS, required=("name",))
        name = root.child("name").name()
        steps = self._steps()
        buffers = self._buffers(steps)
        constants = [self._buffer(node, "constant", steps) for node in self._list("constants")]
        everything = buffers + constants
        if not everything:
            raise root.error("a workload needs at least one buffer or constant")
        if steps is None:
            steps = NumberedSteps(max(b.last for b in everything) + 1)
        seen: set[str] = set()
        placed: list[Buffer] = []
        for item in everything:
            if item.name in seen:
                raise InputError(
                    "name used twice in the workload", item.mark("name"), f"{item.name}.name"
                )
            seen.add(item.name)
            if item.kind == "constant":
                item = replace(item, first=0, last=len(steps) - 1)
            placed.append(item)
        return Workload(
            name=name,
            steps=steps if isinstance(steps, NumberedSteps) else tuple(steps),
            buffers=tuple(placed),
            source=self.doc.file,
            stack_hints=read_stack_hints(root.get("stack_hints")),
        )

    def _buffers(self, steps: Sequence[str] | None) -> list[Buffer]:
        node = self.root.get("buffers")
        if node is None:
            return []
        if not isinstance(node.value, list):
            raise node.error("expected a list")
        found = []
        for index, value in enumerate(node.value):
            plain = self._plain_buffer(value, ("buffers", index), steps)
            found.append(plain or self._buffer(node.child(index), "buffer", steps))
        return found

    def _list(self, key: str) -> list[Node]:
        node = self.root.get(key)
        return list(node.elements()) if node else []

    def _steps(self) -> Sequence[str] | None:
        node = self.root.get("steps")
        if node is None:
            return None
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return NumberedSteps(node.integer(minimum=1))
        names = [item.string() for item in node.elements()]
        if not names:
            raise node.error("steps needs at least one step")
        for index, step in enumerate(names):
            if not step:
                raise node.child(index).error("a step name is not empty")
            if self.step_index.setdefault(step, index) != index:
                raise node.child(index).error(f"step {step!r} named twice")
        return names

    def _step(self, node: Node, steps: Sequence[str] | None) -> int:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            index = node.integer()
            if steps is not None and index >= len(steps):
                raise node.error(f"step {index} is past the last step ({len(steps) - 1})")
            return index
        if steps is None:
            raise node.error(
                f"no step {node.value!r}: steps are numbers unless the workload names them "
                "in 'steps'"
            )
        name = node.string()
        if not self.step_index:
            self.step_index = {step: index for index, step in enumerate(steps)}
        if name not in self.step_index:
            raise node.error(f"no step {name!r}; {suggest(name, steps)}")
        return self.step_index[name]

    def _buffer(self, node: Node, kind: str, steps: Sequence[str] | None) -> Buffer:
        constant = kind == "constant"
        keys = (*CONSTANT_KEYS, "data") if constant and self.from_code else CONSTANT_KEYS
        node.mapping(
            keys if constant else BUFFER_KEYS,
            required=("name",) if constant else ("name", "size", "live"),
        )
        name = node.child("name").name()
        data: bytes | None = None
        if constant:
            data = self._data(node)
            if data is None and not node.has("size"):
                raise node.error("a constant needs a size or a data_file")
            size = len(data) if data is not None else node.child("size").size()
            if data is not None and node.has("size") and node.child("size").size() != size:
                raise node.child("size").error(f"the constant's data holds {size} bytes")
            first = last = 0
        else:
            size = node.child("size").size()
            first, last = self._life(node.child("live"), steps)
        align = node.child("align").integer(minimum=1) if node.has("align") else DEFAULT_ALIGN
        if align & (align - 1):
            raise node.child("align").error(f"align must be a power of two, got {align}")
        scope = node.child("scope").string() if node.has("scope") else DEFAULT_SCOPE
        if not scope:
            raise node.child("scope").error("a scope is not empty; the default is 'global'")
        return Buffer(
            name=name,
            kind=kind,
            size=size,
            align=align,
            first=first,
            last=last,
            scope=scope,
            users=self._names(node, "users"),
            pools=self._names(node, "pools"),
            data=data,
            dynamic=node.child("dynamic").boolean() if node.has("dynamic") else False,
            priority=node.child("priority").integer(minimum=None) if node.has("priority") else 0,
            marks=self._marks(node),
        )

    def _plain_buffer(self, value: Any, path: Path_, steps: Sequence[str] | None) -> Buffer | None:
        """The buffer at `node` when it is written the plain way (a name, a size and a
        lifetime in bytes and step numbers, an alignment at most) and breaks no rule;
        None otherwise, for `_buffer` to read it key by key. Thousands of buffers read in
        a fraction of the time that way."""
        if type(value) is not dict or not value.keys() <= _PLAIN_KEYS:
            return None
        name, size, live = value.get("name"), value.get("size"), value.get("live")
        if type(name) is not str or not (name.isascii() and name.isidentifier()):
            return None
        if name_problem(name):
            return None
        if type(size) is not int or not 0 < size <= MAX_SIZE:
            return None
        if type(live) is list and len(live) == 2:
            first, last = live
        else:
            first = last = live
        if type(first) is not int or type(last) is not int or not 0 <= first <= last:
            return None
        if steps is not None and last >= len(steps):
            return None
        align = value.get("align", DEFAULT_ALIGN)
        if type(align) is not int or align < 1 or align & (align - 1):
            return None
        return Buffer(
            name=name,
            kind="buffer",
            size=size,
            align=align,
            first=first,
            last=last,
            scope=DEFAULT_SCOPE,
            users=(),
            marks=_BufferMarks(self.doc, path),
        )

    def _names(self, node: Node, key: str) -> tuple[str, ...]:
        """A list of board names (users, pools): at least one, none twice."""
        child = node.get(key)
        if child is None:
            return ()
        names = child.names()
        if not names:
            raise child.error(f"{key} lists at least one name, or leave it out")
        for index, name in enumerate(names):
            if names.index(name) != index:
                raise child.child(index).error(f"{name!r} listed twice")
        return tuple(names)

    def _marks(self, node: Node) -> Mapping[str, Mark]:
        """Where each key of a buffer is written; list items as "users[1]" (found when
        first asked for)."""
        return _BufferMarks(self.doc, node.path)

    def _life(self, node: Node, steps: Sequence[str] | None) -> tuple[int, int]:
        if isinstance(node.value, list):
            if len(node.value) != 2:
                raise node.error("live is [first, last], two steps")
            first, last = (self._step(node.child(i), steps) for i in (0, 1))
        else:
            first = last = self._step(node, steps)
        if last < first:
            raise node.error(f"the last step comes before the first ({last} < {first})")
        return first, last

    def _data(self, node: Node) -> bytes | None:
        """A constant's bytes, from `data_file` (or, in code, `data`)."""
        given = node.get("data")
        if given is not None:
            if node.has("data_file"):
                raise given.error("give data or data_file, not both")
            if not isinstance(given.value, bytes | bytearray | memoryview):
                raise given.error(f"data is bytes, got {type(given.value).__name__}")
            if not given.value:
                raise given.error("data is empty")
            return bytes(given.value)
        file_node = node.get("data_file")
        if file_node is None:
            return None
        path = self.base_dir / file_node.string()
        size = node.child("size").size() if node.has("size") else MAX_SIZE
        data = _read_data(path, (self.data_root or self.base_dir).resolve(), size, file_node)
        if not data:
            raise file_node.error(f"{path} is empty")
        return data


class _BufferMarks(Mapping[str, Mark]):
    """Where each key of the buffer at `path` is written, looked up when first asked."""

    __slots__ = ("doc", "found", "path")

    def __init__(self, doc: Document, path: Path_) -> None:
        self.doc = doc
        self.path = path
        self.found: dict[str, Mark] | None = None

    def _marks(self) -> dict[str, Mark]:
        if self.found is None:
            self.found = self.doc.marks_below(self.path)
        return self.found

    def __getitem__(self, key: str) -> Mark:
        return self._marks()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._marks())

    def __len__(self) -> int:
        return len(self._marks())


def _read_data(path: Path, root: Path, size: int, node: Node) -> bytes:
    """The bytes of a constant's data file: a regular file inside `root`, read no further
    than one byte past `size`, so that a workload from elsewhere can neither pull any file
    of the machine into an image nor read without end."""
    real = path.resolve()
    if real != root and root not in real.parents:
        raise node.error(
            f"{path} is outside {root}: data files come from the workload's own folder; "
            "allow another with --data-root DIR"
        )
    try:
        # Checked before opening: opening a FIFO would wait for a writer.
        if not stat.S_ISREG(real.stat().st_mode):
            raise node.error(f"{path} is not a regular file")
        with real.open("rb") as handle:
            data = handle.read(size + 1)
    except OSError as exc:
        raise node.error(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > size:
        raise node.error(f"{path} holds more than the constant's size ({size} bytes)")
    return data


def live_at(buffers: Sequence[Buffer], step: int) -> list[Buffer]:
    return [b for b in buffers if b.first <= step <= b.last]
