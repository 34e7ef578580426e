"""Pictures of a plan: every place as buffers over steps (x) and offsets (y).

`render_svg` draws one panel per pool or stack that holds buffers: each buffer a labelled
rectangle from its first to its last step and from its offset to its end, the lower bound
a dashed line. `render_text` draws the same, coarsely, in characters, for the terminal.
Both are pure: plan in, text out, the same bytes for the same plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from memplace.planner.blocks import Block, lower_bound
from memplace.planner.model import ASSIGNMENT, Placement, Plan

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


@dataclass(frozen=True)
class _Place:
    title: str
    capacity: int
    used: int
    lower_bound: int
    optimal: bool | None
    members: tuple[Placement, ...]
    offsets_by: str


def _places(plan: Plan) -> list[_Place]:
    places = [
        _Place(
            f"pool {pool.name} ({pool.memory})",
            pool.capacity,
            pool.used,
            pool.lower_bound,
            pool.optimal,
            tuple(p for p in plan.placements if p.pool == pool.name),
            offsets_by(plan.algorithm, pool.algorithm, pool.used == pool.lower_bound),
        )
        for pool in plan.pools
    ]
    for stack in plan.stacks:
        members = tuple(p for p in plan.placements if p.stack == stack.context)
        bound = lower_bound([Block(p.size, p.first, p.last, p.align) for p in members])
        places.append(
            _Place(
                f"stack of {stack.context} ({stack.memory})",
                stack.budget,
                stack.planned,
                bound,
                None,
                members,
                offsets_by(plan.algorithm, stack.algorithm, stack.planned == bound),
            )
        )
    return [place for place in places if place.members]


def offsets_by(asked: str, used: str | None, at_bound: bool) -> str:
    """Which algorithm a place's offsets came from, in words, given the one the plan asked
    for and whether they meet the lower bound; empty when the plan does not say."""
    if used is None:
        return ""
    if used == asked:
        return f"offsets by {used}"
    if used != ASSIGNMENT:
        return f"offsets by {used} (auto's choice)"
    if asked != "auto":
        return f"offsets from the pool assignment: {asked} did not fit the capacity"
    if at_bound:
        return "offsets from the pool assignment, at the lower bound already"
    return "offsets from the pool assignment: auto found none better"


def _summary(place: _Place) -> str:
    proof = {True: ", optimal", False: "", None: ""}[place.optimal]
    return (
        f"{place.title}: {place.used} of {place.capacity} bytes used, "
        f"lower bound {place.lower_bound}{proof}, {len(place.members)} buffers"
    )


def render_text(plan: Plan, columns: int = 64, rows: int = 6) -> str:
    """Each place as a grid of characters: a column per step (or per group of steps), a
    row per band of offsets, highest first; each cell shows the buffer filling most of it."""
    out = []
    for place in _places(plan):
        out.append(_summary(place))
        if place.offsets_by:
            out.append(f"  {place.offsets_by}")
        out.extend(_grid(place, len(plan.steps), columns, rows))
    return "\n".join(out)


def _grid(place: _Place, steps: int, columns: int, rows: int) -> list[str]:
    group = -(-steps // columns)
    width = -(-steps // group)
    top = max(place.used, 1)
    band = -(-top // rows)
    live: list[list[Placement]] = [[] for _ in range(width)]
    for p in place.members:
        for column in range(p.first // group, p.last // group + 1):
            live[column].append(p)
    order = sorted(place.members, key=lambda p: (p.offset, p.first, p.name))
    symbol = {p.name: SYMBOLS[k] if k < len(SYMBOLS) else "#" for k, p in enumerate(order)}
    label_width = len(str(top))
    lines = []
    shown: set[str] = set()
    for row in reversed(range(-(-top // band))):
        low, high = row * band, min((row + 1) * band, top)
        cells = []
        for column in range(width):
            best, cover = ".", 0
            for p in live[column]:
                share = min(high, p.offset + p.size) - max(low, p.offset)
                if share > cover:
                    best, cover = symbol[p.name], share
            cells.append(best)
            shown.add(best)
        mark = "  < lower bound" if low < place.lower_bound <= high else ""
        lines.append(f"  {low:>{label_width}} |{''.join(cells)}|{mark}")
    legend = [f"{symbol[p.name]}={p.name}" for p in order if symbol[p.name] in shown]
    hidden = len(order) - len(legend)
    if hidden:
        legend.append(f"(and {hidden} too thin to show)")
    line = " "
    for entry in legend:
        if len(line) + len(entry) + 1 > 96:
            lines.append(line)
            line = " "
        line += " " + entry
    lines.append(line)
    if group > 1:
        lines.append(f"  (one column per {group} steps)")
    return lines


def render_svg(plan: Plan, width: int = 720, height: int = 240) -> str:
    """An SVG document with a panel per place; see the module doc."""
    places = _places(plan)
    left, right, head, foot = 80, 20, 34, 40
    panel = head + height + foot
    total_width = left + width + right
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" '
        f'height="{max(1, len(places)) * panel}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(plan.workload)} on {escape(plan.board)} ({escape(plan.algorithm)})"
        "</title>",
    ]
    if not places:
        parts.append('<text x="10" y="20">no buffers placed</text>')
    for k, place in enumerate(places):
        parts.extend(_panel(place, plan.steps, k * panel, left, head, width, height))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(
    place: _Place,
    steps: Sequence[str],
    y0: int,
    left: int,
    head: int,
    width: int,
    height: int,
) -> list[str]:
    top = max(place.used, place.lower_bound, 1)
    step_width = width / max(1, len(steps))
    scale = height / top
    base = y0 + head + height

    def y(offset: int) -> float:
        return base - offset * scale

    parts = [
        '<g class="place">',
        f'<text x="{left}" y="{y0 + 20}" font-size="13" font-weight="bold">'
        f"{escape(_summary(place))}{escape('; ' + place.offsets_by if place.offsets_by else '')}"
        "</text>",
        f'<rect x="{left}" y="{y0 + head}" width="{width}" height="{height}" '
        'fill="#f7f7f7" stroke="#999"/>',
    ]
    for index, p in enumerate(sorted(place.members, key=lambda p: (p.offset, p.first, p.name))):
        x = left + p.first * step_width
        w = (p.last - p.first + 1) * step_width
        h = p.size * scale
        parts.append(
            f'<rect x="{x:.2f}" y="{y(p.offset + p.size):.2f}" width="{w:.2f}" '
            f'height="{h:.2f}" fill="{PALETTE[index % len(PALETTE)]}" stroke="#fff" '
            f'stroke-width="0.5"><title>{escape(p.name)}: {p.size} bytes at offset '
            f"{p.offset}, steps {p.first} to {p.last}</title></rect>"
        )
        if w >= 6.5 * len(p.name) + 4 and h >= 12:
            parts.append(
                f'<text x="{x + w / 2:.2f}" y="{y(p.offset + p.size) + h / 2 + 4:.2f}" '
                f'text-anchor="middle" fill="#fff">{escape(p.name)}</text>'
            )
    bound = y(place.lower_bound)
    parts.append(
        f'<line x1="{left}" y1="{bound:.2f}" x2="{left + width}" y2="{bound:.2f}" '
        'stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 4"/>'
    )
    parts.append(
        f'<text x="{left - 6}" y="{bound + 4:.2f}" text-anchor="end" fill="#d62728">'
        f"{place.lower_bound}</text>"
    )
    if place.used != place.lower_bound:
        parts.append(
            f'<text x="{left - 6}" y="{y(place.used) + 4:.2f}" text-anchor="end">'
            f"{place.used}</text>"
        )
    parts.append(f'<text x="{left - 6}" y="{base + 4}" text-anchor="end">0</text>')
    every = max(1, -(-len(steps) * 60 // width))
    for index in range(0, len(steps), every):
        x = left + (index + 0.5) * step_width
        parts.append(
            f'<text x="{x:.2f}" y="{base + 16}" text-anchor="middle">{escape(steps[index])}</text>'
        )
    parts.append(
        f'<text x="{left + width / 2:.2f}" y="{base + 32}" text-anchor="middle" '
        'fill="#555">steps; offsets in bytes; dashed: lower bound</text>'
    )
    parts.append("</g>")
    return parts
