"""Coalescing: fewer, larger blocks that any placement of theirs places the originals.

Two rules, applied again and again until neither changes anything:
- **stack**: blocks with the same lifetime and alignment (each a whole number of
  alignments long) become one block as large as all of them; they are placed on top of
  each other, in input order, from its offset;
- **chain**: a block that ends just before another starts, of the same size and
  alignment, become one block living over both lifetimes, both placed at its offset;
  only where that pair is the only one of its size and alignment at that boundary.

Each round stacks, then chains; or, with `chains_first`, chains until no chain is left
and only then stacks, since stacking a block with a neighbour of the same lifetime hides it
from the partner it would have been chained with. Neither order is better everywhere:
`auto` searches both, and on places of many blocks also chains first with a `pairing`.

With `loose`, once the two rules change nothing, a block is also chained to one that
starts right after it whose size differs by at most that part of the larger: the chain
is as large as the larger, and the difference is left empty. The wasted bytes x steps
decide, least first; then the two rules run again, and so on. Fewer blocks make the
search stronger than the waste costs on some workloads (on the large benchmark strip
s102, 4226 blocks, seeded dives reach 1.078x the lower bound in 20 s on the loose
coalescing, 1.101x on the best exact one) and weaker on others, so `auto` tries it
beside the exact coalescings. With `slack` as well, a loose chain is made only where the
bytes it leaves empty keep the bytes live at every step within that part above the most
live at one step (the lower bound) of the blocks themselves: where the peak has room, the
waste costs nothing; where it has none, as on the strips (every step full), it is what
the search can never win back (on s102 the loose coalescing's own lower bound is 1.065x
the blocks', within a slack of 1% 1.009x, and its quick search reaches 1.076x, not 1.086x).

With `matched`, stacks wait for a sign that they belong together (`chains_first` does
not apply): chains go first; then blocks of one lifetime are stacked only
where their sizes add up to the size of a block that ends just before they start or
starts just after they end (the block they would be chained with; a subset of them, found
by subset sum, the largest such size first); only where neither rule nor such a stack
changes anything are the blocks of the shortest lifetime that several share stacked all
together, and so on. Stacking every block of one lifetime at once glues together blocks
that belong far apart whenever two parts of a workload happen to start and end at the
same steps (on the strips of the benchmarks, slices of different one-step rectangles); a
stack whose size matches a neighbour's is what the chain rule can continue. On the large
benchmark strip s101 (4264 blocks) this leaves fewer blocks and a lower peak than the
other coalescings, and higher ones elsewhere, so `auto` tries it beside them on places of
many blocks. With `unique` as well, a matched stack is made only where one subset alone
makes the neighbour's size (where several do, which one belongs there is a guess: on the
strips, groups of dozens of one-step blocks match many sizes by chance), and where nothing
else changes anything, of the shortest lifetimes the one of the fewest blocks is stacked
first, so that its stack can be matched before the larger groups are stacked whole. On s101
its searches reach 1.053-1.074x the lower bound, against 1.066-1.076x without (four seeds
of the search, 5% of the default budget each), and neither is better everywhere: `auto`
judges them by a quick search. With `loose` (and `slack`) as well, once the matched rules
change nothing, loose chains are made as above, then the matched rules run again, and so
on: on s101 (pairing `short`, unique) loose chains within 3% leave 495 blocks where the
matched rules alone leave 627, and a quick search of them reaches 1.048x, not 1.082x.

A placement of the coalesced blocks is a placement of the originals with the same peak
(or, with `loose`, a peak no higher), so searching the smaller instance can only find
sound offsets; it may miss the best ones (stacking or chaining blocks that belong apart),
so it never proves a peak optimal.
Workloads cut from one rectangle (the time x memory strips of the benchmarks) coalesce to
a fourth to a tenth of their blocks, MiniMalloc's challenging instances to a fourteenth to
a half; on most of these the search finds a packing of the coalesced blocks at the lower
bound in milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memplace.planner.blocks import Block

_Item = tuple[Block, tuple[tuple[int, int], ...]]
"""A block and the original blocks it stands for (see `Coalesced`)."""

Pairing = Literal["short", "long"] | None
"""Whether, and how, blocks are chained where several of one size and alignment end at
a boundary, or several start there: None chains only a pair that is alone; "short" pairs
the shortest lived on both sides, then the next shortest, and so on; "long" the longest."""

ROUNDS = 64
"""Rounds of the two rules at most (each one pass over the blocks)."""
MATCHED_ROUNDS = 16 * ROUNDS
"""Rounds at most with `matched`: a round that stacks only the shortest lifetime changes
little, and the strips of the benchmarks take up to about 130."""
MATCH_BITS = 1 << 20
"""The largest size, in units of the group's common divisor, that a matched stack looks
for by subset sum (a table of that many bits per block of the group); above it only the
whole group's size is compared."""


@dataclass(frozen=True)
class Coalesced:
    """The coalesced blocks, and for each the original blocks it stands for as (index,
    offset from its own offset) pairs."""

    blocks: tuple[Block, ...]
    members: tuple[tuple[tuple[int, int], ...], ...]

    def expand(self, offsets: Sequence[int], count: int) -> list[int]:
        """The offsets of the `count` original blocks, from the coalesced blocks' offsets."""
        found = [0] * count
        for at, members in zip(offsets, self.members, strict=True):
            for index, relative in members:
                found[index] = at + relative
        return found


def coalesce(
    blocks: Sequence[Block],
    chains_first: bool = False,
    pairing: Pairing = None,
    loose: float = 0.0,
    matched: bool = False,
    unique: bool = False,
    slack: float | None = None,
) -> Coalesced:
    def exact(items: list[_Item]) -> list[_Item]:
        """The exact rules (the matched ones with `matched`) until they change nothing."""
        if matched:
            return _matched(items, pairing, unique)
        return _settled(items, chains_first, pairing)

    items = exact([(block, ((i, 0),)) for i, block in enumerate(blocks)])
    room = None if slack is None or loose <= 0 else _Room(blocks, slack)
    for _ in range(ROUNDS if loose > 0 else 0):
        count = len(items)
        items = exact(_loose_chain(items, loose, room))
        if len(items) == count:
            break
    return Coalesced(tuple(b for b, _ in items), tuple(m for _, m in items))


def _settled(items: list[_Item], chains_first: bool, pairing: Pairing) -> list[_Item]:
    """The two rules, round after round, until they change nothing."""
    for _ in range(ROUNDS):
        count = len(items)
        items = _stack(_chains(items, pairing)) if chains_first else _chain(_stack(items), pairing)
        if len(items) == count:
            break
    return items


def _stack(items: list[_Item]) -> list[_Item]:
    return _stacked(items, [group for group in _lifetimes(items).values() if len(group) > 1])


def _lifetimes(items: list[_Item]) -> dict[tuple[int, int, int], list[int]]:
    """The blocks that may be stacked, by lifetime and alignment."""
    groups: dict[tuple[int, int, int], list[int]] = {}
    for k, (block, _) in enumerate(items):
        if block.size % block.align == 0:
            groups.setdefault((block.first, block.last, block.align), []).append(k)
    return groups


def _stacked(items: list[_Item], stacks: Sequence[Sequence[int]]) -> list[_Item]:
    """`items` with the blocks of each of `stacks` (of one lifetime and alignment) on top
    of each other, in order."""
    merged: dict[int, _Item] = {}
    gone: set[int] = set()
    for stack in stacks:
        members: list[tuple[int, int]] = []
        height = 0
        for k in stack:
            block, inner = items[k]
            members += [(index, height + relative) for index, relative in inner]
            height += block.size
        first = items[stack[0]][0]
        merged[stack[0]] = (Block(height, first.first, first.last, first.align), tuple(members))
        gone.update(stack[1:])
    return [merged.get(k, item) for k, item in enumerate(items) if k not in gone]


def _matched(items: list[_Item], pairing: Pairing, unique: bool) -> list[_Item]:
    """Chains, matched stacks and, only where neither changes anything, the stacks of the
    shortest lifetime, round after round (see the module doc)."""
    for _ in range(MATCHED_ROUNDS):
        count = len(items)
        # Most rounds chain nothing: a set of the ends tells so sooner than `_chain`.
        ends = {(block.last + 1, block.size, block.align) for block, _ in items}
        if any((block.first, block.size, block.align) in ends for block, _ in items):
            items = _chains(items, pairing)
        if len(items) == count:
            items = _stacked(items, _matched_stacks(items, unique))
        if len(items) == count:
            groups = [group for group in _lifetimes(items).values() if len(group) > 1]
            least = min((_least(items, g, unique) for g in groups), default=(0, 0))
            items = _stacked(items, [g for g in groups if _least(items, g, unique) == least])
        if len(items) == count:
            break
    return items


def _least(items: list[_Item], group: list[int], unique: bool) -> tuple[int, int]:
    """The order in which `_matched` stacks whole groups where nothing else is left: the
    shortest lifetime first, and with `unique` the fewest blocks among those."""
    return _span(items[group[0]][0]), (len(group) if unique else 0)


def _matched_stacks(items: list[_Item], unique: bool) -> list[list[int]]:
    """Stacks of blocks of one lifetime whose sizes add up to the size of a block that ends
    just before them or starts just after them: the largest such size first, each block in
    one stack at most."""
    groups = {key: group for key, group in _lifetimes(items).items() if len(group) > 1}
    # The sizes of the blocks that end where a group starts or start where one ends.
    ending: dict[tuple[int, int], set[int]] = {(f, a): set() for f, _, a in groups}
    starting: dict[tuple[int, int], set[int]] = {(last + 1, a): set() for _, last, a in groups}
    for block, _ in items:
        sizes = ending.get((block.last + 1, block.align))
        if sizes is not None:
            sizes.add(block.size)
        sizes = starting.get((block.first, block.align))
        if sizes is not None:
            sizes.add(block.size)
    stacks: list[list[int]] = []
    for (first, last, align), group in groups.items():
        left = list(group)
        for size in sorted(ending[first, align] | starting[last + 1, align], reverse=True):
            own = [items[k][0].size for k in left]
            if len(left) < 2 or size < sum(sorted(own)[:2]):
                break
            chosen = _summing(own, size, unique) if size <= sum(own) else []
            if len(chosen) > 1:
                stacks.append([left[i] for i in chosen])
                left = [k for i, k in enumerate(left) if i not in chosen]
    return stacks


def _summing(sizes: Sequence[int], total: int, unique: bool = False) -> list[int]:
    """The indices, in order, of sizes that add up to `total` (empty: none do), by subset
    sum over the sizes' common divisor; where `total` is too large for that, all of them
    or none."""
    unit = math.gcd(*sizes)
    if total % unit:
        return []
    if total // unit > MATCH_BITS:
        return list(range(len(sizes))) if sum(sizes) == total else []
    # reach[k]: the sums (as bits) that some of the first k sizes make; twice: the sums
    # that two or more subsets of them make.
    reach = [1]
    twice = 0
    for size in sizes:
        twice |= twice << (size // unit) | reach[-1] & reach[-1] << (size // unit)
        reach.append(reach[-1] | reach[-1] << (size // unit))
    left = total // unit
    if not reach[-1] >> left & 1 or (unique and twice >> left & 1):
        return []
    chosen = []
    for k in range(len(sizes) - 1, -1, -1):
        if not reach[k] >> left & 1:  # the first k cannot make it: size k is in
            chosen.append(k)
            left -= sizes[k] // unit
    return chosen[::-1]


def _chains(items: list[_Item], pairing: Pairing) -> list[_Item]:
    """`_chain` again and again, until it changes nothing."""
    for _ in range(ROUNDS):
        chained = _chain(items, pairing)
        if len(chained) == len(items):
            break
        items = chained
    return items


def _chain(items: list[_Item], pairing: Pairing) -> list[_Item]:
    ending: dict[tuple[int, int, int], list[int]] = {}
    starting: dict[tuple[int, int, int], list[int]] = {}
    for k, (block, _) in enumerate(items):
        ending.setdefault((block.last + 1, block.size, block.align), []).append(k)
        starting.setdefault((block.first, block.size, block.align), []).append(k)
    pairs: list[tuple[int, int]] = []
    for key, before in ending.items():
        after = starting.get(key, [])
        if not after or (pairing is None and (len(before) != 1 or len(after) != 1)):
            continue
        longest = pairing == "long"
        before = sorted(before, key=lambda k: _span(items[k][0]), reverse=longest)
        after = sorted(after, key=lambda j: _span(items[j][0]), reverse=longest)
        pairs += zip(before, after, strict=False)
    return _chained(items, pairs)


def _loose_chain(items: list[_Item], loose: float, room: _Room | None = None) -> list[_Item]:
    """Each block chained, at most once, to one that starts right after it, of the same
    alignment, whose size is within `loose` (0 to 1, 1 excluded) of the larger of the two;
    least waste first; with `room`, only where it has room for the bytes left empty."""
    starting: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for j, (block, _) in enumerate(items):
        starting.setdefault((block.first, block.align), []).append((block.size, j))
    for after in starting.values():
        after.sort()
    pairs: list[tuple[int, int, int]] = []
    for k, (left, _) in enumerate(items):
        after = starting.get((left.last + 1, left.align), [])
        smallest = left.size - int(loose * left.size)
        largest = int(left.size / (1 - loose))
        lo = bisect.bisect_left(after, (smallest, -1))
        for size, j in after[lo : bisect.bisect_right(after, (largest, len(items)))]:
            right = items[j][0]
            if abs(size - left.size) <= loose * max(size, left.size):
                shorter = left if left.size < size else right
                pairs.append((abs(size - left.size) * (_span(shorter) + 1), k, j))
    chosen: list[tuple[int, int]] = []
    taken: set[int] = set()
    for _, k, j in sorted(pairs):
        if k in taken or j in taken:
            continue
        left, right = items[k][0], items[j][0]
        shorter = left if left.size < right.size else right
        if room is not None and not room.take(shorter, abs(left.size - right.size)):
            continue
        taken.update((k, j))
        chosen.append((k, j))
    return _chained(items, chosen)


class _Room:
    """The bytes live in each section of the timeline (between two steps where a block
    starts or ends), and how many may be: `slack` above the most of them at one step."""

    def __init__(self, blocks: Sequence[Block], slack: float) -> None:
        self.points = sorted({b.first for b in blocks} | {b.last + 1 for b in blocks})
        change = [0] * (len(self.points) + 1)
        for block in blocks:
            first, end = self._span(block)
            change[first] += block.size
            change[end] -= block.size
        self.live = list(itertools.accumulate(change[:-1]))
        most = max(self.live, default=0)
        self.limit = most + int(most * slack)

    def _span(self, block: Block) -> tuple[int, int]:
        """The sections `block` lives in, as a range."""
        first = bisect.bisect_left(self.points, block.first)
        return first, bisect.bisect_left(self.points, block.last + 1, first)

    def take(self, block: Block, wasted: int) -> bool:
        """Whether `wasted` more bytes fit over `block`'s lifetime; if so they are taken."""
        first, end = self._span(block)
        if wasted == 0:
            return True
        if max(self.live[first:end]) + wasted > self.limit:
            return False
        self.live[first:end] = [live + wasted for live in self.live[first:end]]
        return True


def _chained(items: list[_Item], pairs: Sequence[tuple[int, int]]) -> list[_Item]:
    """`items` with each pair (k, j) of `pairs` chained, in order, where neither is in a
    chain yet: k's block and then j's at one offset, as large as the larger."""
    merged: dict[int, _Item] = {}
    gone: set[int] = set()
    for k, j in pairs:
        if k in gone or j in gone or k in merged or j in merged:
            continue
        (left, inner), (right, outer) = items[k], items[j]
        block = Block(max(left.size, right.size), left.first, right.last, left.align)
        merged[k] = (block, inner + outer)
        gone.add(j)
    return [merged.get(k, item) for k, item in enumerate(items) if k not in gone]


def _span(block: Block) -> int:
    return block.last - block.first
