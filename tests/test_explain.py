"""`memplace plan --explain`: candidates, exclusions, why the chosen place won, and for a
buffer that fits nowhere how many bytes each candidate lacks at its worst step."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from memplace.board import Board
from memplace.cli import main
from memplace.errors import PlanningError
from memplace.planner import plan
from memplace.planner.alignment import planning_block
from memplace.planner.assign import _fits_nowhere
from memplace.planner.blocks import Block
from memplace.planner.explain import Room, explain, measure
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


def test_the_error_and_the_explanation_give_the_same_shortfall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # act1 chooses first (largest), before input takes 490 bytes of sram_ws: what it lacks
    # is measured beside everything else placed, at its worst step, by both.
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: kws\nsteps: [conv1, dw1]\nbuffers:\n"
        "  - {name: input, size: 490, live: [conv1, conv1], users: [main, npu0]}\n"
        "  - {name: act1, size: 20M, live: [conv1, dw1], pools: [dtcm_ws, sram_ws]}\n"
    )
    assert main(["plan", "qemu-mps3-an547", str(path)]) == 1
    error = capsys.readouterr().err
    assert main(["plan", "qemu-mps3-an547", str(path), "--explain"]) == 1
    out, explained_error = capsys.readouterr()
    lacks = 20 * 1024 * 1024 + 490 - 1024 * 1024
    assert (
        error
        == explained_error
        == (
            "memplace: error: act1 (20971520 bytes) fits nowhere: dtcm_ws lacks 20709376 bytes; "
            f"sram_ws lacks {lacks} bytes\n"
        )
    )
    assert f"  sram_ws: lacks {lacks} bytes at step conv1 (490 of 1048576 bytes held" in out
    assert "  dtcm_ws: lacks 20709376 bytes at step conv1 (0 of 262144 bytes held" in out


@pytest.mark.parametrize("algorithm", ["auto", "greedy-size", "greedy-conflicts", "hill-climb"])
def test_every_failed_buffer_is_explained_with_the_planner_figures(
    board: Board, algorithm: str
) -> None:
    story = explain(board, _too_big(), algorithm=algorithm)
    assert story.failed == ("huge", "big") and story.error is not None
    huge = {room.place: room.lacks for room in story.story("huge").passed_over}
    assert (
        huge
        == story.error.shortfalls
        == {
            "dtcm_ws": 20971520 + 204800 - 262144,
            "sram_ws": 20971520 + 102400 - 1048576,
            "ddr_ws": 20971520 - 12582912,
        }
    )
    with pytest.raises(PlanningError) as caught:
        plan(board, _too_big().without({"huge"}), algorithm=algorithm)
    big = {room.place: room.lacks for room in story.story("big").passed_over}
    assert big == caught.value.shortfalls == {"sram_ws": 1150976}


def test_free_bytes_in_pieces_lack_what_the_first_fit_lacked(board: Board) -> None:
    # Held bytes leave room for z at its worst step, but not in one gap (its first fit
    # ended at 300K): the error gives what that first fit lacked.
    workload = (
        WorkloadBuilder("w", steps=2)
        .buffer("x", "100K", 0, scope="global.dtcm_ws")
        .buffer("z", "150K", (0, 1), scope="global.dtcm_ws")
        .build()
    )
    options = resolve_buffer(board, workload.buffer("z"))
    (dtcm_ws,) = options.places
    x = Block(100 * 1024, 0, 0, 16)
    with pytest.raises(PlanningError) as caught:
        _fits_nowhere(
            options,
            (300 * 1024,),
            {dtcm_ws: 256 * 1024},
            planning_block(options, board),
            [(dtcm_ws, x)],
        )
    assert caught.value.shortfalls == {"dtcm_ws": 44 * 1024}
    assert str(caught.value) == "z (153600 bytes) fits nowhere: dtcm_ws lacks 45056 bytes"


def test_explain_as_json_says_why_even_when_a_buffer_fits_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nsteps: [a, b]\nbuffers:\n"
        "  - {name: big, size: 2M, live: [a, b], scope: global.sram_ws}\n"
        "  - {name: small, size: 1K, live: b, users: [main, npu0]}\n"
    )
    assert main(["plan", "qemu-mps3-an547", str(path), "--explain", "--json"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["plan"] is None and report["fits_nowhere"] == ["big"]
    big, small = report["buffers"]
    assert big["chosen"] is None and big["candidates"] == ["sram_ws"]
    (room,) = big["passed_over"]
    assert (room["place"], room["lacks"], room["worst_step"]) == ("sram_ws", 1049600, "b")
    assert small["chosen"] == "sram_ws" and small["users"] == ["main", "npu0"]
    assert {"place": "dtcm_ws", "why": "npu0 cannot reach memory dtcm"} in small["excluded"]
    assert "fits nowhere: sram_ws lacks 1049600 bytes" in err


def test_explain_as_json_carries_the_plan_and_writes_the_picture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memplace.resources import demo_workload

    svg = tmp_path / "plan.svg"
    argv = ["plan", "qemu-mps3-an547", str(demo_workload()), "--explain", "--json"]
    assert main([*argv, "--svg", str(svg)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["plan"]["memplace"] == "plan/v1" and report["fits_nowhere"] == []
    by_name = {story["name"]: story for story in report["buffers"]}
    assert by_name["im2col"]["chosen"] == "main.stack"
    assert svg.read_text().startswith("<svg")


def test_each_pool_says_what_it_could_not_hold_at_its_busiest_step(board: Board) -> None:
    # dtcm_ws holds 256K: x and y want it at step 1 together, 400K in all; one spills.
    workload = (
        WorkloadBuilder("w", steps=["a", "b"])
        .buffer("x", "200K", (0, 1))
        .buffer("y", "200K", 1)
        .buffer("z", "16K", 0)
        .build()
    )
    story = explain(board, workload)
    (spill,) = story.spills()
    assert (spill.pool, spill.step, spill.held, spill.unheld) == (
        "dtcm_ws",
        1,
        200 * 1024,
        200 * 1024,
    )
    assert "dtcm_ws: 204800 bytes at its busiest step b could not be held there" in story.text()
    assert story.to_json()["spills"] == [
        {
            "pool": "dtcm_ws",
            "capacity": 262144,
            "busiest_step": "b",
            "held": 204800,
            "unheld": 204800,
        }
    ]
    alone = WorkloadBuilder("w", steps=["a", "b"]).buffer("x", "200K", (0, 1)).build()
    assert explain(board, alone).spills() == ()
