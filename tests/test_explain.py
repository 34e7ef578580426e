"""`memplace plan --explain`: candidates, exclusions, why the chosen place won, and for a
buffer that fits nowhere how many bytes each candidate lacks at its worst step."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memplace.board import Board
from memplace.cli import main
from memplace.errors import PlanningError
from memplace.explain import Room, explain, measure
from memplace.planner import plan
from memplace.scopes import resolve_buffer
from memplace.workload import Workload, WorkloadBuilder


def test_a_spilled_buffer_says_what_the_faster_pool_lacked(
    board: Board, demo_workload: Workload
) -> None:
    story = explain(board, demo_workload)
    assert story.plan is not None and not story.failed
    skip = story.story("dw1_skip")
    assert skip.placement is not None and skip.placement.pool == "sram_ws"
    (room,) = skip.passed_over
    assert room == Room("dtcm_ws", 262144, 2, 215040, 51200, contiguous=False)
    assert room.sentence(demo_workload.steps) == (
        "lacks 51200 bytes at step dw1 (215040 of 262144 bytes held by other buffers)"
    )


def test_the_text_names_candidates_exclusions_and_the_choice(
    board: Board, demo_workload: Workload
) -> None:
    text = explain(board, demo_workload).text()
    assert (
        "dma_ring: scope global, users main, npu0; candidates sram_ws, ddr_ws\n"
        "  a buffer of 4096 bytes, align 16, live load..fc\n"
        "  not main.stack: device npu0 uses it, and a stack is reached by its own context only\n"
        "  not dtcm_ws: npu0 cannot reach memory dtcm\n"
        "  not itcm_const, ddr_const: a constant pool; a buffer needs a workspace pool\n"
        "  -> sram_ws at offset "
    ) in text
    assert (
        "fc_w: scope global.ddr_const, users main; candidates ddr_const\n"
        "  a constant of 40960 bytes, align 16, live load..fc\n"
        "  not main.stack: a constant lives in a constant pool\n"
        "  not dtcm_ws, itcm_const, sram_ws, ddr_ws: scope global.ddr_const pins pool ddr_const\n"
        "  -> ddr_const at offset 0: pinned by scope global.ddr_const"
    ) in text
    assert "im2col: scope local, users main; candidates main.stack" in text
    assert "  -> main.stack at offset 0: local: a frame on main's stack" in text


def _too_big() -> Workload:
    return (
        WorkloadBuilder("w", steps=["a", "b", "c"])
        .buffer("big", "2M", ("a", "b"), scope="global.sram_ws")
        .buffer("huge", "20M", "b")
        .buffer("act", "200K", ("a", "c"))
        .buffer("dma", "100K", ("b", "c"), users=("main", "npu0"))
        .build()
    )


def test_buffers_that_fit_nowhere(board: Board) -> None:
    story = explain(board, _too_big())
    assert story.plan is None
    assert story.failed == ("huge", "big")
    assert isinstance(story.error, PlanningError) and story.error.buffer == "huge"
    big = story.story("big")
    assert big.placement is None
    assert big.passed_over == (Room("sram_ws", 1048576, 1, 102400, 1150976, contiguous=False),)
    huge = story.story("huge")
    assert [(r.place, r.lacks) for r in huge.passed_over] == [
        ("dtcm_ws", 20971520 + 204800 - 262144),
        ("sram_ws", 20971520 + 102400 - 1048576),
        ("ddr_ws", 20971520 - 12582912),
    ]
    # Buffers that fit are still explained, against the plan made without the misfits.
    act = story.story("act")
    assert act.placement is not None and act.placement.pool == "dtcm_ws"
    text = story.text()
    assert text.startswith("fits nowhere: huge, big\n")
    assert "  sram_ws: lacks 1150976 bytes at step b (102400 of 1048576 bytes held" in text
    assert "  -> fits nowhere" in text
    with pytest.raises(PlanningError):
        story.raise_failure()


def test_free_bytes_that_are_not_in_one_gap(board: Board) -> None:
    base = (
        WorkloadBuilder("w", steps=2)
        .buffer("x", "100K", 0, scope="global.dtcm_ws")
        .buffer("y", "100K", 1, scope="global.dtcm_ws")
        .buffer("z", "150K", (0, 1), scope="global.dtcm_ws")
        .build()
    )
    result = plan(board, base.without({"z"}))
    # Put y where it splits the pool's free bytes in two.
    moved = tuple(
        replace(p, offset=150 * 1024) if p.name == "y" else replace(p, offset=0)
        for p in result.placements
    )
    result = replace(result, placements=moved)
    room = measure(result, resolve_buffer(board, base.buffer("z")), "dtcm_ws")
    assert room == Room("dtcm_ws", 262144, 0, 102400, 144 * 1024, contiguous=True)
    assert room.sentence(base.steps) == (
        "159744 bytes free at step 0 but not in one gap: lacks 147456 contiguous bytes"
    )
    # A place the plan does not know the size of is not measured.
    assert measure(result, resolve_buffer(board, base.buffer("z")), "nowhere") is None


def test_a_candidate_with_room_that_was_not_used(board: Board) -> None:
    workload = WorkloadBuilder("w").buffer("x", 64, 0).build()
    result = plan(board, workload)
    room = measure(result, resolve_buffer(board, workload.buffer("x")), "sram_ws")
    assert room is not None and room.lacks == 0
    assert room.sentence(workload.steps).startswith("would fit beside the plan as it stands")


def test_plan_explain_on_the_command_line(
    board: Board, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nsteps: [a, b]\nbuffers:\n"
        "  - {name: big, size: 2M, live: [a, b], scope: global.sram_ws}\n"
        "  - {name: small, size: 1K, live: b}\n"
    )
    assert main(["plan", "qemu-mps3-an547", str(path), "--explain"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("fits nowhere: big\n")
    assert "  sram_ws: lacks 1048576 bytes at step a (0 of 1048576 bytes held" in out
    assert "small: scope global, users main; candidates dtcm_ws, sram_ws, ddr_ws" in out
    assert (
        err.strip()
        == "memplace: error: big (2097152 bytes) fits nowhere: sram_ws lacks 1048576 bytes"
    )


def test_plan_explain_prints_the_pool_table_first(capsys: pytest.CaptureFixture[str]) -> None:
    from memplace.resources import demo_workload

    assert main(["plan", "qemu-mps3-an547", str(demo_workload()), "--explain"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pool ")
    assert "\n\ninput: scope global, users main; candidates dtcm_ws, sram_ws, ddr_ws\n" in out
