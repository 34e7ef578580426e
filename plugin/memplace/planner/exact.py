"""The exact search: the smallest peak, proven, or the best found within the budget.

It asks `core.search` (a branch-and-bound over canonical placements in the manner of
MiniMalloc, ASPLOS 2023; see `_core.c`) whether the blocks fit a target, again and again:
- the lower bound first (most instances either fit it or are close), then the place's
  capacity while the best placement so far exceeds it, then a small step below the best
  and (once it fits) the middle of the gap between the bound and the best; with a goal in
  the budget, the goal alone, until it is met or proven out of reach;
- each question in turn with three orders of the blocks (by lifetime width, by the
  fullest section they cross, by area), each for a number of search nodes that doubles
  every round, so an easy answer under one order is not held up by a hard one;
- a round that settles nothing also gets SKYLINE_TRIES seeded dives of the skyline
  search (`core.skyline`), which finds perfect packings the orders miss but proves nothing;
- without a goal, a round that settles nothing is also followed by seeded dives of its
  own (`dive`) for as many nodes as it took: a descent by small steps, which also reaches
  capacities that asking for them at once does not;
- an answer of "fits" lowers the best peak, a proof of "does not fit" raises the bound.
It stops when the bound meets the best peak (proven optimal) or the budget runs out.
`dive` is the other way down from a placement, for places too large for the rounds to
settle much: short seeded descents of the same search, one after another, each asking
for a little less than the best.

The search keeps, for every block, the blocks it meets in time: a table that grows with
the square of the blocks live at once, so `exact` refuses more than MAX_PAIRS such pairs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from memplace.planner import core
from memplace.planner.blocks import (
    DEFAULT_BUDGET,
    Block,
    Budget,
    Clock,
    Packing,
    grain,
    lower_bound,
    packing,
    peak,
)
from memplace.planner.greedy import conflict_counts, greedy_conflicts, greedy_size

HEURISTICS = ("WAT", "TAW", "TWA")
RESTARTS = tuple(
    a + b + c
    for a in "WATZ"
    for b in "WATZ"
    for c in "WATZ"
    if len({a, b, c}) == 3 and a + b + c not in HEURISTICS
)
"""Further orders of the blocks, tried in turn once the first three have each had a round
without settling the question: a restart under another order often finds in a few nodes
what one order misses after millions."""
SKYLINE_TRIES = 16
"""Seeded dives of the skyline search per question of a round that the exact search's
orders did not settle."""
SKYLINE_NODES = 20_000
"""Nodes one dive of the skyline search may take at most (its limit grows with the exact
search's, up to this: enough to backtrack out of a few wrong
choices among a few hundred blocks; a restart under another seed does better after that)."""
NARROW = 16
"""The small step below the best peak asked for: this part of the gap to the bound."""
DIVE_NODES = 3
"""Nodes one seeded dive (`dive`) may take, per block: a first descent and a few steps
back from its end, no more; where a dive does not succeed at once, another order does
better than searching on."""
DIVE_STEP = 32
"""A seeded dive asks for a peak this part of the gap to the bound below the best."""
MAX_PAIRS = 10_000_000
"""Pairs of blocks that meet in time the exact search takes at most (its table of them
then takes 80 MB)."""


def meeting_pairs(blocks: Sequence[Block]) -> int:
    """How many pairs of blocks meet in time."""
    return sum(conflict_counts(blocks)) // 2


def exact(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
    pairs = meeting_pairs(blocks)
    if pairs > MAX_PAIRS:
        raise ValueError(
            f"{pairs} pairs of blocks meet in time; the exact search takes {MAX_PAIRS}"
        )
    start = greedy_size(blocks)
    other = greedy_conflicts(blocks)
    found = improve(blocks, budget, other if other.peak < start.peak else start)
    return replace(found, algorithm="exact")


def improve(
    blocks: Sequence[Block], budget: Budget, best: Packing, bound: int | None = None
) -> Packing:
    """Search below the peak of `best` until it is proven optimal or the budget is spent.
    The answer names the exact search as its algorithm when the search found it, and keeps
    `best`'s name otherwise. `bound` is the blocks' lower bound, when known."""
    clock = budget.clock
    step = grain(blocks)
    bound = lower_bound(blocks) if bound is None else bound
    # Peaks are multiples of the grain, so the bound rounds up to one.
    low, nodes_left = -(-bound // step) * step, budget.nodes
    limit = 2 * len(blocks)
    goal = -1 if budget.goal is None else budget.goal
    rounds = 0
    # A goal the bound has passed cannot be met: searching on would not help the caller.
    while low < best.peak and nodes_left > 0 and best.peak > goal and (goal < 0 or low <= goal):
        progress = False
        round_start = nodes_left
        # Each round adds one more order to the three, so a long search tries them all.
        orders = HEURISTICS + RESTARTS[: rounds % (len(RESTARTS) + 1)]
        targets = _targets(low, best.peak, budget.capacity, step, budget.goal)
        for target in targets:
            for heuristic in orders:
                if clock.expired() or nodes_left <= 0:
                    return _answer(blocks, best, False, bound)
                status, offsets, nodes = _search(
                    clock, blocks, heuristic, target, min(limit, nodes_left)
                )
                nodes_left -= nodes
                if status == core.FOUND:
                    best = Packing(tuple(offsets), peak(blocks, offsets), False, "exact")
                elif status == core.INFEASIBLE:
                    low = (target // step + 1) * step
                elif status == core.TIME_LIMIT:
                    return _answer(blocks, best, False, bound)
                else:
                    continue
                progress = True
                break
            if progress:
                break
        for target in targets if not progress else ():
            # The skyline search's seeded dives: they find packings (perfect ones above
            # all) the orders miss, but never prove that none exists.
            found, nodes = _skyline(
                blocks, target, rounds, budget, min(limit, SKYLINE_NODES), nodes_left
            )
            nodes_left -= nodes
            if found is not None:
                best, progress = found, True
                break
        if not progress and goal < 0:
            # Seeded dives for as many nodes as the round took.
            spend = min(round_start - nodes_left, nodes_left)
            dived = dive(
                blocks,
                replace(budget, nodes=spend, seed=budget.seed + rounds + 1),
                best,
                low,
            )
            nodes_left -= spend
            progress = dived.peak < best.peak
            best = dived if progress else best
        if not progress:
            limit *= 2
            rounds += 1
    return _answer(blocks, best, low >= best.peak, bound)


def dive(
    blocks: Sequence[Block], budget: Budget, best: Packing, bound: int | None = None
) -> Packing:
    """Seeded dives of the exact search below the peak of `best`, until the budget is spent
    or the bound (or the budget's goal) is met: each asks for a peak a small step
    (DIVE_STEP) below the best under one of the orders, its first keys raised by seeded
    noise (`core.search`), for at most DIVE_NODES nodes per block.

    On large places the exact search's own rounds stall soon after its first descents,
    which succeed or fail within a node per block, while the proof they build towards is
    out of reach: a stream of short descents in ever other orders keeps lowering the peak
    (on the 4226-block strip s102 of benchmarks/planner.py, from 1.118x to 1.10x the bound
    in 8 s). The dives prove nothing unless one happens to finish its search; `best` keeps
    its name unless a dive finds a lower peak."""
    step = grain(blocks)
    bound = lower_bound(blocks) if bound is None else bound
    low, nodes_left = -(-bound // step) * step, budget.nodes
    goal = max(low, budget.goal or 0)
    orders = HEURISTICS + RESTARTS
    for k in itertools.count():
        if best.peak <= goal or nodes_left <= 0 or budget.clock.expired():
            break
        gap = max(step, (best.peak - low) // DIVE_STEP)
        target = max(low, (best.peak - gap) // step * step)
        seed = budget.seed * 1_000_003 + k + 1
        limit = min(DIVE_NODES * len(blocks), nodes_left)
        status, offsets, nodes = _search(
            budget.clock, blocks, orders[k % len(orders)], target, limit, seed
        )
        nodes_left -= nodes
        if status == core.FOUND:
            best = Packing(tuple(offsets), peak(blocks, offsets), False, "exact")
        elif status == core.INFEASIBLE:
            low = target + step
    return _answer(blocks, best, low >= best.peak, bound)


def _skyline(
    blocks: Sequence[Block],
    target: int,
    rounds: int,
    budget: Budget,
    per_dive: int,
    nodes_left: int,
) -> tuple[Packing | None, int]:
    """A placement within `target` from this round's dives of the skyline search, each of
    at most `per_dive` nodes (None: none found), and the nodes they took."""
    spent = 0
    clock = budget.clock
    for k in range(SKYLINE_TRIES):
        if spent >= nodes_left or clock.expired():
            break
        seed = rounds * SKYLINE_TRIES + k + budget.seed * 1_000_003
        limit = min(per_dive, nodes_left - spent)
        status, offsets, nodes = core.skyline(blocks, target, seed, limit, clock.seconds())
        _count(clock, status, nodes, len(blocks))
        spent += nodes
        if status == core.FOUND:
            return Packing(tuple(offsets), peak(blocks, offsets), False, "exact"), spent
    return None, spent


def _search(
    clock: Clock, blocks: Sequence[Block], order: str, target: int, limit: int, seed: int = 0
) -> tuple[int, list[int], int]:
    """`core.search` under the user's wall clock, counted on it."""
    status, offsets, nodes = core.search(blocks, order, target, limit, clock.seconds(), seed)
    _count(clock, status, nodes, len(blocks))
    return status, offsets, nodes


def _count(clock: Clock, status: int, nodes: int, blocks: int) -> None:
    clock.nodes += nodes
    clock.work += nodes * blocks
    if status == core.TIME_LIMIT:
        clock.stopped = True


def _answer(blocks: Sequence[Block], best: Packing, proven: bool, bound: int) -> Packing:
    return packing(blocks, best.offsets, proven, best.algorithm, bound)


def _targets(
    low: int, high: int, capacity: int | None, step: int, goal: int | None = None
) -> list[int]:
    """Peaks to ask for, below `high` (the best so far) and at least `low` (proven): the
    goal alone while it is not met (a smaller peak is of no use), else the bound first."""
    if goal is not None and low < goal < high:
        return [goal // step * step]
    targets = [low]
    if capacity is not None and low < capacity < high:
        targets.append(capacity // step * step)
    # Then narrowing the gap: by a small step below the best (an easy question on large
    # instances, where the middle of the gap is often out of reach), then by half; also
    # while the place is not fitted yet, after asking for its capacity: a descent by
    # small steps reaches peaks that asking for the capacity at once does not.
    targets.append((high - max(step, (high - low) // NARROW)) // step * step)
    if capacity is None or high <= capacity:
        targets.append((low + high) // 2 // step * step)
    return [t for i, t in enumerate(targets) if low <= t < high and t not in targets[:i]]
