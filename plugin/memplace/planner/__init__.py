"""Static memory planning: which place each buffer takes, and at which offset.

`plan` resolves every buffer's candidate places (`scopes`), assigns each to one of them,
fastest first (`assign`, which documents the objective), then computes each place's
offsets with the chosen algorithm from `ALGORITHMS`, within the place's capacity and the
time limit. An independent check (`check`) verifies every place before the plan is
returned. Each pool and stack in the plan names the algorithm its offsets came from: the
one asked for, the one `auto` took them from, or `assignment` where the pool
assignment's own offsets were kept (see `_offsets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from memplace.board import Board
from memplace.errors import InputError, MemplaceError
from memplace.planner.alignment import Alignment
from memplace.planner.arena import plan_with_arenas
from memplace.planner.assign import Assigned, assign_places
from memplace.planner.auto import auto
from memplace.planner.blocks import (
    DEFAULT_TIME_LIMIT,
    Algorithm,
    Block,
    Budget,
    Clock,
    Packing,
    lower_bound,
    packing,
)
from memplace.planner.check import placement_problems
from memplace.planner.exact import MAX_PAIRS, exact, meeting_pairs
from memplace.planner.greedy import greedy_conflicts, greedy_size
from memplace.planner.hillclimb import hill_climb
from memplace.planner.model import ASSIGNMENT, Placement, Plan, PoolUsage, StackUsage
from memplace.planner.windows import windows
from memplace.scopes import Candidates, Place, resolve, stack_sizes
from memplace.source import fewer_collections, suggest
from memplace.workload import Buffer, Workload

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_TIME_LIMIT",
    "Algorithm",
    "Block",
    "Budget",
    "Packing",
    "Placement",
    "Plan",
    "PoolUsage",
    "StackUsage",
    "plan",
]

ALGORITHMS: dict[str, Algorithm] = {
    "auto": auto,
    "exact": exact,
    "greedy-conflicts": greedy_conflicts,
    "greedy-size": greedy_size,
    "hill-climb": hill_climb,
    "windows": windows,
}
DEFAULT_ALGORITHM = "auto"

WORK = 1_000_000_000
"""The work budget of one plan, in search nodes times the blocks searched (a node costs
time in proportion to the blocks it searches): pool assignment's searches, then the
places' offset searches, share it. About ten seconds of the compiled core on the
development machine; the plan depends on it, never on the machine's speed or load."""


def plan(
    board: Board,
    workload: Workload,
    algorithm: str = DEFAULT_ALGORITHM,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    effort: float = 1.0,
) -> Plan:
    """Place every buffer and constant of `workload` on `board`.

    The searches count their work (search nodes), never seconds: `effort` multiplies the
    work budget (WORK), and the plan is a function of the inputs and these options alone.
    `time_limit`, when given, is a wall clock that only stops the searches early: a plan
    so cut short says so (`Plan.stopped`), and a buffer left without a place then raises
    `SearchStopped` rather than a planning error. `seed` feeds the randomised choices.
    Dynamic buffers share one arena per core and pool (`arena`)."""
    if algorithm not in ALGORITHMS:
        raise InputError(
            f"no algorithm {algorithm!r}; {suggest(algorithm, ALGORITHMS)}", key="--algorithm"
        )
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"a time limit is a positive number of seconds, not {time_limit}")
    if not effort > 0:
        raise InputError(f"an effort is a positive number, not {effort}", key="--effort")
    clock = Clock(time_limit)
    work = int(WORK * effort)
    users: dict[str, tuple[str, ...]] = {}
    with fewer_collections():
        result = plan_with_arenas(
            board,
            workload,
            lambda w, share: _plan(board, w, algorithm, int(work * share), clock, seed, users),
        )
        # The first planning resolves every buffer of the workload (a second one, of
        # arenas, adds their blocks).
        result = replace(result, users={b.name: users[b.name] for b in workload.buffers})
    if clock.stopped:
        return replace(result, stopped=clock.nodes)
    return result


def _plan(
    board: Board,
    workload: Workload,
    algorithm: str,
    work: int,
    clock: Clock,
    seed: int,
    users: dict[str, tuple[str, ...]],
) -> Plan:
    """The plan of `workload`; `users` gets each buffer's resolved users."""
    start = clock.work
    candidates = resolve(board, workload)
    for c in candidates:
        users.setdefault(c.buffer.name, c.users)
    capacities = _capacities(board)
    # The greedy algorithms assign greedily too; the others give spilled buffers a second
    # chance at faster places, with an offset search there.
    searching = algorithm not in ("greedy-size", "greedy-conflicts")
    aligning = Alignment(board)
    blocks = [aligning.planning_block(c) for c in candidates]
    assigned = assign_places(
        candidates,
        blocks,
        capacities,
        work * searching,
        clock,
    )
    left = max(0, work - (clock.work - start))
    offsets, outcomes = _offsets(candidates, capacities, assigned, algorithm, left, clock, seed)
    placements = tuple(
        Placement(
            name=c.buffer.name,
            kind=c.buffer.kind,
            pool=assigned.place[i].pool,
            stack=assigned.place[i].stack,
            offset=aligning.aligned_offset(c.buffer, assigned.place[i], offsets[i]),
            size=c.buffer.size,
            align=c.buffer.align,
            first=c.buffer.first,
            last=c.buffer.last,
            reason=_reason(c, assigned.place[i], assigned.skipped[i]),
            contents=constant_contents(c.buffer),
            dynamic=c.buffer.dynamic,
        )
        for i, c in enumerate(candidates)
    )
    for placement, place in zip(placements, assigned.place, strict=True):
        problem = aligning.misaligned(place, placement.name, placement.offset, placement.align)
        if problem:
            raise MemplaceError(
                f"memplace bug: {problem}; please report it with the board and workload"
            )
    return Plan(
        board=board.name,
        workload=workload.name,
        algorithm=algorithm,
        steps=workload.steps,
        pools=_pool_usage(board, outcomes),
        placements=placements,
        stacks=_stack_usage(board, outcomes),
    )


def constant_contents(buffer: Buffer) -> bytes | None:
    """A constant's bytes: from its data file, or a fill derived from its name."""
    if buffer.kind != "constant":
        return None
    if buffer.data is not None:
        return buffer.data
    seed = sum(buffer.name.encode()) & 0xFF
    return bytes((seed + 7 * i + (i >> 8)) & 0xFF for i in range(buffer.size))


def _capacities(board: Board) -> dict[Place, int]:
    capacities = {Place(pool=name): pool.size for name, pool in board.pools.items()}
    capacities.update(stack_sizes(board))
    return capacities


@dataclass(frozen=True)
class _Outcome:
    """A place's offsets (`packing`, for its members in plan order) and its lower bound."""

    packing: Packing
    lower_bound: int


def _offsets(
    candidates: Sequence[Candidates],
    capacities: dict[Place, int],
    assigned: Assigned,
    algorithm: str,
    work: int,
    clock: Clock,
    seed: int,
) -> tuple[list[int], dict[Place, _Outcome]]:
    """Every buffer's offset, from `algorithm` place by place and checked, and each place's
    outcome.

    A place keeps the offsets the pool assignment found (labelled ASSIGNMENT) in two cases,
    so a plan never passes one algorithm's offsets off as another's: when `algorithm` does
    not fit them within the capacity (the assignment's always fit), and, for `auto`, which
    promises the best it finds, when they are better, or already meet the lower bound (no
    search needed). Places that need a search share what is left of the work budget
    (`work`, search nodes times blocks)."""
    offsets = list(assigned.offset)
    members: dict[Place, list[int]] = {}
    for i, place in enumerate(assigned.place):
        members.setdefault(place, []).append(i)
    # Places the exact search packed when asked only to fit them: auto would ask again.
    packed = assigned.packed if algorithm == "auto" else {}
    kept = {place: _kept(assigned, packed, place, group) for place, group in members.items()}
    searches = sum(
        1 for place, first in kept.items() if not first.packing.optimal and place not in packed
    )
    outcomes: dict[Place, _Outcome] = {}
    start = clock.work
    for place, group in members.items():
        mine = [assigned.blocks[i] for i in group]
        first = kept[place]
        if algorithm == "auto" and (first.packing.optimal or place in packed):
            found = first.packing  # nothing smaller to search for, or searched already
        else:
            share = max(0, work - (clock.work - start)) // max(1, searches)
            searches -= 0 if first.packing.optimal else 1
            budget = Budget(
                capacity=capacities[place],
                nodes=max(1, share // len(mine)),
                seed=seed,
                clock=clock,
            )
            found = _search(algorithm, place, mine, budget)
            if found.peak > capacities[place] or (
                algorithm == "auto" and first.packing.peak < found.peak
            ):
                found = first.packing
        _check(place, mine, found, capacities[place], [candidates[i].buffer.name for i in group])
        for i, at in zip(group, found.offsets, strict=True):
            offsets[i] = at
        outcomes[place] = _Outcome(found, first.lower_bound)
    return offsets, outcomes


def _kept(
    assigned: Assigned, packed: Mapping[Place, bool], place: Place, group: Sequence[int]
) -> _Outcome:
    """The offsets the pool assignment found for `place`, holding `group`: the exact
    search's where `packed` says it packed them (and whether it proved them optimal)."""
    blocks = [assigned.blocks[i] for i in group]
    bound = lower_bound(blocks)
    offsets = [assigned.offset[i] for i in group]
    proven = packed.get(place)
    algorithm = ASSIGNMENT if proven is None else "exact"
    found = packing(blocks, offsets, optimal=bool(proven), algorithm=algorithm, bound=bound)
    return _Outcome(found, bound)


def _search(algorithm: str, place: Place, blocks: Sequence[Block], budget: Budget) -> Packing:
    if algorithm == "exact":
        pairs = meeting_pairs(blocks)
        if pairs > MAX_PAIRS:
            raise InputError(
                f"exact searches places where at most {MAX_PAIRS} pairs of buffers are live "
                f"together; {place.label} has {pairs}: use auto (it keeps the better greedy "
                "order where the exact search cannot go) or a greedy algorithm",
                key="--algorithm",
            )
    found = ALGORITHMS[algorithm](blocks, budget)
    # A registered algorithm names itself; auto names the one it took the offsets from.
    return found if found.algorithm else replace(found, algorithm=algorithm)


def _check(
    place: Place, blocks: Sequence[Block], found: Packing, capacity: int, names: Sequence[str]
) -> None:
    """Refuse a placement the independent check finds unsound: a bug in an algorithm."""
    problems = placement_problems(blocks, found.offsets, capacity, names)
    if problems:
        raise MemplaceError(
            f"memplace bug: the {found.algorithm} offsets for {place.label} are unsound "
            f"({problems[0]}); please report it with the board and workload"
        )


def _reason(options: Candidates, place: Place, skipped: Sequence[Place]) -> str:
    buffer = options.buffer
    users = ", ".join(options.users)
    priority = f" (priority {buffer.priority})" if buffer.priority else ""
    if buffer.scope == "local":
        return f"local: a frame on {place.stack}'s stack at step {buffer.first}"
    if options.pinned:
        return f"pinned by scope {buffer.scope}" + (" and pools" if buffer.pools else "")
    if place.stack is not None:
        return f"small enough for {place.stack}'s stack (max_stack_alloca)"
    if skipped:
        full = ", ".join(p.label for p in skipped)
        return f"spilled: {full} full; next fastest pool reachable by {users}{priority}"
    return f"fastest pool reachable by {users}{priority}"


def _pool_usage(board: Board, outcomes: dict[Place, _Outcome]) -> tuple[PoolUsage, ...]:
    usage = []
    for pool in board.pools.values():
        outcome = outcomes.get(Place(pool=pool.name))
        usage.append(
            PoolUsage(
                name=pool.name,
                kind=pool.kind,
                memory=pool.memory,
                address=pool.address,
                capacity=pool.size,
                used=outcome.packing.peak if outcome else 0,
                lower_bound=outcome.lower_bound if outcome else 0,
                optimal=outcome.packing.optimal if outcome else True,
                algorithm=outcome.packing.algorithm if outcome else None,
            )
        )
    return tuple(usage)


def _stack_usage(board: Board, outcomes: dict[Place, _Outcome]) -> tuple[StackUsage, ...]:
    """Every stack of the board, context by context: its own, then its worker threads'."""
    usage = []
    for context in board.contexts.values():
        for label, stack in context.stacks():
            name = label.removesuffix(".stack")
            outcome = outcomes.get(Place(stack=name))
            usage.append(
                StackUsage(
                    context=name,
                    memory=stack.memory,
                    address=stack.address,
                    budget=stack.size,
                    planned=outcome.packing.peak if outcome else 0,
                    algorithm=outcome.packing.algorithm if outcome else None,
                )
            )
    return tuple(usage)
