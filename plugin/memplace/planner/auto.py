"""The default: the cheapest algorithm that settles the question, within the budget.

Both greedy orders first (milliseconds even for 100k blocks); when neither meets the lower
bound (or the budget's goal), where the exact search can afford a real try, the exact
search on three instances: the coalesced blocks (`coalesce`, stacks first), where
coalescing chains first leaves fewer blocks those too (on the time x memory strips of the
benchmarks a tenth to a third fewer, and peaks up to 8% lower), and the blocks
themselves, from the best placement so far. They take turns (`_ladder`), each turn with
twice the nodes of the one before, until one meets the goal or proves its peak optimal, or
the budget is spent: what one of them finds at once is found at once whatever the budget,
so the time to fit does not grow with it. Each search starts each turn afresh from its
best, under other seeds, and dives between its rounds (`exact.improve`): a descent that
meets a goal (pool assignment's "does it fit?") sooner than asking for the goal at once.
Where both greedy orders overfill the place (a packing problem: MiniMalloc's instances in
their 1 MiB), the capacity is a goal too: the turns stop once it fits (the search asks for
the lower bound first, so a peak it meets at once is still proven optimal at once). Places
of windows.LARGE blocks or more go from the greedy-size placement to `windows` instead (the
hot windows of the timeline searched, the rest placed around them). Places of more than
MANY blocks search each coalescing of PORTFOLIO in turn instead, each with the exact
search's rounds and then its seeded dives (`exact.dive`), then eight more the
same way, each for a quick search, the one that found the lowest peak then for a longer
one, then the blocks themselves with what is left: the matched coalescings of MATCHED
(`coalesce(matched=True)`: stacks only where their size matches a neighbour's), PORTFOLIO's
loose one within the slacks of LOOSE_SLACKS (bytes left empty only where the peak has
room), and matched ones with such loose chains (MATCHED_LOOSE). Which coalescing finds the
lowest peak differs from place to place: a matched one is best where the others glue
together blocks of one lifetime that belong apart, a loose one within a slack where every
step is nearly full. Every placement of coalesced blocks is settled before it counts: each
block moved down, lowest first, into any room the coalescing kept it from.

Budgets are search nodes, never seconds, so the answer depends on the blocks and the
budget alone. A node costs time in proportion to the blocks searched, so a search on
coalesced blocks gets as many more nodes as there are fewer of them (the budget's `nodes`
count nodes on the blocks themselves), and the exact search gets at most EFFORT / blocks
nodes for its first try: one try at a target under one of its three orders of the blocks
takes twice as many nodes as there are blocks; where EFFORT does not cover a first try
under each order (above about 7000 blocks), or the blocks meet in more pairs than its
table takes, there is no search. Hill climbing is no help there: on the random workloads
of benchmarks/planner.py it took seconds to gain 16 bytes in 1.2 MB at 10,000 blocks and
208 bytes in 1.3 MB at 100,000, each of its steps placing every block again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace

from memplace.planner.blocks import DEFAULT_BUDGET, Block, Budget, Packing, lower_bound, packing
from memplace.planner.coalesce import Coalesced, Pairing, coalesce
from memplace.planner.exact import HEURISTICS, MAX_PAIRS, dive, improve
from memplace.planner.greedy import (
    conflict_counts,
    conflict_order,
    greedy_conflicts,
    greedy_size,
    place_in_order,
    size_order,
)
from memplace.planner.windows import LARGE, improve_windows

WEIGHTS = (2, 1, 1)
"""The nodes of each turn of `_ladder`, in parts: the coalesced blocks (stacks first), the
blocks coalesced chains first, the blocks themselves."""
FIRST_TURN = 16
"""Nodes per block of the first turn of `_ladder`, in all; each turn doubles them."""
MANY = 1000
"""Blocks above which a place is searched through each coalescing of PORTFOLIO: the exact
search on the blocks themselves settles little there."""
PORTFOLIO: tuple[tuple[bool, Pairing, float], ...] = (
    (False, None, 0.0),
    (True, None, 0.0),
    (True, "short", 0.0),
    (True, "long", 0.0),
    (True, "short", 0.1),
)
"""The ways of coalescing (`chains_first`, `pairing`, `loose`) searched on places of MANY
blocks: on the time x memory strips of the benchmarks each finds the lowest peak on some,
peaks up to 10% apart."""
MATCHED: tuple[tuple[Pairing, bool], ...] = (
    ("short", False),
    ("long", False),
    ("short", True),
    ("long", True),
)
"""The matched coalescings (`coalesce(matched=True)`: `pairing`, `unique`) judged after
PORTFOLIO's searches: each gets a quick search of JUDGED_TRY of the budget, as do those of
LOOSE_SLACKS and MATCHED_LOOSE, and the one whose quick search finds the lowest peak goes
on with JUDGED_SHARE. They find the lowest peak on some places where every coalescing of
PORTFOLIO glues together blocks of one lifetime that belong apart (the large strip s101 of
the benchmarks: 1.053x its lower bound, against 1.082x), and which of them does differs
from place to place."""
LOOSE_SLACKS: tuple[tuple[float, float], ...] = ((0.1, 0.01), (0.2, 0.03))
"""The loose coalescing of PORTFOLIO again, with (`loose`, `slack`): loose chains only
where they leave every step within `slack` of the lower bound (`coalesce(..., slack=...)`:
bytes left empty only where the peak has room). On the large strip s102 of the benchmarks
the loose coalescing of PORTFOLIO leaves its own lower bound at 1.065x the blocks' and its
search finds 1.086x; within 1% its quick search finds 1.076x, chaining sizes a fifth apart
within 3% 1.062x. Which one finds the lowest peak differs from place to place as much as
which coalescing does (on s102, of 72 such pairs, sizes a twentieth to three tenths apart,
slacks of 0.5% to 4%, the quick searches found 1.062x to 1.17x), so they are judged too."""
MATCHED_LOOSE: tuple[tuple[Pairing, bool, float, float], ...] = (
    ("short", True, 0.1, 0.03),
    ("long", True, 0.1, 0.03),
)
"""Matched coalescings with loose chains within a slack (`pairing`, `unique`, `loose`,
`slack`), judged too: on s101 they leave 495 and 481 blocks where the matched rules alone
leave 627 and 607, and their quick searches find 1.048x and 1.051x, not 1.082x and 1.077x."""
JUDGED_TRY = 0.01
"""The part of the budget each judged coalescing's quick search gets."""
JUDGED_SHARE = 0.02
"""The part of the budget the best judged coalescing goes on with: with the eight quick
searches, a tenth of it, as when four were judged and the best went on with 6%. On the 20
large strips of over MANY blocks of benchmarks/planner.py's seeds 100, 200 and 300 (with
`settled`) judging the eight found lower peaks than judging the four on 9, the same on the
other 11. Going on longer means taking from PORTFOLIO's share: with 4% (MANY_SHARE 2% less)
s303 went lower (1.0102x rather than 1.0135x), with 6% s306 higher (1.0318x rather than
1.0296x, above its peak before), the rest the same. So PORTFOLIO's searches keep their
shares, and what they find stays found; the search on the blocks themselves gets what is
left."""
MATCHED_LEFT = 0.5
"""A matched coalescing that leaves more than this part of the blocks is not searched (its
share stays with the search on the blocks themselves), nor, where a plain one (`unique`
False) does, the unique one of its pairing (made after it): on random workloads, where few
blocks share a lifetime, they leave three quarters of them and found nothing in 50% more
time (the unique ones cost 0.6 s more to make on 6000 blocks, for 2-4 blocks more left);
on the strips they leave a tenth to a fifth."""
SEARCH_SHARE = 0.25
"""On places of MANY blocks, the part of each coalescing's nodes for the exact search's
rounds; seeded dives (`exact.dive`) take the rest."""
MANY_SHARE = 0.9
"""The part of the budget the coalesced searches of PORTFOLIO share."""
EFFORT = 300_000_000
"""Search nodes times blocks the exact search must be able to spend on a first try."""


def auto(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
    bound = lower_bound(blocks)
    goal = max(bound, budget.goal or 0)
    best = packing(
        blocks, place_in_order(blocks, size_order(blocks)), algorithm="greedy-size", bound=bound
    )
    if best.peak <= goal:
        return best
    if len(blocks) >= LARGE:
        return improve_windows(blocks, budget, best, bound, goal)
    conflicts = conflict_counts(blocks)
    other = packing(
        blocks,
        place_in_order(blocks, conflict_order(blocks, conflicts)),
        algorithm="greedy-conflicts",
        bound=bound,
    )
    if other.peak < best.peak:
        best = other
    if budget.capacity is not None and best.peak > budget.capacity:
        # Both greedy orders overfill the place: a packing problem, whose answer is the
        # first placement that fits (the search still asks for the lower bound first, so
        # a peak it meets at once is proven optimal at once).
        goal = max(goal, budget.capacity)
    first_try = min(budget.nodes, EFFORT // len(blocks))
    affordable = first_try >= 2 * len(blocks) * len(HEURISTICS)
    if best.peak <= goal or not affordable or sum(conflicts) // 2 > MAX_PAIRS:
        return best
    if len(blocks) > MANY:
        return _portfolio(blocks, budget, best, bound, goal)
    return _ladder(blocks, budget, best, bound, goal)


class _Rung:
    """One of the instances `_ladder` searches: coalesced blocks (or the blocks
    themselves, `merged` None) and the best placement of them found so far."""

    def __init__(self, blocks: Sequence[Block], merged: Coalesced | None, best: Packing) -> None:
        self.merged = merged
        if merged is None:
            self.blocks: Sequence[Block] = blocks
            self.best = best
        else:
            self.blocks = merged.blocks
            self.best = min(greedy_size(merged.blocks), greedy_conflicts(merged.blocks), key=_peak)


def _ladder(
    blocks: Sequence[Block], budget: Budget, best: Packing, bound: int, goal: int
) -> Packing:
    """`best`, or the best offsets the exact search finds on the coalesced blocks and on the
    blocks themselves, taking turns with ever more nodes (see the module doc)."""
    n = len(blocks)
    merged = coalesce(blocks)
    rungs = [_Rung(blocks, merged, best)] if len(merged.blocks) < n else []
    chained = coalesce(blocks, chains_first=True)
    if len(chained.blocks) < len(merged.blocks):
        rungs.append(_Rung(blocks, chained, best))
    rungs.append(_Rung(blocks, None, best))
    weights = WEIGHTS[-len(rungs) :] if len(rungs) < len(WEIGHTS) else WEIGHTS
    work = budget.nodes * n  # nodes times blocks
    turn = FIRST_TURN * n * n
    start = budget.clock.work
    for turns in itertools.count():
        left = work - (budget.clock.work - start)
        if left <= 0 or budget.clock.expired():
            break
        # The last turn takes all that is left, rather than leave less than a turn.
        share = left if left < 3 * turn else turn
        spent = budget.clock.work
        for rung, weight in zip(rungs, weights, strict=True):
            nodes = share * weight // sum(weights) // len(rung.blocks)
            if rung.merged is None:
                rung.best = best
            # Each search starts afresh from its best under other seeds, and the turns stop
            # at the goal. The coalesced searches look for a smaller peak, with seeded
            # dives between their rounds: a descent that reaches goals that asking for
            # them at once does not (MiniMalloc's J in a pool of 1034240 bytes) and fits
            # MiniMalloc's F with a tenth of the nodes. The search on the blocks themselves
            # asks for the caller's goal alone where it is the lower bound (a perfect
            # packing, or its proof that none exists: MiniMalloc's H, which its rounds
            # pack and dives delay); a proof that it cannot be met ends the turns.
            direct = rung.merged is None and budget.goal is not None and goal == bound
            step = replace(
                budget,
                nodes=max(nodes, 1),
                seed=budget.seed + 1009 * turns,
                goal=goal if direct else None,
            )
            before = budget.clock.work
            found = improve(rung.blocks, step, rung.best)
            rung.best = found
            if rung.merged is None:
                if found.peak < best.peak or found.optimal:
                    best = found
                if direct and found.peak > goal and budget.clock.work - before < step.nodes * n:
                    return best  # it stopped short of its nodes: the goal is out of reach
            elif found.peak < best.peak:
                offsets = rung.merged.expand(found.offsets, n)
                best = packing(blocks, offsets, algorithm=found.algorithm or "exact", bound=bound)
            if best.peak <= goal or best.optimal:
                return best
        if budget.clock.work == spent:
            # Every search ended without a node to spend (each exhausted its tree): more
            # nodes would find nothing more.
            break
        turn *= 2
    return best


def _portfolio(
    blocks: Sequence[Block], budget: Budget, best: Packing, bound: int, goal: int
) -> Packing:
    """`best`, or the best offsets the exact search finds for the blocks coalesced in each
    of the ways of PORTFOLIO, in turn, sharing MANY_SHARE of the nodes equally; then in each
    way `_judged` makes, for JUDGED_TRY each, and on in the one that found the lowest peak
    (the first of those) for JUDGED_SHARE; then on the blocks themselves with the rest.
    Each placement of coalesced blocks is settled (`settled`) before it is compared."""
    n = len(blocks)
    work = budget.nodes * n
    start = budget.clock.work
    for chains_first, pairing, loose in PORTFOLIO:
        if best.peak <= goal:
            return best
        merged = coalesce(blocks, chains_first=chains_first, pairing=pairing, loose=loose)
        share = int(work * MANY_SHARE) // len(PORTFOLIO) // len(merged.blocks)
        best = _coalesced(blocks, merged, replace(budget, nodes=share), best, bound)
    tried: list[tuple[int, int, Coalesced, Packing]] = []
    judged = _judged(blocks)
    while best.peak > goal and (candidate := next(judged, None)) is not None:
        share = int(work * JUDGED_TRY) // len(candidate.blocks)
        found = _searched(candidate, replace(budget, nodes=share))
        best = _expanded(blocks, candidate, found, best, bound)
        tried.append((found.peak, len(tried), candidate, found))
    if tried and best.peak > goal:
        _, _, merged, found = min(tried, key=lambda each: each[:2])
        if not found.optimal:
            share = int(work * JUDGED_SHARE) // len(merged.blocks)
            found = _searched(merged, replace(budget, nodes=share), found)
            best = _expanded(blocks, merged, found, best, bound)
    left = (work - (budget.clock.work - start)) // n
    if best.peak <= goal or left <= 0:
        return best
    return improve(blocks, replace(budget, nodes=left), best, bound)


def _judged(blocks: Sequence[Block]) -> Iterator[Coalesced]:
    """The coalescings `_portfolio` judges by a quick search, made one at a time: those of
    MATCHED, LOOSE_SLACKS and MATCHED_LOOSE, less any that leaves more than MATCHED_LEFT of
    the blocks, and once a matched one of a pairing does, the other matched ones of it."""
    n = len(blocks)
    scattered: set[Pairing] = set()  # pairings whose matched coalescing left too many
    for pairing, unique in MATCHED:
        if pairing in scattered:
            continue  # it stacks less than the plain one (on random workloads, as little)
        merged = coalesce(blocks, pairing=pairing, matched=True, unique=unique)
        if len(merged.blocks) > n * MATCHED_LEFT or len(merged.blocks) == n:
            scattered.add(pairing)
        else:
            yield merged
    chains_first, loose_pairing, _ = PORTFOLIO[-1]
    for loose, slack in LOOSE_SLACKS:
        merged = coalesce(blocks, chains_first, loose_pairing, loose, slack=slack)
        if len(merged.blocks) <= n * MATCHED_LEFT:
            yield merged
    for pairing, unique, loose, slack in MATCHED_LOOSE:
        if pairing in scattered:
            continue
        merged = coalesce(
            blocks, pairing=pairing, matched=True, unique=unique, loose=loose, slack=slack
        )
        if len(merged.blocks) <= n * MATCHED_LEFT:
            yield merged


def _coalesced(
    blocks: Sequence[Block], merged: Coalesced, budget: Budget, best: Packing, bound: int
) -> Packing:
    """`best`, or the better offsets the exact search finds for the coalesced blocks."""
    if len(merged.blocks) == len(blocks):
        return best
    return _expanded(blocks, merged, _searched(merged, budget), best, bound)


def _searched(merged: Coalesced, budget: Budget, start: Packing | None = None) -> Packing:
    """The best placement of the coalesced blocks the exact search finds from `start` (by
    default the better greedy one): its rounds for SEARCH_SHARE of the nodes and seeded
    dives for the rest."""
    if start is None:
        start = min(greedy_size(merged.blocks), greedy_conflicts(merged.blocks), key=_peak)
    rounds = int(budget.nodes * SEARCH_SHARE)
    found = improve(merged.blocks, replace(budget, nodes=rounds), start)
    if not found.optimal:
        found = dive(merged.blocks, replace(budget, nodes=budget.nodes - rounds), found)
    return found


def _expanded(
    blocks: Sequence[Block], merged: Coalesced, found: Packing, best: Packing, bound: int
) -> Packing:
    """`best`, or the placement of the blocks that `found` places the coalesced ones with,
    each block then moved down as far as it goes (`settled`), where its peak is lower."""
    offsets = settled(blocks, merged.expand(found.offsets, len(blocks)))
    placed = packing(blocks, offsets, algorithm=found.algorithm or "exact", bound=bound)
    return placed if placed.peak < best.peak else best


def settled(blocks: Sequence[Block], offsets: Sequence[int]) -> list[int]:
    """`offsets` with each block at its first fit, lowest offset first: no block moves up
    (the blocks below one only move down, so its old place is still free), and one moves
    down wherever the blocks under it leave room. A coalesced placement leaves such room
    where a stack or chain keeps a block above an empty place it could have had (a loose
    chain's smaller block leaves one by design): on the large strip s102 of the benchmarks
    the loose coalescing's best placement needs 1.053x the lower bound, settled 1.047x."""
    order = sorted(range(len(blocks)), key=offsets.__getitem__)
    return place_in_order(blocks, order)


def _peak(found: Packing) -> int:
    return found.peak
