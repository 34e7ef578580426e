"""An independent check of a placement, run on every plan before it is returned.

It shares no code with the algorithms that produce offsets (only the `Block` record), so a
bug there shows here. It sweeps the steps in order, keeping the blocks live at the current
step sorted by offset. While no two live blocks share a byte, a block that starts can only
overlap the live blocks just below and just above its offset, so comparing it with those
two settles it: O(n log n) comparisons in all (plus list inserts that move the pointers of
the blocks live at once). Only where that finds an overlap does a second sweep compare each
starting block with every live block near it, to name every overlapping pair.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from memplace.planner.blocks import Block


def placement_problems(
    blocks: Sequence[Block], offsets: Sequence[int], capacity: int, names: Sequence[str]
) -> list[str]:
    """Every way the placement breaks the rules, as sentences; empty when it is sound."""
    if not (len(blocks) == len(offsets) == len(names)):
        raise ValueError("blocks, offsets and names differ in length")
    problems = []
    for name, block, offset in zip(names, blocks, offsets, strict=True):
        if offset < 0 or offset % block.align:
            problems.append(f"{name} at offset {offset} is not aligned to {block.align}")
        if offset + block.size > capacity:
            problems.append(f"{name} ends at {offset + block.size}, past the capacity {capacity}")
    return problems + _overlaps(blocks, offsets, names)


def _any_overlap(blocks: Sequence[Block], offsets: Sequence[int]) -> bool:
    """Whether two blocks live at one step share a byte: the sweep of the module doc."""
    n = len(blocks)
    firsts = [b.first for b in blocks]
    lasts = [b.last for b in blocks]
    sizes = [b.size for b in blocks]
    # Blocks in step order; at one step, blocks whose life ended leave before others start.
    starting = sorted(range(n), key=firsts.__getitem__)
    ending = sorted(range(n), key=lasts.__getitem__)
    # The live blocks by offset, then index, each as offset * n + index (ordered as the
    # pair is, and compared faster); no two of them overlap.
    live: list[int] = []
    k = 0
    for index in starting:
        first = firsts[index]
        while k < n and lasts[ending[k]] < first:
            gone = ending[k]
            del live[bisect.bisect_left(live, offsets[gone] * n + gone)]
            k += 1
        offset = offsets[index]
        key = offset * n + index
        position = bisect.bisect_left(live, key)
        if position < len(live) and live[position] // n < offset + sizes[index]:
            return True
        if position > 0:
            below_offset, below = divmod(live[position - 1], n)
            if below_offset + sizes[below] > offset:
                return True
        live.insert(position, key)
    return False


def _overlaps(blocks: Sequence[Block], offsets: Sequence[int], names: Sequence[str]) -> list[str]:
    if not _any_overlap(blocks, offsets):
        return []
    # Events in step order; at one step, blocks whose life ended leave before others start.
    events = sorted(
        [(b.last + 1, 0, i) for i, b in enumerate(blocks)]
        + [(b.first, 1, i) for i, b in enumerate(blocks)]
    )
    live: list[tuple[int, int]] = []  # (offset, index), sorted
    widest = max((b.size for b in blocks), default=0)
    pairs: set[tuple[int, int]] = set()
    for _, starts, index in events:
        key = (offsets[index], index)
        if not starts:
            del live[bisect.bisect_left(live, key)]
            continue
        end = offsets[index] + blocks[index].size
        position = bisect.bisect_left(live, key)
        # Blocks above it overlap it while they begin below its end; blocks below it can
        # reach into it only when they begin within the widest block's size.
        above = position
        while above < len(live) and live[above][0] < end:
            pairs.add((min(index, live[above][1]), max(index, live[above][1])))
            above += 1
        below = position - 1
        while below >= 0 and live[below][0] + widest > offsets[index]:
            other_offset, other = live[below]
            if other_offset + blocks[other].size > offsets[index]:
                pairs.add((min(index, other), max(index, other)))
            below -= 1
        live.insert(position, key)
    by_offset = sorted(pairs, key=lambda p: (offsets[p[0]], offsets[p[1]], p))
    return [
        f"{names[a]} and {names[b]} overlap in memory while both are live"
        if offsets[a] <= offsets[b]
        else f"{names[b]} and {names[a]} overlap in memory while both are live"
        for a, b in by_offset
    ]
