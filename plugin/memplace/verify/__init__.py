"""Proving a built project against its plan: from the ELF files, and from a run."""

from __future__ import annotations

from memplace.project import Project
from memplace.verify.elf import check_images
from memplace.verify.report import Finding, Report, StackReport
from memplace.verify.runlog import RunLog, parse_run

__all__ = ["Finding", "Report", "RunLog", "StackReport", "parse_run", "verify"]


def verify(project: Project, run: RunLog | None = None) -> Report:
    """Every finding about `project` (read-only); with a run, its measured stacks too."""
    findings = check_images(project)
    stacks = []
    for stack in project.plan.stacks:
        measured = run.stacks.get(stack.context) if run else None
        if measured is not None and measured >= stack.budget:
            # Painting cannot see past the stack's own area: a stack written to its last
            # word has overflowed, or is one push away from it.
            findings.append(
                Finding(
                    "stack-budget",
                    stack.context,
                    f"used all {stack.budget} bytes of its budget: the stack overflowed",
                )
            )
        stacks.append(
            StackReport(
                context=stack.context, budget=stack.budget, planned=stack.planned, measured=measured
            )
        )
    if run is not None:
        findings += _run_findings(run)
    return Report(findings=tuple(findings), stacks=tuple(stacks))


def _run_findings(run: RunLog) -> list[Finding]:
    findings = [
        Finding("run", f.name, f"{f.what} {f.name} failed its check at step {f.step}")
        for f in run.failures
    ]
    if run.fault is not None:
        findings.append(Finding("run", "fault", f"the image stopped on exception {run.fault}"))
    if run.result is None and run.fault is None:
        findings.append(
            Finding(
                "run",
                "result",
                f"the run ended (exit code {run.exit_code}) without reporting a result",
            )
        )
    elif run.exit_code != 0 and not findings:
        findings.append(Finding("run", "exit", f"the image exited with code {run.exit_code}"))
    return findings
