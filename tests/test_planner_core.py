"""The compiled planner core against its pure-Python twin: same decisions, node for node."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import BLOCKS
from memplace.planner import core
from memplace.planner.blocks import Block, lower_bound, peak
from memplace.planner.check import placement_problems
from memplace.planner.exact import HEURISTICS


def test_the_compiled_core_is_built() -> None:
    # `pip install` (editable or wheel) builds it with the system C compiler.
    assert core.compiled() is not None


@settings(max_examples=120, deadline=None)
@given(
    BLOCKS,
    st.sampled_from(HEURISTICS),
    st.integers(0, 3),
    st.integers(50, 5000),
    st.sampled_from([0, 1, 7, -5, 2**62]),
)
def test_search_twins_agree(
    blocks: list[Block], heuristic: str, slack: int, limit: int, seed: int
) -> None:
    if core.compiled() is None:
        pytest.skip("the compiled core is not built")
    target = lower_bound(blocks) + slack * max(b.align for b in blocks)
    compiled = core.search(blocks, heuristic, target, limit, 60.0, seed)
    python = core.search_python(blocks, heuristic, target, limit, 60.0, seed)
    assert compiled == python
    status, offsets, _ = compiled
    if status == core.FOUND:
        assert peak(blocks, offsets) <= target
        names = [str(i) for i in range(len(blocks))]
        assert placement_problems(blocks, offsets, target, names) == []


@settings(max_examples=120, deadline=None)
@given(BLOCKS, st.data())
def test_assign_twins_agree(blocks: list[Block], data: st.DataObject) -> None:
    if core.compiled() is None:
        pytest.skip("the compiled core is not built")
    places = data.draw(st.integers(1, 3))
    capacities = [data.draw(st.one_of(st.none(), st.integers(1, 200))) for _ in range(places)]
    candidates = [
        data.draw(st.lists(st.integers(0, places - 1), min_size=1, max_size=3, unique=True))
        for _ in blocks
    ]
    order = data.draw(st.permutations(range(len(blocks))))
    compiled = core.assign(blocks, order, candidates, capacities)
    assert compiled == core.assign_python(blocks, order, candidates, capacities)
    for p, capacity in enumerate(capacities):
        members = [i for i, chosen in enumerate(compiled.place) if chosen == p]
        mine = [blocks[i] for i in members]
        offsets = [compiled.offset[i] for i in members]
        names = [str(i) for i in members]
        assert placement_problems(mine, offsets, capacity or 10**9, names) == []


def test_a_search_stops_at_its_node_limit() -> None:
    blocks = [Block(40, 0, 1), Block(20, 2, 3), Block(50, 3, 5), Block(20, 1, 2)]
    status, _, nodes = core.search(blocks, "WAT", 70, 1, 60.0)
    assert (status, nodes) == (core.NODE_LIMIT, 2)
    status, offsets, _ = core.search(blocks, "WAT", 70, 10_000, 60.0)
    assert status == core.FOUND and peak(blocks, offsets) == 70
    assert core.search(blocks, "WAT", 69, 10_000, 60.0)[0] == core.INFEASIBLE


def test_a_block_that_fits_nowhere_reports_each_candidate() -> None:
    blocks = [Block(64, 0, 0), Block(64, 0, 0)]
    placed = core.assign(blocks, [0, 1], [[0, 1], [0, 1]], [100, 120])
    assert placed.place == (0, 1)
    placed = core.assign(blocks, [0, 1], [[0], [0, 1]], [100, 60])
    assert placed.place == (0, -1)
    assert placed.ends(1) == (128, 64)


@pytest.mark.parametrize("search", [core.search, core.search_python], ids=["compiled", "python"])
def test_a_search_reads_the_clock_within_a_node(search: Any) -> None:
    # A thousand blocks live together, asked to fit their total size, which their 16-byte
    # alignment rules out: each node tries a thousand placements, each looking at a
    # thousand neighbours (25 s for the first 1024 nodes), so a clock read only every 1024
    # nodes would come far too late.
    blocks = [Block(16 + (i * 7919) % 4096, i % 7, 1000 + i % 5, 16) for i in range(1000)]
    total = sum(b.size for b in blocks)
    status, _, nodes = search(blocks, "WAT", total, 10**12, 0.2)
    assert status == core.TIME_LIMIT
    assert nodes < 1024


@pytest.mark.parametrize("longest", [8, 200])
def test_first_fit_twins_agree_on_many_blocks(longest: int) -> None:
    # Hundreds of blocks: each first fit meets dozens of placed ones (the compiled core
    # sorts them its own way), and lifetimes of up to 200 steps make the compiled core
    # index the blocks that start inside a long one by the tree, not step by step.
    if core.compiled() is None:
        pytest.skip("the compiled core is not built")
    rng = random.Random(longest)
    blocks = []
    for _ in range(600):
        first = rng.randrange(300)
        blocks.append(Block(16 * rng.randint(1, 64), first, first + rng.randrange(longest), 16))
    capacities = [4096, None]
    candidates = [[0, 1] if i % 3 else [1] for i in range(len(blocks))]
    order = list(range(len(blocks)))
    rng.shuffle(order)
    compiled = core.assign(blocks, order, candidates, capacities)
    assert compiled == core.assign_python(blocks, order, candidates, capacities)
    assert set(compiled.place) == {0, 1}
    # One place without a capacity: the greedy algorithms' pass.
    alone = core.assign_python(blocks, order, [(0,)] * len(blocks), [None])
    assert core.first_fit(blocks, order) == list(alone.offset)
    for p in (0, 1):
        members = [i for i, chosen in enumerate(compiled.place) if chosen == p]
        offsets = [compiled.offset[i] for i in members]
        names = [str(i) for i in members]
        problems = placement_problems([blocks[i] for i in members], offsets, 10**9, names)
        assert problems == []
