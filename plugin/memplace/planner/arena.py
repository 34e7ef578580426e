"""Arenas: the reservation that a pool's dynamic buffers get their memory from at run time.

A dynamic buffer's memory comes from an arena the generated C keeps in its pool: it hands
memory out from the bottom up and takes it back in reverse order. Where a buffer lands
then depends on the order the application allocates in, not on a planned offset, so
planning dynamic buffers one by one would let static buffers share bytes the arena hands
out. Instead, the dynamic buffers that one core takes from one pool become one block, the
arena, planned like any buffer: `reservation` bytes (the most that allocations in any
order can reach at one step, alignment padding included), live from the first step of any
of them to the last step of any. No static buffer can then overlap the arena while it
lives. Each core has its own arena per pool, so two images never hand out the same bytes;
where several cores keep arenas in one pool, each arena lives over the whole timeline,
since the cores walk their steps at their own pace.

Which pool each arena takes is decided by planning the dynamic buffers one by one first;
the plan is then made again with each arena pinned to that pool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memplace.board import POOL_ALIGN, Board
from memplace.errors import InputError, PlanningError
from memplace.planner.blocks import Block
from memplace.planner.model import Placement, Plan
from memplace.scopes import resolve_buffer
from memplace.workload import Buffer, Workload

# `planner(workload, share)` plans `workload` within `share` of the time limit.
Planner = Callable[[Workload, float], Plan]


@dataclass(frozen=True)
class Arena:
    """One core's arena in one pool: `size` bytes at `offset`, live over [first, last]."""

    pool: str
    core: str
    offset: int
    size: int
    align: int
    first: int
    last: int
    buffers: tuple[str, ...]


def user_core(board: Board, users: Sequence[str]) -> str:
    """The core that runs a buffer's code: its first user context's; else the first core."""
    for user in users:
        if user in board.contexts:
            return board.contexts[user].core
    return next(iter(board.cores))


def reservation(blocks: Sequence[Block]) -> int:
    """Bytes an arena needs to hand out the blocks live at any one step, in any order.

    Every allocation starts at most `A - g` bytes above the end of the one below it, where
    `A` is the largest alignment asked for and `g` divides every size, every alignment and
    the pool's alignment (so every address handed out is a multiple of `g`): rounding up to
    an alignment skips less than it, and a freed allocation's padding is at most that too.
    """
    if not blocks:
        return 0
    grain = POOL_ALIGN
    for block in blocks:
        grain = math.gcd(grain, block.size, block.align)
    padding = max(block.align for block in blocks) - grain
    steps = range(min(b.first for b in blocks), max(b.last for b in blocks) + 1)
    return max(sum(b.size + padding for b in blocks if b.first <= s <= b.last) for s in steps)


def plan_with_arenas(board: Board, workload: Workload, planner: Planner) -> Plan:
    """Plan `workload`, with the dynamic buffers of each core and pool in one arena."""
    if not any(buffer.dynamic for buffer in workload.buffers):
        return planner(workload, 1.0)
    first = planner(workload, 0.5)
    groups = _groups(board, workload, first)
    arena_buffers = [
        _arena_buffer(board, workload, key, members, groups) for key, members in groups.items()
    ]
    static = tuple(buffer for buffer in workload.buffers if not buffer.dynamic)
    try:
        second = planner(replace(workload, buffers=(*static, *arena_buffers)), 0.5)
    except PlanningError as error:
        raise _arena_error(error, arena_buffers, groups) from None
    return _expand(workload, second, groups)


def arenas(board: Board, plan: Plan, users: dict[str, tuple[str, ...]]) -> list[Arena]:
    """The arenas of a plan, by pool (board order) then core (board order): the dynamic
    placements of one core in one pool, which all give the arena's offset."""
    found = []
    for pool in plan.pools:
        for core in board.cores:
            members = [
                p
                for p in plan.in_place(pool.name)
                if p.dynamic and user_core(board, users.get(p.name, ())) == core
            ]
            if members:
                found.append(_arena_of(pool.name, core, members))
    return found


def arena_name(pool: str, core: str) -> str:
    """The name of an arena's block while it is planned (no buffer can have it)."""
    return f"arena.{pool}.{core}"


def _arena_of(pool: str, core: str, members: Sequence[Placement]) -> Arena:
    offsets = {p.offset for p in members}
    if len(offsets) > 1:
        names = ", ".join(p.name for p in members)
        raise InputError(
            f"dynamic buffers {names} of core {core} share the arena in pool {pool}, but "
            f"the plan gives them different offsets ({', '.join(map(str, sorted(offsets)))})",
            key="placements",
        )
    blocks = [Block(p.size, p.first, p.last, p.align) for p in members]
    return Arena(
        pool=pool,
        core=core,
        offset=offsets.pop(),
        size=reservation(blocks),
        align=max(p.align for p in members),
        first=min(p.first for p in members),
        last=max(p.last for p in members),
        buffers=tuple(p.name for p in members),
    )


GroupKey = tuple[str, str]  # (pool, core)


def _groups(board: Board, workload: Workload, first: Plan) -> dict[GroupKey, list[Buffer]]:
    groups: dict[GroupKey, list[Buffer]] = {}
    for buffer in workload.buffers:
        if not buffer.dynamic:
            continue
        pool = first.placement(buffer.name).pool or ""
        core = user_core(board, resolve_buffer(board, buffer).users)
        groups.setdefault((pool, core), []).append(buffer)
    return groups


def _arena_buffer(
    board: Board,
    workload: Workload,
    key: GroupKey,
    members: Sequence[Buffer],
    groups: dict[GroupKey, list[Buffer]],
) -> Buffer:
    pool, core = key
    users: list[str] = []
    for buffer in members:
        users += [u for u in resolve_buffer(board, buffer).users if u not in users]
    shared = sum(1 for other_pool, _ in groups if other_pool == pool) > 1
    blocks = [Block(b.size, b.first, b.last, b.align) for b in members]
    return Buffer(
        name=arena_name(pool, core),
        kind="buffer",
        size=reservation(blocks),
        align=max(b.align for b in members),
        first=0 if shared else min(b.first for b in members),
        last=len(workload.steps) - 1 if shared else max(b.last for b in members),
        scope=f"global.{pool}",
        users=tuple(users),
        dynamic=True,
        priority=max(b.priority for b in members),
    )


def _expand(workload: Workload, second: Plan, groups: dict[GroupKey, list[Buffer]]) -> Plan:
    """`second` with each arena's block given back as its dynamic buffers, in workload order."""
    arena_of = {b.name: key for key, members in groups.items() for b in members}
    placements = []
    for buffer in workload.buffers:
        if not buffer.dynamic:
            placements.append(second.placement(buffer.name))
            continue
        pool, core = arena_of[buffer.name]
        block = second.placement(arena_name(pool, core))
        placements.append(
            Placement(
                name=buffer.name,
                kind=buffer.kind,
                pool=pool,
                stack=None,
                offset=block.offset,
                size=buffer.size,
                align=buffer.align,
                first=buffer.first,
                last=buffer.last,
                reason=(
                    f"dynamic: from core {core}'s arena in {pool}, {block.size} bytes at "
                    f"offset {block.offset} over steps {block.first}..{block.last}"
                ),
                dynamic=True,
            )
        )
    return replace(second, placements=tuple(placements))


def _arena_error(
    error: PlanningError, arena_buffers: Sequence[Buffer], groups: dict[GroupKey, list[Buffer]]
) -> PlanningError:
    for block, (key, members) in zip(arena_buffers, groups.items(), strict=True):
        if block.name == error.buffer:
            pool, core = key
            lacks = error.shortfalls.get(pool)
            short = f"; {pool} lacks {lacks} bytes" if lacks is not None else ""
            return PlanningError(
                f"the arena of core {core} in pool {pool} ({block.size} bytes for dynamic "
                f"buffers {', '.join(b.name for b in members)}, steps {block.first}..{block.last}) "
                f"does not fit beside the pool's other buffers{short}",
                members[0].name,
                error.shortfalls,
            )
    return PlanningError(
        f"with the arenas of the dynamic buffers reserved, {error}", error.buffer, error.shortfalls
    )
