"""The bundled boards: each loads, names its sources, plans, and (under QEMU) boots."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from memplace import resources, workflow
from memplace.board import Board, load_board
from memplace.codegen import render
from memplace.planner import plan
from memplace.workload import Workload

QEMU_BOARDS = {
    "qemu-mps2-an385": "mps2-an385",
    "qemu-mps2-an386": "mps2-an386",
    "qemu-mps2-an500": "mps2-an500",
    "qemu-mps2-an505": "mps2-an505",
    "qemu-mps2-an521": "mps2-an521",
    "qemu-mps3-an524": "mps3-an524",
    "qemu-mps3-an547": "mps3-an547",
    "qemu-lm3s6965evb": "lm3s6965evb",
    "qemu-netduinoplus2": "netduinoplus2",
}
REAL_BOARDS = {
    "stm32h743": ["cm7"],
    "stm32h747": ["cm7", "cm4"],
    "stm32f746": ["cm7"],
    "imxrt1062": ["cm7"],
    "imxrt1176": ["cm7", "cm4"],
    "nrf5340": ["cpuapp", "cpunet"],
    "rp2040": ["core0", "core1"],
    "alif-e7": ["hp", "he"],
}
ALL_BOARDS = sorted([*QEMU_BOARDS, *REAL_BOARDS])
K, M = 1024, 1024 * 1024


def test_the_bundled_boards_are_the_seventeen_of_the_issue() -> None:
    assert sorted(resources.bundled_boards()) == ALL_BOARDS


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_each_board_loads_and_names_the_source_of_its_map(name: str) -> None:
    board = load_board(name)
    assert board.name == name
    assert board.summary
    header = resources.bundled_boards()[name].read_text().split("memplace: board/v1")[0]
    assert header.startswith("# ") and "Memory map:" in header, name
    assert board.qemu_machine == QEMU_BOARDS.get(name)
    if name in REAL_BOARDS:
        assert list(board.cores) == REAL_BOARDS[name]


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_every_core_starts_on_a_thread_inside_its_vectors_memory(name: str) -> None:
    board = load_board(name)
    for core in board.cores.values():
        # A core whose reset code copies its image boots where the image is programmed.
        boots_from = core.layout.load if core.layout.copy == "reset" else core.layout.vectors
        vectors = board.memories[boots_from]
        start = vectors.address_for(core.name)
        assert start <= core.boot < start + vectors.size
        assert any(c.core == core.name and c.kind == "thread" for c in board.contexts.values())


def _memory(board: Board, name: str) -> tuple[int, int]:
    return board.memories[name].origin, board.memories[name].size


def test_trustzone_machines_boot_from_the_secure_alias() -> None:
    an521 = load_board("qemu-mps2-an521")
    assert _memory(an521, "ssram0") == (0x10000000, 4 * M)
    assert _memory(an521, "ssram1") == (0x38000000, 2 * M)
    assert _memory(an521, "ssram2") == (0x38200000, 2 * M)
    assert _memory(an521, "sram") == (0x30000000, 128 * K)
    assert _memory(an521, "psram") == (0x80000000, 16 * M)
    for name in ("qemu-mps2-an505", "qemu-mps2-an521", "qemu-mps3-an524"):
        assert load_board(name).cores["cpu0"].boot == 0x10000000


@pytest.mark.parametrize("name", ["qemu-mps2-an521", "qemu-mps3-an524"])
def test_cpu0_releases_cpu1_through_initsvtor1_and_cpuwait(name: str) -> None:
    board = load_board(name)
    release = board.cores["cpu1"].release
    assert release is not None and release.by == "cpu0"
    steps = [(step.action, step.address, step.value) for step in release.steps]
    assert steps == [
        ("write", 0x50021114, board.cores["cpu1"].boot),
        ("clear", 0x50021118, 0x2),
    ]


def test_an524_qspi_is_read_only() -> None:
    an524 = load_board("qemu-mps3-an524")
    assert _memory(an524, "bram") == (0x10000000, 512 * K)
    assert _memory(an524, "qspi") == (0x38000000, 8 * M)
    assert an524.memories["qspi"].attrs == "rx"


def test_stm32h7_dma_engines_restrict_placement() -> None:
    h743 = load_board("stm32h743")
    for dma in ("dma1", "dma2", "bdma"):
        assert not h743.reaches(dma, "dtcm") and not h743.reaches(dma, "itcm")
    assert h743.reaches("mdma", "dtcm")
    assert [m for m in h743.memories if h743.reaches("bdma", m)] == ["sram4", "backup_sram"]
    h747 = load_board("stm32h747")
    assert not h747.reaches("main_m4", "dtcm") and not h747.reaches("main_m4", "itcm")
    assert h747.cores["cm4"].boot == 0x08100000


def test_imxrt1176_cores_see_their_tcms_at_their_own_addresses() -> None:
    board = load_board("imxrt1176")
    cm4 = {entry.memory.name: entry.address for entry in board.memory_map("cm4")}
    cm7 = {entry.memory.name: entry.address for entry in board.memory_map("cm7")}
    assert cm4["cm4_sys_tcm"] == 0x20000000 and cm4["cm4_code_tcm"] == 0x1FFE0000
    assert cm7["dtcm"] == 0x20000000 and cm7["cm4_sys_tcm"] == 0x20220000
    assert "dtcm" not in cm4


def test_alif_e7_cores_see_their_own_tcms_low_and_npus_use_global_addresses() -> None:
    board = load_board("alif-e7")
    for core, itcm, dtcm, global_dtcm in (
        ("hp", "hp_itcm", "hp_dtcm", 0x50800000),
        ("he", "he_itcm", "he_dtcm", 0x58800000),
    ):
        seen = {entry.memory.name: entry.address for entry in board.memory_map(core)}
        assert (seen[itcm], seen[dtcm]) == (0x0, 0x20000000)
        assert board.memories[dtcm].origin == global_dtcm
        assert board.reaches(f"npu_{core}", dtcm) and not board.reaches(f"npu_{core}", itcm)


def test_nrf5340_easydma_reaches_ram_only() -> None:
    board = load_board("nrf5340")
    assert [m for m in board.memories if board.reaches("app_easydma", m)] == ["app_sram"]
    assert board.cores["cpunet"].boot == 0x01000000
    assert board.cores["cpunet"].float_abi == "soft"


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_each_board_plans_and_renders_small_and_touch_workloads(
    name: str, touch_workload: Callable[[Board], Workload], small_workload_data: dict[str, Any]
) -> None:
    board = load_board(name)
    for workload in (Workload.from_data(small_workload_data), touch_workload(board)):
        files = render(board, plan(board, workload))
        for name, core in board.cores.items():
            assert f"memplace/{name}/startup.c" in files
            # One linker script per image: a core that runs another's image has none.
            assert (f"memplace/{name}/linker.ld" in files) == (core.image is None)


@pytest.mark.qemu
@pytest.mark.parametrize("name", sorted(QEMU_BOARDS))
def test_each_qemu_board_boots_and_every_pool_works(
    name: str, tmp_path: Path, touch_workload: Callable[[Board], Workload]
) -> None:
    board = load_board(name)
    result = workflow.check(
        workflow.ProjectRequest(board, touch_workload(board), tmp_path / "touch")
    )
    assert result.run is not None and result.run.passed, result.run
    assert result.report.ok, result.report.table()


def test_boards_lists_every_bundled_board(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "boards")
    assert code == 0
    for name in ALL_BOARDS:
        assert name in out
    code, out, _ = run_cli(capsys, "boards", "--json")
    rows: list[dict[str, Any]] = json.loads(out)
    assert [row["name"] for row in rows] == ALL_BOARDS
    an521 = next(row for row in rows if row["name"] == "qemu-mps2-an521")
    assert an521["cores"] == {"cpu0": "cortex-m33", "cpu1": "cortex-m33"}
    assert an521["qemu_machine"] == "mps2-an521"


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_boards_show_prints_each_core_map(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "boards", "show", name)
    assert code == 0
    for core in load_board(name).cores:
        assert f"\ncore {core} (" in out


def test_boards_show_json_and_a_board_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("memplace: board/v1\nextends: qemu-mps2-an521\nname: mine\n")
    code, out, _ = run_cli(capsys, "boards", "show", str(path), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["name"] == "mine"
    assert data["cores"]["cpu1"]["boot"] == 0x38000000
    assert data["cores"]["cpu1"]["released_by"] == "cpu0"
    assert data["devices"]["dma"]["reaches"] == ["ssram0", "sram", "ssram1", "ssram2", "psram"]


def test_boards_show_unknown_board_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "boards", "show", "stm32h474")
    assert code == 2 and out == ""
    assert err.strip() == (
        "memplace: error: BOARD: no bundled board 'stm32h474'; did you mean 'stm32h747'? "
        f"valid: {', '.join(ALL_BOARDS)}"
    )


@pytest.mark.parametrize("name", ALL_BOARDS)
def test_a_board_read_back_from_a_project_is_the_board_that_was_loaded(name: str) -> None:
    """A project's manifest keeps its board as `to_data` gives it; `verify`, `run` and
    `flash` read it back as the same frozen board (its stack hints are files of their own)."""
    board = load_board(name)
    back = Board.from_resolved(json.loads(json.dumps(board.to_data())), source=board.source)
    assert back == replace(board, stack_hints=())
