"""Storage scopes: each scope of the table resolves to the places DESIGN §3 lists, every
other place is excluded with its reason, and every broken rule is an input error."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace.board import Board
from memplace.errors import InputError
from memplace.importers import load_workload
from memplace.scopes import Place, resolve, resolve_buffer, stack_places, valid_scopes
from memplace.workload import Buffer, Workload


def _buffer(
    scope: str = "global",
    kind: str = "buffer",
    users: tuple[str, ...] = (),
    pools: tuple[str, ...] = (),
    size: int = 1024,
    life: tuple[int, int] = (0, 0),
    dynamic: bool = False,
) -> Buffer:
    return Buffer(
        name="b",
        kind=kind,
        size=size,
        align=16,
        first=life[0],
        last=life[1],
        scope=scope,
        users=users,
        pools=pools,
        dynamic=dynamic,
    )


def _labels(board: Board, buffer: Buffer) -> list[str]:
    return [place.label for place in resolve_buffer(board, buffer).places]


def _why(board: Board, buffer: Buffer, label: str) -> str:
    excluded = {place.label: why for place, why in resolve_buffer(board, buffer).excluded}
    return excluded[label]


@pytest.fixture(scope="module")
def threaded(board_data_module: dict[str, Any]) -> Board:
    """The default board with two worker threads on main, a 2K max_stack_alloca, an isr,
    and a DMA engine that reaches no memory."""
    data = board_data_module
    data["devices"]["dma0"] = {"kind": "dma"}
    data["contexts"]["main"].update(threads=2, max_stack_alloca=2048)
    data["contexts"]["systick"] = {"core": "cpu0", "kind": "isr", "preempts": ["main"]}
    return Board.from_data(data)


@pytest.fixture(scope="module")
def board_data_module() -> dict[str, Any]:
    from memplace import resources

    path = resources.bundled_boards()["qemu-mps3-an547"]
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def test_global_takes_reachable_pools_fastest_first(board: Board) -> None:
    assert _labels(board, _buffer()) == ["dtcm_ws", "sram_ws", "ddr_ws"]


def test_a_device_user_rules_out_memories_it_cannot_reach(board: Board) -> None:
    buffer = _buffer(users=("main", "npu0"))
    assert _labels(board, buffer) == ["sram_ws", "ddr_ws"]
    assert _why(board, buffer, "dtcm_ws") == "npu0 cannot reach memory dtcm"


def test_global_constants_go_to_constant_pools(board: Board) -> None:
    constant = _buffer(kind="constant")
    assert _labels(board, constant) == ["itcm_const", "ddr_const"]
    assert _why(board, constant, "dtcm_ws") == "a workspace pool; a constant needs a constant pool"
    assert _why(board, constant, "main.stack") == "a constant lives in a constant pool"


def test_global_workspace_never_uses_a_stack(board: Board) -> None:
    main = replace(board.contexts["main"], max_stack_alloca=4096)
    generous = replace(board, contexts={"main": main})
    assert _labels(generous, _buffer(scope="global"))[0] == "main.stack"
    workspace = _buffer(scope="global.workspace")
    assert "main.stack" not in _labels(generous, workspace)
    assert _why(generous, workspace, "main.stack") == "scope global.workspace never uses a stack"


def test_global_stays_off_the_stack_by_default(board: Board) -> None:
    small = _buffer(size=8)
    assert "main.stack" not in _labels(board, small)
    assert _why(board, small, "main.stack") == "8 bytes is over main's max_stack_alloca (0)"


def test_global_goes_on_the_stack_only_for_its_single_user_context(threaded: Board) -> None:
    assert _labels(threaded, _buffer(size=2048))[0] == "main.stack"
    too_big = _buffer(size=2049)
    assert _why(threaded, too_big, "main.stack") == (
        "2049 bytes is over main's max_stack_alloca (2048)"
    )
    shared = _buffer(size=64, users=("main", "npu0"))
    assert _why(threaded, shared, "main.stack") == (
        "device npu0 uses it, and a stack is reached by its own context only"
    )
    two = _buffer(size=64, users=("main", "systick"))
    assert _why(threaded, two, "main.stack") == "2 contexts use it; a stack belongs to one"
    # Worker threads' stacks take only what is scoped to them.
    assert _why(threaded, _buffer(size=64), "main.thread0.stack") == (
        "a thread's stack takes only buffers scoped main.thread0.stack"
    )


def test_a_dynamic_buffer_stays_in_pools(threaded: Board) -> None:
    dynamic = _buffer(size=64, dynamic=True)
    assert _labels(threaded, dynamic) == ["dtcm_ws", "sram_ws", "ddr_ws"]
    assert _why(threaded, dynamic, "main.stack") == (
        "a dynamic buffer takes its memory from an arena in a pool"
    )


def test_pinned_pool(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(scope="global.ddr_ws"))
    assert candidates.places == (Place(pool="ddr_ws"),)
    assert candidates.pinned
    assert dict((p.label, why) for p, why in candidates.excluded)["dtcm_ws"] == (
        "scope global.ddr_ws pins pool ddr_ws"
    )


def test_pinned_constant_pool(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(kind="constant", scope="global.ddr_const"))
    assert candidates.places == (Place(pool="ddr_const"),)


def test_local_goes_on_the_users_stack(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(scope="local"))
    assert candidates.places == (Place(stack="main"),)
    assert dict((p.label, why) for p, why in candidates.excluded)["dtcm_ws"] == (
        "scope local puts it on main.stack"
    )


def test_context_stack_scope(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(scope="main.stack", life=(0, 3)))
    assert candidates.places == (Place(stack="main"),)
    assert candidates.users == ("main",)


def test_thread_stack_scope(threaded: Board) -> None:
    candidates = resolve_buffer(threaded, _buffer(scope="main.thread1.stack", life=(0, 3)))
    assert candidates.places == (Place(stack="main.thread1"),)
    place = candidates.places[0]
    assert (place.label, place.context, place.thread) == ("main.thread1.stack", "main", 1)
    assert candidates.users == ("main",)
    assert dict((p.label, why) for p, why in candidates.excluded)["main.stack"] == (
        "scope main.thread1.stack puts it on main.thread1.stack"
    )


def test_stack_places_follow_the_board(threaded: Board) -> None:
    assert [place.label for place in stack_places(threaded)] == [
        "main.stack",
        "main.thread0.stack",
        "main.thread1.stack",
    ]


def test_pools_narrow_in_their_own_order(board: Board) -> None:
    buffer = _buffer(pools=("ddr_ws", "sram_ws"))
    assert _labels(board, buffer) == ["ddr_ws", "sram_ws"]
    assert _why(board, buffer, "dtcm_ws") == "not in its pools: list (ddr_ws, sram_ws)"
    assert not resolve_buffer(board, buffer).pinned
    assert resolve_buffer(board, _buffer(pools=("sram_ws",))).pinned


def test_users_default_to_the_first_context(threaded: Board) -> None:
    assert resolve_buffer(threaded, _buffer()).users == ("main",)


def test_valid_scopes_list_the_board(board: Board) -> None:
    assert valid_scopes(board) == [
        "global",
        "global.workspace",
        "local",
        "global.dtcm_ws",
        "global.sram_ws",
        "global.ddr_ws",
        "global.itcm_const",
        "global.ddr_const",
        "main.stack",
    ]


def test_valid_scopes_name_thread_stacks(threaded: Board) -> None:
    assert valid_scopes(threaded)[-3:] == ["main.stack", "main.thread0.stack", "main.thread1.stack"]


ERRORS: list[tuple[Buffer, str]] = [
    (
        _buffer(scope="global.dtcm"),
        r"b.scope: unknown scope 'global.dtcm'; did you mean 'global.dtcm_ws'\? valid: ",
    ),
    (
        _buffer(scope="main.thread2.stack"),
        r"unknown scope 'main.thread2.stack'; did you mean 'main.thread1.stack'\? .*"
        r"main.thread0.stack, main.thread1.stack",
    ),
    (_buffer(scope="systick.stack"), r"unknown scope 'systick.stack'"),
    (
        _buffer(scope="global.dtcm_ws", users=("main", "npu0")),
        r"b.scope: 'npu0' cannot reach pool 'dtcm_ws' \(memory 'dtcm'\)",
    ),
    (
        _buffer(scope="global.itcm_const"),
        r"b.scope: pool 'itcm_const' holds constant data; a buffer needs a workspace pool",
    ),
    (
        _buffer(kind="constant", scope="global.dtcm_ws"),
        r"pool 'dtcm_ws' holds workspace data; a constant needs a constant pool",
    ),
    (
        _buffer(kind="constant", scope="global.workspace"),
        r"b.scope: a constant lives in a constant pool: use 'global' or 'global.<pool>'",
    ),
    (_buffer(kind="constant", scope="local"), r"a constant lives in a constant pool"),
    (_buffer(kind="constant", scope="main.stack"), r"a constant lives in a constant pool"),
    (
        _buffer(kind="constant", users=("main", "dma0")),
        r"b.users: no constant pool is reachable by all of main, dma0",
    ),
    (_buffer(users=("dma0",)), r"b.users: no workspace pool is reachable by all of dma0"),
    (_buffer(scope="local", life=(0, 2)), r"b.live: a local buffer lives for one step"),
    (_buffer(scope="local", users=("main", "npu0")), r"b.users: .*exactly one user context"),
    (_buffer(scope="local", users=("npu0",)), r"has exactly one user context, not npu0"),
    (
        _buffer(scope="local", users=("systick",)),
        r"context 'systick' has no stack of its own \(an isr runs on the stack it preempts\)",
    ),
    (_buffer(users=("mian",)), r"b.users\[0\]: no context or device 'mian'; did you mean 'main'"),
    (
        _buffer(users=("main", "npu1")),
        r"b.users\[1\]: no context or device 'npu1'; did you mean 'npu0'\? "
        r"valid: dma0, main, npu0, systick",
    ),
    (_buffer(pools=("dtcm",)), r"b.pools\[0\]: no pool 'dtcm'; did you mean 'dtcm_ws'"),
    (
        _buffer(users=("npu0",), pools=("dtcm_ws",)),
        r"b.pools: none of dtcm_ws is allowed by scope 'global' for npu0; "
        r"allowed: sram_ws, ddr_ws",
    ),
    (
        _buffer(scope="local", pools=("dtcm_ws",)),
        r"none of dtcm_ws is allowed by scope 'local' for main; allowed: main.stack",
    ),
    (
        _buffer(scope="main.stack", users=("main", "npu0")),
        r"b.users: a buffer with scope 'main.stack' has exactly one user context",
    ),
    (
        _buffer(scope="main.stack", users=("systick",)),
        r"b.users: only 'main' can use a buffer on its stack",
    ),
    (
        _buffer(scope="main.thread0.stack", users=("npu0",)),
        r"only 'main' can use a buffer on its stack",
    ),
    (
        _buffer(scope="local", dynamic=True),
        r"b.dynamic: a dynamic buffer takes its memory from an arena in a pool; "
        r"scope 'local' puts it on a stack",
    ),
    (_buffer(scope="main.thread1.stack", dynamic=True), r"a dynamic buffer takes its memory"),
]


@pytest.mark.parametrize(("buffer", "message"), ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_scope_errors(threaded: Board, buffer: Buffer, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve_buffer(threaded, buffer)


def test_errors_point_at_the_workload_file(board: Board, tmp_path: Path) -> None:
    """A scope error from a file names file:line:col of the very key or list item."""
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\n"
        "name: w\n"
        "buffers:\n"
        "  - name: a\n"
        "    size: 64\n"
        "    live: 0\n"
        "    users: [main, npu9]\n"
    )
    workload = load_workload(path)
    with pytest.raises(InputError) as caught:
        resolve(board, workload)
    assert str(caught.value) == (
        f"{path}:7:19: a.users[1]: no context or device 'npu9'; did you mean 'npu0'? "
        "valid: main, npu0"
    )


def test_errors_from_code_name_the_buffer_without_a_position(board: Board) -> None:
    with pytest.raises(InputError) as caught:
        resolve_buffer(board, _buffer(scope="globl"))
    assert re.match(r"b\.scope: unknown scope 'globl'; did you mean 'global'\?", str(caught.value))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "{name: a, size: 64, live: 0, users: [main, dma]}",
            "4:48: a.users[1]: no context or device 'dma'; valid: main, npu0",
        ),
        ("{name: a, size: 64, live: 0, pools: [sram]}", "4:42: a.pools[0]: no pool 'sram'; did"),
        ("{name: a, size: 64, live: [0, 1], scope: local}", "4:31: a.live: a local buffer"),
        ("{name: a, size: 64, live: 0, scope: main.thread0.stack}", "a.scope: unknown scope"),
        ("{name: a, size: 64, live: 0, scope: global.itcm_const}", "4:41: a.scope: pool 'itcm"),
        ("{name: a, size: 64, live: 0, dynamic: true, scope: local}", "4:43: a.dynamic: a dyn"),
    ],
)
def test_scope_errors_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    from memplace.cli import main

    path = tmp_path / "w.yaml"
    path.write_text(f"memplace: workload/v1\nname: w\nbuffers:\n  - {line}\n")
    assert main(["plan", "qemu-mps3-an547", str(path), "--explain"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (only,) = err.strip().splitlines()
    assert only.startswith(f"memplace: error: {path}:")
    assert message in only, only


def test_buffers_of_the_same_kind_resolve_alike(threaded: Board) -> None:
    buffers = [
        replace(_buffer(size=size), name=f"b{i}") for i, size in enumerate([64, 64, 4096, 4096])
    ]
    workload = Workload(name="w", steps=("0",), buffers=tuple(buffers))
    resolved = resolve(threaded, workload)
    # Sizes matter on stacks only: two buffers of one size get the same places and reasons.
    assert [c.places[0].label for c in resolved] == [
        "main.stack",
        "main.stack",
        "dtcm_ws",
        "dtcm_ws",
    ]
    why = dict((place.label, reason) for place, reason in resolved[3].excluded)
    assert why["main.stack"] == "4096 bytes is over main's max_stack_alloca (2048)"
    assert resolved[0].excluded == resolved[1].excluded
    assert resolved[2].places == resolved[3].places
    assert resolved[2].excluded == resolved[3].excluded


def test_a_workload_resolves_as_each_of_its_buffers_alone(threaded: Board) -> None:
    # `resolve` keeps each answer for the buffers that differ in nothing it reads; each
    # buffer still gets its own candidates, and one that breaks a rule is refused by name.
    kinds = [
        {"scope": "global", "users": ("main",)},
        {"scope": "local", "users": ("main",)},
        {"scope": "main.stack"},
        {"scope": "global.workspace", "pools": ("sram_ws", "dtcm_ws")},
        {"scope": "global", "users": ("main", "dma0")},
    ]
    buffers = [
        replace(_buffer(size=64 * (1 + i % 3)), name=f"b{i}", **kinds[i % len(kinds)])
        for i in range(40)
    ]
    ok = [b for b in buffers if b.scope != "global" or "dma0" not in b.users]
    resolved = resolve(threaded, Workload(name="w", steps=("0",), buffers=tuple(ok)))
    assert resolved == [resolve_buffer(threaded, b) for b in ok]
    assert [c.buffer.name for c in resolved] == [b.name for b in ok]
    # The same kind as a buffer resolved before, but living two steps: a local buffer
    # may not.
    late = replace(ok[1], name="late", first=0, last=1)
    with pytest.raises(InputError, match="a local buffer lives for one step") as error:
        resolve(threaded, Workload(name="w", steps=("0", "1"), buffers=(*ok, late)))
    assert error.value.key == "late.live"
