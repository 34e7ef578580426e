"""The report as JSON, JUnit XML and SARIF 2.1.0."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import cli_error
from memplace.verify import CHECKS, Finding, Report, StackReport, to_junit, to_sarif
from memplace.verify.formats import write_reports

REPORT = Report(
    findings=(
        Finding(
            "placement", "dtcm_ws", "demo_pool_dtcm_ws is at 0x01180000", file="build/cpu0.elf"
        ),
        Finding(
            "stack-unbounded",
            "main",
            "indirect call in dispatch at src/ops.c:42:9 reaches functions no hint names",
            file="src/ops.c",
            line=42,
        ),
        Finding("stack-budget", "main", "used all 2048 bytes <of> its budget & more"),
    ),
    stacks=(StackReport("main", 2048, 640, static_bound=None, measured=2048),),
)


def test_the_json_report_keeps_its_fixed_fields() -> None:
    data = REPORT.to_json()
    assert data["ok"] is False
    assert data["findings"][0] == {
        "check": "placement",
        "subject": "dtcm_ws",
        "message": "demo_pool_dtcm_ws is at 0x01180000",
        "file": "build/cpu0.elf",
    }
    stack = data["stacks"][0]
    assert {k: stack[k] for k in ("context", "budget", "static_bound", "measured", "planned")} == {
        "context": "main",
        "budget": 2048,
        "static_bound": None,
        "measured": 2048,
        "planned": 640,
    }


def test_junit_is_xml_with_one_failure_per_finding() -> None:
    root = ET.fromstring(to_junit(REPORT))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "")) == len(cases)
    failures = [case for case in cases if case.find("failure") is not None]
    assert int(suite.get("failures", "")) == len(failures) == 3  # each finding once
    # One test case per stack and stack check, failing where that check found something.
    main = {c.get("classname"): c for c in cases if c.get("name") == "stack main"}
    assert sorted(main) == sorted(f"memplace.{c}" for c in CHECKS if c.startswith("stack"))
    assert main["memplace.stack-budget"].find("failure") is not None
    assert main["memplace.stack-unbounded"].find("failure") is not None
    assert main["memplace.stack-bound"].find("failure") is None
    placement = [c for c in failures if c.get("classname") == "memplace.placement"]
    assert placement[0].get("name") == "dtcm_ws"
    failure = placement[0].find("failure")
    assert failure is not None and failure.get("message") == "demo_pool_dtcm_ws is at 0x01180000"
    passing = {c.get("classname") for c in cases if c.find("failure") is None}
    assert {"memplace.overlap", "memplace.alignment", "memplace.run"} <= passing
    out = main["memplace.stack-bound"].find("system-out")
    assert out is not None and "static bound unbounded, measured 2048" in (out.text or "")


def test_a_clean_report_has_no_failures() -> None:
    root = ET.fromstring(to_junit(Report(findings=(), stacks=())))
    assert root.get("failures") == "0" and int(root.get("tests", "")) == len(CHECKS)


def test_sarif_has_the_required_fields() -> None:
    log = json.loads(to_sarif(REPORT))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "memplace" and driver["version"]
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == list(CHECKS)
    assert all(rule["shortDescription"]["text"] for rule in driver["rules"])
    assert len(run["results"]) == 3
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] == "error"
        assert result["message"]["text"]
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"]
    located = run["results"][1]["locations"][0]["physicalLocation"]
    assert located == {"artifactLocation": {"uri": "src/ops.c"}, "region": {"startLine": 42}}
    # A finding with no file of its own points at the manifest that holds the plan.
    unlocated = run["results"][2]["locations"][0]["physicalLocation"]
    assert unlocated == {"artifactLocation": {"uri": "memplace.json"}}


def test_reports_are_written_where_asked(tmp_path: Path) -> None:
    write_reports(REPORT, junit=tmp_path / "r.xml", sarif=tmp_path / "r.sarif")
    ET.parse(tmp_path / "r.xml")
    assert json.loads((tmp_path / "r.sarif").read_text())["version"] == "2.1.0"


def test_a_report_in_no_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "missing" / "r.xml"
    line = cli_error(capsys, "verify", tmp_path / "no-project", "--junit", report)
    assert line == f"memplace: error: --junit: no folder {report.parent} to write r.xml in"
