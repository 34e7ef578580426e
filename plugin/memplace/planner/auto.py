"""The default: the cheapest algorithm that settles the question, within the budget.

Both greedy orders first (milliseconds even for 100k blocks); when neither meets the lower
bound, the exact search from the better of the two for up to EXACT_MAX_BLOCKS blocks,
hill climbing beyond that.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from memplace.planner.blocks import DEFAULT_BUDGET, Block, Budget, Layout, layout
from memplace.planner.exact import improve
from memplace.planner.greedy import greedy_conflicts, greedy_size
from memplace.planner.hillclimb import hill_climb

EXACT_MAX_BLOCKS = 3000
"""Above this many blocks in one place, the exact search's tables (every pair of blocks
that meet in time) grow too large to be worth it; hill climbing takes over."""
EXACT_FULL_BUDGET = 500
"""Up to this many blocks the exact search gets the whole node budget; above, a share that
shrinks as the blocks grow (each node costs more), so the effort stays about the same."""


def auto(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Layout:
    started = time.monotonic()
    best = greedy_size(blocks)
    if best.optimal:
        return best
    other = greedy_conflicts(blocks)
    if other.peak < best.peak:
        best = other
    if best.optimal:
        return best
    left = replace(budget, time_limit=budget.time_limit - (time.monotonic() - started))
    if len(blocks) <= EXACT_MAX_BLOCKS:
        share = budget.nodes * min(1.0, EXACT_FULL_BUDGET / len(blocks))
        return improve(blocks, replace(left, nodes=int(share)), best)
    climbed = hill_climb(blocks, left)
    return climbed if climbed.peak < best.peak else layout(blocks, best.offsets)
