"""The report in the formats CI systems read: JUnit XML and SARIF 2.1.0.

JUnit: one test suite; a check without findings is one passing test case, a check with
findings has one failing test case per finding, and each stack is a test case of its own
carrying its bound and its measured mark. SARIF: one run of the tool `memplace`, one rule
per check, one result (level error) per finding, located in the file to blame.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

from memplace.files import write_output
from memplace.verify.report import CHECKS, Finding, Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/memplace/memplace"


def to_junit(report: Report, name: str = "memplace verify") -> str:
    """One test case per check; the stack checks, one per stack and check (`stack-bound
    main`), so each finding fails exactly one test case."""
    suite = ET.Element("testsuite", name=name)
    cases = failures = 0
    contexts = {stack.context for stack in report.stacks}

    def case(check: str, subject: str, found: list[Finding], out: str | None = None) -> None:
        nonlocal cases, failures
        element = ET.SubElement(suite, "testcase", classname=f"memplace.{check}", name=subject)
        if found:
            message = "; ".join(f.message for f in found)
            failure = ET.SubElement(element, "failure", message=message, type=check)
            failure.text = "\n".join(f"{f.subject}: {f.message}" for f in found)
            failures += 1
        if out is not None:
            ET.SubElement(element, "system-out").text = out
        cases += 1

    if report.assumptions:
        properties = ET.SubElement(suite, "properties")
        for assumption in report.assumptions:
            ET.SubElement(properties, "property", name="assumption", value=assumption)
    ran = _ran(report)
    for check, holds in ran.items():
        found = [f for f in report.findings if f.check == check]
        if check.startswith("stack") and report.stacks:
            found = [f for f in found if f.subject not in contexts]
        if not found and not (check.startswith("stack") and report.stacks):
            case(check, holds, [])
        for finding in found:
            case(check, finding.subject, [finding])
    for finding in report.findings:
        if finding.check not in ran:
            case(finding.check, finding.subject, [finding])
    for stack in report.stacks:
        bound = "unbounded" if stack.static_bound is None else str(stack.static_bound)
        measured = "not measured" if stack.measured is None else str(stack.measured)
        numbers = (
            f"budget {stack.budget}, planned {stack.planned}, static bound {bound}, "
            f"measured {measured}"
        )
        for check in (c for c in ran if c.startswith("stack")):
            found = [f for f in report.findings if f.check == check and f.subject == stack.context]
            case(check, f"stack {stack.context}", found, numbers)
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suites = ET.Element("testsuites", tests=str(cases), failures=str(failures), errors="0")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _ran(report: Report) -> dict[str, str]:
    """The checks the report's command ran, with what each holds to."""
    if report.checks is None:
        return dict(CHECKS)
    return {check: CHECKS[check] for check in report.checks if check in CHECKS}


def to_sarif(report: Report) -> str:
    ran = _ran(report)
    rules = [
        {
            "id": check,
            "name": "".join(part.capitalize() for part in check.split("-")),
            "shortDescription": {"text": holds},
            "defaultConfiguration": {"level": "error"},
        }
        for check, holds in ran.items()
    ]
    index = {check: n for n, check in enumerate(ran)}
    results = []
    for finding in report.findings:
        result: dict[str, object] = {
            "ruleId": finding.check,
            "level": "error",
            "message": {"text": f"{finding.subject}: {finding.message}"},
            "locations": [_location(finding.file or "memplace.json", finding.line)],
            "properties": {"subject": finding.subject},
        }
        if finding.check in index:
            result["ruleIndex"] = index[finding.check]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "memplace",
                        "version": _version(),
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "results": results,
                "properties": {"assumptions": list(report.assumptions)},
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _version() -> str:
    try:
        return metadata.version("memplace")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _location(file: str, line: int | None) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": Path(file).as_posix()}}
    if line is not None and line > 0:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def write_reports(report: Report, junit: Path | None = None, sarif: Path | None = None) -> None:
    """Write the report as JUnit XML to `junit` and as SARIF to `sarif` (each if given)."""
    if junit is not None:
        write_output(junit, to_junit(report))
    if sarif is not None:
        write_output(sarif, to_sarif(report))
