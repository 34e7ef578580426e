"""Proving a built project against its plan: from the ELF files, and from a run.

`verify` is read-only and complete: it reports every finding, not the first.
"""

from __future__ import annotations

from pathlib import Path

from memplace.board import FIRST_IRQ_EXCEPTION
from memplace.hints import StackHints, load_hints
from memplace.project import Project
from memplace.project_files import HINTS_DIR
from memplace.verify.elf import check_images
from memplace.verify.formats import to_junit, to_sarif, write_reports
from memplace.verify.image import Image
from memplace.verify.report import CHECKS, Finding, Report, StackReport
from memplace.verify.runlog import RunLog, parse_run
from memplace.verify.stack import context_bounds, graph_of, hint_warnings, stack_findings

__all__ = [
    "CHECKS",
    "Finding",
    "Report",
    "RunLog",
    "StackHints",
    "StackReport",
    "load_hints",
    "parse_run",
    "to_junit",
    "to_sarif",
    "verify",
    "write_reports",
]


def verify(
    project: Project,
    run: RunLog | None = None,
    hints: StackHints | None = None,
    objects: Path | None = None,
) -> Report:
    """Every finding about `project`: placement from its images, static stack bounds from
    their call graphs (bounded further by the hints the project keeps and by `hints`; GCC's
    .su and .ci files read from `objects` when the image was built elsewhere), and with a
    run, the measured stacks."""
    kept = project_hints(project.folder)
    if kept is not None:
        hints = kept if hints is None else kept.merged(hints)
    images = {core: Image.from_file(path) for core, path in project.images.items()}
    findings = check_images(project, images)
    graphs = {core: graph_of(project, core, image, objects) for core, image in images.items()}
    bounds = context_bounds(project, images, graphs, hints)
    warnings = hint_warnings(hints, graphs.values()) if hints is not None else ()
    stacks = []
    for stack in project.plan.stacks:
        bound = bounds.get(stack.context)
        if bound is None:
            continue  # its core's image is not checked here
        measured = run.stacks.get(stack.context) if run else None
        findings += stack_findings(stack.context, stack.budget, bound, measured)
        stacks.append(
            StackReport(
                context=stack.context,
                budget=stack.budget,
                planned=stack.planned,
                static_bound=bound.bytes,
                measured=measured,
                path=bound.path,
                interrupts=bound.interrupts,
            )
        )
    if run is not None:
        findings += _run_findings(run)
    assumptions = hints.assumptions() if hints is not None else ()
    assumptions += tuple(said for graph in graphs.values() for said in graph.assumptions)
    checks = tuple(c for c in CHECKS if c not in STACKS_ONLY)
    return Report(tuple(dict.fromkeys(findings)), tuple(stacks), warnings, assumptions, checks)


STACKS_ONLY = ("task", "stack-mark")
"""Checks only `memplace stacks` runs (on firmware memplace did not generate)."""


def project_hints(folder: Path) -> StackHints | None:
    """The hints a generated project keeps (its board's and workload's, and the
    exerciser's own), merged."""
    paths = sorted((folder / HINTS_DIR).glob("*.yaml"))
    return load_hints(paths) if paths else None


def _run_findings(run: RunLog) -> list[Finding]:
    findings = [
        Finding("run", f.name, f"{f.what} {f.name} failed its check at step {f.step}")
        for f in run.failures
    ]
    if run.fault is not None:
        findings.append(Finding("run", "fault", f"the image stopped on {_exception(run.fault)}"))
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


def _exception(number: int) -> str:
    """An exception number as a report names it: device interrupt lines by their line."""
    if number < FIRST_IRQ_EXCEPTION:
        return f"exception {number}"
    line = number - FIRST_IRQ_EXCEPTION
    return f"exception {number} (device interrupt line {line}, which has no handler of its own)"
