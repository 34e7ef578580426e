"""Static memory planning: which place each buffer takes, and at which offset.

`plan` resolves every buffer's candidate places (`scopes`), assigns each to one of them,
fastest first (`assign`, which documents the objective), then computes each place's
offsets with the chosen algorithm from `ALGORITHMS`, within the place's capacity and the
time limit. An independent check (`check`) verifies every place before the plan is
returned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memplace.board import Board
from memplace.errors import InputError
from memplace.planner.assign import Assigned, assign_places, block_of
from memplace.planner.auto import auto
from memplace.planner.blocks import (
    DEFAULT_TIME_LIMIT,
    Algorithm,
    Block,
    Budget,
    Layout,
    layout,
    lower_bound,
    peak,
)
from memplace.planner.check import placement_problems
from memplace.planner.exact import exact
from memplace.planner.greedy import greedy_conflicts, greedy_size
from memplace.planner.hillclimb import hill_climb
from memplace.planner.model import Placement, Plan, PoolUsage, StackUsage
from memplace.scopes import Candidates, Place, resolve, stack_sizes
from memplace.source import suggest
from memplace.workload import Buffer, Workload

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_TIME_LIMIT",
    "Algorithm",
    "Block",
    "Budget",
    "Layout",
    "Placement",
    "Plan",
    "PoolUsage",
    "StackUsage",
    "plan",
]

ALGORITHMS: dict[str, Algorithm] = {
    "auto": auto,
    "exact": exact,
    "greedy-conflicts": greedy_conflicts,
    "greedy-size": greedy_size,
    "hill-climb": hill_climb,
}
DEFAULT_ALGORITHM = "auto"

ASSIGN_SHARE = 0.25
"""The part of the time limit that second chances in pool assignment may take."""


def plan(
    board: Board,
    workload: Workload,
    algorithm: str = DEFAULT_ALGORITHM,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
) -> Plan:
    """Place every buffer and constant of `workload` on `board`.

    `time_limit` bounds, in seconds, the search for smaller peaks over all places; `seed`
    feeds the randomised algorithms (hill-climb)."""
    if algorithm not in ALGORITHMS:
        raise InputError(
            f"no algorithm {algorithm!r}; {suggest(algorithm, ALGORITHMS)}", key="--algorithm"
        )
    if not time_limit > 0:
        raise InputError(f"a time limit is a positive number of seconds, not {time_limit}")
    deadline = time.monotonic() + time_limit
    candidates = resolve(board, workload)
    capacities = _capacities(board)
    # The greedy algorithms assign greedily too; the others give spilled buffers a second
    # chance at faster places, with an offset search there.
    searching = algorithm not in ("greedy-size", "greedy-conflicts")
    assigned = assign_places(candidates, capacities, time_limit * ASSIGN_SHARE * searching)
    offsets, optimal = _offsets(candidates, capacities, assigned, algorithm, deadline, seed)
    placements = tuple(
        Placement(
            name=c.buffer.name,
            kind=c.buffer.kind,
            pool=assigned.place[i].pool,
            stack=assigned.place[i].stack,
            offset=offsets[i],
            size=c.buffer.size,
            align=c.buffer.align,
            first=c.buffer.first,
            last=c.buffer.last,
            reason=_reason(c, assigned.place[i], assigned.skipped[i]),
            contents=constant_contents(c.buffer),
            dynamic=c.buffer.dynamic,
        )
        for i, c in enumerate(candidates)
    )
    return Plan(
        board=board.name,
        workload=workload.name,
        algorithm=algorithm,
        steps=workload.steps,
        pools=_pool_usage(board, placements, optimal),
        placements=placements,
        stacks=_stack_usage(board, placements),
    )


def constant_contents(buffer: Buffer) -> bytes | None:
    """A constant's bytes: from its data file, or a fill derived from its name."""
    if buffer.kind != "constant":
        return None
    if buffer.data is not None:
        return buffer.data
    seed = sum(buffer.name.encode()) & 0xFF
    return bytes((seed + 7 * i + (i >> 8)) & 0xFF for i in range(buffer.size))


def _capacities(board: Board) -> dict[Place, int]:
    capacities = {Place(pool=name): pool.size for name, pool in board.pools.items()}
    capacities.update(stack_sizes(board))
    return capacities


def _offsets(
    candidates: Sequence[Candidates],
    capacities: dict[Place, int],
    assigned: Assigned,
    algorithm: str,
    deadline: float,
    seed: int,
) -> tuple[list[int], dict[Place, bool]]:
    """Each place's offsets from `algorithm`, checked; and whether each is proven optimal.

    Places where the assignment's own first fit already meets the lower bound need no
    search; the others share what is left of the time limit in turn."""
    offsets = list(assigned.offset)
    members: dict[Place, list[int]] = {place: [] for place in capacities}
    for i, place in enumerate(assigned.place):
        members[place].append(i)
    blocks = [block_of(c) for c in candidates]
    settled = {
        place: lower_bound([blocks[i] for i in group])
        == peak([blocks[i] for i in group], [offsets[i] for i in group])
        for place, group in members.items()
    }
    open_places = sum(1 for place in members if not settled[place])
    optimal: dict[Place, bool] = {}
    for place, group in members.items():
        if not group:
            continue
        mine = [blocks[i] for i in group]
        kept = layout(mine, [offsets[i] for i in group])
        if settled[place] and algorithm == "auto":
            found = kept
        else:
            share = max(0.0, deadline - time.monotonic()) / max(1, open_places)
            open_places -= 0 if settled[place] else 1
            budget = Budget(capacity=capacities[place], time_limit=share, seed=seed)
            found = ALGORITHMS[algorithm](mine, budget)
            # Keep the assignment's offsets where the algorithm could not fit the place,
            # and, for auto (which promises the best it finds), where they are better.
            if found.peak > capacities[place] or (algorithm == "auto" and kept.peak < found.peak):
                found = kept
        names = [candidates[i].buffer.name for i in group]
        problems = placement_problems(mine, found.offsets, capacities[place], names)
        if problems:
            raise AssertionError(f"planner produced an unsound placement: {problems[0]}")
        for i, at in zip(group, found.offsets, strict=True):
            offsets[i] = at
        optimal[place] = found.optimal
    return offsets, optimal


def _reason(options: Candidates, place: Place, skipped: Sequence[Place]) -> str:
    buffer = options.buffer
    users = ", ".join(options.users)
    priority = f" (priority {buffer.priority})" if buffer.priority else ""
    if buffer.scope == "local":
        return f"local: a frame on {place.stack}'s stack at step {buffer.first}"
    if options.pinned:
        return f"pinned by scope {buffer.scope}" + (" and pools" if buffer.pools else "")
    if place.stack is not None:
        return f"small enough for {place.stack}'s stack (max_stack_alloca)"
    if skipped:
        full = ", ".join(p.label for p in skipped)
        return f"spilled: {full} full; next fastest pool reachable by {users}{priority}"
    return f"fastest pool reachable by {users}{priority}"


def _pool_usage(
    board: Board, placements: Sequence[Placement], optimal: dict[Place, bool]
) -> tuple[PoolUsage, ...]:
    usage = []
    for pool in board.pools.values():
        members = [p for p in placements if p.pool == pool.name]
        blocks = [Block(p.size, p.first, p.last, p.align) for p in members]
        used = peak(blocks, [p.offset for p in members])
        bound = lower_bound(blocks)
        usage.append(
            PoolUsage(
                name=pool.name,
                kind=pool.kind,
                memory=pool.memory,
                address=pool.address,
                capacity=pool.size,
                used=used,
                lower_bound=bound,
                optimal=used == bound or optimal.get(Place(pool=pool.name), False),
            )
        )
    return tuple(usage)


def _stack_usage(board: Board, placements: Sequence[Placement]) -> tuple[StackUsage, ...]:
    usage = []
    for context in board.stack_contexts():
        if context.stack is None:
            continue
        members = [p for p in placements if p.stack == context.name]
        planned = max((p.offset + p.size for p in members), default=0)
        usage.append(
            StackUsage(
                context=context.name,
                memory=context.stack.memory,
                address=context.stack.address,
                budget=context.stack.size,
                planned=planned,
            )
        )
    return tuple(usage)
