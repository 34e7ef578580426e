"""The workload: the buffers and constants to place, with sizes, lifetimes and scopes.

A lifetime is inclusive: a buffer with `live: [conv1, dw1]` is in use at every step from
conv1 to dw1, both included. Constants live for the whole timeline.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memplace.errors import InputError, Mark
from memplace.source import Document, Node, suggest

VERSION = "workload/v1"
DEFAULT_ALIGN = 16
BUFFER_KEYS = ("name", "size", "align", "live", "scope", "users", "pools")
CONSTANT_KEYS = ("name", "size", "data_file", "align", "scope", "users", "pools")


@dataclass(frozen=True)
class Buffer:
    """One thing to place. `kind` is "buffer" (read-write) or "constant" (read-only)."""

    name: str
    kind: str
    size: int
    align: int
    first: int
    last: int
    scope: str
    users: tuple[str, ...]
    pools: tuple[str, ...] = ()
    data: bytes | None = None
    marks: Mapping[str, Mark] = field(default_factory=dict, compare=False, repr=False)

    def mark(self, key: str) -> Mark | None:
        return self.marks.get(key) or self.marks.get("name")

    def error(self, key: str, message: str) -> InputError:
        return InputError(message, self.mark(key), f"{self.name}.{key}")


@dataclass(frozen=True)
class Workload:
    name: str
    steps: tuple[str, ...]
    buffers: tuple[Buffer, ...]
    source: str = "<data>"

    @classmethod
    def from_file(cls, path: Path) -> Workload:
        return cls.from_document(Document.from_file(path), base_dir=path.parent)

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


def load_workload(path: str | Path) -> Workload:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no workload file at {path}", key="WORKLOAD")
    return Workload.from_file(path)


class _WorkloadReader:
    def __init__(self, doc: Document, base_dir: Path) -> None:
        self.doc = doc
        self.root = Node(doc)
        self.base_dir = base_dir

    def read(self) -> Workload:
        root = self.root
        if not isinstance(root.value, dict):
            raise root.error("a workload file is a mapping")
        version = root.get("memplace")
        if version is None:
            raise root.error(f"missing 'memplace: {VERSION}' at the top of the workload file")
        if version.value != VERSION:
            raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")
        root.mapping(("memplace", "name", "steps", "buffers", "constants"), required=("name",))
        name = root.child("name").name()
        steps = self._steps()
        buffers = [self._buffer(node, "buffer", steps) for node in self._list("buffers")]
        constants = [self._buffer(node, "constant", steps) for node in self._list("constants")]
        everything = buffers + constants
        if not everything:
            raise root.error("a workload needs at least one buffer or constant")
        if steps is None:
            count = max(b.last for b in everything) + 1
            steps = [str(index) for index in range(count)]
        seen: set[str] = set()
        placed: list[Buffer] = []
        for item in everything:
            if item.name in seen:
                raise InputError(
                    "name used twice in the workload", item.mark("name"), f"{item.name}.name"
                )
            seen.add(item.name)
            if item.kind == "constant":
                item = _replace_life(item, 0, len(steps) - 1)
            elif item.last >= len(steps):
                raise item.error(
                    "live", f"step {item.last} is past the last step ({len(steps) - 1})"
                )
            placed.append(item)
        return Workload(name=name, steps=tuple(steps), buffers=tuple(placed), source=self.doc.file)

    def _list(self, key: str) -> list[Node]:
        node = self.root.get(key)
        return list(node.elements()) if node else []

    def _steps(self) -> list[str] | None:
        node = self.root.get("steps")
        if node is None:
            return None
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return [str(index) for index in range(node.integer(minimum=1))]
        names = [item.string() for item in node.elements()]
        if not names:
            raise node.error("steps needs at least one step")
        for index, step in enumerate(names):
            if names.index(step) != index:
                raise node.child(index).error(f"step {step!r} named twice")
        return names

    def _step(self, node: Node, steps: list[str] | None) -> int:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            index = node.integer()
            if steps is not None and index >= len(steps):
                raise node.error(f"step {index} is past the last step ({len(steps) - 1})")
            return index
        if steps is None:
            raise node.error("steps are numbers unless the workload names them in 'steps'")
        name = node.string()
        if name not in steps:
            raise node.error(f"no step {name!r}; {suggest(name, steps)}")
        return steps.index(name)

    def _buffer(self, node: Node, kind: str, steps: list[str] | None) -> Buffer:
        constant = kind == "constant"
        node.mapping(
            CONSTANT_KEYS if constant else BUFFER_KEYS,
            required=("name",) if constant else ("name", "size", "live"),
        )
        marks = {key: self.doc.mark(child.path) for key, child in node.items()}
        name = node.child("name").name()
        data: bytes | None = None
        if constant:
            data = self._data_file(node)
            if data is None and not node.has("size"):
                raise node.error("a constant needs a size or a data_file")
            size = len(data) if data is not None else node.child("size").size()
            if data is not None and node.has("size") and node.child("size").size() != size:
                raise node.child("size").error(f"data_file holds {size} bytes")
            first = last = 0
        else:
            size = node.child("size").size()
            first, last = self._life(node.child("live"), steps)
        align = node.child("align").integer(minimum=1) if node.has("align") else DEFAULT_ALIGN
        if align & (align - 1):
            raise node.child("align").error(f"align must be a power of two, got {align}")
        scope = node.child("scope").string() if node.has("scope") else "global"
        users = tuple(node.child("users").names()) if node.has("users") else ()
        pools = tuple(node.child("pools").names()) if node.has("pools") else ()
        return Buffer(
            name=name,
            kind=kind,
            size=size,
            align=align,
            first=first,
            last=last,
            scope=scope,
            users=users,
            pools=pools,
            data=data,
            marks=marks,
        )

    def _life(self, node: Node, steps: list[str] | None) -> tuple[int, int]:
        if isinstance(node.value, list):
            if len(node.value) != 2:
                raise node.error("live is [first, last], two steps")
            first, last = (self._step(node.child(i), steps) for i in (0, 1))
        else:
            first = last = self._step(node, steps)
        if last < first:
            raise node.error(f"the last step comes before the first ({last} < {first})")
        return first, last

    def _data_file(self, node: Node) -> bytes | None:
        file_node = node.get("data_file")
        if file_node is None:
            return None
        path = self.base_dir / file_node.string()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise file_node.error(f"cannot read {path}: {exc.strerror}") from exc
        if not data:
            raise file_node.error(f"{path} is empty")
        return data


def _replace_life(item: Buffer, first: int, last: int) -> Buffer:
    return replace(item, first=first, last=last)


def live_at(buffers: Sequence[Buffer], step: int) -> list[Buffer]:
    return [b for b in buffers if b.first <= step <= b.last]
