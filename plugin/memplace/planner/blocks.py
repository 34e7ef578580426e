"""The offset problem in its bare form: blocks with sizes, alignments and lifetimes.

Two blocks conflict when their inclusive step ranges [first, last] intersect; conflicting
blocks must not share a byte. Offsets count bytes from the start of the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    size: int
    first: int
    last: int
    align: int = 1

    def conflicts(self, other: Block) -> bool:
        return self.first <= other.last and other.first <= self.last


def align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def peak(blocks: Sequence[Block], offsets: Sequence[int]) -> int:
    """Bytes the pool needs: the highest end of any block."""
    return max(
        (offset + block.size for block, offset in zip(blocks, offsets, strict=True)), default=0
    )


def lower_bound(blocks: Sequence[Block]) -> int:
    """The largest total size live at one step; no placement can need less."""
    edges: dict[int, int] = {}
    for block in blocks:
        edges[block.first] = edges.get(block.first, 0) + block.size
        edges[block.last + 1] = edges.get(block.last + 1, 0) - block.size
    best = live = 0
    for step in sorted(edges):
        live += edges[step]
        best = max(best, live)
    return best


def first_fit(block: Block, placed: Sequence[tuple[int, Block]]) -> int:
    """The lowest aligned offset where `block` overlaps none of the placed blocks it
    conflicts with. `placed` holds (offset, block) pairs."""
    cursor = 0
    conflicting = [(o, b) for o, b in placed if b.conflicts(block)]
    for offset, other in sorted(conflicting, key=lambda pair: pair[0]):
        if cursor + block.size <= offset:
            break
        cursor = max(cursor, align_up(offset + other.size, block.align))
    return cursor
