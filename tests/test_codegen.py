"""Rendering: the files of a project, their contents, and byte-stable output."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import jinja2
import pytest

from memplace import codegen
from memplace.board import Board
from memplace.codegen import fnv1a, render
from memplace.errors import InputError
from memplace.planner import plan
from memplace.workload import Workload


@pytest.fixture(scope="module")
def files(board: Board, demo_workload: Workload) -> dict[str, str]:
    return render(board, plan(board, demo_workload))


def test_the_project_layout(files: dict[str, str]) -> None:
    assert sorted(files) == [
        "CMakeLists.txt",
        "cmake/arm-none-eabi.cmake",
        "memplace.json",
        "memplace/cpu0/linker.ld",
        "memplace/cpu0/startup.c",
        "memplace/include/demo_memplace.h",
        "memplace/include/memplace_runtime.h",
        "memplace/src/demo_pools.c",
        "src/exerciser_cpu0.c",
    ]


def test_rendering_is_byte_stable(
    board: Board, demo_workload: Workload, files: dict[str, str]
) -> None:
    assert render(board, plan(board, demo_workload)) == files


def test_no_file_names_where_memplace_is_installed(files: dict[str, str]) -> None:
    for text in files.values():
        assert "/work/" not in text and "site-packages" not in text


def test_linker_script_memory_comes_from_the_board(files: dict[str, str]) -> None:
    script = files["memplace/cpu0/linker.ld"]
    assert re.search(r"itcm\s+\(rx\) : ORIGIN = 0x00000000, LENGTH = 0x00070000", script)
    assert re.search(r"pool_dtcm_ws\s+\(rw\) : ORIGIN = 0x2003c000", script)
    assert re.search(r"stack_main\s+\(rw\) : ORIGIN = 0x2007c000, LENGTH = 0x00004000", script)
    # One output section per pool; workspace pools take no bytes; DDR constants are copied.
    assert ".memplace.pool.dtcm_ws (NOLOAD) :" in script
    assert "} > pool_ddr_const AT > itcm" in script
    assert "LONG(LOADADDR(.memplace.pool.ddr_const))" in script
    assert "} > sram AT > itcm" in script  # .data copied from its load memory


def test_header_has_pool_sizes_offsets_and_structs(
    files: dict[str, str], board: Board, demo_workload: Workload
) -> None:
    header = files["memplace/include/demo_memplace.h"]
    result = plan(board, demo_workload)
    assert f"#define DEMO_DTCM_WS_SIZE {result.pool('dtcm_ws').used}u" in header
    assert "#define DEMO_DTCM_WS_ADDRESS 0x2003c000u" in header
    offset = result.placement("input").offset
    assert f"#define DEMO_INPUT_OFFSET {offset}u" in header
    assert "struct demo_workspace_pools {" in header
    assert "    const uint8_t *itcm_const;" in header
    assert "#define DEMO_IM2COL_SIZE 640u" in header
    assert "DEMO_IM2COL_OFFSET" not in header


def test_pool_storage_symbols_and_constant_bytes(
    files: dict[str, str], board: Board, demo_workload: Workload
) -> None:
    pools = files["memplace/src/demo_pools.c"]
    assert "uint8_t demo_pool_dtcm_ws[DEMO_DTCM_WS_SIZE] DEMO_DTCM_WS_ATTRIBUTES;" in pools
    header = files["memplace/include/demo_memplace.h"]
    assert 'section(".memplace.pool.dtcm_ws"), aligned(64), used' in header
    assert "const uint8_t demo_pool_itcm_const[DEMO_ITCM_CONST_SIZE]" in pools
    result = plan(board, demo_workload)
    conv1_w = result.placement("conv1_w")
    exerciser = files["src/exerciser_cpu0.c"]
    assert f'0x{fnv1a(conv1_w.contents or b""):08x}u, "conv1_w"' in exerciser


def test_startup_paints_the_stack_without_calling_c(files: dict[str, str]) -> None:
    startup = files["memplace/cpu0/startup.c"]
    reset = startup[startup.index("void Reset_Handler(void)\n{") :]
    reset = reset[: reset.index("\n}\n")]
    assert "__attribute__((naked" in startup
    assert "stmia r0!, {r2}" in reset
    assert "bl    memplace_start" in reset
    assert "memset(" not in startup
    assert "uint64_t memplace_stack_main[2048]" in startup


def test_manifest_holds_board_and_plan(files: dict[str, str]) -> None:
    manifest = json.loads(files["memplace.json"])
    assert manifest["memplace"] == "project/v1"
    assert manifest["plan"]["memplace"] == "plan/v1"
    assert manifest["board"]["pools"]["dtcm_ws"]["address"] == 0x2003C000
    assert manifest["images"] == {"cpu0": "build/cpu0.elf"}


def test_unknown_project_type(board: Board, demo_workload: Workload) -> None:
    with pytest.raises(InputError, match="no project type 'bare'"):
        render(board, plan(board, demo_workload), "bare")


def test_templates_refuse_missing_values(
    monkeypatch: pytest.MonkeyPatch, board: Board, demo_workload: Workload
) -> None:
    result = plan(board, demo_workload)
    original = codegen.project_context

    def without_board(*args: object) -> dict[str, object]:
        context = original(*args)  # type: ignore[arg-type]
        del context["board"]
        return context

    monkeypatch.setattr(codegen, "project_context", without_board)
    with pytest.raises(jinja2.UndefinedError, match="'board' is undefined"):
        render(board, result)


def test_an_unused_pool_gets_no_storage(board: Board, demo_workload: Workload) -> None:
    result = plan(board, demo_workload)
    emptied = replace(
        result,
        pools=tuple(replace(p, used=0) if p.name == "ddr_ws" else p for p in result.pools),
        placements=tuple(p for p in result.placements if p.pool != "ddr_ws"),
    )
    files = render(board, emptied)
    assert "demo_pool_ddr_ws[" not in files["memplace/src/demo_pools.c"]
    assert ".ddr_ws = 0," in files["memplace/src/demo_pools.c"]
    assert "pool_ddr_ws" not in files["memplace/cpu0/linker.ld"]
