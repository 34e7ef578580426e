"""The searches `auto` adds to the exact search: the skyline search (compiled and its
Python twin, node for node), coalescing and the exact search's seeded dives; and, through
`plan()` on a board file, perfect packings, MiniMalloc's D and a large strip, which they
are for."""

from __future__ import annotations

import csv
import importlib
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import BLOCKS, benchmark
from memplace import planner
from memplace.cli import main
from memplace.planner import core, plan
from memplace.planner.blocks import Block, Budget, Packing, grain, lower_bound, peak
from memplace.planner.check import placement_problems
from memplace.planner.coalesce import Coalesced, Pairing, coalesce
from memplace.planner.exact import dive, exact, improve
from memplace.planner.greedy import greedy_size, place_in_order

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


auto_module = importlib.import_module("memplace.planner.auto")  # `planner.auto` is the function


def _sound(blocks: list[Block], offsets: list[int], capacity: int) -> bool:
    names = [str(i) for i in range(len(blocks))]
    return placement_problems(blocks, offsets, capacity, names) == []


def cut(seed: int, pieces: int, align: int = 64) -> tuple[list[Block], int]:
    """A rectangle of capacity x steps cut at random into `pieces` blocks, as the
    benchmark's strips are: its capacity is its lower bound, and it packs exactly."""
    instance = benchmark("planner").strip(seed, pieces, align)
    return list(instance.blocks), instance.capacity


# --- the skyline search ------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(BLOCKS, st.integers(0, 3), st.integers(0, 5), st.integers(20, 3000))
def test_skyline_twins_agree(blocks: list[Block], slack: int, seed: int, limit: int) -> None:
    if core.compiled() is None:
        pytest.skip("the compiled core is not built")
    target = lower_bound(blocks) + slack * max(b.align for b in blocks)
    compiled = core.skyline(blocks, target, seed, limit, 60.0)
    python = core.skyline_python(blocks, target, seed, limit, 60.0)
    assert compiled[0] == python[0] and compiled[2] == python[2]
    if compiled[0] == core.FOUND:
        assert compiled[1] == python[1]
        assert peak(blocks, compiled[1]) <= target
        assert _sound(blocks, compiled[1], target)


# (size, first, last) of each block, the target, and what the skyline search answers.
SKYLINE_CASES = [
    # A rectangle of 100 bytes x 4 steps cut four ways: packed at exactly 100.
    ([(60, 0, 3), (40, 0, 1), (30, 2, 3), (10, 2, 3)], 100, core.FOUND),
    ([(50, 0, 1), (50, 0, 1), (70, 2, 3), (30, 2, 3)], 100, core.FOUND),
    # Room to spare: a hole may stay empty (the 30 ends before the 40 starts).
    ([(50, 0, 3), (30, 0, 1), (40, 2, 3)], 100, core.FOUND),
    # 120 bytes live at step 1: nothing fits 100.
    ([(60, 0, 1), (60, 1, 2)], 100, core.INFEASIBLE),
    ([(40, 0, 0), (40, 0, 0)], 64, core.INFEASIBLE),
]


@pytest.mark.parametrize(("spec", "target", "status"), SKYLINE_CASES)
@pytest.mark.parametrize("search", [core.skyline, core.skyline_python], ids=["c", "python"])
def test_the_skyline_search_on_small_tables(
    search: object, spec: list[tuple[int, int, int]], target: int, status: int
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    found, offsets, nodes = search(blocks, target, 0, 10_000, 60.0)  # type: ignore[operator]
    assert found == status
    assert nodes <= 10_000
    if found == core.FOUND:
        assert peak(blocks, offsets) <= target and _sound(blocks, offsets, target)


def test_the_skyline_search_stops_at_its_node_limit() -> None:
    blocks, capacity = cut(4, 235)
    status, _, nodes = core.skyline(blocks, capacity, 0, 50, 60.0)
    assert (status, nodes) == (core.NODE_LIMIT, 51)


def test_the_skyline_search_packs_cut_rectangles_at_their_capacity() -> None:
    # Seeded restarts, as the exact search runs them: each strip of the benchmark's kind
    # packs at exactly its capacity within a few of them.
    for seed in range(1, 9):
        blocks, capacity = cut(seed, 60 + 20 * seed)
        found = None
        for restart in range(200):
            status, offsets, _ = core.skyline(blocks, capacity, restart, 20_000, 60.0)
            if status == core.FOUND:
                found = offsets
                break
        assert found is not None, seed
        assert peak(blocks, found) == capacity and _sound(blocks, found, capacity)


# --- coalescing --------------------------------------------------------------------------

# (size, first, last) of each block, and the coalesced blocks as (size, first, last).
COALESCE_CASES = [
    # Same lifetime: stacked into one.
    ([(40, 0, 3), (24, 0, 3)], [(64, 0, 3)]),
    # Same size, one after the other: chained into one.
    ([(32, 0, 1), (32, 2, 5)], [(32, 0, 5)]),
    # Both, again and again: a rectangle cut four ways is one block again.
    ([(50, 0, 1), (50, 0, 1), (70, 2, 3), (30, 2, 3)], [(100, 0, 3)]),
    # Two candidates to chain with at one boundary: none is chosen.
    ([(32, 0, 1), (32, 2, 3), (32, 2, 4)], [(32, 0, 1), (32, 2, 3), (32, 2, 4)]),
    # Different sizes or a gap in time: nothing to do.
    ([(32, 0, 1), (16, 2, 3), (32, 5, 6)], [(32, 0, 1), (16, 2, 3), (32, 5, 6)]),
]


@pytest.mark.parametrize(("spec", "expected"), COALESCE_CASES)
def test_coalescing_small_tables(
    spec: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    merged = coalesce(blocks)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == sorted(expected)
    assert sorted(i for members in merged.members for i, _ in members) == list(range(len(spec)))


def test_chains_first_keeps_a_chain_that_a_stack_would_hide() -> None:
    blocks = [Block(32, 0, 1), Block(16, 0, 1), Block(32, 2, 3)]
    stacked = coalesce(blocks)
    chained = coalesce(blocks, chains_first=True)
    assert sorted((b.size, b.first, b.last) for b in stacked.blocks) == [(32, 2, 3), (48, 0, 1)]
    assert sorted((b.size, b.first, b.last) for b in chained.blocks) == [(16, 0, 1), (32, 0, 3)]


@pytest.mark.parametrize(
    ("pairing", "expected"),
    [
        (None, [(32, 0, 3), (32, 2, 3), (32, 4, 9)]),
        ("short", [(32, 0, 3), (32, 2, 9)]),
        ("long", [(32, 0, 9), (32, 2, 3)]),
    ],
)
def test_a_pairing_chains_where_several_blocks_meet_one_boundary(
    pairing: Pairing, expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(32, 0, 3), Block(32, 2, 3), Block(32, 4, 9)]
    merged = coalesce(blocks, chains_first=True, pairing=pairing)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == expected


# (size, first, last) of each block, and the coalesced blocks with `loose` = 0.25.
LOOSE_CASES = [
    # Sizes within a quarter of the larger: chained, as large as the larger.
    ([(100, 0, 1), (80, 2, 5)], [(100, 0, 5)]),
    ([(80, 0, 1), (100, 2, 5)], [(100, 0, 5)]),
    # Further apart, or a step between them: left alone.
    ([(100, 0, 1), (70, 2, 5)], [(100, 0, 1), (70, 2, 5)]),
    ([(100, 0, 1), (90, 3, 5)], [(100, 0, 1), (90, 3, 5)]),
    # Two candidates: the one that wastes fewer bytes x steps (90 over 4 steps wastes 40,
    # 110 over 3 steps 30); the other is left for the exact rules.
    ([(100, 0, 1), (90, 2, 5), (110, 2, 4)], [(110, 0, 4), (90, 2, 5)]),
    # After a loose chain the exact rules run again: the chain stacks with its twin.
    ([(100, 0, 1), (90, 2, 5), (40, 0, 5)], [(140, 0, 5)]),
]


@pytest.mark.parametrize(("spec", "expected"), LOOSE_CASES)
def test_loose_chains_small_tables(
    spec: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    merged = coalesce(blocks, chains_first=True, loose=0.25)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == sorted(expected)
    assert sorted(i for members in merged.members for i, _ in members) == list(range(len(spec)))
    assert coalesce(blocks).blocks == coalesce(blocks, loose=0.0).blocks


# (size, first, last) of each block, and the coalesced blocks with `loose` = 0.25 within a
# `slack` of 1% of the most bytes live at one step.
SLACK_CASES = [
    # The 20 bytes left empty over steps 2-5 keep every step within the 100 of steps 0-1.
    ([(100, 0, 1), (80, 2, 5)], [(100, 0, 5)]),
    # Here they would make steps 2-3 120 bytes, the most live at one step 100: left alone
    # (without `slack`, chained).
    ([(100, 0, 1), (80, 2, 5), (20, 2, 3)], [(100, 0, 1), (80, 2, 5), (20, 2, 3)]),
    # Step 0 holds the most, 160 (so 161 within 1%); steps 2-3 hold 145. The pair that
    # wastes least (10 bytes over two steps) takes 10 of their room; the other (10 over
    # steps 1-3) would make them 165 and is left alone (without `slack`, chained, and its
    # chain stacked with the first: one block of 160 bytes over steps 0-3).
    (
        [(100, 0, 1), (90, 2, 3), (60, 0, 0), (50, 1, 3), (5, 2, 4)],
        [(100, 0, 3), (60, 0, 0), (50, 1, 3), (5, 2, 4)],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), SLACK_CASES)
def test_loose_chains_within_a_slack_leave_bytes_empty_only_where_there_is_room(
    spec: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    merged = coalesce(blocks, chains_first=True, loose=0.25, slack=0.01)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == sorted(expected)
    assert sorted(i for members in merged.members for i, _ in members) == list(range(len(spec)))
    placed = greedy_size(merged.blocks)
    assert lower_bound(merged.blocks) <= lower_bound(blocks) * 101 // 100
    assert _sound(blocks, merged.expand(placed.offsets, len(blocks)), placed.peak)


# (size, first, last) of each block, and the coalesced blocks with `matched`.
MATCHED_CASES = [
    # 10 + 20 make the 30 that starts after them: stacked, then chained with it; the 5 of
    # the same lifetime is left alone (every other coalescing stacks all three).
    ([(10, 0, 3), (20, 0, 3), (5, 0, 3), (30, 4, 9)], [(5, 0, 3), (30, 0, 9)]),
    # The two 4s make the 8 after them (then a chain); the 6s match nothing, so they wait
    # until nothing else changes, then the shortest lifetime stacks: all of 0..5 at once.
    ([(4, 0, 0), (4, 0, 0), (8, 1, 5), (6, 0, 5), (6, 0, 5)], [(20, 0, 5)]),
    # Sizes too large for a subset sum (in units of their common divisor, 1 here): only
    # the whole group is compared with its neighbour.
    ([(2**21 + 1, 0, 3), (2**21 + 3, 0, 3), (2**22 + 4, 4, 9)], [(2**22 + 4, 0, 9)]),
    (
        [(2**21 + 1, 0, 3), (2**21 + 3, 0, 3), (5, 0, 3), (2**22 + 4, 4, 9)],
        [(2**22 + 9, 0, 3), (2**22 + 4, 4, 9)],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), MATCHED_CASES)
def test_matched_stacks_wait_for_a_neighbour_of_their_size(
    spec: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    merged = coalesce(blocks, matched=True)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == sorted(expected)
    assert sorted(i for members in merged.members for i, _ in members) == list(range(len(spec)))
    _expands_soundly(blocks, merged)


# (size, first, last) of each block, and the coalesced blocks with `matched` and `unique`.
UNIQUE_CASES = [
    # Any two of the three 4s make the 8 after them: which two is a guess, so with
    # `unique` none are stacked for it; the three are stacked only once nothing else is
    # left (without `unique`: two 4s, chained with the 8, and a 4 alone).
    ([(4, 0, 3), (4, 0, 3), (4, 0, 3), (8, 4, 9)], [(12, 0, 3), (8, 4, 9)]),
    # Only 3 + 5 make the 8: stacked and chained, as without `unique`.
    ([(3, 0, 3), (5, 0, 3), (6, 0, 3), (8, 4, 9)], [(6, 0, 3), (8, 0, 9)]),
    # Where nothing matches, the lifetime of the fewest blocks among the shortest goes
    # first: the two 6s at step 1 make a 12, which 5 + 7 before them then match (without
    # `unique` both lifetimes are stacked at once: 15 and 12).
    ([(5, 0, 0), (7, 0, 0), (3, 0, 0), (6, 1, 1), (6, 1, 1)], [(3, 0, 0), (12, 0, 1)]),
]


@pytest.mark.parametrize(("spec", "expected"), UNIQUE_CASES)
def test_unique_matched_stacks_leave_a_guess_alone(
    spec: list[tuple[int, int, int]], expected: list[tuple[int, int, int]]
) -> None:
    blocks = [Block(size, first, last) for size, first, last in spec]
    merged = coalesce(blocks, matched=True, unique=True)
    assert sorted((b.size, b.first, b.last) for b in merged.blocks) == sorted(expected)
    assert sorted(i for members in merged.members for i, _ in members) == list(range(len(spec)))
    _expands_soundly(blocks, merged)


def test_coalesced_alignment_is_kept_and_unaligned_sizes_are_not_stacked() -> None:
    merged = coalesce([Block(64, 0, 1, 64), Block(64, 0, 1, 64), Block(40, 0, 1, 64)])
    assert sorted((b.size, b.align) for b in merged.blocks) == [(40, 64), (128, 64)]


@settings(max_examples=150, deadline=None)
@given(BLOCKS)
def test_any_placement_of_the_coalesced_blocks_places_the_originals(blocks: list[Block]) -> None:
    for chains_first in (False, True):
        for pairing in (None, "short", "long"):
            for loose in (0.0, 0.1, 0.5):
                merged = coalesce(blocks, chains_first, pairing, loose)
                _expands_soundly(blocks, merged, loose > 0)
            within = coalesce(blocks, chains_first, pairing, 0.5, slack=0.01)
            _expands_soundly(blocks, within, True)
            assert lower_bound(within.blocks) <= lower_bound(blocks) * 101 // 100
    for pairing in (None, "short", "long"):
        for unique in (False, True):
            _expands_soundly(blocks, coalesce(blocks, pairing=pairing, matched=True, unique=unique))


def _expands_soundly(blocks: list[Block], merged: Coalesced, loose: bool = False) -> None:
    placed = greedy_size(merged.blocks)
    offsets = merged.expand(placed.offsets, len(blocks))
    if loose:  # the bytes a loose chain leaves empty may have been the peak's
        assert peak(blocks, offsets) <= placed.peak
    else:
        assert peak(blocks, offsets) == placed.peak
    assert _sound(blocks, offsets, placed.peak)


@settings(max_examples=150, deadline=None)
@given(BLOCKS, st.randoms(use_true_random=False))
def test_settling_a_placement_moves_no_block_up(blocks: list[Block], rng: random.Random) -> None:
    # A placement with room under its blocks: any placement with every offset doubled (a
    # block below another stays below it). Settled, no block is higher, some are lower
    # wherever there was room, and the placement is still sound.
    order = list(range(len(blocks)))
    rng.shuffle(order)
    lifted = [2 * offset for offset in place_in_order(blocks, order)]
    settled = auto_module.settled(blocks, lifted)
    assert all(low <= high for low, high in zip(settled, lifted, strict=True))
    assert _sound(blocks, settled, peak(blocks, lifted))
    assert min(settled) == 0
    assert peak(blocks, settled) <= peak(blocks, lifted)


def test_settling_moves_a_block_into_the_room_a_loose_chain_left() -> None:
    # The loose chain of 100 then 80 bytes is placed as one block of 100 over steps 0-5;
    # a 20-byte block over steps 2-5 above it settles into the 20 bytes the 80 left empty.
    blocks = [Block(100, 0, 1), Block(80, 2, 5), Block(20, 2, 5)]
    assert auto_module.settled(blocks, [0, 0, 100]) == [0, 0, 80]


# --- seeded dives of the exact search --------------------------------------------------------


def test_a_seed_gives_the_exact_search_another_order() -> None:
    blocks, capacity = cut(5, 120)
    target = capacity * 12 // 10
    answers = {tuple(core.search(blocks, "WAT", target, 10**6, 60.0, seed)[1]) for seed in range(6)}
    assert len(answers) > 1
    assert core.search(blocks, "WAT", target, 10**6, 60.0, 0) == core.search(
        blocks, "WAT", target, 10**6, 60.0
    )


def test_seeded_twins_agree_on_keys_near_the_largest_integer() -> None:
    # An area key of 2**40 bytes over 2**21 steps: the noise must not overflow it.
    blocks = [Block(2**40, 0, 2**21), Block(2**39, 5, 2**21 + 3), Block(2**39, 0, 4)]
    for seed in (1, 2, 3):
        for heuristic in ("AWT", "TAW"):
            compiled = core.search(blocks, heuristic, 2**41, 100, 60.0, seed)
            assert compiled == core.search_python(blocks, heuristic, 2**41, 100, 60.0, seed)
            assert compiled[0] == core.FOUND


def test_dives_lower_the_peak_of_a_greedy_placement_within_their_nodes() -> None:
    blocks, capacity = cut(102, 600)
    merged = coalesce(blocks, chains_first=True, pairing="short")
    start = greedy_size(merged.blocks)
    # Bounded by nodes, not seconds: the same answer on any machine.
    budget = Budget(nodes=200 * len(merged.blocks))
    found = dive(merged.blocks, budget, start)
    assert found.peak < start.peak and found.algorithm == "exact"
    assert dive(merged.blocks, budget, start) == found
    assert _sound(list(merged.blocks), list(found.offsets), found.peak)
    # At the bound there is nothing to dive for.
    assert dive(blocks, budget, greedy_size(blocks)).peak >= capacity


def test_the_exact_search_dives_between_its_rounds_unless_it_has_a_goal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocks, capacity = cut(102, 600)
    merged = coalesce(blocks, chains_first=True, pairing="short").blocks
    start = greedy_size(merged)
    roomy = Budget(capacity=start.peak, nodes=400 * len(merged))
    found = improve(merged, roomy, start)
    # The nodes bound it, so it repeats; its dives share them with its rounds.
    assert found == improve(merged, roomy, start)
    assert found.peak < start.peak
    # A search for a goal (pool assignment's "does it fit?") gets rounds alone: the
    # perfect packings come from those. One for the smallest peak dives, fitted or not.
    dives: list[Packing] = []

    def counted(blocks: object, budget: object, best: Packing, bound: object = None) -> Packing:
        dives.append(best)
        return best

    # `memplace.planner.exact` the module, which the package's `exact` function hides.
    monkeypatch.setattr(importlib.import_module("memplace.planner.exact"), "dive", counted)
    tight = replace(roomy, capacity=capacity, nodes=50 * len(merged))
    improve(merged, replace(tight, goal=capacity), start)
    assert dives == []
    improve(merged, tight, start)
    assert dives


# --- the grain: the peaks the exact search asks for ----------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # Alignment 1 asks nothing: the sizes' divisor stands.
        ([(1024, 1), (3072, 1)], 1024),
        # Alignments dividing the sizes, or divided by them, leave it too.
        ([(1024, 4), (2048, 1)], 1024),
        ([(1024, 4096), (2048, 1)], 1024),
        # Others bring it down to what they have in common with it.
        ([(100, 4), (60, 8)], 4),
        ([(12, 6), (24, 8)], 2),
        ([(7, 1)], 7),
        ([], 1),
    ],
)
def test_the_grain_divides_every_canonical_offset(
    spec: list[tuple[int, int]], expected: int
) -> None:
    blocks = [Block(size, 0, 0, align) for size, align in spec]
    assert grain(blocks) == expected


# Eight buffers of whole KiB, alignment 1, exactly 5 KiB live at every step, so no step
# may keep a gap: steps 0-1 put the 1 KiB b3 and b7 side by side at one end of 5 KiB,
# steps 3-4 put b3 and b5 side by side at one end, and step 2 would then need b3, b5 and
# b7 in two 1 KiB slots. 6 KiB is the optimum, 1 KiB above the lower bound.
FRAGMENTED = [
    (2, 0, 0),
    (3, 3, 4),
    (3, 0, 1),
    (1, 1, 3),
    (2, 4, 4),
    (1, 2, 3),
    (2, 2, 2),
    (1, 1, 2),
]


def _fragmented() -> list[Block]:
    return [Block(kib * 1024, first, last) for kib, first, last in FRAGMENTED]


def test_the_exact_search_proves_an_optimum_above_the_lower_bound() -> None:
    blocks = _fragmented()
    assert lower_bound(blocks) == 5 * 1024
    # Both twins rule 6 KiB less a byte out...
    for search in (core.search, core.search_python):
        status, _, _ = search(blocks, "WAT", 6 * 1024 - 1, 10_000, 60.0)
        assert status == core.INFEASIBLE
    # ...so the search proves 6 KiB in a few hundred nodes: with a grain of 1 KiB, one
    # question rules out every peak below (a grain of 1 took 31,251 nodes: it asked
    # again one byte higher after each proof, 1024 times).
    found = exact(blocks, Budget(nodes=1000))
    assert (found.peak, found.optimal) == (6 * 1024, True)
    assert _sound(blocks, list(found.offsets), found.peak)


# --- through plan() on a board file --------------------------------------------------------


# The board and workload files a user writes for a strip, as the benchmark has them.
one_pool_board = benchmark("planner").one_pool_board
workload_of = benchmark("planner").workload_of


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32), st.integers(40, 120))
def test_plan_packs_a_cut_rectangle_into_a_pool_of_exactly_its_size(
    tmp_path_factory: pytest.TempPathFactory, seed: int, pieces: int
) -> None:
    blocks, capacity = cut(seed, pieces)
    board = one_pool_board(capacity, tmp_path_factory.mktemp("strip"))
    result = plan(board, workload_of(blocks))
    pool = result.pools[0]
    assert (pool.used, pool.lower_bound, pool.optimal) == (capacity, capacity, True)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no benchmark data at {SHARED}")
def test_plan_packs_minimalloc_d_at_its_lower_bound(tmp_path: Path) -> None:
    # The exact search alone neither finds nor rules out a peak below 1 MiB in seconds;
    # the coalesced blocks pack at the bound at once.
    with (SHARED / "D.1048576.csv").open(newline="") as handle:
        blocks = [
            Block(int(row["size"]), int(row["lower"]), int(row["upper"]) - 1)
            for row in csv.DictReader(handle)
        ]
    result = plan(one_pool_board(1048576, tmp_path), workload_of(blocks))
    pool = result.pools[0]
    assert (pool.used, pool.lower_bound, pool.optimal) == (986112, 986112, True)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no benchmark data at {SHARED}")
def test_a_pool_the_assignment_packed_is_not_searched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MiniMalloc's J overfills its 1 MiB in both greedy orders: the pool assignment's
    # search packs it, asked only that it fits, and the plan keeps those offsets as the
    # exact search's rather than ask auto the same question again (half of J's plan).
    with (SHARED / "J.1048576.csv").open(newline="") as handle:
        blocks = [
            Block(int(row["size"]), int(row["lower"]), int(row["upper"]) - 1)
            for row in csv.DictReader(handle)
        ]
    board, workload = one_pool_board(1048576, tmp_path), workload_of(blocks)
    calls: list[int] = []
    searched = planner.ALGORITHMS["auto"]
    monkeypatch.setitem(
        planner.ALGORITHMS, "auto", lambda b, budget: calls.append(len(b)) or searched(b, budget)
    )
    result = plan(board, workload)
    pool = result.pools[0]
    assert (pool.used, pool.algorithm, pool.optimal) == (1048576, "exact", False)
    assert calls == []
    assert plan(board, workload).dumps() == result.dumps()


def test_plan_searches_a_large_strip_through_every_coalescing(tmp_path: Path) -> None:
    # Above auto.MANY blocks, plan() searches each coalescing of auto.PORTFOLIO, the loose
    # one among them, each with seeded dives: well below what greedy-size leaves.
    blocks, capacity = cut(101, 1500)
    board = one_pool_board(8 * capacity, tmp_path)
    searched = plan(board, workload_of(blocks)).pools[0]
    greedy = plan(board, workload_of(blocks), algorithm="greedy-size").pools[0]
    assert capacity == searched.lower_bound < searched.used < greedy.used
    assert searched.used <= capacity * 115 // 100


def test_memplace_plan_proves_an_optimum_above_the_lower_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fragmented buffers as a user writes them, planned with a ten-thousandth of the
    # default budget (where a grain of 1 did not prove it): proven at 6 KiB, 1 KiB above
    # the most bytes live at one step; the same bytes twice.
    one_pool_board(64 * 1024, tmp_path)
    workload = tmp_path / "fragmented.yaml"
    lines = ["memplace: workload/v1", "name: fragmented", "buffers:"]
    for i, (kib, first, last) in enumerate(FRAGMENTED):
        lines.append(f"  - {{name: b{i}, size: {kib}K, align: 1, live: [{first}, {last}]}}")
    workload.write_text("\n".join(lines) + "\n")
    argv = ["plan", str(tmp_path / "one-pool-65536.yaml"), str(workload), "--json"]
    plans = []
    for _ in range(2):
        assert main([*argv, "--effort", "0.0001"]) == 0
        plans.append(capsys.readouterr().out)
    assert plans[0] == plans[1]
    pool = json.loads(plans[0])["pools"][0]
    assert (pool["used"], pool["lower_bound"], pool["optimal"]) == (6144, 5120, True)


def test_plan_packs_the_large_strips_s101_and_s102_within_5_percent(tmp_path: Path) -> None:
    # The benchmarks' s101 and s102 (4264 and 4226 blocks), with room to spare, at the
    # default budget. Every coalescing of auto.PORTFOLIO leaves s101 at 1.082x its capacity
    # or more, s102 at 1.086x; the matched coalescings reached 1.053x on s101, 1.11x on
    # s102. Judged with loose and matched ones within a slack (auto.LOOSE_SLACKS,
    # auto.MATCHED_LOOSE), each placement settled: 1.024x and 1.044x. The same plan, byte
    # for byte, twice.
    board = one_pool_board(None, tmp_path)
    for seed, pieces in ((101, 4264), (102, 4226)):
        blocks, capacity = cut(seed, pieces)
        result = plan(board, workload_of(blocks))
        pool = result.pools[0]
        assert capacity == pool.lower_bound < pool.used <= capacity * 105 // 100
        if seed == 101:
            assert plan(board, workload_of(blocks)).dumps() == result.dumps()
