"""Near the lower bound on places of many blocks: search the hot windows, fill in the rest.

On a long timeline the lower bound (the most bytes live at one step) is set by a few hot
stretches of steps; elsewhere fewer bytes are live and a greedy order packs them with room
to spare. A greedy order on the whole place wastes a few percent at the hot stretches
(where nothing is to spare), and the exact search cannot afford a whole place of 10k or
more blocks. So `windows`:

1. finds the hot segments of the timeline (more than HOT of the bound live) and groups
   them into windows: the blocks live in a hot run, runs merged while their blocks meet;
2. searches each window's blocks on their own with the exact search (`exact.improve`),
   for WINDOW_NODES nodes per block;
3. places every block at its first fit: the windows' blocks first, each window's in the
   order of the offsets the search found (which first fit reproduces or lowers), then
   the rest largest first;
4. where blocks still end above the bound, adds the segments they live in to the hot ones
   and goes again from 1, for at most ROUNDS rounds, keeping the best placement.

Every limit is a count of blocks, nodes or rounds, so the answer does not depend on the
machine or its load. The cost is O(n log n) for the sweeps and first fits (see
`core.assign`) plus the searches, at most WINDOW_NODES per block of a window.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplace.planner.blocks import DEFAULT_BUDGET, Block, Budget, Packing, lower_bound, packing
from memplace.planner.exact import MAX_PAIRS, improve, meeting_pairs
from memplace.planner.greedy import greedy_conflicts, greedy_size, place_in_order, size_order

HOT = 0.85
"""A segment of the timeline is hot when more than this part of the bound is live in it."""
WINDOW_NODES = 400
"""Search nodes per block of a window, for each window's exact search."""
ROUNDS = 6
"""Rounds of growing the windows where blocks end above the bound."""
LARGE = 7500
"""Blocks from which `auto` takes `windows` after greedy by size: about where its exact
search can no longer afford a first try (`auto.EFFORT`)."""


def windows(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
    bound = lower_bound(blocks)
    goal = max(bound, budget.goal or 0)
    start = greedy_size(blocks)
    return improve_windows(blocks, budget, start, bound, goal)


def improve_windows(
    blocks: Sequence[Block], budget: Budget, best: Packing, bound: int, goal: int
) -> Packing:
    """`best`, or a better placement from searching the hot windows (see the module)."""
    if best.peak <= goal or not blocks:
        return best
    timeline = _Timeline(blocks)
    hot = [load > HOT * bound for load in timeline.loads]
    by_size = size_order(blocks)
    solved: dict[tuple[int, ...], list[int]] = {}
    # Work, as `plan` shares it: nodes times the blocks searched (a window's search costs
    # its nodes times its blocks).
    work_left = budget.nodes * len(blocks)
    for _ in range(ROUNDS):
        order: list[int] = []
        for group in timeline.windows(hot):
            if group not in solved:
                found, spent = _search(blocks, group, goal, work_left, budget)
                work_left -= spent
                solved[group] = [i for _, i in sorted(zip(found, group, strict=True))]
            order += solved[group]
        taken = set(order)
        order += [i for i in by_size if i not in taken]
        offsets = place_in_order(blocks, order)
        tried = packing(blocks, offsets, algorithm="windows", bound=bound)
        if tried.peak < best.peak:
            best = tried
        over = [i for i, at in enumerate(offsets) if at + blocks[i].size > goal]
        if not over or work_left <= 0 or budget.clock.expired():
            break
        grown = False
        for i in over:
            first, end = timeline.spans[i]
            for segment in range(first, end):
                grown |= not hot[segment]
                hot[segment] = True
        if not grown:
            break
    return best


def _search(
    blocks: Sequence[Block], group: tuple[int, ...], goal: int, work_left: int, budget: Budget
) -> tuple[tuple[int, ...], int]:
    """Offsets of the window's blocks from the exact search, and the work it took (nodes
    times the window's blocks)."""
    mine = [blocks[i] for i in group]
    start = min(greedy_size(mine), greedy_conflicts(mine), key=lambda found: found.peak)
    nodes = min(work_left // len(mine), WINDOW_NODES * len(mine))
    if nodes <= 0 or meeting_pairs(mine) > MAX_PAIRS:
        return start.offsets, 0
    search = Budget(nodes=nodes, goal=goal, seed=budget.seed, clock=budget.clock)
    found = improve(mine, search, start)
    return found.offsets, nodes * len(mine)


class _Timeline:
    """The steps where some block starts or ends, the bytes live in each segment between
    two of them, and the segments each block lives in (`spans`: from the first, up to
    and not with the end)."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self.blocks = blocks
        self.edges = sorted({b.first for b in blocks} | {b.last + 1 for b in blocks})
        delta = [0] * len(self.edges)
        segment = {edge: k for k, edge in enumerate(self.edges)}
        self.spans = [(segment[b.first], segment[b.last + 1]) for b in blocks]
        for block, (first, end) in zip(blocks, self.spans, strict=True):
            delta[first] += block.size
            delta[end] -= block.size
        live = 0
        self.loads = []
        for change in delta:
            live += change
            self.loads.append(live)

    def windows(self, hot: Sequence[bool]) -> list[tuple[int, ...]]:
        """The blocks live in each run of hot segments, runs joined while their blocks'
        lifetimes overlap; hottest window first."""
        before = [0]
        for flag in hot:
            before.append(before[-1] + flag)
        # Each block that touches a hot segment, with the first hot segment it touches.
        touching = [
            (before[first], i)
            for i, (first, end) in enumerate(self.spans)
            if before[end] > before[first]
        ]
        touching.sort(key=lambda pair: (self.spans[pair[1]][0], pair[1]))
        groups: list[list[int]] = []
        reach = -1
        for _, i in touching:
            first, end = self.spans[i]
            if not groups or first >= reach:
                groups.append([])
            groups[-1].append(i)
            reach = max(reach, end)
        return [
            tuple(group)
            for group in sorted(
                groups, key=lambda group: (-max(self._load(i) for i in group), group[0])
            )
        ]

    def _load(self, i: int) -> int:
        first, end = self.spans[i]
        return max(self.loads[first:end])
