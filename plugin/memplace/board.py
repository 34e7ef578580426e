"""The board: memory map, planning pools, cores, devices and execution contexts.

A board file is checked in three passes, as west checks a manifest: the version gate,
then the shape of every key, then the rules that tie names together. What comes out is a
frozen `Board`; nothing past this module reads the raw file.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace import resources
from memplace.errors import InputError, Mark
from memplace.source import Document, Node, is_identifier, suggest

VERSION = "board/v1"

CPUS = {
    "cortex-m0": "armv6-m",
    "cortex-m0plus": "armv6-m",
    "cortex-m3": "armv7-m",
    "cortex-m4": "armv7e-m",
    "cortex-m7": "armv7e-m",
    "cortex-m23": "armv8-m.base",
    "cortex-m33": "armv8-m.main",
    "cortex-m55": "armv8.1-m.main",
    "cortex-m85": "armv8.1-m.main",
}
FLOAT_ABIS = ("hard", "softfp", "soft")
MEMORY_KINDS = ("flash", "rom", "tcm", "sram", "dram", "other")
DEVICE_KINDS = ("dma", "npu", "other")
POOL_KINDS = ("workspace", "constant")
CONTEXT_KINDS = ("thread", "isr")
LAYOUT_KEYS = ("vectors", "code", "data", "load")

# Reserved areas (pools and stacks) start on these boundaries, in bytes.
POOL_ALIGN = 64
STACK_ALIGN = 8


@dataclass(frozen=True)
class Memory:
    name: str
    origin: int
    size: int
    attrs: str
    kind: str
    access: tuple[str, ...]
    latency: int
    views: Mapping[str, int]

    def address_for(self, core: str) -> int:
        """Where `core` sees this memory's first byte."""
        return self.views.get(core, self.origin)

    def readable(self) -> bool:
        return "r" in self.attrs

    def writable(self) -> bool:
        return "w" in self.attrs


@dataclass(frozen=True)
class Layout:
    """Which memory holds each part of a core's own image."""

    vectors: str
    code: str
    data: str
    load: str

    def memories(self) -> tuple[str, ...]:
        return (self.vectors, self.code, self.data, self.load)


@dataclass(frozen=True)
class Core:
    name: str
    cpu: str
    float_abi: str
    layout: Layout


@dataclass(frozen=True)
class Device:
    name: str
    kind: str


@dataclass(frozen=True)
class Pool:
    """A planning pool: a fixed area [address, address + size) of one memory."""

    name: str
    memory: str
    kind: str
    size: int
    address: int


@dataclass(frozen=True)
class Stack:
    """A context's stack area [address, address + size); it grows down from the top."""

    memory: str
    size: int
    address: int


@dataclass(frozen=True)
class Context:
    name: str
    core: str
    kind: str
    entry: str
    stack: Stack | None
    max_stack_alloca: int
    preempts: tuple[str, ...]
    priority: int


@dataclass(frozen=True)
class Board:
    name: str
    summary: str
    cores: Mapping[str, Core]
    devices: Mapping[str, Device]
    memories: Mapping[str, Memory]
    pools: Mapping[str, Pool]
    contexts: Mapping[str, Context]
    qemu_machine: str | None
    source: str

    @classmethod
    def from_file(cls, path: Path) -> Board:
        return cls.from_document(_load_with_extends(path, ()))

    @classmethod
    def from_data(cls, data: Mapping[str, Any], source: str = "<data>") -> Board:
        return cls.from_document(Document.from_data(copy.deepcopy(dict(data)), source))

    @classmethod
    def from_document(cls, doc: Document) -> Board:
        return _BoardReader(doc).read()

    def core_of(self, user: str) -> str | None:
        """The core a context runs on; None for a device."""
        context = self.contexts.get(user)
        return context.core if context else None

    def reaches(self, user: str, memory: str) -> bool:
        """Whether a context (through its core) or a device can access `memory`."""
        who = self.core_of(user) or user
        return who in self.memories[memory].access

    def stack_contexts(self) -> list[Context]:
        return [context for context in self.contexts.values() if context.stack]

    def to_data(self) -> dict[str, Any]:
        """The resolved board as plain data, with every computed address filled in."""
        return {
            "name": self.name,
            "summary": self.summary,
            "qemu_machine": self.qemu_machine,
            "cores": {
                name: {
                    "cpu": core.cpu,
                    "float_abi": core.float_abi,
                    "layout": dict(zip(LAYOUT_KEYS, core.layout.memories(), strict=True)),
                }
                for name, core in self.cores.items()
            },
            "devices": {name: {"kind": device.kind} for name, device in self.devices.items()},
            "memories": {
                name: {
                    "origin": memory.origin,
                    "size": memory.size,
                    "attrs": memory.attrs,
                    "kind": memory.kind,
                    "access": list(memory.access),
                    "latency": memory.latency,
                    "views": dict(memory.views),
                }
                for name, memory in self.memories.items()
            },
            "pools": {
                name: {
                    "memory": pool.memory,
                    "kind": pool.kind,
                    "size": pool.size,
                    "address": pool.address,
                }
                for name, pool in self.pools.items()
            },
            "contexts": {
                name: {
                    "core": context.core,
                    "kind": context.kind,
                    "entry": context.entry,
                    "stack": None
                    if context.stack is None
                    else {
                        "memory": context.stack.memory,
                        "size": context.stack.size,
                        "address": context.stack.address,
                    },
                    "max_stack_alloca": context.max_stack_alloca,
                    "preempts": list(context.preempts),
                    "priority": context.priority,
                }
                for name, context in self.contexts.items()
            },
        }


def load_board(spec: str | Path) -> Board:
    """A board by bundled name or by path to a board file."""
    return Board.from_file(board_path(spec))


def board_path(spec: str | Path) -> Path:
    text = str(spec)
    bundled = resources.bundled_boards()
    if text in bundled:
        return bundled[text]
    path = Path(text)
    if path.suffix in (".yaml", ".yml", ".json") or "/" in text:
        if not path.is_file():
            raise InputError(f"no board file at {text}", key="BOARD")
        return path
    raise InputError(f"no bundled board {text!r}; {suggest(text, bundled)}", key="BOARD")


def _load_with_extends(path: Path, seen: tuple[Path, ...]) -> Document:
    doc = Document.from_file(path)
    node = Node(doc)
    if not isinstance(doc.data, dict):
        raise node.error("a board file is a mapping")
    _check_version(node)
    parent = node.get("extends")
    if parent is None:
        return doc
    spec = parent.string()
    bundled = resources.bundled_boards()
    base_path = bundled.get(spec) or (path.parent / spec)
    if not base_path.is_file():
        raise parent.error(f"no board {spec!r} to extend; bundled: {', '.join(bundled)}")
    if base_path.resolve() in seen:
        raise parent.error("boards extend each other in a circle")
    base = _load_with_extends(base_path, (*seen, path.resolve()))
    del doc.data["extends"]
    return _merge(base, doc)


def _merge(base: Document, top: Document) -> Document:
    """`top` over `base`: mappings merge key by key, anything else is replaced. Every
    node keeps the position of the file it came from."""

    def merge(low: Any, high: Any) -> Any:
        if isinstance(low, dict) and isinstance(high, dict):
            return {**low, **{key: merge(low.get(key), value) for key, value in high.items()}}
        return high

    merged = Document(data=merge(base.data, top.data), file=top.file)
    for path in _paths(merged.data, ()):
        source = top if path in top.marks else base
        merged.marks[path] = source.marks.get(path, Mark(source.file, 1, 1))
        if path in source.key_marks:
            merged.key_marks[path] = source.key_marks[path]
    return merged


def _paths(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*path, index))


def _check_version(node: Node) -> None:
    version = node.get("memplace")
    if version is None:
        raise node.error(f"missing 'memplace: {VERSION}' at the top of the board file")
    if version.value != VERSION:
        raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")


class _BoardReader:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.root = Node(doc)

    def read(self) -> Board:
        root = self.root
        if not isinstance(root.value, dict):
            raise root.error("a board file is a mapping")
        _check_version(root)
        root.mapping(
            (
                "memplace",
                "name",
                "summary",
                "extends",
                "cores",
                "devices",
                "memories",
                "pools",
                "contexts",
                "run",
            ),
            required=("name", "cores", "memories", "contexts"),
        )
        name = root.child("name").string()
        summary = root.child("summary").string() if root.has("summary") else ""
        devices = self._devices()
        cores_node = root.child("cores")
        core_names = [key for key, _ in cores_node.items()]
        memories = self._memories(set(core_names) | set(devices), core_names)
        cores = {key: self._core(node, memories) for key, node in cores_node.items()}
        if not cores:
            raise cores_node.error("a board needs at least one core")
        _check_views(cores_node, cores, memories)
        pools_node = root.get("pools")
        pool_specs = [
            self._pool(key, node, memories)
            for key, node in (pools_node.items() if pools_node else iter(()))
        ]
        context_specs = [
            self._context(key, node, cores, memories)
            for key, node in root.child("contexts").items()
        ]
        if not context_specs:
            raise root.child("contexts").error("a board needs at least one context")
        pools, stacks = _reserve(pool_specs, context_specs, memories, cores)
        contexts = {
            spec.name: Context(
                spec.name,
                spec.core,
                spec.kind,
                spec.entry,
                stacks.get(spec.name),
                spec.max_stack_alloca,
                spec.preempts,
                spec.priority,
            )
            for spec in context_specs
        }
        return Board(
            name=name,
            summary=summary,
            cores=cores,
            devices=devices,
            memories=memories,
            pools=pools,
            contexts=contexts,
            qemu_machine=self._qemu_machine(),
            source=self.doc.file,
        )

    def _devices(self) -> dict[str, Device]:
        node = self.root.get("devices")
        devices: dict[str, Device] = {}
        for key, item in node.items() if node else iter(()):
            item.mapping(("kind",), required=("kind",))
            devices[key] = Device(_name(item, key), item.child("kind").choice(DEVICE_KINDS))
        return devices

    def _memories(self, users: set[str], cores: list[str]) -> dict[str, Memory]:
        memories: dict[str, Memory] = {}
        for key, item in self.root.child("memories").items():
            item.mapping(
                ("origin", "size", "attrs", "kind", "access", "latency", "views"),
                required=("origin", "size", "attrs", "access"),
            )
            attrs_node = item.child("attrs")
            attrs = attrs_node.string()
            if not attrs or any(ch not in "rwx" for ch in attrs) or len(set(attrs)) != len(attrs):
                raise attrs_node.error(f"attrs are letters from 'rwx', got {attrs!r}")
            access_node = item.child("access")
            access = access_node.names()
            for index, who in enumerate(access):
                if who not in users:
                    raise access_node.child(index).error(
                        f"no core or device {who!r}; {suggest(who, users)}"
                    )
            views: dict[str, int] = {}
            views_node = item.get("views")
            for core, view in views_node.items() if views_node else iter(()):
                if core not in cores:
                    raise view.error(f"views name cores; {suggest(core, cores)}")
                views[core] = view.integer()
            origin = item.child("origin").integer()
            size = item.child("size").size()
            if origin + size > 1 << 32:
                raise item.child("size").error("the memory ends past the 4 GiB address space")
            memories[key] = Memory(
                name=_name(item, key),
                origin=origin,
                size=size,
                attrs="".join(ch for ch in "rwx" if ch in attrs),
                kind=item.child("kind").choice(MEMORY_KINDS) if item.has("kind") else "other",
                access=tuple(access),
                latency=item.child("latency").integer() if item.has("latency") else 1,
                views=views,
            )
        if not memories:
            raise self.root.child("memories").error("a board needs at least one memory")
        return memories

    def _core(self, item: Node, memories: Mapping[str, Memory]) -> Core:
        name = _name(item, item.path[-1])
        item.mapping(("cpu", "float_abi", "layout"), required=("cpu", "layout"))
        cpu = item.child("cpu").choice(CPUS)
        float_abi = item.child("float_abi").choice(FLOAT_ABIS) if item.has("float_abi") else "soft"
        layout_node = item.child("layout")
        layout_node.mapping(LAYOUT_KEYS, required=("vectors", "code", "data"))
        chosen: dict[str, str] = {}
        for key in LAYOUT_KEYS:
            node = layout_node.get(key)
            if node is None:
                chosen[key] = chosen["code"]
                continue
            memory = node.string()
            if memory not in memories:
                raise node.error(f"no memory {memory!r}; {suggest(memory, memories)}")
            if name not in memories[memory].access:
                raise node.error(
                    f"core {name!r} cannot access memory {memory!r}; "
                    f"add it to that memory's access list"
                )
            if key == "data" and not memories[memory].writable():
                raise node.error(
                    f"data needs a writable memory; {memory!r} is {memories[memory].attrs}"
                )
            chosen[key] = memory
        return Core(name, cpu, float_abi, Layout(**chosen))

    def _pool(self, key: str, item: Node, memories: Mapping[str, Memory]) -> _PoolSpec:
        item.mapping(("memory", "size", "kind"), required=("memory", "kind"))
        memory = _memory_ref(item.child("memory"), memories)
        kind = item.child("kind").choice(POOL_KINDS)
        if kind == "constant" and not memories[memory].readable():
            raise item.child("memory").error(
                f"a constant pool needs a readable memory; {memory!r} is {memories[memory].attrs}"
            )
        if kind == "workspace" and not memories[memory].writable():
            raise item.child("memory").error(
                f"a workspace pool needs a writable memory; {memory!r} is {memories[memory].attrs}"
            )
        size = item.child("size").size() if item.has("size") else None
        return _PoolSpec(_name(item, key), memory, kind, size, item)

    def _context(
        self, key: str, item: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
    ) -> _ContextSpec:
        item.mapping(
            ("core", "kind", "entry", "stack", "max_stack_alloca", "preempts", "priority"),
            required=("core",),
        )
        core_node = item.child("core")
        core = core_node.string()
        if core not in cores:
            raise core_node.error(f"no core {core!r}; {suggest(core, cores)}")
        kind = item.child("kind").choice(CONTEXT_KINDS) if item.has("kind") else "thread"
        contexts = list(self.root.child("contexts").value)
        preempts_node = item.get("preempts")
        preempts = preempts_node.names() if preempts_node else []
        for index, other in enumerate(preempts):
            if other not in contexts:
                raise preempts_node.child(index).error(  # type: ignore[union-attr]
                    f"no context {other!r}; {suggest(other, contexts)}"
                )
        stack_node = item.get("stack")
        stack: tuple[str, int] | None = None
        if stack_node is not None:
            stack_node.mapping(("memory", "size"), required=("memory", "size"))
            memory = _memory_ref(stack_node.child("memory"), memories)
            if core not in memories[memory].access:
                raise stack_node.child("memory").error(
                    f"core {core!r} cannot access memory {memory!r}"
                )
            if not memories[memory].writable():
                raise stack_node.child("memory").error(
                    f"a stack needs a writable memory; {memory!r} is {memories[memory].attrs}"
                )
            stack = (memory, stack_node.child("size").size())
        elif kind == "thread":
            raise item.error("a thread context needs a stack: {memory: NAME, size: BYTES}")
        entry_default = "main" if kind == "thread" else f"{key}_handler"
        return _ContextSpec(
            name=_name(item, key),
            core=core,
            kind=kind,
            entry=item.child("entry").name() if item.has("entry") else entry_default,
            stack=stack,
            node=item,
            max_stack_alloca=(
                item.child("max_stack_alloca").integer() if item.has("max_stack_alloca") else 0
            ),
            preempts=tuple(preempts),
            priority=item.child("priority").integer() if item.has("priority") else 0,
        )

    def _qemu_machine(self) -> str | None:
        run = self.root.get("run")
        if run is None:
            return None
        run.mapping(("qemu",))
        qemu = run.get("qemu")
        if qemu is None:
            return None
        qemu.mapping(("machine",), required=("machine",))
        return qemu.child("machine").string()


@dataclass(frozen=True)
class _PoolSpec:
    name: str
    memory: str
    kind: str
    size: int | None
    node: Node


@dataclass(frozen=True)
class _ContextSpec:
    name: str
    core: str
    kind: str
    entry: str
    stack: tuple[str, int] | None
    node: Node
    max_stack_alloca: int
    preempts: tuple[str, ...]
    priority: int


def _name(item: Node, key: str | int) -> str:
    """The key of `item` in its mapping, checked to be a C identifier."""
    if not isinstance(key, str) or not is_identifier(key):
        raise item.error(f"{key!r} is not a C identifier (letters, digits, _)")
    return key


def _memory_ref(node: Node, memories: Mapping[str, Memory]) -> str:
    memory = node.string()
    if memory not in memories:
        raise node.error(f"no memory {memory!r}; {suggest(memory, memories)}")
    return memory


def _check_views(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """No core may see two memories at overlapping addresses."""
    for core in cores:
        seen = sorted(
            (memory.address_for(core), memory.address_for(core) + memory.size, memory.name)
            for memory in memories.values()
            if core in memory.access
        )
        for (_, low_end, low), (high_start, _, high) in itertools.pairwise(seen):
            if high_start < low_end:
                raise cores_node.child(core).error(
                    f"core {core!r} sees memories {low!r} and {high!r} at overlapping addresses "
                    f"(0x{high_start:08x} < 0x{low_end:08x})"
                )


def _align_down(value: int, align: int) -> int:
    return value - value % align


def _reserve(
    pools: list[_PoolSpec],
    contexts: list[_ContextSpec],
    memories: Mapping[str, Memory],
    cores: Mapping[str, Core],
) -> tuple[dict[str, Pool], dict[str, Stack]]:
    """Give every pool and stack its address.

    In each memory, pools (in declaration order) then stacks take the top; the image's own
    sections (vectors, code, data) grow from the bottom. A pool without a size takes what
    is left, which is only defined in a memory that holds no image sections.
    """
    image_memories = {m for core in cores.values() for m in core.layout.memories()}
    pool_result: dict[str, Pool] = {}
    stack_result: dict[str, Stack] = {}
    for memory in memories.values():
        here = [p for p in pools if p.memory == memory.name]
        stacks = [c for c in contexts if c.stack and c.stack[0] == memory.name]
        sized = sum(p.size or 0 for p in here) + sum(c.stack[1] for c in stacks if c.stack)
        open_ended = [p for p in here if p.size is None]
        if len(open_ended) > 1:
            raise open_ended[1].node.error(
                f"only one pool in memory {memory.name!r} may leave out its size"
            )
        if open_ended and memory.name in image_memories:
            raise open_ended[0].node.error(
                f"give this pool a size: memory {memory.name!r} also holds image sections"
            )
        if sized > memory.size:
            culprit = here[-1].node if here else stacks[-1].node
            raise culprit.error(
                f"pools and stacks in memory {memory.name!r} need {sized} bytes; "
                f"it has {memory.size}"
            )
        rest = memory.size - sized
        if open_ended and rest < POOL_ALIGN:
            raise open_ended[0].node.error(f"no room left in memory {memory.name!r} for this pool")
        cursor = memory.origin + memory.size
        areas: list[tuple[str, _PoolSpec | _ContextSpec, int]] = [
            *(("pool", p, p.size if p.size is not None else rest) for p in here),
            *(("stack", c, c.stack[1]) for c in stacks if c.stack),
        ]
        for what, spec, size in reversed(areas):
            align = POOL_ALIGN if what == "pool" else STACK_ALIGN
            start = _align_down(cursor - size, align)
            if start < memory.origin:
                raise spec.node.error(f"does not fit in memory {memory.name!r} after alignment")
            if isinstance(spec, _PoolSpec):
                # An open-ended pool shrinks to stay inside the memory after alignment.
                size = min(size, cursor - start) if spec.size is None else size
                pool_result[spec.name] = Pool(spec.name, memory.name, spec.kind, size, start)
            else:
                stack_result[spec.name] = Stack(memory.name, size, start)
            cursor = start
    ordered_pools = {p.name: pool_result[p.name] for p in pools}
    return ordered_pools, stack_result
