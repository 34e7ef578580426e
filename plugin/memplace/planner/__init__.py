"""Static memory planning: which place each buffer takes, and at which offset.

Pool assignment walks the buffers largest first and gives each the first of its candidate
places (fastest first, see `scopes`) where it still fits beside the buffers already there.
Then each place's offsets are computed by the chosen algorithm, and an independent check
verifies the result before it is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memplace.board import Board
from memplace.errors import InputError, PlanningError
from memplace.planner.blocks import Block, first_fit, lower_bound, peak
from memplace.planner.check import placement_problems
from memplace.planner.greedy import greedy_conflicts, greedy_size, size_order
from memplace.planner.model import Placement, Plan, PoolUsage, StackUsage
from memplace.scopes import Candidates, Place, resolve
from memplace.source import suggest
from memplace.workload import Buffer, Workload

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "Placement",
    "Plan",
    "PoolUsage",
    "StackUsage",
    "plan",
]

Algorithm = Callable[[Sequence[Block]], list[int]]

ALGORITHMS: dict[str, Algorithm] = {
    "greedy-size": greedy_size,
    "greedy-conflicts": greedy_conflicts,
}
DEFAULT_ALGORITHM = "greedy-size"


def plan(board: Board, workload: Workload, algorithm: str = DEFAULT_ALGORITHM) -> Plan:
    """Place every buffer and constant of `workload` on `board`."""
    if algorithm not in ALGORITHMS:
        raise InputError(
            f"no algorithm {algorithm!r}; {suggest(algorithm, ALGORITHMS)}", key="--algorithm"
        )
    candidates = resolve(board, workload)
    capacities = _capacities(board)
    chosen = _assign(candidates, capacities)

    offsets: dict[int, int] = {}
    for place in _places(board):
        members = [i for i, c in enumerate(chosen) if c.place == place]
        blocks = [_block(candidates[i].buffer) for i in members]
        result = ALGORITHMS[algorithm](blocks)
        if peak(blocks, result) > capacities[place]:
            # The algorithm did worse than the first fit that assigned these buffers here.
            result = [chosen[i].offset for i in members]
        offsets.update(zip(members, result, strict=True))
        names = [candidates[i].buffer.name for i in members]
        problems = placement_problems(blocks, result, capacities[place], names)
        if problems:
            raise AssertionError(f"planner produced an unsound placement: {problems[0]}")

    placements = tuple(
        Placement(
            name=c.buffer.name,
            kind=c.buffer.kind,
            pool=chosen[i].place.pool,
            stack=chosen[i].place.stack,
            offset=offsets[i],
            size=c.buffer.size,
            align=c.buffer.align,
            first=c.buffer.first,
            last=c.buffer.last,
            reason=chosen[i].reason,
            contents=constant_contents(c.buffer),
        )
        for i, c in enumerate(candidates)
    )
    return Plan(
        board=board.name,
        workload=workload.name,
        algorithm=algorithm,
        steps=workload.steps,
        pools=_pool_usage(board, placements),
        placements=placements,
        stacks=_stack_usage(board, placements),
    )


def constant_contents(buffer: Buffer) -> bytes | None:
    """A constant's bytes: from its data file, or a fill derived from its name."""
    if buffer.kind != "constant":
        return None
    if buffer.data is not None:
        return buffer.data
    seed = sum(buffer.name.encode()) & 0xFF
    return bytes((seed + 7 * i + (i >> 8)) & 0xFF for i in range(buffer.size))


@dataclass(frozen=True)
class _Choice:
    place: Place
    offset: int
    reason: str


def _block(buffer: Buffer) -> Block:
    return Block(size=buffer.size, first=buffer.first, last=buffer.last, align=buffer.align)


def _places(board: Board) -> list[Place]:
    return [Place(pool=name) for name in board.pools] + [
        Place(stack=c.name) for c in board.stack_contexts()
    ]


def _capacities(board: Board) -> dict[Place, int]:
    capacities = {Place(pool=name): pool.size for name, pool in board.pools.items()}
    for context in board.stack_contexts():
        assert context.stack is not None
        capacities[Place(stack=context.name)] = context.stack.size
    return capacities


def _assign(candidates: list[Candidates], capacities: dict[Place, int]) -> list[_Choice]:
    blocks = [_block(c.buffer) for c in candidates]
    placed: dict[Place, list[tuple[int, Block]]] = {place: [] for place in capacities}
    chosen: dict[int, _Choice] = {}
    for index in size_order(blocks):
        options = candidates[index]
        shortfalls: dict[str, int] = {}
        for place in options.places:
            offset = first_fit(blocks[index], placed[place])
            end = offset + blocks[index].size
            if end <= capacities[place]:
                placed[place].append((offset, blocks[index]))
                chosen[index] = _Choice(place, offset, _reason(options, place, shortfalls))
                break
            shortfalls[place.label] = end - capacities[place]
        else:
            buffer = options.buffer
            lacks = "; ".join(
                f"{label} lacks {bytes_} bytes" for label, bytes_ in shortfalls.items()
            )
            raise PlanningError(
                f"{buffer.name} ({buffer.size} bytes) fits nowhere: {lacks}",
                buffer.name,
                shortfalls,
            )
    return [chosen[i] for i in range(len(candidates))]


def _reason(options: Candidates, place: Place, shortfalls: dict[str, int]) -> str:
    buffer = options.buffer
    users = ", ".join(options.users)
    if buffer.scope == "local":
        return f"local: a frame on {place.stack}'s stack at step {buffer.first}"
    if options.pinned:
        return f"pinned by scope {buffer.scope}" + (" and pools" if buffer.pools else "")
    if place.stack is not None:
        return f"small enough for {place.stack}'s stack (max_stack_alloca)"
    if shortfalls:
        full = ", ".join(shortfalls)
        return f"spilled: {full} full; next fastest pool reachable by {users}"
    return f"fastest pool reachable by {users}"


def _pool_usage(board: Board, placements: Sequence[Placement]) -> tuple[PoolUsage, ...]:
    usage = []
    for pool in board.pools.values():
        members = [p for p in placements if p.pool == pool.name]
        blocks = [Block(p.size, p.first, p.last, p.align) for p in members]
        used = peak(blocks, [p.offset for p in members])
        bound = lower_bound(blocks)
        usage.append(
            PoolUsage(
                name=pool.name,
                kind=pool.kind,
                memory=pool.memory,
                address=pool.address,
                capacity=pool.size,
                used=used,
                lower_bound=bound,
                optimal=used == bound,
            )
        )
    return tuple(usage)


def _stack_usage(board: Board, placements: Sequence[Placement]) -> tuple[StackUsage, ...]:
    usage = []
    for context in board.stack_contexts():
        assert context.stack is not None
        members = [p for p in placements if p.stack == context.name]
        planned = max((p.offset + p.size for p in members), default=0)
        usage.append(
            StackUsage(
                context=context.name,
                memory=context.stack.memory,
                address=context.stack.address,
                budget=context.stack.size,
                planned=planned,
            )
        )
    return tuple(usage)
