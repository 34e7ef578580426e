"""The Plan: where every buffer and constant lives, and what each pool and stack holds."""

from __future__ import annotations

import json
import json.encoder
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from memplace.errors import InputError

VERSION = "plan/v1"
ASSIGNMENT = "assignment"
"""The algorithm a place names when it keeps the offsets the pool assignment found."""
# A worker thread's stack as placements and StackUsage label it: `main.thread0`.
_THREAD_STACK = re.compile(r"^\w+\.thread(\d+)$")
_json_text = json.encoder.encode_basestring_ascii
"""A string as `json.dumps` writes it (ASCII, escaped; C-backed)."""


@dataclass(frozen=True)
class PoolUsage:
    """What one pool holds. `algorithm` names the algorithm its offsets came from (None
    when it holds nothing): the one the plan asked for, the one `auto` took them from, or
    ASSIGNMENT when the pool assignment's own offsets were kept (see docs/planner.md)."""

    name: str
    kind: str
    memory: str
    address: int
    capacity: int
    used: int
    lower_bound: int
    optimal: bool
    algorithm: str | None = None


@dataclass(frozen=True)
class Placement:
    """One buffer's place: in `pool` at `offset`, or on the stack of context `stack`."""

    name: str
    kind: str
    pool: str | None
    stack: str | None
    offset: int
    size: int
    align: int
    first: int
    last: int
    reason: str
    contents: bytes | None = field(default=None, compare=False, repr=False)
    dynamic: bool = False

    @property
    def place(self) -> str:
        return self.pool if self.pool is not None else f"{self.stack}.stack"


@dataclass(frozen=True)
class StackUsage:
    """What one stack holds; `algorithm` as in PoolUsage.

    `context` labels the stack as placements do: a context's own stack by the context's
    name (`main`), a worker thread's by `<context>.thread<N>` (`main.thread0`)."""

    context: str
    memory: str
    address: int
    budget: int
    planned: int
    algorithm: str | None = None

    @property
    def owner(self) -> str:
        """The context the stack belongs to: for a worker thread's, the context that
        starts the thread."""
        return self.context.split(".", 1)[0]

    @property
    def thread(self) -> int | None:
        """The worker thread's index for a thread's stack; None for a context's own."""
        match = _THREAD_STACK.match(self.context)
        return int(match[1]) if match else None

    @property
    def c_name(self) -> str:
        """The label as a C identifier, for symbols and sections: `main`, `main_thread0`."""
        return self.context.replace(".", "_")


@dataclass(frozen=True)
class Plan:
    board: str
    workload: str
    algorithm: str
    steps: Sequence[str]
    pools: tuple[PoolUsage, ...]
    placements: tuple[Placement, ...]
    stacks: tuple[StackUsage, ...]
    stopped: int | None = None
    """Where the user's time limit stopped the search early: the search nodes it had
    visited by then (None: the searches ran to their work budgets, and the plan depends on
    the inputs and options alone)."""
    users: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)
    """Each buffer's users (contexts and devices) as the board's scopes resolved them while
    planning: what the generator reads, so that nothing resolves them again."""

    def pool(self, name: str) -> PoolUsage:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    def placement(self, name: str) -> Placement:
        for placement in self.placements:
            if placement.name == name:
                return placement
        raise KeyError(name)

    def in_place(self, place: str) -> list[Placement]:
        return [p for p in self.placements if p.place == place]

    def address(self, placement: Placement) -> int | None:
        """The absolute address of a pool placement; None for a stack placement."""
        if placement.pool is None:
            return None
        return self.pool(placement.pool).address + placement.offset

    def to_json(self) -> dict[str, Any]:
        return {
            "memplace": VERSION,
            "board": self.board,
            "workload": self.workload,
            "algorithm": self.algorithm,
            "steps": self.steps_json(),
            "pools": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "memory": p.memory,
                    "address": p.address,
                    "capacity": p.capacity,
                    "used": p.used,
                    "lower_bound": p.lower_bound,
                    "optimal": p.optimal,
                    "algorithm": p.algorithm,
                }
                for p in self.pools
            ],
            "placements": [_placement_json(p) for p in self.placements],
            "stacks": [
                {
                    "context": s.context,
                    "memory": s.memory,
                    "address": s.address,
                    "budget": s.budget,
                    "planned": s.planned,
                    "algorithm": s.algorithm,
                }
                for s in self.stacks
            ],
        }

    def steps_json(self) -> dict[str, Any]:
        """The timeline as the plan's JSON gives it: how many steps, and the name of each
        step where some placement starts or ends, where it is not the step's number (the
        other steps change nothing in the plan). Its size follows the placements, not the
        steps: a plan of a million steps takes a line."""
        events = sorted({p.first for p in self.placements} | {p.last for p in self.placements})
        names = {str(i): self.steps[i] for i in events if self.steps[i] != str(i)}
        return {"count": len(self.steps), "names": names}

    def dumps(self) -> str:
        """The plan as JSON, indented, one placement a line: the same bytes for the same
        plan, written in time proportional to its size."""
        return "".join(self.json_lines())

    def write_json(self, stream: TextIO) -> None:
        """`dumps()` written to `stream` a line at a time, never whole in memory."""
        for line in self.json_lines():
            stream.write(line)

    def json_lines(self) -> Iterator[str]:
        data = replace(self, placements=()).to_json()  # the placements a line each, below
        data["steps"] = self.steps_json()
        if self.stopped is not None:
            data["stopped"] = {"reason": "time limit", "nodes": self.stopped}
        stacks = data.pop("stacks")
        del data["placements"]
        yield json.dumps(data, indent=2)[:-2] + ",\n"  # without the closing brace
        yield '  "placements": [\n'
        last = len(self.placements) - 1
        for index, placement in enumerate(self.placements):
            yield f"    {_placement_line(placement)}{',' if index < last else ''}\n"
        yield "  ],\n"
        body = json.dumps({"stacks": stacks}, indent=2)
        yield body[body.index("\n") + 1 :] + "\n"  # `"stacks": [...]` and the closing brace

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        if data.get("memplace") != VERSION:
            raise InputError(f"not a {VERSION} plan", key="memplace")
        try:
            return cls(
                board=data["board"],
                workload=data["workload"],
                algorithm=data["algorithm"],
                steps=_steps(data["steps"]),
                pools=tuple(PoolUsage(**p) for p in data["pools"]),
                placements=tuple(Placement(**p) for p in data["placements"]),
                stacks=tuple(StackUsage(**s) for s in data["stacks"]),
            )
        except (KeyError, TypeError) as exc:
            raise InputError(f"malformed plan: {exc}") from exc


def _placement_json(p: Placement) -> dict[str, Any]:
    return {
        "name": p.name,
        "kind": p.kind,
        "pool": p.pool,
        "stack": p.stack,
        "offset": p.offset,
        "size": p.size,
        "align": p.align,
        "first": p.first,
        "last": p.last,
        "reason": p.reason,
        "dynamic": p.dynamic,
    }


def _placement_line(p: Placement) -> str:
    """`json.dumps(_placement_json(p))`, byte for byte, at a fraction of its cost (a plan of
    a million buffers writes a million of these)."""
    text = _json_text
    return (
        f'{{"name": {text(p.name)}, "kind": {text(p.kind)}, "pool": {_json_or_null(p.pool)}, '
        f'"stack": {_json_or_null(p.stack)}, "offset": {int(p.offset)}, "size": {int(p.size)}, '
        f'"align": {int(p.align)}, "first": {int(p.first)}, "last": {int(p.last)}, '
        f'"reason": {text(p.reason)}, "dynamic": {"true" if p.dynamic else "false"}}}'
    )


def _json_or_null(value: str | None) -> str:
    return "null" if value is None else _json_text(value)


def _steps(data: Any) -> tuple[str, ...]:
    """The step names of a plan's `steps` (see `Plan.steps_json`); a step the plan does not
    name is named by its number. A list of every name (as plans wrote them before) reads
    as it is."""
    if isinstance(data, list):
        return tuple(data)
    names = data["names"]
    return tuple(names.get(str(i), str(i)) for i in range(data["count"]))
