"""Greedy offset assignment: place blocks one by one at the lowest offset that fits.

`greedy-size` takes the largest block first, as TFLite Micro's planner and TVM USMP's
default do; `greedy-conflicts` takes the block with the most conflicting neighbours first,
as TVM USMP's other greedy does.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplace.planner.blocks import Block, first_fit


def place_in_order(blocks: Sequence[Block], order: Sequence[int]) -> list[int]:
    offsets = [0] * len(blocks)
    placed: list[tuple[int, Block]] = []
    for index in order:
        offsets[index] = first_fit(blocks[index], placed)
        placed.append((offsets[index], blocks[index]))
    return offsets


def size_order(blocks: Sequence[Block]) -> list[int]:
    return sorted(range(len(blocks)), key=lambda i: (-blocks[i].size, blocks[i].first, i))


def greedy_size(blocks: Sequence[Block]) -> list[int]:
    return place_in_order(blocks, size_order(blocks))


def greedy_conflicts(blocks: Sequence[Block]) -> list[int]:
    conflicts = [
        sum(1 for other in blocks if other is not block and block.conflicts(other))
        for block in blocks
    ]
    order = sorted(range(len(blocks)), key=lambda i: (-conflicts[i], -blocks[i].size, i))
    return place_in_order(blocks, order)
