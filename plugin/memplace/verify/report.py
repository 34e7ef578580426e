"""The verification report: every finding, and what each stack budget holds."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One way the firmware disagrees with the plan or a budget."""

    check: str
    subject: str
    message: str


@dataclass(frozen=True)
class StackReport:
    context: str
    budget: int
    planned: int
    static_bound: int | None = None
    measured: int | None = None


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    stacks: tuple[StackReport, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "findings": [
                {"check": f.check, "subject": f.subject, "message": f.message}
                for f in self.findings
            ],
            "stacks": [
                {
                    "context": s.context,
                    "budget": s.budget,
                    "static_bound": s.static_bound,
                    "measured": s.measured,
                    "planned": s.planned,
                }
                for s in self.stacks
            ],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def table(self) -> str:
        lines = []
        for stack in self.stacks:
            measured = "-" if stack.measured is None else str(stack.measured)
            lines.append(
                f"stack {stack.context}: measured {measured} of {stack.budget} bytes "
                f"(planned buffers {stack.planned})"
            )
        for finding in self.findings:
            lines.append(f"FAIL {finding.check} {finding.subject}: {finding.message}")
        lines.append("verify: ok" if self.ok else f"verify: {len(self.findings)} finding(s)")
        return "\n".join(lines)
