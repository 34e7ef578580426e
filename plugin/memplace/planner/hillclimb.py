"""Hill climbing over placement orders, as Vela and TVM USMP do it.

Start from the largest-first order; again and again, take a block that reaches the peak,
move it to a random earlier place in the order, place everything by first fit, and keep
the new order when its peak is no higher. Seeded, and bounded by the budget: a step places
every block once and costs as many budget nodes as there are blocks, so the same blocks
and budget give the same offsets, and large instances take few steps.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from memplace.planner.blocks import DEFAULT_BUDGET, Block, Budget, Layout, layout, lower_bound, peak
from memplace.planner.greedy import place_in_order, size_order


def hill_climb(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Layout:
    deadline = time.monotonic() + budget.time_limit
    rng = random.Random(budget.seed)
    bound = lower_bound(blocks)
    order = size_order(blocks)
    offsets = place_in_order(blocks, order)
    best = peak(blocks, offsets)
    for _ in range(budget.nodes // max(1, len(blocks))):
        done = best == bound or (budget.goal is not None and best <= budget.goal)
        if done or len(blocks) < 2 or time.monotonic() > deadline:
            break
        tops = [i for i in order if offsets[i] + blocks[i].size == best]
        position = order.index(tops[rng.randrange(len(tops))])
        trial = list(order)
        if position == 0:
            j, k = rng.sample(range(len(trial)), 2)
            trial[j], trial[k] = trial[k], trial[j]
        else:
            trial.insert(rng.randrange(position), trial.pop(position))
        moved = place_in_order(blocks, trial)
        height = peak(blocks, moved)
        if height <= best:
            order, offsets, best = trial, moved, height
    return layout(blocks, offsets)
