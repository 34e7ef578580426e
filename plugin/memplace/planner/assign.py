"""Pool assignment: which of its candidate places each buffer takes.

The objective, in order of importance:
1. every buffer in one of its candidate places (its scope, `pools:` and users decide which;
   `scopes.resolve` lists them fastest first), within every place's capacity;
2. buffers in order of `priority` (highest first), then size (largest first), then first
   step, then workload order, each take the fastest of their candidates that still holds
   them beside the buffers before them; a buffer that does not fit there spills to the
   next candidate;
3. in each place, the smallest peak the offset algorithm finds (see `planner.plan`).

"Holds" is first decided by first fit, which is fast but can waste space; a buffer that
first fit spills, or fits nowhere, then gets a second chance at each faster candidate
whose lower bound admits it, with an offset search for that place and that buffer added.
Buffers that still fit nowhere are then packed together: each goes to its fastest
candidate whose lower bound admits it, and each such place gets one offset search over
all its buffers with the whole time limit (shared between the places), which is what
tight pools need: first fit and single second chances give up on packings the search
finds in a fraction of a second. Only a buffer that fits nowhere after that is a planning
error naming each candidate and how many bytes it lacks there at its worst step (as
`--explain` measures it).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from memplace.errors import PlanningError, SearchStopped
from memplace.planner import core
from memplace.planner.auto import auto
from memplace.planner.blocks import Block, Budget, Clock, Packing
from memplace.scopes import Candidates, Place

RESCUE_ATTEMPTS = 64
"""Second chances tried per plan, at most (each a bounded offset search)."""
RESCUE_MISSES = 4
"""Second chances in a row that may fail at one place before it gets no more: a place
that turned down several buffers is full in all but name."""
RESCUE_NODES = 20_000
"""Search nodes one second chance may spend; it stops as soon as the buffer fits."""
RESCUE_SHARE = 0.25
"""The part of the work budget that second chances may take, at most."""
RESCUE_MAX_BLOCKS = 2000
"""Places holding more blocks than this get no second chances (their search is slow)."""


@dataclass(frozen=True)
class Assigned:
    """The place and a sound offset of every buffer, the candidates it skipped, and the
    buffers as blocks."""

    place: tuple[Place, ...]
    offset: tuple[int, ...]
    skipped: tuple[tuple[Place, ...], ...]
    blocks: tuple[Block, ...]
    packed: dict[Place, bool] = field(default_factory=dict)
    """The places whose offsets the exact search found, asked only to fit the place (both
    greedy orders overfill it): their buffers as they are now. `auto` would ask the same
    again and stop at the first fit, so `plan` keeps these. True where the search proved
    the peak optimal."""


def buffer_order(candidates: Sequence[Candidates]) -> list[int]:
    """Who chooses first: highest priority, then largest, then earliest, then input order."""
    buffers = [c.buffer for c in candidates]
    # Stable sorts on plain keys, last key first: no tuple per buffer.
    order = sorted(range(len(buffers)), key=[b.first for b in buffers].__getitem__)
    order.sort(key=[-b.size for b in buffers].__getitem__)
    if any(b.priority for b in buffers):
        order.sort(key=[-b.priority for b in buffers].__getitem__)
    return order


def assign_places(
    candidates: Sequence[Candidates],
    blocks: Sequence[Block],
    capacities: dict[Place, int],
    work: int = 0,
    clock: Clock | None = None,
) -> Assigned:
    """Choose a place and a sound first offset for every buffer (see the module doc);
    `blocks` stand for the buffers while offsets are searched (`alignment`).

    `work` (search nodes times blocks) bounds the packing of buffers that still fit
    nowhere, the search over assignments and the second chances (0: none of them, a
    greedy assignment); `clock` is the user's wall clock, if any, and counts the work."""
    clock = Clock() if clock is None else clock
    places = list(capacities)
    index = {place: k for k, place in enumerate(places)}
    order = buffer_order(candidates)
    options = [[index[place] for place in c.places] for c in candidates]
    first = core.assign(blocks, order, options, [capacities[p] for p in places])
    chosen, offset = list(first.place), list(first.offset)
    sizes = [capacities[p] for p in places]
    tried: dict[int, int] = {}  # place -> the lowest peak a packing search found there
    packed: dict[int, bool] = {}  # place -> proven optimal, where the exact search packed it
    if work > 0:
        start = clock.work
        # The search over assignments needs work only where a buffer has a choice.
        choices = any(len(places) > 1 for places in options)
        share = work // 2 if choices else work
        _pack_homeless(blocks, order, options, sizes, chosen, offset, share, clock, tried, packed)
        if any(p < 0 for p in chosen):
            left = work - (clock.work - start)
            found = _search_assignment(blocks, order, options, sizes, left, clock)
            if found is not None:
                chosen, offset = found
                packed.clear()
        rescue = int(work * RESCUE_SHARE)
        _second_chances(blocks, order, options, sizes, chosen, offset, rescue, clock, packed)
    for i in order:
        if chosen[i] < 0:
            _stopped(clock, options[i], tried, places, sizes)
            placed = [(places[p], blocks[j]) for j, p in enumerate(chosen) if p >= 0]
            _fits_nowhere(candidates[i], first.ends(i), capacities, blocks[i], placed)
    return Assigned(
        place=tuple(places[p] for p in chosen),
        offset=tuple(offset),
        skipped=tuple(
            tuple(places[p] for p in options[i][: options[i].index(chosen[i])])
            for i in range(len(blocks))
        ),
        blocks=tuple(blocks),
        packed={places[p]: proven for p, proven in packed.items()},
    )


def _second_chances(
    blocks: Sequence[Block],
    order: Sequence[int],
    options: Sequence[Sequence[int]],
    capacities: Sequence[int],
    chosen: list[int],
    offset: list[int],
    work: int,
    clock: Clock,
    packed: dict[int, bool],
) -> None:
    """Move spilled (or homeless) buffers to faster candidates where a search fits them,
    within `work` (search nodes times blocks); `packed` follows the places whose offsets
    the exact search found."""
    if all(p == options[i][0] for i, p in enumerate(chosen)):
        return  # every buffer has its fastest candidate
    start = clock.work
    attempts = RESCUE_ATTEMPTS
    misses = [0] * len(capacities)
    members: dict[int, list[int]] = {p: [] for p in range(len(capacities))}
    for i, p in enumerate(chosen):
        if p >= 0:
            members[p].append(i)
    live = _LiveBytes(blocks, members)
    for i in order:
        current = options[i].index(chosen[i]) if chosen[i] >= 0 else len(options[i])
        for p in options[i][:current]:
            if attempts <= 0 or clock.work - start >= work or clock.expired():
                return
            if len(members[p]) >= RESCUE_MAX_BLOCKS or misses[p] >= RESCUE_MISSES:
                continue
            if live.peak_with(p, blocks[i]) > capacities[p]:
                continue
            attempts -= 1
            group = [*members[p], i]
            budget = Budget(
                capacity=capacities[p], nodes=RESCUE_NODES, goal=capacities[p], clock=clock
            )
            found = auto([blocks[j] for j in group], budget)
            if found.peak > capacities[p]:
                misses[p] += 1
                continue
            misses[p] = 0
            if chosen[i] >= 0:
                members[chosen[i]].remove(i)
                live.move(chosen[i], blocks[i], -1)
                packed.pop(chosen[i], None)  # fewer buffers: the search may go lower
            _note_packed(packed, p, found)
            members[p] = group
            live.move(p, blocks[i], +1)
            chosen[i] = p
            for j, at in zip(group, found.offsets, strict=True):
                offset[j] = at
            break


def _pack_homeless(
    blocks: Sequence[Block],
    order: Sequence[int],
    options: Sequence[Sequence[int]],
    capacities: Sequence[int],
    chosen: list[int],
    offset: list[int],
    work: int,
    clock: Clock,
    tried: dict[int, int],
    packed: dict[int, bool],
) -> None:
    """Put every buffer that fits nowhere into its fastest candidate whose lower bound
    admits it, and search offsets for each place so filled, within `work` (search nodes
    times blocks); a place whose search does not fit its capacity within its share takes
    none of them, `tried` keeps the lowest peak its search found, and `packed` the places
    the exact search packed."""
    homeless = [i for i in order if chosen[i] < 0]
    if not homeless:
        return
    start = clock.work
    members: dict[int, list[int]] = {p: [] for p in range(len(capacities))}
    for i, p in enumerate(chosen):
        if p >= 0:
            members[p].append(i)
    live = _LiveBytes(blocks, members)
    arrivals: dict[int, list[int]] = {}
    for i in homeless:
        for p in options[i]:
            if live.peak_with(p, blocks[i]) <= capacities[p]:
                live.move(p, blocks[i], +1)
                arrivals.setdefault(p, []).append(i)
                break
    for left, (p, arrived) in enumerate(sorted(arrivals.items()), start=0):
        group = [*members[p], *arrived]
        share = max(0, work - (clock.work - start)) // (len(arrivals) - left)
        budget = Budget(
            capacity=capacities[p],
            nodes=max(1, share // len(group)),
            goal=capacities[p],
            clock=clock,
        )
        found = auto([blocks[j] for j in group], budget)
        if found.peak > capacities[p]:
            tried[p] = found.peak
            continue
        members[p] = group
        _note_packed(packed, p, found)
        for j, at in zip(group, found.offsets, strict=True):
            chosen[j] = p
            offset[j] = at


def _note_packed(packed: dict[int, bool], place: int, found: Packing) -> None:
    """Keep in `packed` whether `found`, the new offsets of `place`'s buffers from `auto`
    asked only to fit the place, came from the exact search (both greedy orders overfill
    the place, so `auto` would ask the same again) or from a greedy order (the place has
    room, and `plan` searches it for a smaller peak)."""
    if found.algorithm == "exact":
        packed[place] = found.optimal
    else:
        packed.pop(place, None)


def _search_assignment(
    blocks: Sequence[Block],
    order: Sequence[int],
    options: Sequence[Sequence[int]],
    capacities: Sequence[int],
    work: int,
    clock: Clock,
) -> tuple[list[int], list[int]] | None:
    """Assign every buffer anew, by a depth-first search over its candidates (fastest
    first, in `order`) that keeps each place's lower bound within its capacity, and accept
    the first complete assignment whose places all get offsets within their capacities;
    None when `work` (search nodes times blocks; a move of the search over assignments
    costs as much as a node on all the buffers) runs out first. Iterative: a workload can
    hold more buffers than Python's recursion allows."""
    start = clock.work
    empty: dict[int, list[int]] = {p: [] for p in range(len(capacities))}
    live = _LiveBytes(blocks, empty)
    chosen = [-1] * len(blocks)
    tried = [0] * len(order)
    depth = 0
    while depth >= 0 and clock.work - start < work and not clock.expired():
        clock.work += len(blocks)
        if depth == len(order):
            offsets = _offsets_within(blocks, chosen, capacities, clock)
            if offsets is not None:
                return chosen, offsets
            depth -= 1
            continue
        i = order[depth]
        if chosen[i] >= 0:
            live.move(chosen[i], blocks[i], -1)
            chosen[i] = -1
        k = tried[depth]
        while (
            k < len(options[i])
            and live.peak_with(options[i][k], blocks[i]) > capacities[options[i][k]]
        ):
            k += 1
        if k == len(options[i]):
            tried[depth] = 0
            depth -= 1
            continue
        chosen[i] = options[i][k]
        live.move(chosen[i], blocks[i], +1)
        tried[depth] = k + 1
        depth += 1
    return None


def _offsets_within(
    blocks: Sequence[Block], chosen: Sequence[int], capacities: Sequence[int], clock: Clock
) -> list[int] | None:
    """Offsets for every place of the assignment `chosen`, each within its capacity, or
    None as soon as one place's search does not fit it."""
    offsets = [0] * len(blocks)
    for p, capacity in enumerate(capacities):
        group = [i for i, q in enumerate(chosen) if q == p]
        if not group:
            continue
        budget = Budget(capacity=capacity, nodes=RESCUE_NODES, goal=capacity, clock=clock)
        found = auto([blocks[i] for i in group], budget)
        if found.peak > capacity:
            return None
        for i, at in zip(group, found.offsets, strict=True):
            offsets[i] = at
    return offsets


class _LiveBytes:
    """Bytes live in each place between consecutive step boundaries (the steps where a
    block starts or ends: a timeline of a million steps with a few hundred blocks has a
    few hundred segments), built for a place when first asked for."""

    def __init__(self, blocks: Sequence[Block], members: dict[int, list[int]]) -> None:
        self.blocks = blocks
        self.members = members
        bounds = sorted({b.first for b in blocks} | {b.last + 1 for b in blocks})
        self.segment = {step: k for k, step in enumerate(bounds)}
        self.lines: dict[int, list[int]] = {}

    def span(self, block: Block) -> range:
        """The segments `block` is live in."""
        return range(self.segment[block.first], self.segment[block.last + 1])

    def line(self, place: int) -> list[int]:
        if place not in self.lines:
            edges = [0] * (len(self.segment) + 1)
            for j in self.members[place]:
                span = self.span(self.blocks[j])
                edges[span.start] += self.blocks[j].size
                edges[span.stop] -= self.blocks[j].size
            self.lines[place] = list(itertools.accumulate(edges))
        return self.lines[place]

    def peak_with(self, place: int, block: Block) -> int:
        """The lower bound of the place with `block` added."""
        span = self.span(block)
        return max(self.line(place)[span.start : span.stop]) + block.size

    def move(self, place: int, block: Block, sign: int) -> None:
        line = self.line(place)
        for k in self.span(block):
            line[k] += sign * block.size


def _stopped(
    clock: Clock,
    options: Sequence[int],
    tried: dict[int, int],
    places: Sequence[Place],
    capacities: Sequence[int],
) -> None:
    """Where the user's time limit stopped a search before a buffer found a place, say so
    rather than that it fits nowhere: the search had not finished."""
    searched = [p for p in options if p in tried]
    if not clock.stopped or not searched:
        return
    p = searched[0]
    kind = "pool " if places[p].pool is not None else ""
    raise SearchStopped(
        f"search stopped at the time limit after {clock.nodes} nodes: the best placement "
        f"found needs {tried[p]} bytes of {kind}{places[p].label}'s {capacities[p]}",
        nodes=clock.nodes,
        place=places[p].label,
        needs=tried[p],
        capacity=capacities[p],
    )


def _fits_nowhere(
    options: Candidates,
    ends: Sequence[int | None],
    capacities: dict[Place, int],
    block: Block,
    placed: Sequence[tuple[Place, Block]],
) -> None:
    """Raise the error for a buffer that fits in none of its candidates. What each lacks is
    measured as `memplace plan --explain` measures it: at the buffer's worst step, the bytes
    the buffers `placed` there hold, plus its own, minus the capacity. Where that would fit
    but no gap did (the bytes free are scattered), it is what its first fit lacked."""
    shortfalls = {}
    for place, end in zip(options.places, ends, strict=True):
        line = [0] * (block.last - block.first + 2)
        for where, other in placed:
            low, high = max(other.first, block.first), min(other.last, block.last)
            if where == place and low <= high:
                line[low - block.first] += other.size
                line[high - block.first + 1] -= other.size
        lacks = max(itertools.accumulate(line[:-1])) + block.size - capacities[place]
        if lacks <= 0 and end is not None:
            lacks = end - capacities[place]
        shortfalls[place.label] = max(lacks, 0)
    buffer = options.buffer
    lacks_text = "; ".join(f"{label} lacks {bytes_} bytes" for label, bytes_ in shortfalls.items())
    raise PlanningError(
        f"{buffer.name} ({buffer.size} bytes) fits nowhere: {lacks_text}", buffer.name, shortfalls
    )
