"""Pictures of a plan: the SVG file and the text in the terminal report."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memplace.board import Board
from memplace.cli import main
from memplace.planner import plan
from memplace.planner.render_svg import render_svg, render_text
from memplace.workload import Workload

SVG = "{http://www.w3.org/2000/svg}"


def test_the_svg_has_a_panel_per_place_and_a_rectangle_per_buffer(
    board: Board, demo_workload: Workload
) -> None:
    result = plan(board, demo_workload)
    root = ET.fromstring(render_svg(result))
    panels = root.findall(f"{SVG}g")
    used = [pool for pool in result.pools if pool.used] + list(result.stacks)
    assert len(panels) == len(used)
    buffers = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(buffers) == len(result.placements)
    titles = {r.find(f"{SVG}title").text for r in buffers}  # type: ignore[union-attr]
    assert "conv1_out: 98304 bytes at offset 0, steps 1 to 2" in titles
    dashed = [line for line in root.iter(f"{SVG}line") if line.get("stroke-dasharray")]
    assert len(dashed) == len(panels)  # the lower bound, once per place
    assert render_svg(result) == render_svg(plan(board, demo_workload))


def test_the_text_shows_each_place_with_its_bound(board: Board, demo_workload: Workload) -> None:
    text = render_text(plan(board, demo_workload))
    assert text.startswith(
        "pool dtcm_ws (dtcm): 215040 of 262144 bytes used, lower bound 215040, optimal"
    )
    assert "< lower bound" in text
    assert "=dw1_skip" in text
    assert "stack of main (dtcm): 640 of 16384 bytes used" in text
    rows = [line for line in text.splitlines() if line.endswith("|") or "| " in line]
    assert all(len(row.split("|")[1]) == len(demo_workload.steps) for row in rows)


def test_many_steps_share_a_column(board: Board) -> None:
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "long",
            "steps": 200,
            "buffers": [{"name": f"b{i}", "size": 64, "live": [i, i + 1]} for i in range(199)],
        }
    )
    text = render_text(plan(board, workload), columns=50)
    assert "(one column per 4 steps)" in text
    assert max(len(line) for line in text.splitlines()) < 100


def test_plan_writes_the_svg_and_prints_the_pictures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = Path(__file__).resolve().parents[1] / "examples" / "demo" / "workload.yaml"
    out = tmp_path / "plan.svg"
    code = main(["plan", "qemu-mps3-an547", str(workload), "--svg", str(out)])
    assert code == 0
    assert ET.parse(out).getroot().tag == f"{SVG}svg"
    printed = capsys.readouterr().out
    assert "pool dtcm_ws (dtcm): 215040 of 262144 bytes used" in printed
    assert main(["plan", "qemu-mps3-an547", str(workload), "--time-limit", "-1"]) == 2
    assert "--time-limit: expected a positive number of seconds" in capsys.readouterr().err
