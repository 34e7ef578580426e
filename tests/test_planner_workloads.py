"""plan() on random workloads over a small board, every plan checked pair by pair here.

The board has small pools of two speeds, a slow DMA-reachable one, two constant pools and a
stack that takes small buffers, so random workloads spill, hit `pools:` pins, scopes and
priorities, and sometimes fit nowhere. The check below shares no code with the planner.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from memplace import resources
from memplace.board import Board
from memplace.errors import PlanningError
from memplace.planner import ALGORITHMS, plan
from memplace.planner.model import Placement, Plan
from memplace.workload import Workload

STEPS = 6
WORKSPACES = ("dtcm_ws", "sram_ws", "ddr_ws")


@pytest.fixture(scope="module")
def small_board() -> Board:
    data = yaml.safe_load(resources.bundled_boards()["qemu-mps3-an547"].read_text())
    sizes = {"dtcm_ws": 1024, "sram_ws": 2048, "ddr_ws": 4096, "itcm_const": 512, "ddr_const": 1024}
    for name, size in sizes.items():
        data["pools"][name]["size"] = size
    data["contexts"]["main"]["stack"]["size"] = 1024
    data["contexts"]["main"]["max_stack_alloca"] = 96
    return Board.from_data(data)


def _buffer(draw: Any, index: int) -> dict[str, Any]:
    first = draw(st.integers(0, STEPS - 1))
    spec: dict[str, Any] = {
        "name": f"b{index}",
        "size": draw(st.integers(1, 600)),
        "align": draw(st.sampled_from([1, 4, 16, 64])),
        "live": [first, draw(st.integers(first, STEPS - 1))],
    }
    kind = draw(st.sampled_from(["global", "global", "pools", "pinned", "npu", "stack", "local"]))
    if kind == "pools":
        spec["pools"] = draw(st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True))
    elif kind == "pinned":
        spec["scope"] = f"global.{draw(st.sampled_from(WORKSPACES))}"
    elif kind == "npu":
        # The NPU reaches SRAM and DDR only.
        spec["users"] = ["main", "npu0"]
    elif kind == "stack":
        spec["scope"] = "main.stack"
        spec["size"] = draw(st.integers(1, 200))
    elif kind == "local":
        spec["scope"] = "local"
        spec["live"] = [first, first]
        spec["size"] = draw(st.integers(1, 200))
    priority = draw(st.sampled_from([0, 0, 0, 1, 5, -2]))
    if priority:
        spec["priority"] = priority
    return spec


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    count = draw(st.integers(1, 14))
    constants = [
        {
            "name": f"c{i}",
            "size": draw(st.integers(1, 300)),
            "align": draw(st.sampled_from([1, 16])),
            **({"scope": "global.itcm_const"} if draw(st.booleans()) else {}),
        }
        for i in range(draw(st.integers(0, 3)))
    ]
    return {
        "memplace": "workload/v1",
        "name": "random",
        "steps": STEPS,
        "buffers": [_buffer(draw, i) for i in range(count)],
        "constants": constants,
    }


def _capacities(result: Plan) -> dict[str, int]:
    capacities = {pool.name: pool.capacity for pool in result.pools}
    capacities.update({f"{s.context}.stack": s.budget for s in result.stacks})
    return capacities


def _allowed(spec: dict[str, Any], placement: Placement) -> bool:
    """Whether the placement is one the buffer's scope, pins and users allow."""
    scope = spec.get("scope", "global")
    if scope in ("local", "main.stack"):
        return placement.stack == "main"
    if scope.startswith("global.") and placement.pool != scope.removeprefix("global."):
        return False
    if "pools" in spec and placement.pool not in spec["pools"]:
        return False
    if "npu0" in spec.get("users", []) and placement.pool not in ("sram_ws", "ddr_ws"):
        return False
    if placement.stack is not None:
        return spec["size"] <= 96 and "users" not in spec
    return True


def check_pairwise(result: Plan, data: dict[str, Any]) -> None:
    """Every rule of a sound plan, checked the slow, obvious way."""
    capacities = _capacities(result)
    specs = {spec["name"]: spec for spec in data["buffers"] + data["constants"]}
    assert {p.name for p in result.placements} == set(specs)
    for p in result.placements:
        assert p.offset >= 0 and p.offset % p.align == 0, p
        assert p.offset + p.size <= capacities[p.place], p
        assert _allowed(specs[p.name], p), p
        if p.kind == "constant":
            assert p.pool in ("itcm_const", "ddr_const"), p
    for a, b in itertools.combinations(result.placements, 2):
        if a.place != b.place or a.last < b.first or b.last < a.first:
            continue
        assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)
    for pool in result.pools:
        members = result.in_place(pool.name)
        assert pool.used == max((p.offset + p.size for p in members), default=0)
        assert pool.lower_bound <= pool.used <= pool.capacity
        live = [sum(p.size for p in members if p.first <= s <= p.last) for s in range(STEPS)]
        assert pool.lower_bound >= max(live)
        assert pool.algorithm is None if not members else pool.algorithm in _NAMES


_NAMES = (set(ALGORITHMS) - {"auto"}) | {"assignment"}


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workloads(), st.sampled_from(sorted(ALGORITHMS)))
def test_every_plan_of_a_random_workload_is_sound_and_repeats(
    small_board: Board, data: dict[str, Any], algorithm: str
) -> None:
    _sound_and_repeats(small_board, data, algorithm)


# This seed draws workloads on which auto's exact searches once ended with nodes to spare:
# its turns then doubled without end and `plan()` never returned.
@seed(5)
@settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workloads(), st.sampled_from(sorted(ALGORITHMS)))
def test_workloads_whose_searches_end_early_are_planned(
    small_board: Board, data: dict[str, Any], algorithm: str
) -> None:
    _sound_and_repeats(small_board, data, algorithm)


def _sound_and_repeats(small_board: Board, data: dict[str, Any], algorithm: str) -> None:
    workload = Workload.from_data(data)
    try:
        result = plan(small_board, workload, algorithm=algorithm)
    except PlanningError as error:
        # Fitting nowhere is a valid answer; it names the buffer and what each place lacks.
        assert error.buffer in {spec["name"] for spec in data["buffers"] + data["constants"]}
        assert error.shortfalls and all(lack >= 0 for lack in error.shortfalls.values())
        return
    check_pairwise(result, data)
    assert plan(small_board, workload, algorithm=algorithm).dumps() == result.dumps()
