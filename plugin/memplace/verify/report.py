"""The verification report: every finding, and what each stack budget holds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Every check verification runs, with what it holds to: the rules of the SARIF report and
# the test cases of the JUnit one.
CHECKS = {
    "placement": "every pool and stack is in its section and memory, at its planned address",
    "alignment": "every pool, buffer, constant and stack is aligned as planned",
    "contents": "every constant holds the workload's bytes",
    "load-copy": "what runs from RAM or TCM has its load copy in the load memory, and is copied",
    "memory": "every section lies inside a memory the core reaches, clear of planned areas",
    "overlap": "no two allocated sections (or load copies) share a byte",
    "shared": "a memory several images use holds the same addresses in each, and no clashes",
    "vectors": "every core starts from its own vector table at its `boot` address; a core "
    "that runs another core's image, from a table of its own there, with its stack and a "
    "reset handler of the image",
    "stack-unbounded": "every stack has a static bound: no unbounded recursion, indirect call "
    "or dynamic frame",
    "stack-bound": "the static stack bound fits the stack budget",
    "stack-analysis": "the measured high-water mark does not exceed the static bound",
    "stack-budget": "the measured high-water mark stays under the stack budget",
    "stack-mark": "the run measured every task's stack: its low end holds the fill",
    "task": "every task the firmware creates is bounded: created with constants or listed in "
    "the board, which lists only tasks the firmware creates, with no more stack than they get",
    "vector": "an isr wired to a device interrupt line is that line's vector table entry",
    "run": "the run on the target passed every check of the exerciser",
}


SWITCH = "context switch"
"""How a task's stack report names what its RTOS's context switches leave on it."""
SYSTEM_CALL = "system call"
"""How a system-call stack's report names the exception frame a system call copies there."""


@dataclass(frozen=True)
class Finding:
    """One way the firmware disagrees with the plan or a budget. `file` (and `line`) say
    where, when a file is to blame: an image, or a source line."""

    check: str
    subject: str
    message: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"check": self.check, "subject": self.subject}
        data["message"] = self.message
        if self.file is not None:
            data["file"] = self.file
        if self.line is not None:
            data["line"] = self.line
        return data


@dataclass(frozen=True)
class StackReport:
    """One stack: its budget, the bytes planned on it, the static bound (None when
    unbounded) with the call path that reaches it, and the measured high-water mark."""

    context: str
    budget: int
    planned: int
    static_bound: int | None = None
    measured: int | None = None
    path: tuple[str, ...] = ()
    interrupts: tuple[tuple[str, int | None], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "budget": self.budget,
            "static_bound": self.static_bound,
            "measured": self.measured,
            "planned": self.planned,
            "path": list(self.path),
            "interrupts": [{"context": name, "bytes": cost} for name, cost in self.interrupts],
        }


def _interrupt_lines(stack: StackReport) -> list[str]:
    if "." in stack.context and stack.interrupts:
        # A worker thread's stack: the ISRs' handlers run on the main stack.
        names = ", ".join(name for name, _ in stack.interrupts)
        frame = stack.interrupts[0][1]
        return [f"  ISRs {names} interrupt it: one exception frame of {frame} bytes"]
    lines = []
    for name, cost in stack.interrupts:
        if name.startswith(SWITCH):
            # An RTOS task's stack: what a context switch leaves there (`verify.rtos`).
            lines.append(
                f"  a {name} leaves {cost} bytes on it (exception frame, saved registers, "
                "the port's unused top)"
            )
            continue
        if name == SYSTEM_CALL:
            lines.append(f"  a system call copies its exception frame to it: {cost} bytes")
            continue
        shown = "unbounded" if cost is None else f"{cost} bytes"
        lines.append(f"  ISR {name} lands on it: {shown} with its exception frame")
    return lines


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    stacks: tuple[StackReport, ...]
    warnings: tuple[str, ...] = ()
    """What the check could not use but that fails nothing (a stack hint naming a
    function this build does not have)."""
    assumptions: tuple[str, ...] = ()
    """What the bounds take on the hints' word alone (a call cut, interrupts masked)."""
    checks: tuple[str, ...] | None = None
    """The checks that ran (None: every check of CHECKS)."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
            "stacks": [s.to_json() for s in self.stacks],
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def table(self) -> str:
        lines = []
        for stack in self.stacks:
            measured = "-" if stack.measured is None else str(stack.measured)
            bound = "unbounded" if stack.static_bound is None else f"{stack.static_bound}"
            lines.append(
                f"stack {stack.context}: measured {measured} of {stack.budget} bytes "
                f"(planned buffers {stack.planned}), static bound {bound}"
            )
            if stack.path and stack.static_bound is not None:
                lines.append(f"  deepest path: {' > '.join(stack.path)}")
            lines += _interrupt_lines(stack)
        lines += [f"assumption: {assumption}" for assumption in self.assumptions]
        lines += [f"warning: {warning}" for warning in self.warnings]
        for finding in self.findings:
            lines.append(f"FAIL {finding.check} {finding.subject}: {finding.message}")
        lines.append("verify: ok" if self.ok else f"verify: {len(self.findings)} finding(s)")
        return "\n".join(lines)
