"""Why every buffer lives where it does: what `memplace plan --explain` prints.

For each buffer and constant: its candidate places (from its scope, what its users reach,
its kind and its `pools:`), the places it may not use and why, and for each candidate
ahead of the chosen one what kept the buffer out: how many bytes the place lacks at the
buffer's worst step (the step of its life where the other buffers there hold the most),
or that the bytes were free but not in one gap.

When some buffer fits nowhere, the others are planned without it (and without any other
that then fits nowhere), and each of its candidates is measured against that plan: the
bytes it lacks are what the place would have to grow by to take the buffer as well. The
planner's error measures the same way, and its figures are the ones printed, so the error
line and the explanation never disagree.

Only public results are read (`resolve`, `plan`, the `Plan`), so the explanation holds
whatever algorithm the planner runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memplace.board import Board
from memplace.errors import PlanningError
from memplace.planner import DEFAULT_ALGORITHM, DEFAULT_TIME_LIMIT, plan
from memplace.planner.blocks import Block, first_fit
from memplace.planner.model import Placement, Plan
from memplace.scopes import Candidates, Place, resolve
from memplace.workload import Workload


@dataclass(frozen=True)
class Room:
    """How a candidate place fared for one buffer, measured against the other buffers there.

    `lacks` is the bytes missing (0 when the buffer would fit); `worst_step` the step of
    the buffer's life where the others hold the most, `held` those bytes."""

    place: str
    capacity: int
    worst_step: int
    held: int
    lacks: int
    contiguous: bool

    def sentence(self, steps: Sequence[str]) -> str:
        step = steps[self.worst_step]
        if not self.lacks:
            return (
                f"would fit beside the plan as it stands ({self.held} bytes held at its worst "
                "step); the pool assignment, made buffer by buffer before offsets were "
                "planned, did not use it"
            )
        if self.contiguous:
            free = self.capacity - self.held
            return (
                f"{free} bytes free at step {step} but not in one gap: lacks {self.lacks} "
                "contiguous bytes"
            )
        return (
            f"lacks {self.lacks} bytes at step {step} "
            f"({self.held} of {self.capacity} bytes held by other buffers)"
        )


@dataclass(frozen=True)
class Story:
    """One buffer's explanation."""

    candidates: Candidates
    placement: Placement | None
    passed_over: tuple[Room, ...]

    @property
    def name(self) -> str:
        return self.candidates.buffer.name


@dataclass(frozen=True)
class Spill:
    """What a pool could not hold: at its busiest step (where the buffers placed there and
    those that wanted it but went to a slower place add up to the most), `unheld` bytes of
    the latter, beside the `held` bytes of the former."""

    pool: str
    capacity: int
    step: int
    held: int
    unheld: int

    def sentence(self, steps: Sequence[str]) -> str:
        return (
            f"{self.pool}: {self.unheld} bytes at its busiest step {steps[self.step]} could "
            f"not be held there ({self.held} of {self.capacity} bytes held)"
        )


@dataclass(frozen=True)
class Explanation:
    """Every buffer's story; `plan` is None when some buffer fits nowhere (`failed`)."""

    workload: Workload
    plan: Plan | None
    stories: tuple[Story, ...]
    failed: tuple[str, ...]
    error: PlanningError | None

    def story(self, name: str) -> Story:
        for story in self.stories:
            if story.name == name:
                return story
        raise KeyError(name)

    def text(self) -> str:
        steps = self.workload.steps
        lines: list[str] = []
        if self.failed:
            lines.append(f"fits nowhere: {', '.join(self.failed)}")
            lines.append(
                "(the other buffers are planned without them, and each of their candidates "
                "is measured against that plan)"
            )
            lines.append("")
        for story in self.stories:
            lines += _story_lines(story, steps)
        spills = self.spills()
        if spills:
            lines += ["", "spilled:"] + [f"  {spill.sentence(steps)}" for spill in spills]
        return "\n".join(lines)

    def spills(self) -> tuple[Spill, ...]:
        """Per pool that buffers wanted but spilled past, what it could not hold."""
        if self.plan is None:
            return ()
        found = []
        for pool in self.plan.pools:
            held = [p for p in self.plan.placements if p.pool == pool.name]
            wanted = [
                story.placement
                for story in self.stories
                if story.placement is not None
                and any(room.place == pool.name for room in story.passed_over)
            ]
            if not wanted:
                continue
            steps = range(len(self.workload.steps))
            live = [(_live(held, step), _live(wanted, step)) for step in steps]
            step = max(steps, key=lambda k: (sum(live[k]), -k))
            found.append(Spill(pool.name, pool.capacity, step, *live[step]))
        return tuple(found)

    def to_json(self) -> dict[str, Any]:
        """What `plan --explain --json` prints: the plan (null when some buffer fits
        nowhere), the buffers that fit nowhere, and every buffer's story."""
        steps = self.workload.steps
        return {
            "plan": None if self.plan is None else self.plan.to_json(),
            "fits_nowhere": list(self.failed),
            "buffers": [_story_json(story, steps) for story in self.stories],
            "spills": [
                {
                    "pool": spill.pool,
                    "capacity": spill.capacity,
                    "busiest_step": steps[spill.step],
                    "held": spill.held,
                    "unheld": spill.unheld,
                }
                for spill in self.spills()
            ],
        }

    def raise_failure(self) -> None:
        """Raise the planner's error when some buffer fits nowhere."""
        if self.error is not None:
            raise self.error


def explain(
    board: Board,
    workload: Workload,
    algorithm: str = DEFAULT_ALGORITHM,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    effort: float = 1.0,
) -> Explanation:
    """Plan `workload` on `board` and say why each buffer went where it did."""
    candidates = resolve(board, workload)
    error: PlanningError | None = None
    failed: dict[str, PlanningError] = {}
    options: dict[str, Any] = {"algorithm": algorithm, "time_limit": time_limit, "effort": effort}
    try:
        result = plan(board, workload, **options)
    except PlanningError as exc:
        error = exc
        result, failed = _plan_without_misfits(board, workload, options, exc)
    stories = tuple(
        _story(result, c, failed[c.buffer.name].shortfalls if c.buffer.name in failed else {})
        for c in candidates
    )
    return Explanation(
        workload=workload,
        plan=None if error else result,
        stories=stories,
        failed=tuple(failed),
        error=error,
    )


def _plan_without_misfits(
    board: Board, workload: Workload, options: dict[str, Any], error: PlanningError
) -> tuple[Plan, dict[str, PlanningError]]:
    """A plan of every buffer that fits, and the planner's error for each that fits
    nowhere, in the order they failed; `options` are `plan`'s."""
    failed = {error.buffer: error}
    while True:
        fitting = workload.without(set(failed))
        try:
            return plan(board, fitting, **options), failed
        except PlanningError as again:
            failed[again.buffer] = again


def _story(result: Plan, candidates: Candidates, shortfalls: Mapping[str, int]) -> Story:
    """The story of one buffer; `shortfalls` are the planner's figures for a buffer that
    fits nowhere (by place), printed instead of measuring again."""
    name = candidates.buffer.name
    placement = next((p for p in result.placements if p.name == name), None)
    rooms = []
    for place in candidates.places:
        if placement is not None and place.label == placement.place:
            break
        room = measure(result, candidates, place.label)
        if room is not None and place.label in shortfalls:
            room = replace(room, lacks=shortfalls[place.label])
        if room is not None:
            rooms.append(room)
    return Story(candidates, placement, tuple(rooms))


def measure(result: Plan, candidates: Candidates, label: str) -> Room | None:
    """How much room `label` has for the buffer beside what `result` put there; None when
    the plan does not know the place's size."""
    capacity = _capacity(result, label)
    if capacity is None:
        return None
    buffer = candidates.buffer
    others = [p for p in result.in_place(label) if p.name != buffer.name]
    held = {
        step: sum(p.size for p in others if p.first <= step <= p.last)
        for step in range(buffer.first, buffer.last + 1)
    }
    worst = max(held, key=lambda step: (held[step], -step))
    lacks = max(0, held[worst] + buffer.size - capacity)
    if lacks:
        return Room(label, capacity, worst, held[worst], lacks, contiguous=False)
    block = Block(buffer.size, buffer.first, buffer.last, buffer.align)
    placed = [(p.offset, Block(p.size, p.first, p.last, p.align)) for p in others]
    end = first_fit(block, placed) + buffer.size
    return Room(label, capacity, worst, held[worst], max(0, end - capacity), contiguous=True)


def _live(placements: Sequence[Placement | None], step: int) -> int:
    return sum(p.size for p in placements if p is not None and p.first <= step <= p.last)


def _capacity(result: Plan, label: str) -> int | None:
    for pool in result.pools:
        if pool.name == label:
            return pool.capacity
    for stack in result.stacks:
        if f"{stack.context}.stack" == label:
            return stack.budget
    return None


def _story_lines(story: Story, steps: Sequence[str]) -> list[str]:
    c = story.candidates
    buffer = c.buffer
    places = ", ".join(place.label for place in c.places)
    life = (
        steps[buffer.first]
        if buffer.first == buffer.last
        else (f"{steps[buffer.first]}..{steps[buffer.last]}")
    )
    lines = [
        f"{buffer.name}: scope {buffer.scope}, users {', '.join(c.users)}; candidates {places}",
        f"  a {buffer.kind} of {buffer.size} bytes, align {buffer.align}, live {life}"
        + (f"; pools: {', '.join(buffer.pools)}" if buffer.pools else ""),
    ]
    for why, labels in _grouped(c.excluded):
        lines.append(f"  not {', '.join(labels)}: {why}")
    for room in story.passed_over:
        lines.append(f"  {room.place}: {room.sentence(steps)}")
    if story.placement is None:
        lines.append("  -> fits nowhere")
    else:
        p = story.placement
        lines.append(f"  -> {p.place} at offset {p.offset}: {p.reason}")
    return lines


def _story_json(story: Story, steps: Sequence[str]) -> dict[str, Any]:
    c = story.candidates
    p = story.placement
    return {
        "name": story.name,
        "scope": c.buffer.scope,
        "users": list(c.users),
        "candidates": [place.label for place in c.places],
        "excluded": [{"place": place.label, "why": why} for place, why in c.excluded],
        "passed_over": [
            {
                "place": room.place,
                "lacks": room.lacks,
                "worst_step": steps[room.worst_step],
                "held": room.held,
                "capacity": room.capacity,
                "contiguous": room.contiguous,
                "why": room.sentence(steps),
            }
            for room in story.passed_over
        ],
        "chosen": None if p is None else p.place,
        "reason": None if p is None else p.reason,
    }


def _grouped(excluded: Sequence[tuple[Place, str]]) -> list[tuple[str, list[str]]]:
    """Excluded places with the same reason, together, in the order they first appear."""
    groups: dict[str, list[str]] = {}
    for place, why in excluded:
        groups.setdefault(why, []).append(place.label)
    return list(groups.items())
