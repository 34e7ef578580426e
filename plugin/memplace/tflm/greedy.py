"""TensorFlow Lite Micro's greedy memory planner, restated, and a check of offline plans.

The runtime plans its arena with `GreedyMemoryPlanner`: buffers with an offline offset keep
it and come first; the others follow from the largest down (equal sizes in the reverse of
the order they were added), each at the lowest offset where it overlaps no placed buffer
that is live at the same time. `simulate` gives the offsets it would choose and the bytes
it would use, so memplace knows, before a model runs, what the runtime will do with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

ONLINE = -1
"""An offline offset of -1: the runtime places the buffer itself."""


@dataclass(frozen=True)
class Request:
    """One buffer the runtime's planner is given: rounded size, scopes, offline offset."""

    name: str
    size: int
    first: int
    last: int
    offline: int = ONLINE


@dataclass(frozen=True)
class RuntimeOffsets:
    """What the runtime's greedy planner gives a list of requests: an offset for each, in
    their order, and the bytes of the arena's planned part they take (`used`)."""

    offsets: tuple[int, ...]
    used: int


def _live_together(a: Request, b: Request) -> bool:
    return a.first <= b.last and b.first <= a.last


def simulate(requests: Sequence[Request]) -> RuntimeOffsets:
    """The offsets the runtime's greedy planner gives `requests`, in their order."""
    if not requests:
        return RuntimeOffsets((), 0)
    fixed = [i for i, r in enumerate(requests) if r.offline != ONLINE]
    # The runtime fills its list of online buffers from the back, so equal sizes go in
    # the reverse of the order they were added.
    added = [i for i, r in enumerate(requests) if r.offline == ONLINE]
    online = sorted(reversed(added), key=lambda i: -requests[i].size)
    offsets = [ONLINE] * len(requests)
    by_offset: list[int] = []  # placed buffers in the order of their offsets
    for i in fixed + online:
        wanted = requests[i]
        offsets[i] = (
            wanted.offline
            if wanted.offline != ONLINE
            else _gap(wanted, by_offset, requests, offsets)
        )
        at = len(by_offset)
        while at > 0 and offsets[by_offset[at - 1]] > offsets[i]:
            at -= 1
        by_offset.insert(at, i)
    used = max(offsets[i] + requests[i].size for i in range(len(requests)))
    return RuntimeOffsets(tuple(offsets), used)


def _gap(
    wanted: Request, by_offset: list[int], requests: Sequence[Request], offsets: list[int]
) -> int:
    candidate = 0
    for j in by_offset:
        if not _live_together(wanted, requests[j]):
            continue
        if offsets[j] - candidate >= wanted.size:
            return candidate
        candidate = max(candidate, offsets[j] + requests[j].size)
    return candidate


def conflicts(
    requests: Sequence[Request],
    offsets: Sequence[int],
    align: int,
    shared: AbstractSet[str] = frozenset(),
) -> list[str]:
    """Every way `offsets` break the runtime's rules: a negative or unaligned offset, or
    two buffers live in the same scope whose bytes overlap (unless both are named in
    `shared`, whose owner lets them share). Empty when the plan holds."""
    problems = []
    for request, offset in zip(requests, offsets, strict=True):
        if offset < 0 or offset % align:
            problems.append(f"{request.name} at offset {offset} is not a multiple of {align}")
    order = sorted(range(len(requests)), key=lambda i: offsets[i])
    for k, i in enumerate(order):
        end = offsets[i] + requests[i].size
        for j in order[k + 1 :]:
            if offsets[j] >= end:
                break
            both = requests[i].name in shared and requests[j].name in shared
            if _live_together(requests[i], requests[j]) and not both:
                problems.append(
                    f"{requests[i].name} [{offsets[i]}, {end}) and {requests[j].name} "
                    f"[{offsets[j]}, {offsets[j] + requests[j].size}) are live together "
                    f"(scopes {requests[i].first}-{requests[i].last} and "
                    f"{requests[j].first}-{requests[j].last})"
                )
    return problems
