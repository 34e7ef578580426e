"""Where pools and stacks go in their memories: in each memory, pools (as declared) then
stacks take the top, the image's own sections grow from the bottom; and the errors, with
what each area takes, when they do not fit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from memplace.board.parts import (
    IMAGE_ROOM,
    POOL_ALIGN,
    STACK_ALIGN,
    Context,
    Core,
    Memory,
    Pool,
    Stack,
    human_size,
)
from memplace.errors import InputError
from memplace.source import Node


@dataclass(frozen=True)
class PoolSpec:
    name: str
    memory: str
    kind: str
    size: int | None
    node: Node


@dataclass(frozen=True)
class ContextSpec:
    name: str
    core: str
    kind: str
    entry: str
    stack: tuple[str, int] | None
    node: Node
    max_stack_alloca: int
    preempts: tuple[str, ...]
    priority: int
    threads: int
    task: str | None = None
    budget: int | None = None
    irq: int | None = None

    def build(self, stacks: Mapping[tuple[str, int], Stack]) -> Context:
        """The context, with its stacks as `reserve` placed them (thread -1: its own)."""
        thread_stacks = tuple(stacks[(self.name, index)] for index in range(self.threads))
        return Context(
            self.name,
            self.core,
            self.kind,
            self.entry,
            stacks.get((self.name, -1)),
            self.max_stack_alloca,
            self.preempts,
            self.priority,
            self.threads,
            thread_stacks,
            self.task,
            self.budget,
            self.irq,
            self.node.doc.key_mark(self.node.path),
        )


def _align_down(value: int, align: int) -> int:
    return value - value % align


@dataclass(frozen=True)
class _Area:
    """A pool or a stack to reserve in a memory, with the node an error about its room
    points at (for a worker thread's stack: the context's `threads`)."""

    label: str
    size: int | None
    node: Node
    pool: PoolSpec | None = None
    stack: tuple[str, int] = ("", -1)  # (context, thread); thread -1: the context's own

    def written_in(self, file: str) -> bool:
        """Whether `file` sets this area's size (not a board it extends)."""
        size = self.node.child("size") if self.node.has("size") else self.node
        return size.doc.mark(size.path).file == file


def _areas(memory: str, pools: list[PoolSpec], contexts: list[ContextSpec]) -> list[_Area]:
    """What `memory` holds, in reservation order: pools as declared, then stacks (context
    by context: its own, then its threads')."""
    areas = [_Area(f"pool {p.name}", p.size, p.node, pool=p) for p in pools if p.memory == memory]
    for c in contexts:
        if c.stack is None or c.stack[0] != memory:
            continue
        stack_node = c.node.child("stack")
        areas.append(_Area(f"stack {c.name}.stack", c.stack[1], stack_node, stack=(c.name, -1)))
        threads_node = c.node.child("threads") if c.threads else stack_node
        areas += [
            _Area(f"stack {c.name}.thread{t}.stack", c.stack[1], threads_node, stack=(c.name, t))
            for t in range(c.threads)
        ]
    return areas


def _overflowing(areas: list[_Area], limit: int, file: str) -> _Area:
    """The area to blame when `areas` need more than `limit` bytes: the first one that
    takes the total past it, preferring those `file` sets over those of a board it extends
    (then, if none of those passes the limit, the last that `file` sets)."""
    passing, total = [], 0
    for area in areas:
        total += area.size or 0
        if total > limit:
            passing.append(area)
    mine = [area for area in areas if area.written_in(file)]
    return next((a for a in passing if a in mine), mine[-1] if mine else passing[0])


def _room_error(areas: list[_Area], limit: int, file: str, message: str) -> InputError:
    return _overflowing(areas, limit, file).node.error(f"{message} ({_listing(areas)})")


def _listing(areas: list[_Area]) -> str:
    """What the areas take, with a context's worker-thread stacks counted as one item."""
    threads = Counter(a.stack[0] for a in areas if a.stack[1] >= 0)
    parts = []
    for area in areas:
        size = human_size(area.size or 0)
        if area.stack[1] < 0:
            parts.append(f"{area.label} {size}")
        elif area.stack[1] == 0:
            parts.append(f"{threads[area.stack[0]]} thread stacks of {area.stack[0]} {size} each")
    return ", ".join(parts)


def reserve(
    pools: list[PoolSpec],
    contexts: list[ContextSpec],
    memories: Mapping[str, Memory],
    cores: Mapping[str, Core],
    file: str,
) -> tuple[dict[str, Pool], dict[tuple[str, int], Stack]]:
    """Give every pool and stack its address.

    In each memory, pools (in declaration order) then stacks (context by context: its own,
    then its threads') take the top; the image's own sections (vectors, code, data) grow from the
    bottom. A pool without a size takes what is left, which is only defined in a memory
    that holds no image sections. Errors about room blame an area `file` sets where they can.
    """
    image_memories = {m for core in cores.values() for m in core.layout.memories()}
    pool_result: dict[str, Pool] = {}
    stack_result: dict[tuple[str, int], Stack] = {}
    for memory in memories.values():
        here = _areas(memory.name, pools, contexts)
        rest = _check_room(here, memory, memory.name in image_memories, file)
        cursor = memory.origin + memory.size
        for area in reversed(here):
            size = area.size if area.size is not None else rest
            align = POOL_ALIGN if area.pool is not None else STACK_ALIGN
            start = _align_down(cursor - size, align)
            if start < memory.origin:
                raise area.node.error(f"does not fit in memory {memory.name!r} after alignment")
            if area.pool is not None:
                # An open-ended pool shrinks to stay inside the memory after alignment.
                size = min(size, cursor - start) if area.size is None else size
                pool = area.pool
                mark = pool.node.doc.key_mark(pool.node.path)
                pool_result[pool.name] = Pool(pool.name, memory.name, pool.kind, size, start, mark)
            else:
                stack_result[area.stack] = Stack(memory.name, size, start)
            cursor = start
    ordered_pools = {p.name: pool_result[p.name] for p in pools}
    return ordered_pools, stack_result


def _check_room(here: list[_Area], memory: Memory, holds_image: bool, file: str) -> int:
    """Check that the areas fit `memory`; the bytes they leave."""
    sized = sum(area.size or 0 for area in here)
    open_ended = [area for area in here if area.size is None]
    if len(open_ended) > 1:
        raise open_ended[1].node.error(
            f"only one pool in memory {memory.name!r} may leave out its size"
        )
    if open_ended and holds_image:
        raise open_ended[0].node.error(
            f"give this pool a size: memory {memory.name!r} also holds image sections"
        )
    if sized > memory.size:
        raise _room_error(
            here,
            memory.size,
            file,
            f"pools and stacks in memory {memory.name!r} need {sized} bytes; it has {memory.size}",
        )
    rest = memory.size - sized
    if holds_image and here and rest < IMAGE_ROOM:
        raise _room_error(
            here,
            memory.size - IMAGE_ROOM,
            file,
            f"pools and stacks leave {rest} bytes of memory {memory.name!r} for the image "
            f"sections it holds; leave at least {IMAGE_ROOM}",
        )
    if open_ended and rest < POOL_ALIGN:
        raise open_ended[0].node.error(f"no room left in memory {memory.name!r} for this pool")
    return rest
