"""The default: the cheapest algorithm that settles the question, within the budget.

Both greedy orders first (milliseconds even for 100k blocks); when neither meets the lower
bound (or the budget's goal), where the exact search can afford a real try: the exact
search on the coalesced blocks (`coalesce`, stacks first) for COALESCED_SHARE of the
time, then, where coalescing chains first leaves fewer blocks, on those for
COALESCED_SHARE of the rest (on the time x memory strips of the benchmarks it leaves
a tenth to a third fewer, and finds peaks up to 8% lower), then on the
blocks themselves from the best placement so far; elsewhere the better greedy order
stands. Places of windows.LARGE blocks or more go from the greedy-size placement to
`windows` instead (the hot windows of the timeline searched, the rest placed around them).
Places of more than MANY blocks search each coalescing of PORTFOLIO in turn
instead, each with the exact search's rounds and then its seeded dives (`exact.dive`).

The exact search's nodes each cost time in proportion to the blocks, so it gets
EFFORT / blocks nodes (at most the budget's): about the same time, a second or so here,
whatever the size. One try at a target under one of its three orders of the blocks takes
twice as many nodes as there are blocks; where the share does not cover a first try under
each order (above about 7000 blocks), or the blocks meet in more pairs than its table
takes, there is no search. Hill climbing is no help there: on the random workloads of
benchmarks/planner.py it took seconds to gain 16 bytes in 1.2 MB at 10,000 blocks and 208
bytes in 1.3 MB at 100,000, each of its steps placing every block again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from memplace.planner.blocks import DEFAULT_BUDGET, Block, Budget, Layout, layout, lower_bound
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

COALESCED_SHARE = 0.5
"""The part of the search time spent on the coalesced blocks (`coalesce`), where there are
fewer of them than blocks."""
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
SEARCH_SHARE = 0.25
"""On places of MANY blocks, the part of each coalescing's time for the exact search's
rounds; seeded dives (`exact.dive`) take the rest."""
MANY_SHARE = 0.9
"""The part of the time the coalesced searches of PORTFOLIO share."""
EFFORT = 300_000_000
"""Search nodes times blocks the exact search may spend in one call of `auto`."""


def auto(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Layout:
    started = time.monotonic()
    bound = lower_bound(blocks)
    goal = max(bound, budget.goal or 0)
    best = layout(
        blocks, place_in_order(blocks, size_order(blocks)), algorithm="greedy-size", bound=bound
    )
    if best.peak <= goal:
        return best
    if len(blocks) >= LARGE:
        return improve_windows(blocks, budget, best, bound, goal)
    conflicts = conflict_counts(blocks)
    other = layout(
        blocks,
        place_in_order(blocks, conflict_order(blocks, conflicts)),
        algorithm="greedy-conflicts",
        bound=bound,
    )
    if other.peak < best.peak:
        best = other
    first_try = min(budget.nodes, EFFORT // len(blocks))
    affordable = first_try >= 2 * len(blocks) * len(HEURISTICS)
    if best.peak <= goal or not affordable or sum(conflicts) // 2 > MAX_PAIRS:
        return best
    if len(blocks) > MANY:
        left = budget.time_limit - (time.monotonic() - started)
        best = _portfolio(blocks, replace(budget, time_limit=left), best, bound, goal)
    else:
        left = budget.time_limit - (time.monotonic() - started)
        merged = coalesce(blocks)
        share = left * COALESCED_SHARE
        best = _coalesced(blocks, merged, replace(budget, time_limit=share), best, bound)
        if best.peak <= goal:
            return best
        chained = coalesce(blocks, chains_first=True)
        if len(chained.blocks) < len(merged.blocks):
            left = budget.time_limit - (time.monotonic() - started)
            share = left * COALESCED_SHARE
            best = _coalesced(blocks, chained, replace(budget, time_limit=share), best, bound)
    if best.peak <= goal:
        return best
    left = budget.time_limit - (time.monotonic() - started)
    return improve(blocks, replace(budget, time_limit=left), best, bound)


def _portfolio(
    blocks: Sequence[Block], budget: Budget, best: Layout, bound: int, goal: int
) -> Layout:
    """`best`, or the best offsets the exact search finds for the blocks coalesced in each
    of the ways of PORTFOLIO, in turn, sharing MANY_SHARE of the time equally."""
    until = time.monotonic() + budget.time_limit * MANY_SHARE
    for k, (chains_first, pairing, loose) in enumerate(PORTFOLIO):
        if best.peak <= goal:
            break
        merged = coalesce(blocks, chains_first=chains_first, pairing=pairing, loose=loose)
        share = max(0.0, until - time.monotonic()) / (len(PORTFOLIO) - k)
        best = _coalesced(blocks, merged, replace(budget, time_limit=share), best, bound, True)
    return best


def _coalesced(
    blocks: Sequence[Block],
    merged: Coalesced,
    budget: Budget,
    best: Layout,
    bound: int,
    dives: bool = False,
) -> Layout:
    """`best`, or the better offsets the exact search finds for the coalesced blocks (with
    `dives`, its rounds for SEARCH_SHARE of the time and seeded dives for the rest)."""
    if len(merged.blocks) == len(blocks):
        return best
    start = min(greedy_size(merged.blocks), greedy_conflicts(merged.blocks), key=_peak)
    if not dives:
        found = improve(merged.blocks, budget, start)
    else:
        until = time.monotonic() + budget.time_limit
        found = improve(
            merged.blocks, replace(budget, time_limit=budget.time_limit * SEARCH_SHARE), start
        )
        if not found.optimal:
            left = max(0.0, until - time.monotonic())
            found = dive(merged.blocks, replace(budget, time_limit=left), found)
    if found.peak >= best.peak:
        return best
    offsets = merged.expand(found.offsets, len(blocks))
    return layout(blocks, offsets, algorithm=found.algorithm or "exact", bound=bound)


def _peak(found: Layout) -> int:
    return found.peak
