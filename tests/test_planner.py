"""The planner: offset algorithms on tables of live ranges, pool assignment, the checker."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplace.board import Board
from memplace.cli import pool_table
from memplace.errors import InputError, MemplaceError, PlanningError
from memplace.planner import ALGORITHMS, DEFAULT_ALGORITHM, Budget, Packing, plan
from memplace.planner.blocks import DEFAULT_BUDGET, Block, first_fit, grain, lower_bound, peak
from memplace.planner.check import placement_problems
from memplace.planner.exact import MAX_PAIRS
from memplace.planner.model import Plan
from memplace.planner.render_svg import render_svg, render_text
from memplace.workload import Workload

QUICK = Budget(nodes=50_000)


def test_first_fit_reuses_memory_of_dead_blocks() -> None:
    placed = [(0, Block(100, 0, 1)), (100, Block(50, 0, 3))]
    # Live at step 2: only the second block is in the way, so offset 0 is free.
    assert first_fit(Block(100, 2, 3), placed) == 0
    # Live at step 1: both are in the way.
    assert first_fit(Block(10, 1, 1, align=16), placed) == 160


def test_first_fit_takes_a_gap_that_fits() -> None:
    placed = [(0, Block(16, 0, 0)), (64, Block(16, 0, 0))]
    assert first_fit(Block(32, 0, 0, align=16), placed) == 16
    assert first_fit(Block(64, 0, 0, align=16), placed) == 80


def test_a_block_is_checked_at_the_door() -> None:
    with pytest.raises(ValueError, match="not a block"):
        Block(0, 0, 0)
    with pytest.raises(ValueError, match="not a block"):
        Block(16, 3, 2)


# (live ranges as (size, first, last), lower bound, greedy-size peak, optimum)
TABLES = [
    ([(100, 0, 1), (100, 1, 2), (100, 2, 3)], 200, 200, 200),
    ([(64, 0, 0), (64, 1, 1), (64, 2, 2)], 64, 64, 64),
    ([(10, 0, 5), (20, 1, 2), (30, 3, 4), (40, 2, 3)], 80, 80, 80),
    # Greedy by size is not optimal here: it needs 80 where another order reaches 70.
    ([(40, 0, 1), (20, 2, 3), (50, 3, 5), (20, 1, 2)], 70, 80, 70),
    # A block live throughout leaves room that only one order of the others fills.
    ([(2, 0, 0), (1, 0, 1), (1, 1, 2), (1, 1, 1), (2, 2, 2), (1, 0, 2)], 4, 5, 4),
]


def test_the_exact_search_proves_a_peak_above_the_lower_bound() -> None:
    # Aligned to 4, the second 5-byte block cannot start before 8: 13 bytes, not 10. The
    # bound cannot see it: the byte-aligned block elsewhere in time makes offsets multiples
    # of 1 only, as far as the bound knows.
    blocks = [Block(5, 0, 1, align=4), Block(5, 0, 1, align=4), Block(4, 3, 4, align=1)]
    assert lower_bound(blocks) == 10
    found = ALGORITHMS["exact"](blocks, QUICK)
    assert (found.peak, found.optimal) == (13, True)
    assert ALGORITHMS["greedy-size"](blocks).optimal is False


def test_the_lower_bound_counts_the_padding_alignment_forces() -> None:
    # Every offset is a multiple of 4: below the top block, each 3-byte block takes 4.
    blocks = [Block(3, 0, 0, align=4), Block(3, 0, 0, align=4), Block(4, 1, 1, align=4)]
    assert lower_bound(blocks) == 7
    assert ALGORITHMS["greedy-size"](blocks).optimal is True
    # The largest padding goes on top: 12 + 8 + 4 rounded, less the 8-byte block's 8.
    blocks = [Block(12, 0, 2, 16), Block(8, 0, 2, 16), Block(4, 1, 1, 16), Block(16, 3, 3, 16)]
    assert lower_bound(blocks) == 36
    assert ALGORITHMS["exact"](blocks, QUICK).peak == 36
    # Sizes that are multiples of the alignment need no padding.
    assert lower_bound([Block(16, 0, 1, 16), Block(32, 1, 2, 16)]) == 48


@pytest.mark.parametrize(("ranges", "bound", "greedy", "best"), TABLES)
def test_tables(ranges: list[tuple[int, int, int]], bound: int, greedy: int, best: int) -> None:
    blocks = [Block(size, first, last) for size, first, last in ranges]
    names = [str(i) for i in range(len(blocks))]
    assert lower_bound(blocks) == bound
    assert ALGORITHMS["greedy-size"](blocks).peak == greedy
    for name in ("exact", "auto"):
        found = ALGORITHMS[name](blocks, QUICK)
        assert (found.peak, found.optimal) == (best, True), name
        assert placement_problems(blocks, found.offsets, best, names) == []
    assert _optimum(blocks) == best


def _optimum(blocks: list[Block]) -> int:
    """The smallest peak, by first fit in every order (some order reaches the optimum)."""
    best = None
    for order in itertools.permutations(range(len(blocks))):
        placed: list[tuple[int, Block]] = []
        offsets = [0] * len(blocks)
        for i in order:
            offsets[i] = first_fit(blocks[i], placed)
            placed.append((offsets[i], blocks[i]))
        best = min(best or peak(blocks, offsets), peak(blocks, offsets))
    return best or 0


def test_checker_catches_overlap_alignment_and_capacity() -> None:
    blocks = [Block(100, 0, 1, align=16), Block(100, 1, 2, align=16)]
    assert placement_problems(blocks, [0, 48], 1000, ["a", "b"]) == [
        "a and b overlap in memory while both are live"
    ]
    assert placement_problems(blocks, [0, 104], 1000, ["a", "b"]) == [
        "b at offset 104 is not aligned to 16"
    ]
    assert placement_problems(blocks, [0, 112], 200, ["a", "b"]) == [
        "b ends at 212, past the capacity 200"
    ]
    # Disjoint lifetimes may share bytes.
    apart = [Block(100, 0, 0), Block(100, 1, 1)]
    assert placement_problems(apart, [0, 0], 100, ["a", "b"]) == []


def test_checker_finds_every_overlapping_pair() -> None:
    # A wide block under two narrow ones, and a block that starts inside the wide one.
    blocks = [Block(100, 0, 3), Block(10, 1, 1), Block(10, 1, 2), Block(30, 2, 3)]
    problems = placement_problems(blocks, [0, 10, 50, 90], 200, ["w", "x", "y", "z"])
    assert problems == [
        "w and x overlap in memory while both are live",
        "w and y overlap in memory while both are live",
        "w and z overlap in memory while both are live",
    ]


def _naive_overlaps(blocks: list[Block], offsets: list[int]) -> set[tuple[int, int]]:
    return {
        (i, j)
        for i, j in itertools.combinations(range(len(blocks)), 2)
        if blocks[i].conflicts(blocks[j])
        and offsets[i] < offsets[j] + blocks[j].size
        and offsets[j] < offsets[i] + blocks[i].size
    }


BLOCKS = st.lists(
    st.builds(
        lambda size, first, span, align: Block(size, first, first + span, align),
        st.integers(1, 5000),
        st.integers(0, 20),
        st.integers(0, 5),
        st.sampled_from([1, 4, 16, 64]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(BLOCKS, st.data())
def test_the_checker_agrees_with_comparing_every_pair(blocks: list[Block], data: Any) -> None:
    offsets = [data.draw(st.integers(0, 20_000)) for _ in blocks]
    names = [f"b{i}" for i in range(len(blocks))]
    problems = placement_problems(blocks, offsets, 10**9, names)
    overlaps = {p for p in problems if "overlap" in p}
    assert len(overlaps) == len(_naive_overlaps(blocks, offsets))


@settings(max_examples=60, deadline=None)
@given(BLOCKS, st.sampled_from(sorted(ALGORITHMS)))
def test_every_algorithm_is_sound(blocks: list[Block], algorithm: str) -> None:
    found = ALGORITHMS[algorithm](blocks, QUICK)
    names = [f"b{i}" for i in range(len(blocks))]
    assert found.peak == peak(blocks, found.offsets)
    assert placement_problems(blocks, found.offsets, found.peak, names) == []
    assert found.peak >= lower_bound(blocks)
    assert found.peak % grain(blocks) == 0 or algorithm.startswith(("greedy", "hill"))
    if found.optimal and found.peak > lower_bound(blocks):
        assert algorithm in ("exact", "auto")


SMALL = st.lists(
    st.builds(
        lambda size, first, span, align: Block(size * align, first, first + span, align),
        st.integers(1, 6),
        st.integers(0, 6),
        st.integers(0, 3),
        st.sampled_from([1, 2, 4]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(SMALL)
def test_the_exact_search_finds_and_proves_the_optimum(blocks: list[Block]) -> None:
    found = ALGORITHMS["exact"](blocks, QUICK)
    assert found.optimal
    assert found.peak == _optimum(blocks)


@settings(max_examples=30, deadline=None)
@given(BLOCKS, st.sampled_from(sorted(ALGORITHMS)))
def test_algorithms_are_deterministic(blocks: list[Block], algorithm: str) -> None:
    assert ALGORITHMS[algorithm](blocks, QUICK) == ALGORITHMS[algorithm](blocks, QUICK)


def test_hill_climbing_is_seeded() -> None:
    blocks = [Block(8 + (7 * i) % 50, i % 9, i % 9 + i % 4) for i in range(60)]
    runs = {seed: ALGORITHMS["hill-climb"](blocks, replace(QUICK, seed=seed)) for seed in range(6)}
    # The same seed, the same answer; another seed, another climb.
    assert all(ALGORITHMS["hill-climb"](blocks, replace(QUICK, seed=s)) == runs[s] for s in runs)
    assert runs[1].offsets != runs[2].offsets
    assert len({run.peak for run in runs.values()}) > 1
    greedy = ALGORITHMS["greedy-size"](blocks).peak
    assert all(run.peak <= greedy and run.algorithm == "hill-climb" for run in runs.values())


def test_hill_climbing_stops_when_it_stops_improving() -> None:
    blocks = [Block(8 + (7 * i) % 50, i % 9, i % 9 + i % 4) for i in range(60)]
    # The budget allows millions of steps; the climb stops PATIENCE steps after its last
    # gain, so a larger budget changes nothing.
    found = ALGORITHMS["hill-climb"](blocks, Budget(nodes=10**9, seed=1))
    assert ALGORITHMS["hill-climb"](blocks, Budget(nodes=10**8, seed=1)) == found
    # At the lower bound the first order stands.
    pair = [Block(64, 0, 1), Block(64, 2, 3)]
    assert ALGORITHMS["hill-climb"](pair, Budget(nodes=10**9)).peak == 64


def test_every_algorithm_names_itself() -> None:
    blocks = [Block(40, 0, 1), Block(20, 2, 3), Block(50, 3, 5), Block(20, 1, 2)]
    for name, algorithm in ALGORITHMS.items():
        found = algorithm(blocks, QUICK)
        # auto names the algorithm it took the offsets from: here the exact search's.
        assert found.algorithm == ("exact" if name == "auto" else name)
    assert ALGORITHMS["auto"]([Block(64, 0, 1), Block(64, 2, 3)]).algorithm == "greedy-size"


def test_the_capacity_is_the_first_target() -> None:
    # Greedy needs 80; the exact search is asked for 70 first, the bound, and fits it.
    blocks = [Block(40, 0, 1), Block(20, 2, 3), Block(50, 3, 5), Block(20, 1, 2)]
    found = ALGORITHMS["exact"](blocks, Budget(capacity=75, nodes=1000))
    assert found.peak <= 75


def test_an_exhausted_budget_returns_the_best_so_far() -> None:
    blocks = [Block(40, 0, 1), Block(20, 2, 3), Block(50, 3, 5), Block(20, 1, 2)]
    found = ALGORITHMS["exact"](blocks, Budget(nodes=0))
    assert (found.peak, found.optimal) == (80, False)


def test_the_default_is_auto() -> None:
    assert DEFAULT_ALGORITHM == "auto"
    assert set(ALGORITHMS) >= {"greedy-size", "greedy-conflicts", "hill-climb", "exact", "auto"}


def test_greedy_scales_to_many_blocks() -> None:
    blocks = [Block(16 + (i * 7919) % 4096, i // 8, i // 8 + i % 13, 16) for i in range(20_000)]
    found = ALGORITHMS["greedy-size"](blocks)
    names = [str(i) for i in range(len(blocks))]
    assert placement_problems(blocks, found.offsets, found.peak, names) == []


# ---------------------------------------------------------------------------------------
# plan(): pool assignment and the Plan


def test_demo_plan_spills_past_the_fastest_pool(board: Board, demo_workload: Workload) -> None:
    result = plan(board, demo_workload)
    dtcm, sram = result.pool("dtcm_ws"), result.pool("sram_ws")
    assert 0 < dtcm.used <= dtcm.capacity
    assert sram.used > 0
    spilled = result.placement("dw1_skip")
    assert spilled.pool == "sram_ws"
    assert spilled.reason.startswith("spilled: dtcm_ws full")
    # Buffers the NPU touches stay out of DTCM, which it cannot reach.
    assert result.placement("dma_ring").pool == "sram_ws"
    assert result.placement("im2col").stack == "main"
    assert result.placement("fc_w").pool == "ddr_const"
    assert result.placement("conv1_w").pool == "itcm_const"
    assert result.stacks[0].planned == 640
    assert all(pool.optimal for pool in result.pools)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_plans_the_demo(
    board: Board, demo_workload: Workload, algorithm: str
) -> None:
    result = plan(board, demo_workload, algorithm=algorithm)
    assert result.algorithm == algorithm
    for pool in result.pools:
        assert pool.lower_bound <= pool.used <= pool.capacity


def test_plan_json_has_the_fixed_fields(board: Board, demo_workload: Workload) -> None:
    data = plan(board, demo_workload).to_json()
    assert data["memplace"] == "plan/v1"
    assert (data["board"], data["workload"]) == ("qemu-mps3-an547", "demo")
    assert set(data["pools"][0]) >= {
        "name",
        "kind",
        "memory",
        "capacity",
        "used",
        "lower_bound",
        "optimal",
    }
    assert set(data["placements"][0]) >= {
        "name",
        "kind",
        "pool",
        "stack",
        "offset",
        "size",
        "align",
        "first",
        "last",
        "reason",
    }
    assert set(data["stacks"][0]) >= {"context", "budget", "planned"}


def test_plan_json_lists_every_worker_thread_stack(board_data: dict[str, Any]) -> None:
    board_data["contexts"]["main"]["threads"] = 2
    board = Board.from_data(board_data)
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "threads",
            "steps": 3,
            "buffers": [
                {"name": "own", "size": 64, "live": [0, 1], "scope": "main.stack"},
                {"name": "a", "size": 256, "live": [0, 1], "scope": "main.thread0.stack"},
                {"name": "b", "size": 128, "live": [1, 2], "scope": "main.thread0.stack"},
                {"name": "c", "size": 32, "live": 2, "scope": "main.thread1.stack"},
            ],
        }
    )
    result = plan(board, workload)
    data = result.to_json()
    main, first, second = board.contexts["main"].stacks()
    assert data["stacks"] == [
        {
            "context": context,
            "memory": "dtcm",
            "address": stack.address,
            "budget": 16384,
            "planned": planned,
            "algorithm": "assignment",
        }
        for context, stack, planned in [
            ("main", main[1], 64),
            ("main.thread0", first[1], 384),
            ("main.thread1", second[1], 32),
        ]
    ]
    assert {p["name"]: p["stack"] for p in data["placements"]} == {
        "own": "main",
        "a": "main.thread0",
        "b": "main.thread0",
        "c": "main.thread1",
    }
    thread = result.stacks[1]
    assert (thread.owner, thread.thread, thread.c_name) == ("main", 0, "main_thread0")
    assert (result.stacks[0].owner, result.stacks[0].thread) == ("main", None)
    assert Plan.from_json(data) == result
    # The pool table and the text rendering name each thread's stack too.
    table = pool_table(result)
    assert "main.thread0.stack  dtcm" in table and "main.thread1.stack  dtcm" in table
    text = render_text(result)
    assert "stack of main.thread0 (dtcm): 384 of 16384 bytes used" in text
    assert "stack of main.thread1 (dtcm): 32 of 16384 bytes used" in render_svg(result)


def test_plans_are_deterministic(board: Board, demo_workload: Workload) -> None:
    first = plan(board, demo_workload).dumps()
    assert all(plan(board, demo_workload).dumps() == first for _ in range(3))
    assert json.loads(first)["placements"][0]["name"] == "input"


def test_lower_bound_and_optimal_flag(board: Board, small_workload_data: dict[str, Any]) -> None:
    result = plan(board, Workload.from_data(small_workload_data))
    dtcm = result.pool("dtcm_ws")
    assert (dtcm.used, dtcm.lower_bound, dtcm.optimal) == (3072, 3072, True)


def _one_pool_board(board_data: dict[str, Any], size: int) -> Board:
    board_data["pools"]["dtcm_ws"]["size"] = size
    return Board.from_data(board_data)


HARD = [(640, 0, 1), (320, 2, 3), (800, 3, 5), (320, 1, 2)]  # bound 1120, first fit 1280


def _workload(ranges: list[tuple[int, int, int]], **extra: Any) -> Workload:
    return Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "w",
            "buffers": [
                {"name": f"b{i}", "size": size, "live": [first, last], **extra}
                for i, (size, first, last) in enumerate(ranges)
            ],
        }
    )


def test_a_search_keeps_buffers_in_the_fast_pool_that_first_fit_would_spill(
    board_data: dict[str, Any],
) -> None:
    board = _one_pool_board(board_data, 1120)
    result = plan(board, _workload(HARD))
    assert {p.pool for p in result.placements} == {"dtcm_ws"}
    assert (result.pool("dtcm_ws").used, result.pool("dtcm_ws").optimal) == (1120, True)
    # The greedy algorithms assign greedily: first fit spills one buffer.
    greedy = plan(board, _workload(HARD), algorithm="greedy-size")
    assert {p.pool for p in greedy.placements} == {"dtcm_ws", "sram_ws"}


def test_a_buffer_that_only_a_search_can_place_is_no_error(board_data: dict[str, Any]) -> None:
    board = _one_pool_board(board_data, 1120)
    workload = _workload(HARD, pools=["dtcm_ws"])
    assert plan(board, workload).pool("dtcm_ws").used == 1120
    with pytest.raises(PlanningError, match="fits nowhere: dtcm_ws lacks 160 bytes"):
        plan(board, workload, algorithm="greedy-size")


def test_priority_claims_the_fast_pool_first(board_data: dict[str, Any]) -> None:
    board = _one_pool_board(board_data, 1024)
    data: dict[str, Any] = {
        "memplace": "workload/v1",
        "name": "w",
        "buffers": [
            {"name": "big", "size": 1024, "live": [0, 1]},
            {"name": "hot", "size": 512, "live": [0, 1], "priority": 5},
        ],
    }
    result = plan(board, Workload.from_data(data))
    assert result.placement("hot").pool == "dtcm_ws"
    assert result.placement("hot").reason.endswith("(priority 5)")
    assert result.placement("big").reason.startswith("spilled: dtcm_ws full")
    del data["buffers"][1]["priority"]
    assert plan(board, Workload.from_data(data)).placement("big").pool == "dtcm_ws"


def test_priority_is_a_whole_number(small_workload_data: dict[str, Any]) -> None:
    small_workload_data["buffers"][0]["priority"] = -3
    assert Workload.from_data(small_workload_data).buffer("x").priority == -3
    small_workload_data["buffers"][0]["priority"] = "high"
    with pytest.raises(InputError, match="priority: expected a whole number, got 'high'"):
        Workload.from_data(small_workload_data)
    small_workload_data["constants"][0]["priority"] = 1
    del small_workload_data["buffers"][0]["priority"]
    assert Workload.from_data(small_workload_data).buffer("w").priority == 1


def test_a_buffer_that_fits_nowhere_says_how_much_each_candidate_lacks(
    board: Board,
    small_workload_data: dict[str, Any],
) -> None:
    small_workload_data["buffers"].append(
        {"name": "huge", "size": "20M", "live": ["a", "a"], "pools": ["dtcm_ws", "sram_ws"]}
    )
    with pytest.raises(PlanningError) as caught:
        plan(board, Workload.from_data(small_workload_data))
    assert caught.value.exit_code == 1
    # At step a, x (1024 bytes) holds part of dtcm_ws; sram_ws holds nothing then.
    assert caught.value.shortfalls == {
        "dtcm_ws": 20 * 1024 * 1024 + 1024 - 256 * 1024,
        "sram_ws": 20 * 1024 * 1024 - 1024 * 1024,
    }
    assert str(caught.value).startswith("huge (20971520 bytes) fits nowhere: dtcm_ws lacks ")


def test_unknown_algorithm(board: Board, demo_workload: Workload) -> None:
    with pytest.raises(InputError, match="no algorithm 'greedy'; did you mean"):
        plan(board, demo_workload, algorithm="greedy")


def test_a_time_limit_and_an_effort_are_positive(board: Board, demo_workload: Workload) -> None:
    with pytest.raises(InputError, match="a time limit is a positive number of seconds"):
        plan(board, demo_workload, time_limit=0)
    with pytest.raises(InputError, match="--effort: an effort is a positive number, not 0"):
        plan(board, demo_workload, effort=0)


def test_constants_carry_bytes(board: Board, demo_workload: Workload) -> None:
    result = plan(board, demo_workload)
    conv1_w = result.placement("conv1_w")
    assert conv1_w.contents is not None and len(conv1_w.contents) == conv1_w.size
    assert result.placement("input").contents is None


def test_stack_buffers_share_the_stack_across_steps(board: Board) -> None:
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "w",
            "buffers": [
                {"name": "a", "size": 512, "live": 0, "scope": "local"},
                {"name": "b", "size": 256, "live": 1, "scope": "local"},
                {"name": "c", "size": 128, "live": [0, 1], "scope": "main.stack"},
            ],
        }
    )
    result = plan(board, workload)
    assert result.stacks[0].planned == 640
    assert {p.stack for p in result.placements} == {"main"}


def test_replace_keeps_plans_frozen(board: Board, demo_workload: Workload) -> None:
    result = plan(board, demo_workload)
    moved = replace(result.placement("input"), offset=0)
    assert moved != result.placement("input")


# ---------------------------------------------------------------------------------------
# Which algorithm each place's offsets came from; the checker; the guards


# greedy-conflicts needs 1280 bytes for these; the assignment's first fit fits 1216.
CONFLICTING = [(448, 4, 6), (256, 2, 2), (320, 3, 6), (256, 1, 3), (256, 2, 5), (192, 3, 6)]


def test_a_place_that_keeps_the_assignments_offsets_says_so(board_data: dict[str, Any]) -> None:
    blocks = [Block(size, first, last) for size, first, last in CONFLICTING]
    assert ALGORITHMS["greedy-conflicts"](blocks).peak > 1216
    board = _one_pool_board(board_data, 1216)
    result = plan(board, _workload(CONFLICTING, pools=["dtcm_ws"]), algorithm="greedy-conflicts")
    dtcm = result.pool("dtcm_ws")
    assert (result.algorithm, dtcm.algorithm, dtcm.used) == ("greedy-conflicts", "assignment", 1216)
    data = result.to_json()
    assert [p["algorithm"] for p in data["pools"] if p["name"] == "dtcm_ws"] == ["assignment"]
    assert Plan.from_json(json.loads(result.dumps())) == result
    assert (
        "  offsets from the pool assignment: greedy-conflicts did not fit the capacity"
        in render_text(result).splitlines()
    )


def test_a_place_names_the_algorithm_that_placed_it(board_data: dict[str, Any]) -> None:
    board = _one_pool_board(board_data, 4096)
    result = plan(board, _workload(CONFLICTING), algorithm="greedy-conflicts")
    assert result.pool("dtcm_ws").algorithm == "greedy-conflicts"
    assert "  offsets by greedy-conflicts" in render_text(result).splitlines()
    # auto names the algorithm it took the offsets from.
    result = plan(board, _workload(HARD))
    assert result.pool("dtcm_ws").algorithm == "exact"
    assert "  offsets by exact (auto's choice)" in render_text(result).splitlines()
    # Empty pools name none.
    assert result.pool("ddr_ws").algorithm is None


def test_auto_searches_no_place_that_first_fit_settles(
    board: Board, demo_workload: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_search(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
        raise AssertionError("searched a place at its lower bound")

    monkeypatch.setitem(ALGORITHMS, "auto", no_search)
    result = plan(board, demo_workload)
    assert all(p.algorithm == "assignment" for p in result.pools if p.used)
    assert "offsets from the pool assignment, at the lower bound already" in render_text(result)


def test_plan_refuses_offsets_the_checker_finds_unsound(
    board: Board, demo_workload: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    def overlapping(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
        return Packing(tuple(0 for _ in blocks), max(b.size for b in blocks), False)

    monkeypatch.setitem(ALGORITHMS, "overlapping", overlapping)
    with pytest.raises(MemplaceError) as caught:
        plan(board, demo_workload, algorithm="overlapping")
    message = str(caught.value)
    assert message.startswith("memplace bug: the overlapping offsets for ")
    assert "overlap in memory while both are live" in message
    assert caught.value.exit_code == 3

    def misaligned(blocks: Sequence[Block], budget: Budget = DEFAULT_BUDGET, /) -> Packing:
        found = ALGORITHMS["greedy-size"](blocks)
        return replace(found, offsets=tuple(at + 1 for at in found.offsets), algorithm="")

    monkeypatch.setitem(ALGORITHMS, "misaligned", misaligned)
    with pytest.raises(MemplaceError, match=r"misaligned offsets .* is not aligned to 16"):
        plan(board, demo_workload, algorithm="misaligned")


def _co_live(count: int) -> Workload:
    return Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "wide",
            "buffers": [{"name": f"b{i}", "size": 16, "live": [0, 1]} for i in range(count)],
        }
    )


def test_the_exact_search_refuses_a_place_too_wide_for_its_table(board: Board) -> None:
    # 4500 buffers live together: 10,122,750 pairs, past the exact search's 10,000,000.
    workload = _co_live(4500)
    with pytest.raises(InputError) as caught:
        plan(board, workload, algorithm="exact")
    assert str(caught.value) == (
        f"--algorithm: exact searches places where at most {MAX_PAIRS} pairs of buffers are "
        "live together; dtcm_ws has 10122750: use auto (it keeps the better greedy order "
        "where the exact search cannot go) or a greedy algorithm"
    )
    assert caught.value.exit_code == 2
    # auto goes where exact cannot.
    assert plan(board, workload).pool("dtcm_ws").used == 4500 * 16
    with pytest.raises(ValueError, match="10122750 pairs of blocks meet in time"):
        ALGORITHMS["exact"]([Block(16, 0, 1)] * 4500)


def test_a_pool_holding_only_alignment_padding_is_proven_optimal(board: Board) -> None:
    # Live together, 16-byte aligned: 112 + 48 + 16 bytes rounded, less the 12 bytes the
    # top block need not pad. First fit reaches that, so no search is needed to prove it.
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "padded",
            "buffers": [{"name": "x", "size": 64, "live": [0, 0]}],
            "constants": [
                {"name": name, "size": size, "align": 16, "scope": "global.itcm_const"}
                for name, size in (("a", 100), ("b", 40), ("c", 4))
            ],
        }
    )
    itcm = plan(board, workload).pool("itcm_const")
    assert (itcm.used, itcm.lower_bound, itcm.optimal) == (164, 164, True)
    assert itcm.algorithm == "assignment"
