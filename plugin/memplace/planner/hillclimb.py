"""Hill climbing over placement orders, as Vela and TVM USMP do it.

Start from the largest-first order; again and again, take a block that reaches the peak,
move it to a random earlier place in the order, place everything by first fit, and keep
the new order when its peak is no higher. Seeded, and bounded by the budget: a step places
every block once and costs as many budget nodes as there are blocks, so the same blocks
and budget give the same offsets, and large instances take few steps. The climb stops
early at the lower bound (or the budget's goal), and when PATIENCE steps in a row have not
lowered the peak: by then it wanders on a plateau.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from memplace.planner.blocks import (
    DEFAULT_BUDGET,
    Block,
    Budget,
    Packing,
    lower_bound,
    packing,
    peak,
)
from memplace.planner.greedy import place_in_order, size_order

PATIENCE = 200
"""Steps in a row without a lower peak after which the climb gives up."""


def hill_climb(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
    rng = random.Random(budget.seed)
    bound = lower_bound(blocks)
    goal = max(bound, budget.goal or 0)
    order = size_order(blocks)
    offsets = place_in_order(blocks, order)
    best = peak(blocks, offsets)
    stale = 0
    for _ in range(budget.nodes // max(1, len(blocks))):
        if best <= goal or stale >= PATIENCE or len(blocks) < 2 or budget.clock.expired():
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
        budget.clock.nodes += len(blocks)
        budget.clock.work += len(blocks) ** 2
        height = peak(blocks, moved)
        stale = 0 if height < best else stale + 1
        if height <= best:
            order, offsets, best = trial, moved, height
    return packing(blocks, offsets, algorithm="hill-climb", bound=bound)
