"""Rendering: the files of a project, their contents, and byte-stable output."""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import replace
from pathlib import Path

import jinja2
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import as_contract_says
from memplace import resources
from memplace.board import POOL_ALIGN, Board, load_board
from memplace.cli import main
from memplace.codegen import RenderOptions, render
from memplace.codegen.context import ProjectContext
from memplace.contract import fnv1a, pool_section, stack_section
from memplace.errors import InputError, PlanningError
from memplace.planner import plan
from memplace.planner.arena import arenas as plan_arenas
from memplace.planner.arena import reservation
from memplace.planner.blocks import Block
from memplace.planner.model import Placement
from memplace.scopes import resolve
from memplace.workload import Workload

REPO = Path(__file__).resolve().parent.parent
ALIGNS = (1, 2, 4, 8, 16, 32, 64, 128)


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
        "memplace/image-map.json",
        "memplace/include/demo_memplace.h",
        "memplace/include/memplace_runtime.h",
        "memplace/src/demo_pools.c",
        "src/exerciser_cpu0.c",
        "user.cmake",
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
    assert f"{pool_section('dtcm_ws')} (NOLOAD) :" in script
    assert "} > pool_ddr_const AT > itcm" in script
    assert f"LONG(LOADADDR({pool_section('ddr_const')}))" in script
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
    assert f'section("{pool_section("dtcm_ws")}"), aligned(64), used' in header
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
    original = ProjectContext.template_vars

    def without_board(self: ProjectContext) -> dict[str, object]:
        names = original(self)
        del names["board"]
        return names

    monkeypatch.setattr(ProjectContext, "template_vars", without_board)
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
    # Its reservation stays a region of the linker script (every byte is in one), empty.
    script = files["memplace/cpu0/linker.ld"]
    assert "  pool_ddr_ws              (rwx) : ORIGIN = 0x60000000, LENGTH = 0x00c00000" in script
    assert pool_section("ddr_ws") not in script


GOLDEN = Path(__file__).resolve().parent / "golden" / "qemu-mps3-an547"


@pytest.mark.parametrize(
    "generated", ["memplace/cpu0/linker.ld", "memplace/include/demo_memplace.h"]
)
def test_golden_files_of_the_default_board(files: dict[str, str], generated: str) -> None:
    """Regenerate with MEMPLACE_UPDATE_GOLDEN=1 after a deliberate change, and review."""
    golden = GOLDEN / Path(generated).name
    if os.environ.get("MEMPLACE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(files[generated])
    assert files[generated] == as_contract_says(golden.read_text())


def test_a_pool_storage_error_is_an_input_error(board: Board, demo_workload: Workload) -> None:
    with pytest.raises(InputError, match="pool storage is generated or application"):
        render(board, plan(board, demo_workload), "exerciser", RenderOptions(pool_storage="heap"))


def test_no_file_names_the_output_or_sources_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "user sources"
    sources.mkdir()
    (sources / "app.c").write_text("int app_main(void) { return 0; }\n")
    out = tmp_path / "deep" / "project"
    code = main(
        [
            "generate",
            "qemu-mps3-an547",
            str(resources.demo_workload()),
            "--out",
            str(out),
            "--project-type",
            "app",
            "--sources",
            str(sources),
        ]
    )
    assert code == 0, capsys.readouterr()
    written = [path for path in out.rglob("*") if path.is_file()]
    assert len(written) >= 8
    for path in written:
        text = path.read_text()
        for folder in (tmp_path, out, sources, REPO):
            assert str(folder) not in text, (path, folder)
    assert (
        '"${CMAKE_CURRENT_SOURCE_DIR}/../../user sources"' in (out / "CMakeLists.txt").read_text()
    )


INTERLEAVED = {
    "memplace": "workload/v1",
    "name": "ar",
    "steps": 4,
    "buffers": [
        {"name": "d1", "size": 6000, "live": [0, 0], "dynamic": True},
        {"name": "s1", "size": 4096, "live": [0, 3]},
        {"name": "s2", "size": 2000, "live": [1, 3]},
        {"name": "d2", "size": 1000, "live": [2, 2], "dynamic": True},
    ],
}


def _overlaps(a: Placement, offset: int, size: int, first: int, last: int) -> bool:
    in_time = a.first <= last and first <= a.last
    return in_time and a.offset < offset + size and offset < a.offset + a.size


def test_an_arena_is_one_block_no_static_buffer_overlaps(board: Board) -> None:
    result = plan(board, Workload.from_data(INTERLEAVED))
    [arena] = plan_arenas(board, result, {})
    # d1 and d2 never live together; each may start 16 - 8 bytes past the one below it.
    assert (arena.pool, arena.core, arena.size, arena.first, arena.last) == (
        "dtcm_ws",
        "cpu0",
        6008,
        0,
        2,
    )
    assert arena.buffers == ("d1", "d2")
    assert {p.offset for p in result.placements if p.dynamic} == {arena.offset}
    for placement in result.placements:
        if not placement.dynamic and placement.pool == arena.pool:
            assert not _overlaps(placement, arena.offset, arena.size, arena.first, arena.last)
    assert result.pool("dtcm_ws").used >= arena.offset + arena.size
    assert "from core cpu0's arena in dtcm_ws, 6008 bytes" in result.placement("d1").reason


def test_the_arena_capacity_in_the_c_is_the_reservation(board: Board) -> None:
    result = plan(board, Workload.from_data(INTERLEAVED))
    [arena] = plan_arenas(board, result, {})
    files = render(board, result)
    pools = files["memplace/src/ar_pools.c"]
    assert f"&ar_pool_dtcm_ws[{arena.offset}], {arena.size}u, 0u, 0u," in pools
    assert arena.size == reservation([Block(6000, 0, 0, 16), Block(1000, 2, 2, 16)])
    exerciser = files["src/exerciser_cpu0.c"]
    assert f"arena->capacity != {arena.size}u" in exerciser
    assert 'ar_arena("global") != &ar_arena_dtcm_ws' in exerciser
    assert 'ar_arena("global.workspace") != &ar_arena_dtcm_ws' in exerciser
    # A dynamic buffer has no fixed address; a static one does.
    header = files["memplace/include/ar_memplace.h"]
    assert "#define AR_D1_SIZE 6000u" in header and "AR_D1_OFFSET" not in header
    assert "#define AR_S1_OFFSET" in header


def test_dynamic_buffers_of_one_arena_must_share_its_offset(board: Board) -> None:
    result = plan(board, Workload.from_data(INTERLEAVED))
    moved = replace(
        result,
        placements=tuple(
            replace(p, offset=p.offset + 16) if p.name == "d2" else p for p in result.placements
        ),
    )
    with pytest.raises(InputError, match=r"placements: dynamic buffers d1, d2 of core cpu0 share"):
        render(board, moved)


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ([], 0),
        ([Block(100, 0, 0, 4)], 100),
        ([Block(64, 0, 1, 16), Block(32, 1, 1, 16)], 96),
        # Sizes that are multiples of 8 under a 16-byte alignment: 8 bytes of padding each.
        ([Block(1000, 0, 1, 8), Block(3000, 1, 2, 16)], 1008 + 3008),
        # A 64-byte alignment among 1-byte ones: up to 63 bytes before every allocation.
        ([Block(10, 0, 0, 1), Block(64, 0, 0, 64)], 10 + 63 + 64 + 63),
    ],
)
def test_an_arena_reserves_the_worst_step_with_padding(blocks: list[Block], expected: int) -> None:
    assert reservation(blocks) == expected


def _arena_top(blocks: list[Block], orders: list[list[int]], base: int) -> int:
    """The highest byte the generated allocator hands out (memplace_arena_alloc and _free,
    as the exerciser calls them: every live block each step, freed in reverse)."""
    top = highest = 0
    for step, order in enumerate(orders):
        starts = []
        for i in order:
            if blocks[i].first <= step <= blocks[i].last:
                start = -(-(base + top) // blocks[i].align) * blocks[i].align - base
                top = start + blocks[i].size
                highest = max(highest, top)
                starts.append(start)
        for start in reversed(starts):
            top = start
    return highest


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 300), st.integers(0, 3), st.integers(0, 3), st.sampled_from(ALIGNS)
        ),
        min_size=1,
        max_size=6,
    ),
    st.randoms(use_true_random=False),
    st.integers(0, 1000),
)
def test_no_order_of_allocation_outgrows_the_reservation(
    specs: list[tuple[int, int, int, int]], rng: random.Random, pool_base: int
) -> None:
    blocks = [Block(size, min(a, b), max(a, b), align) for size, a, b, align in specs]
    # The arena starts at a planned offset aligned to its largest alignment, in a pool
    # aligned to POOL_ALIGN.
    base = pool_base * POOL_ALIGN + 3 * max(b.align for b in blocks)
    steps = max(b.last for b in blocks) + 1
    orders = [rng.sample(range(len(blocks)), len(blocks)) for _ in range(steps)]
    assert _arena_top(blocks, orders, base) <= reservation(blocks)


SHARED_DYNAMIC = {
    "memplace": "workload/v1",
    "name": "duo",
    "steps": 4,
    "buffers": [
        {"name": "a0", "size": 4096, "live": [0, 3], "users": ["main"]},
        {"name": "d0", "size": 2000, "live": [0, 1], "dynamic": True, "users": ["main"]},
        {"name": "d1", "size": 3000, "live": [2, 3], "dynamic": True, "users": ["main1"]},
        {"name": "e1", "size": 500, "live": [3, 3], "dynamic": True, "users": ["main1"]},
    ],
}


def test_each_core_gets_its_own_arena_in_a_shared_pool() -> None:
    board = load_board("qemu-mps2-an521")
    workload = Workload.from_data(SHARED_DYNAMIC)
    result = plan(board, workload)
    users = {c.buffer.name: c.users for c in resolve(board, workload)}
    found = plan_arenas(board, result, users)
    assert [(a.pool, a.core, a.buffers) for a in found] == [
        ("sram_ws", "cpu0", ("d0",)),
        ("sram_ws", "cpu1", ("d1", "e1")),
    ]
    # The cores walk their steps at their own pace: their arenas never share a byte.
    first, second = found
    assert first.offset + first.size <= second.offset or second.offset + second.size <= first.offset
    files = render(board, result, users=users)
    pools = files["memplace/src/duo_pools.c"]
    cpu0 = pools[pools.index("#ifdef MEMPLACE_CORE_cpu0\n/* The 2") :]
    assert f"&duo_pool_sram_ws[{first.offset}], {first.size}u," in cpu0.split("#endif")[0]
    cpu1 = pools[pools.index("#ifdef MEMPLACE_CORE_cpu1\n/* The") :]
    assert f"&duo_pool_sram_ws[{second.offset}], {second.size}u," in cpu1.split("#endif")[0]
    assert '"d1"' in files["src/exerciser_cpu1.c"] and '"d1"' not in files["src/exerciser_cpu0.c"]


def _pinned(name: str, size: int, first: int, last: int, dynamic: bool) -> dict[str, object]:
    live = [first, last]
    return {"name": name, "size": size, "live": live, "dynamic": dynamic, "scope": "global.dtcm_ws"}


@pytest.mark.parametrize(
    ("statics", "message"),
    [
        (
            [("s1", -5000, 1, 1)],
            "the arena of core cpu0 in pool dtcm_ws (10000 bytes for dynamic buffers d1, d2, "
            "steps 0..2) does not fit beside the pool's other buffers; dtcm_ws lacks 5000 bytes",
        ),
        (
            [("big", -12000, 0, 2), ("s1", 6000, 1, 1)],
            "with the arenas of the dynamic buffers reserved, s1 (6000 bytes) fits nowhere: "
            "dtcm_ws lacks 4000 bytes",
        ),
    ],
)
def test_an_arena_that_does_not_fit_beside_static_buffers_is_a_planning_error(
    board: Board, statics: list[tuple[str, int, int, int]], message: str
) -> None:
    """Each buffer alone fits at every step; the arena, reserved over steps 0..2, does not."""
    capacity = board.pools["dtcm_ws"].size
    buffers = [_pinned("d1", 10000, 0, 0, True), _pinned("d2", 10000, 2, 2, True)]
    for name, size, first, last in statics:
        buffers.append(_pinned(name, size if size > 0 else capacity + size, first, last, False))
    workload = Workload.from_data(
        {"memplace": "workload/v1", "name": "tight", "steps": 3, "buffers": buffers}
    )
    with pytest.raises(PlanningError) as caught:
        plan(board, workload)
    assert str(caught.value) == message
    assert caught.value.exit_code == 1


ISR_BOARD = """memplace: board/v1
extends: {base}
name: with-isrs
contexts:
  tick: {{core: {core}, kind: isr, entry: SysTick_Handler, preempts: [main], priority: {tick}}}
  switch: {{core: {core}, kind: isr, entry: PendSV_Handler, preempts: [main], priority: 1}}
"""


def _isr_board(tmp_path: Path, base: str, core: str, tick: int) -> Board:
    path = tmp_path / f"{base}-{tick}.yaml"
    path.write_text(ISR_BOARD.format(base=base, core=core, tick=tick))
    return load_board(path)


def test_isr_priorities_are_word_writes_into_the_implemented_bits(
    tmp_path: Path, demo_workload: Workload
) -> None:
    board = _isr_board(tmp_path, "qemu-mps3-an547", "cpu0", 7)
    exerciser = render(board, plan(board, demo_workload))["src/exerciser_cpu0.c"]
    # SHPR3: SysTick in bits 31:24, PendSV in bits 23:16; 3 bits on Armv8.1-M, at the top.
    assert (
        "*(volatile uint32_t *)0xe000ed20u =\n"
        "        (*(volatile uint32_t *)0xe000ed20u & ~0xff000000u) | 0xe0000000u;"
    ) in exerciser
    assert "(*(volatile uint32_t *)0xe000ed20u & ~0x00ff0000u) | 0x00200000u;" in exerciser
    assert "uint8_t *)0xe000ed2" not in exerciser
    # Armv6-M implements 2 bits and allows word accesses only.
    small = _isr_board(tmp_path, "rp2040", "core0", 3)
    workload = Workload.from_data(INTERLEAVED)
    exerciser = render(small, plan(small, workload))["src/exerciser_core0.c"]
    assert "(*(volatile uint32_t *)0xe000ed20u & ~0xff000000u) | 0xc0000000u;" in exerciser
    assert "(*(volatile uint32_t *)0xe000ed20u & ~0x00ff0000u) | 0x00400000u;" in exerciser


@pytest.mark.parametrize(
    ("base", "core", "tick", "message"),
    [
        (
            "rp2040",
            "core0",
            4,
            "contexts.tick.priority: the exerciser sets ISR priorities in the 2 priority bits "
            "that every armv6-m core implements, 0..3; got 4 on cortex-m0plus",
        ),
        (
            "qemu-mps3-an547",
            "cpu0",
            8,
            "contexts.tick.priority: the exerciser sets ISR priorities in the 3 priority bits "
            "that every armv8.1-m.main core implements, 0..7; got 8 on cortex-m55",
        ),
    ],
)
def test_an_isr_priority_beyond_the_implemented_bits_is_refused(
    tmp_path: Path, base: str, core: str, tick: int, message: str
) -> None:
    board = _isr_board(tmp_path, base, core, tick)
    result = plan(board, Workload.from_data(INTERLEAVED))
    with pytest.raises(InputError) as caught:
        render(board, result)
    # Found where a project is rendered, and shown where the board file says it.
    where = re.escape(str(tmp_path / f"{base}-{tick}.yaml"))
    assert re.fullmatch(rf"{where}:5:\d+: {re.escape(message)}", str(caught.value))
    # An application sets its own priorities: only the exerciser needs them in range.
    sources = RenderOptions(project_type="app", sources="../app")
    assert "memplace/src/ar_pools.c" in render(board, result, "app", sources)


THREADS_WORKLOAD = {
    "memplace": "workload/v1",
    "name": "thr",
    "steps": 3,
    "buffers": [
        {"name": "a", "size": 256, "live": [0, 1], "scope": "main.thread0.stack"},
        {"name": "b", "size": 128, "live": [1, 2], "scope": "main.thread0.stack"},
        {"name": "c", "size": 64, "live": 2, "scope": "main.thread1.stack"},
    ],
}


@pytest.fixture(scope="module")
def thread_files() -> dict[str, str]:
    path = resources.bundled_boards()["qemu-mps3-an547"]
    data = yaml.safe_load(path.read_text())
    data["contexts"]["main"]["threads"] = 2
    board = Board.from_data(data)
    return render(board, plan(board, Workload.from_data(THREADS_WORKLOAD)))


def test_each_worker_thread_stack_has_a_region_section_and_symbols(
    thread_files: dict[str, str],
) -> None:
    linker = thread_files["memplace/cpu0/linker.ld"]
    assert re.search(
        r"stack_main_thread0 +\(rw\) : ORIGIN = 0x20078000, LENGTH = 0x00004000", linker
    )
    assert re.search(
        r"stack_main_thread1 +\(rw\) : ORIGIN = 0x2007c000, LENGTH = 0x00004000", linker
    )
    for name in ("main_thread0", "main_thread1"):
        assert f"{stack_section(name)} (NOLOAD) :" in linker
        assert f"__memplace_stack_{name}_start = .;" in linker
        assert f"__memplace_stack_{name}_end = .;" in linker
    startup = thread_files["memplace/cpu0/startup.c"]
    reset = startup[startup.index("void Reset_Handler(void)\n{") :]
    reset = reset[: reset.index("\n}\n")]
    assert "uint64_t memplace_stack_main_thread1[2048]" in startup
    assert f'__attribute__((section("{stack_section("main_thread1")}"), used));' in startup
    assert "ldr   r0, =__memplace_stack_main_thread1_start" in reset  # painted at reset
    assert 'memplace_write("memplace: stack main.thread1 used ");' in startup
    runtime = thread_files["memplace/include/memplace_runtime.h"]
    assert "extern uint32_t __memplace_stack_main_thread0_end[];" in runtime


def test_the_header_gives_each_thread_its_stack_and_its_buffers_offsets(
    thread_files: dict[str, str],
) -> None:
    header = thread_files["memplace/include/thr_memplace.h"]
    for line in (
        "#define THR_STACK_MAIN_BUDGET 16384u",
        "#define THR_STACK_MAIN_THREAD0_BUDGET 16384u",
        "#define THR_STACK_MAIN_THREAD0 (memplace_stack_main_thread0)",
        "#define THR_STACK_MAIN_THREAD0_ADDRESS 0x20078000u",
        "#define THR_STACK_MAIN_THREAD0_PLANNED 384u",
        "extern uint64_t memplace_stack_main_thread0[THR_STACK_MAIN_THREAD0_BUDGET / 8u];",
        "void memplace_thread_main_thread0(void *argument);",
        "#define THR_A_STACK_OFFSET 0u",
        "#define THR_B_STACK_OFFSET 256u",
        "#define THR_STACK_MAIN_THREAD1_PLANNED 64u",
        "#define THR_C_STACK_OFFSET 0u",
    ):
        assert line in header
    assert "THR_STACK_MAIN_ADDRESS" not in header  # the context's own stack: as before


def test_the_exerciser_runs_each_thread_on_its_own_stack(thread_files: dict[str, str]) -> None:
    exerciser = thread_files["src/exerciser_cpu0.c"]
    assert "void memplace_run_on_stack(" in exerciser
    assert "msr   psp, r2" in exerciser
    assert (
        "memplace_run_on_stack(memplace_thread_main_thread1, &failures, "
        "__memplace_stack_main_thread1_end);"
    ) in exerciser
    thread0 = exerciser[exerciser.index("void memplace_thread_main_thread0(void *argument)") :]
    thread0 = thread0[: thread0.index("\n}\n")]
    assert "volatile uint8_t stack_area[384u] __attribute__((aligned(16)));" in thread0
    assert '{0, 256u, 128u, 1u, 2u, "b"},' in exerciser
    hints = thread_files["memplace/stack_hints/exerciser.yaml"]
    assert "{caller: memplace_run_on_stack, targets: []}" in hints


def test_a_project_without_threads_has_no_thread_code(files: dict[str, str]) -> None:
    assert "memplace_run_on_stack" not in files["src/exerciser_cpu0.c"]
    assert not any("stack_hints" in path for path in files)


def test_a_thread_raises_only_the_isrs_that_preempt_its_context(tmp_path: Path) -> None:
    """tick preempts main, so it is taken on main's threads' stacks; nest preempts only
    tick, so it runs on the main stack inside tick and is never raised from a thread."""
    path = tmp_path / "nested.yaml"
    path.write_text(
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: nested\ncontexts:\n"
        "  main: {threads: 2}\n"
        "  tick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 2}\n"
        "  nest: {core: cpu0, kind: isr, entry: PendSV_Handler, preempts: [tick], priority: 1}\n"
    )
    board = load_board(path)
    exerciser = render(board, plan(board, Workload.from_data(THREADS_WORKLOAD)))[
        "src/exerciser_cpu0.c"
    ]
    # SysTick pends through ICSR bit 26, PendSV through bit 28: only SysTick is raised.
    raises = "main_thread0_raises[] = {\n    {0xe000ed04u, 0x04000000u},\n};"
    assert raises in exerciser and "0x10000000u}" not in exerciser
    call = "stack_area, failed,\n" + " " * 39 + "main_thread0_raises, 1u);"
    assert call in exerciser
    header = (
        "/* Worker thread 0 of main, on stack main.thread0; preempted by ISR\n * contexts tick. */"
    )
    assert header in exerciser


def _released_cores(board: Board, releasers: list[str]) -> Board:
    """`board` with one more core per entry of `releasers`, each released by that core."""
    template = board.cores["cpu1"]
    assert template.release is not None
    cores = dict(board.cores)
    names = [f"extra{index}" for index in range(len(releasers))]
    for name, by in zip(names, releasers, strict=True):
        cores[name] = replace(template, name=name, release=replace(template.release, by=by))
    memories = {
        key: replace(memory, access=(*memory.access, *names)) if "cpu1" in memory.access else memory
        for key, memory in board.memories.items()
    }
    return replace(board, cores=cores, memories=memories)


def test_the_mailbox_has_room_for_seven_released_cores() -> None:
    from memplace.board.checks import check_generated_startup
    from memplace.imagemap import mailbox

    board = load_board("qemu-mps2-an521")
    assert mailbox(_released_cores(board, ["cpu0"] * 6), {}).slots == 8
    with pytest.raises(InputError, match=r"\.yaml:\d+:\d+: cores: memplace releases at most 7"):
        check_generated_startup(_released_cores(board, ["cpu0"] * 7))


def test_released_cores_are_released_by_one_core() -> None:
    from memplace.board.checks import check_generated_startup

    board = _released_cores(load_board("qemu-mps2-an521"), ["cpu1"])
    with pytest.raises(InputError, match="cores are released by cpu0, cpu1; memplace's startup"):
        check_generated_startup(board)


def test_the_mailbox_needs_a_shared_memory_with_room() -> None:
    from memplace.imagemap import mailbox

    board = load_board("qemu-mps2-an521")
    full = {name: memory.origin for name, memory in board.memories.items()}
    with pytest.raises(
        InputError, match=r"qemu-mps2-an521\.yaml:\d+:\d+: cores: no writable memory that cores"
    ):
        mailbox(board, full)
