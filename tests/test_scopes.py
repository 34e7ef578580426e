"""Storage scopes: each scope of the table resolves to the places DESIGN §3 lists."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memplace.board import Board
from memplace.errors import InputError
from memplace.scopes import Place, resolve_buffer, valid_scopes
from memplace.workload import Buffer


def _buffer(
    scope: str = "global",
    kind: str = "buffer",
    users: tuple[str, ...] = (),
    pools: tuple[str, ...] = (),
    size: int = 1024,
    life: tuple[int, int] = (0, 0),
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
    )


def _labels(board: Board, buffer: Buffer) -> list[str]:
    return [place.label for place in resolve_buffer(board, buffer).places]


def test_global_takes_reachable_pools_fastest_first(board: Board) -> None:
    assert _labels(board, _buffer()) == ["dtcm_ws", "sram_ws", "ddr_ws"]


def test_a_device_user_rules_out_memories_it_cannot_reach(board: Board) -> None:
    assert _labels(board, _buffer(users=("main", "npu0"))) == ["sram_ws", "ddr_ws"]


def test_global_constants_go_to_constant_pools(board: Board) -> None:
    assert _labels(board, _buffer(kind="constant")) == ["itcm_const", "ddr_const"]


def test_global_workspace_never_uses_a_stack(board: Board) -> None:
    main = replace(board.contexts["main"], max_stack_alloca=4096)
    generous = replace(board, contexts={"main": main})
    assert _labels(generous, _buffer(scope="global"))[0] == "main.stack"
    assert "main.stack" not in _labels(generous, _buffer(scope="global.workspace"))


def test_global_stays_off_the_stack_by_default(board: Board) -> None:
    assert "main.stack" not in _labels(board, _buffer(size=8))


def test_pinned_pool(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(scope="global.ddr_ws"))
    assert candidates.places == (Place(pool="ddr_ws"),)
    assert candidates.pinned


def test_local_goes_on_the_users_stack(board: Board) -> None:
    assert resolve_buffer(board, _buffer(scope="local")).places == (Place(stack="main"),)


def test_context_stack_scope(board: Board) -> None:
    candidates = resolve_buffer(board, _buffer(scope="main.stack", life=(0, 3)))
    assert candidates.places == (Place(stack="main"),)
    assert candidates.users == ("main",)


def test_pools_narrow_in_their_own_order(board: Board) -> None:
    assert _labels(board, _buffer(pools=("ddr_ws", "sram_ws"))) == ["ddr_ws", "sram_ws"]


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


@pytest.mark.parametrize(
    ("buffer", "message"),
    [
        (
            _buffer(scope="global.dtcm"),
            r"unknown scope 'global.dtcm'; did you mean "
            r"'global.dtcm_ws'\? valid: ",
        ),
        (
            _buffer(scope="global.dtcm_ws", users=("main", "npu0")),
            r"'npu0' cannot reach pool 'dtcm_ws' \(memory 'dtcm'\)",
        ),
        (
            _buffer(scope="global.itcm_const"),
            r"pool 'itcm_const' holds constant data; a buffer "
            r"needs a workspace pool",
        ),
        (
            _buffer(kind="constant", scope="global.workspace"),
            r"a constant lives in a constant pool",
        ),
        (_buffer(scope="local", life=(0, 2)), r"a local buffer lives for one step"),
        (_buffer(scope="local", users=("main", "npu0")), r"has exactly one user context"),
        (_buffer(scope="local", users=("npu0",)), r"has exactly one user context"),
        (_buffer(users=("mian",)), r"no context or device 'mian'; did you mean 'main'"),
        (_buffer(pools=("dtcm",)), r"no pool 'dtcm'; did you mean 'dtcm_ws'"),
        (
            _buffer(users=("npu0",), pools=("dtcm_ws",)),
            r"none of dtcm_ws is allowed by scope 'global' for npu0; allowed: sram_ws, ddr_ws",
        ),
        (_buffer(scope="main.stack", users=("main", "npu0")), r"exactly one user context"),
    ],
)
def test_scope_errors(board: Board, buffer: Buffer, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve_buffer(board, buffer)
