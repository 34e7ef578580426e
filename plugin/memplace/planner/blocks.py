"""The offset problem in its bare form: blocks with sizes, alignments and lifetimes.

Two blocks conflict when their inclusive step ranges [first, last] intersect; conflicting
blocks must not share a byte. Offsets count bytes from the start of the place (pool or
stack). Every offset algorithm is a function `(blocks, budget) -> Packing`.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

DEFAULT_TIME_LIMIT: float | None = None
"""No wall-clock limit unless the user gives one: the searches stop at their work budgets
(`Budget.nodes`), so a plan depends on its inputs and options alone."""


@dataclass(frozen=True)
class Block:
    """`size` bytes at an offset that is a multiple of `align`, in use from step `first`
    to step `last`, both included."""

    size: int
    first: int
    last: int
    align: int = 1

    def __post_init__(self) -> None:
        if self.size < 1 or self.align < 1 or self.last < self.first:
            raise ValueError(f"not a block: {self}")

    def conflicts(self, other: Block) -> bool:
        return self.first <= other.last and other.first <= self.last


class Clock:
    """The wall-clock limit a user gave to one plan's searches (None: none), and what they
    did under it: the search nodes they visited and whether the limit stopped one of them.

    Only a user's limit reads the clock; without one, searches stop at their node budgets
    alone and the plan is the same on any machine under any load."""

    def __init__(self, seconds: float | None = None) -> None:
        self.deadline = math.inf if seconds is None else time.monotonic() + seconds
        self.nodes = 0
        self.work = 0
        """Nodes times the blocks searched: what the work budgets share (`plan`)."""
        self.stopped = False

    def left(self) -> float:
        """Seconds left (infinite without a limit); marks the clock stopped at zero."""
        if self.deadline == math.inf:
            return math.inf
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.stopped = True
        return max(left, 0.0)

    def expired(self) -> bool:
        return self.left() <= 0

    def seconds(self) -> float:
        """What the compiled core takes as its time limit: a finite number."""
        return min(self.left(), 1e18)


@dataclass(frozen=True)
class Budget:
    """What an algorithm may spend: search nodes, which the result depends on and nothing
    else, and (optionally) the user's wall clock, which only stops a search early."""

    capacity: int | None = None
    """Bytes the place holds (None: unbounded): the first target of a search."""
    nodes: int = 500_000
    """Search nodes, in total, on these blocks (a hill-climbing step costs one node per
    block; a search on fewer blocks, coalesced ones, gets as many more nodes as it has
    fewer blocks: a node costs time in proportion to the blocks)."""
    clock: Clock = field(default_factory=Clock, compare=False)
    """The wall-clock limit and the record of the searches (`Clock`)."""
    goal: int | None = None
    """A peak that is good enough: searches stop once they reach it (None: only a proven
    optimum stops them)."""
    seed: int = 0
    """Seed of the random choices of randomised algorithms."""


DEFAULT_BUDGET = Budget()


@dataclass(frozen=True)
class Packing:
    """An algorithm's answer: an offset per block, its peak, whether no placement of these
    blocks can have a smaller peak (`optimal`), and which algorithm of the registry made
    the offsets (`auto` names the one it took them from)."""

    offsets: tuple[int, ...]
    peak: int
    optimal: bool
    algorithm: str = ""


class Algorithm(Protocol):
    def __call__(self, blocks: Sequence[Block], budget: Budget = ..., /) -> Packing: ...


def align_up(value: int, align: int) -> int:
    return -(-value // align) * align


def peak(blocks: Sequence[Block], offsets: Sequence[int]) -> int:
    """Bytes the place needs: the highest end of any block."""
    return max(
        (offset + block.size for block, offset in zip(blocks, offsets, strict=True)), default=0
    )


def lower_bound(blocks: Sequence[Block]) -> int:
    """The most bytes live at one step, with the padding alignment forces: no placement can
    need less.

    Every offset is a multiple of `g`, the gcd of all the alignments, so of the blocks live
    at one step, each but the topmost is followed at least by its size rounded up to `g`:
    the bound at a step is the sum of the rounded sizes, less the largest rounding (the
    topmost block may be that one). With `g` = 1, or sizes that are multiples of it, this is
    the largest total size live at one step."""
    g = 0
    for block in blocks:
        g = math.gcd(g, block.align)
    pads = [-block.size % g for block in blocks] if g > 1 else []
    if not any(pads):
        return _most_live(blocks)
    return _most_live_padded(blocks, pads)


def _most_live(blocks: Sequence[Block]) -> int:
    edges: dict[int, int] = {}
    for block in blocks:
        edges[block.first] = edges.get(block.first, 0) + block.size
        edges[block.last + 1] = edges.get(block.last + 1, 0) - block.size
    best = live = 0
    for step in sorted(edges):
        live += edges[step]
        best = max(best, live)
    return best


def _most_live_padded(blocks: Sequence[Block], pads: Sequence[int]) -> int:
    events = sorted(
        [(b.first, 1, i) for i, b in enumerate(blocks)]
        + [(b.last + 1, -1, i) for i, b in enumerate(blocks)]
    )
    live_pads: dict[int, int] = {}  # padding -> how many live blocks have it
    largest: list[int] = []  # negated paddings, a heap; stale entries have no live block
    best = live = 0
    for k, (step, sign, i) in enumerate(events):
        live += sign * (blocks[i].size + pads[i])
        live_pads[pads[i]] = live_pads.get(pads[i], 0) + sign
        if sign > 0:
            heapq.heappush(largest, -pads[i])
        if k + 1 < len(events) and events[k + 1][0] == step:
            continue  # the step is not complete yet
        while largest and not live_pads.get(-largest[0]):
            heapq.heappop(largest)
        if largest:
            best = max(best, live + largest[0])
    return best


def grain(blocks: Sequence[Block]) -> int:
    """The largest number every offset and every peak of a canonical placement is a
    multiple of: that of the sizes, unless an alignment forces a smaller one.

    A canonical offset is 0 or the top of a placed block rounded up to the block's
    alignment `a`. If the tops are multiples of `g`, so is the offset when `a` divides `g`
    (rounding changes nothing) or `g` divides `a` (the offset is a multiple of `a`). So `g`
    starts as the sizes' greatest common divisor and drops to its divisor in common with
    any alignment it neither divides nor is divided by, until none is left. Alignment 1,
    or any that divides the sizes, leaves it alone: MiniMalloc's instances (sizes all
    multiples of 1024, alignment 1) have a grain of 1024, so the exact search asks for
    peaks 1024 bytes apart; with a grain of 1 it asked again and again for one it had just
    ruled out, one byte higher (`exact.improve`)."""
    value = 0
    for block in blocks:
        value = math.gcd(value, block.size)
    aligns = {block.align for block in blocks}
    while True:
        apart = [a for a in aligns if value % a and a % value]
        if not apart:
            return max(value, 1)
        value = math.gcd(value, *apart)


def packing(
    blocks: Sequence[Block],
    offsets: Sequence[int],
    optimal: bool = False,
    algorithm: str = "",
    bound: int | None = None,
) -> Packing:
    """A Packing of `offsets`; optimal when proven so or when the peak meets the lower bound
    (`bound`, when the caller knows it already)."""
    top = peak(blocks, offsets)
    if not optimal:
        optimal = top == (lower_bound(blocks) if bound is None else bound)
    return Packing(tuple(offsets), top, optimal, algorithm)


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
