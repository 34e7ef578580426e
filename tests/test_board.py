"""The board model: the bundled default board, computed addresses, and every rule."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace.board import Board, board_path, load_board
from memplace.errors import InputError


def test_default_board_matches_the_qemu_memory_map(board: Board) -> None:
    assert board.name == "qemu-mps3-an547"
    assert board.qemu_machine == "mps3-an547"
    memories = {m.name: (m.origin, m.size) for m in board.memories.values()}
    assert memories == {
        "itcm": (0x0, 512 * 1024),
        "sram": (0x01000000, 2 * 1024 * 1024),
        "dtcm": (0x20000000, 512 * 1024),
        "ddr": (0x60000000, 16 * 1024 * 1024),
    }
    assert board.cores["cpu0"].cpu == "cortex-m55"
    assert board.cores["cpu0"].layout.memories() == ("itcm", "itcm", "sram", "itcm")


def test_pools_and_stacks_take_the_top_of_their_memory(board: Board) -> None:
    dtcm_ws, stack = board.pools["dtcm_ws"], board.contexts["main"].stack
    assert stack is not None
    # Pools first, then stacks, ending exactly at the end of the memory.
    assert stack.address + stack.size == 0x20080000
    assert dtcm_ws.address + dtcm_ws.size == stack.address
    # The open-ended pool takes what the sized one leaves.
    assert board.pools["ddr_ws"].size == 12 * 1024 * 1024
    assert board.pools["ddr_ws"].address == 0x60000000
    assert board.pools["ddr_const"].address == 0x60C00000


def test_reaches_follows_cores_and_devices(board: Board) -> None:
    assert board.reaches("main", "dtcm")
    assert not board.reaches("npu0", "dtcm")
    assert board.reaches("npu0", "sram")


def test_from_data_needs_no_file(board_data: dict[str, Any]) -> None:
    assert Board.from_data(board_data).pools.keys() == load_board("qemu-mps3-an547").pools.keys()


def test_unknown_bundled_board_suggests_one() -> None:
    with pytest.raises(
        InputError,
        match=r"no bundled board 'qemu-mps3-an574'; did you mean "
        r"'qemu-mps3-an547'",
    ):
        board_path("qemu-mps3-an574")


def test_missing_board_file() -> None:
    with pytest.raises(InputError, match=r"no board file at nowhere/board\.yaml"):
        board_path("nowhere/board.yaml")


def _load(tmp_path: Path, data: dict[str, Any]) -> Board:
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return Board.from_file(path)


def _error(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as caught:
        _load(tmp_path, data)
    text = str(caught.value)
    assert re.match(rf"{re.escape(str(tmp_path))}/board\.yaml:\d+:\d+: ", text), text
    assert caught.value.exit_code == 2
    return text


Change = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[part]
        data[last] = value

    return change


def _delete(path: str) -> Change:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[part]
        del data[last]

    return change


RULES: list[tuple[str, Change, str]] = [
    ("version missing", _delete("memplace"), r"missing 'memplace: board/v1'"),
    (
        "version wrong",
        _set("memplace", "board/v9"),
        r"memplace: this memplace reads board/v1, "
        r"not 'board/v9'",
    ),
    ("unknown top key", _set("memries", {}), r"memries: unknown key; did you mean 'memories'"),
    ("unknown memory key", _set("memories.itcm.orign", 0), r"memories.itcm.orign: unknown key"),
    (
        "memory name not C",
        lambda d: d["memories"].update({"my-ram": dict(d["memories"]["sram"], origin=0x70000000)}),
        r"memories.my-ram: 'my-ram' is not a C identifier",
    ),
    ("bad attrs", _set("memories.itcm.attrs", "rz"), r"memories.itcm.attrs: attrs are letters"),
    (
        "unknown access",
        _set("memories.itcm.access", ["cpu1"]),
        r"memories.itcm.access\[0\]: no core or device 'cpu1'; did you mean 'cpu0'",
    ),
    (
        "memory past 4 GiB",
        _set("memories.ddr.origin", 0xFFFF0000),
        r"memories.ddr.size: the memory ends past the 4 GiB",
    ),
    (
        "unknown cpu",
        _set("cores.cpu0.cpu", "cortex-m56"),
        r"cores.cpu0.cpu: 'cortex-m56' is not allowed; did you mean",
    ),
    (
        "layout memory unknown",
        _set("cores.cpu0.layout.code", "flash"),
        r"cores.cpu0.layout.code: no memory 'flash'",
    ),
    (
        "layout memory unreachable",
        lambda d: d["memories"]["sram"].update(access=["npu0"]),
        r"cores.cpu0.layout.data: core 'cpu0' cannot access memory 'sram'",
    ),
    (
        "data not writable",
        _set("cores.cpu0.layout.data", "itcm"),
        r"cores.cpu0.layout.data: data needs a writable memory",
    ),
    (
        "pool memory unknown",
        _set("pools.dtcm_ws.memory", "dtmc"),
        r"pools.dtcm_ws.memory: no memory 'dtmc'; did you mean 'dtcm'",
    ),
    (
        "pool kind unknown",
        _set("pools.dtcm_ws.kind", "scratch"),
        r"pools.dtcm_ws.kind: 'scratch' is not allowed",
    ),
    (
        "workspace in read-only memory",
        _set("pools.dtcm_ws.memory", "itcm"),
        r"pools.dtcm_ws.memory: a workspace pool needs a writable memory",
    ),
    (
        "constant in unreadable memory",
        lambda d: (d["memories"]["ddr"].update(attrs="w"), d["pools"].pop("ddr_ws")),
        r"pools.ddr_const.memory: a constant pool needs a readable memory",
    ),
    (
        "pools overflow the memory",
        _set("pools.dtcm_ws.size", "500K"),
        r"pools and stacks in memory 'dtcm' need 528384 bytes; it has 524288",
    ),
    (
        "two open-ended pools",
        lambda d: d["pools"].update(ddr_extra={"memory": "ddr", "kind": "workspace"}),
        r"pools.ddr_extra: only one pool in memory 'ddr' may leave out its size",
    ),
    (
        "open-ended pool beside the image",
        _delete("pools.sram_ws.size"),
        r"pools.sram_ws: give this pool a size: memory 'sram' also holds image sections",
    ),
    (
        "context core unknown",
        _set("contexts.main.core", "cpu9"),
        r"contexts.main.core: no core 'cpu9'",
    ),
    (
        "thread without stack",
        _delete("contexts.main.stack"),
        r"contexts.main: a thread context needs a stack",
    ),
    (
        "stack memory unreachable",
        lambda d: (d["memories"]["dtcm"].update(access=["npu0"]), d["pools"].pop("dtcm_ws")),
        r"contexts.main.stack.memory: core 'cpu0' cannot access memory 'dtcm'",
    ),
    (
        "stack too big",
        _set("contexts.main.stack.size", "300K"),
        r"pools and stacks in memory 'dtcm' need",
    ),
    (
        "preempts unknown",
        _set("contexts.main.preempts", ["idle"]),
        r"contexts.main.preempts\[0\]: no context 'idle'",
    ),
    (
        "overlapping memories",
        _set("memories.dtcm.origin", 0x01100000),
        r"cores.cpu0: core 'cpu0' sees memories 'sram' and 'dtcm' at overlapping addresses",
    ),
    (
        "views name cores",
        _set("memories.dtcm.views", {"cpu7": 0x30000000}),
        r"memories.dtcm.views.cpu7: views name cores",
    ),
    ("no contexts", _set("contexts", {}), r"contexts: a board needs at least one context"),
    (
        "run has only qemu",
        _set("run", {"qemu": {"machine": "x"}, "jtag": {}}),
        r"run.jtag: unknown key",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [(c, m) for _, c, m in RULES], ids=[name for name, _, _ in RULES]
)
def test_rule(tmp_path: Path, board_data: dict[str, Any], change: Change, message: str) -> None:
    change(board_data)
    assert re.search(message, _error(tmp_path, board_data))


def test_error_names_the_exact_line_and_column(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "board.yaml",
        "memplace: board/v1\nname: b\ncores:\n  cpu0:\n"
        "    cpu: cortex-m4\n    layout: {vectors: rom, code: rom, "
        "data: ram}\nmemories:\n  rom: {origin: 0, size: 64K, attrs: rx, "
        "access: [cpu0]}\n  ram: {origin: 0x20000000, size: 16K, "
        "attrs: rw, access: [cpu0]}\ncontexts:\n  main:\n"
        "    core: cpu0\n    stack: {memory: ram, size: 2K}\n"
        "    priority: high\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value) == (
        f"{path}:14:15: contexts.main.priority: expected a whole number, got 'high'"
    )


def test_views_give_a_core_its_own_address(tmp_path: Path, board_data: dict[str, Any]) -> None:
    board_data["memories"]["ddr"]["views"] = {"cpu0": 0x80000000}
    board = _load(tmp_path, board_data)
    assert board.memories["ddr"].address_for("cpu0") == 0x80000000
    assert board.memories["ddr"].origin == 0x60000000


def test_extends_merges_maps_by_key(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "pools:\n  dtcm_ws: {memory: dtcm, size: 128K, kind: workspace}\n",
    )
    board = Board.from_file(path)
    assert board.name == "mine"
    assert board.pools["dtcm_ws"].size == 128 * 1024
    assert set(board.pools) == {"dtcm_ws", "sram_ws", "ddr_ws", "itcm_const", "ddr_const"}


def test_extends_keeps_positions_of_both_files(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "pools:\n  dtcm_ws: {memory: dtcm, size: 600K, kind: workspace}\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value).startswith(f"{path}:5:12: pools.dtcm_ws:")


def test_extends_a_relative_file_and_refuses_circles(
    write_yaml: Callable[[str, str], Path],
) -> None:
    write_yaml("a.yaml", "memplace: board/v1\nextends: b.yaml\nname: a\n")
    path = write_yaml("b.yaml", "memplace: board/v1\nextends: a.yaml\nname: b\n")
    with pytest.raises(InputError, match="boards extend each other in a circle"):
        Board.from_file(path)


def test_extends_missing_base(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("a.yaml", "memplace: board/v1\nextends: nothere.yaml\nname: a\n")
    with pytest.raises(InputError, match=r"a.yaml:2:10: extends: no board 'nothere.yaml'"):
        Board.from_file(path)
