"""An independent check of a placement, run on every plan before it is returned.

It shares no code with the algorithms that produce offsets, so a bug there shows here.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplace.planner.blocks import Block


def placement_problems(
    blocks: Sequence[Block], offsets: Sequence[int], capacity: int, names: Sequence[str]
) -> list[str]:
    """Every way the placement breaks the rules, as sentences; empty when it is sound."""
    problems = []
    for name, block, offset in zip(names, blocks, offsets, strict=True):
        if offset < 0 or offset % block.align:
            problems.append(f"{name} at offset {offset} is not aligned to {block.align}")
        if offset + block.size > capacity:
            problems.append(f"{name} ends at {offset + block.size}, past the capacity {capacity}")
    spans = sorted(zip(offsets, range(len(blocks)), strict=True))
    for position, (offset, index) in enumerate(spans):
        end = offset + blocks[index].size
        for other_offset, other in spans[position + 1 :]:
            if other_offset >= end:
                break
            a, b = blocks[index], blocks[other]
            if a.first <= b.last and b.first <= a.last:
                problems.append(
                    f"{names[index]} and {names[other]} overlap in memory while both are live"
                )
    return problems
