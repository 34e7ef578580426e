"""The bundled boards QEMU cannot run: each one's exerciser, with a buffer or constant in
every pool, cross-compiles to one Arm image per core, and each image puts every pool, stack
and vector table where the board says, as that core sees memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import ARMAttributesSection, Symbol, SymbolTableSection

from memplace import contract, resources, workflow
from memplace.board import Board, load_board
from memplace.build import build
from memplace.planner import plan
from memplace.project import Project
from memplace.project_files import BUILD_DIR
from memplace.verify import verify
from memplace.workload import Workload

pytestmark = pytest.mark.qemu

REAL_BOARDS = [
    "alif-e7",
    "imxrt1062",
    "imxrt1176",
    "nrf5340",
    "rp2040",
    "stm32f746",
    "stm32h743",
    "stm32h747",
]
# e_flags of an EABI image built for the hard-float calling convention (ARM ELF, 5.2).
EF_ARM_ABI_FLOAT_HARD = 0x400
M_PROFILE = ord("M")


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, touch_workload: Callable[[Board], Workload]
) -> Callable[[str], Path]:
    """The built exerciser of a board, generated and built once for all tests here."""
    folders: dict[str, Path] = {}

    def project(name: str) -> Path:
        if name not in folders:
            board = load_board(name)
            folder = tmp_path_factory.mktemp(name) / "touch"
            workflow.generate(workflow.ProjectRequest(board, touch_workload(board), folder))
            build(folder)
            folders[name] = folder
        return folders[name]

    return project


def _symbols(elf: ELFFile) -> dict[str, Symbol]:
    table = elf.get_section_by_name(".symtab")
    assert isinstance(table, SymbolTableSection)
    return {symbol.name: symbol for symbol in table.iter_symbols() if symbol.name}


def _attributes(elf: ELFFile) -> Iterator[tuple[str, object]]:
    section = elf.get_section_by_name(".ARM.attributes")
    assert isinstance(section, ARMAttributesSection)
    for subsection in section.iter_subsections():
        for group in subsection.iter_subsubsections():
            for attribute in group.iter_attributes():
                yield attribute.tag, attribute.value


def _view(board: Board, memory: str, core: str, address: int) -> int:
    """`address`, a system address in `memory`, as `core` sees it."""
    seen = board.memories[memory]
    return address - seen.origin + seen.address_for(core)


def test_the_real_boards_are_the_bundled_boards_qemu_cannot_run() -> None:
    names = [name for name in resources.bundled_boards() if load_board(name).qemu_machine is None]
    assert sorted(names) == REAL_BOARDS


@pytest.mark.parametrize("name", REAL_BOARDS)
def test_each_core_gets_one_arm_image_for_its_cpu(name: str, built: Callable[[str], Path]) -> None:
    board = load_board(name)
    folder = built(name)
    images = sorted(p.name for p in (folder / BUILD_DIR).glob("*.elf"))
    # One image per core, but one for all the cores that run one image (RP2040).
    assert images == sorted({f"{core.image_name}.elf" for core in board.cores.values()})
    assert sorted(Project.load(folder).images) == sorted(board.cores)
    for core in board.cores.values():
        with (folder / BUILD_DIR / f"{core.image_name}.elf").open("rb") as stream:
            elf = ELFFile(stream)
            assert elf["e_machine"] == "EM_ARM"
            hard = bool(elf["e_flags"] & EF_ARM_ABI_FLOAT_HARD)
            assert hard == (core.float_abi == "hard"), core.name
            assert dict(_attributes(elf))["TAG_CPU_ARCH_PROFILE"] == M_PROFILE


@pytest.mark.parametrize("name", REAL_BOARDS)
def test_every_pool_and_stack_is_where_the_board_puts_it_in_each_cores_view(
    name: str, built: Callable[[str], Path], touch_workload: Callable[[Board], Workload]
) -> None:
    board = load_board(name)
    folder = built(name)
    touched = {p.pool for p in plan(board, touch_workload(board)).placements}
    assert touched == set(board.pools)
    storage: dict[str, list[str]] = {pool: [] for pool in board.pools}
    for core in board.cores:
        image = board.cores[core].image_name
        with (folder / BUILD_DIR / f"{image}.elf").open("rb") as stream:
            symbols = _symbols(ELFFile(stream))
        for pool in board.pools.values():
            symbol = symbols.get(f"touch_pool_{pool.name}")
            if symbol is None:
                continue
            # A pool another core's image holds is the same address under the same name.
            assert symbol["st_value"] == _view(board, pool.memory, core, pool.address), pool
            if symbol["st_size"]:
                assert symbol["st_size"] <= pool.size
                storage[pool.name].append(image)
        for context in board.contexts.values():
            if context.core != core or context.stack is None:
                continue
            stack = symbols[f"memplace_stack_{context.name}"]
            address = _view(board, context.stack.memory, core, context.stack.address)
            assert (stack["st_value"], stack["st_size"]) == (address, context.stack.size)
    # Each pool has its storage in exactly one image.
    assert all(len(set(images)) == 1 for images in storage.values()), storage


@pytest.mark.parametrize("name", REAL_BOARDS)
def test_the_vector_table_starts_where_the_core_boots(
    name: str, built: Callable[[str], Path]
) -> None:
    board = load_board(name)
    folder = built(name)
    for core in board.cores.values():
        vectors = board.memories[core.layout.vectors]
        start = vectors.address_for(core.name)
        # A core whose reset code copies its vector table boots on a table of its own,
        # where the image is programmed, and moves VTOR to .vectors. A core that runs
        # another core's image starts from a table of its own in it.
        moved = core.layout.copy == "reset" and core.layout.vectors != core.layout.load
        table = contract.VECTORS if core.image is None else contract.vectors_section(core.name)
        with (folder / BUILD_DIR / f"{core.image_name}.elf").open("rb") as stream:
            elf = ELFFile(stream)
            section = elf.get_section_by_name(table)
            assert section is not None
            boot = elf.get_section_by_name(contract.BOOT_VECTORS) if moved else section
            assert boot is not None
            assert boot["sh_addr"] == core.boot
            assert start <= section["sh_addr"] < start + vectors.size
            assert section["sh_addr"] + section["sh_size"] <= start + vectors.size


@pytest.mark.parametrize("name", REAL_BOARDS)
def test_verify_without_a_run_finds_nothing_and_bounds_every_stack(
    name: str, built: Callable[[str], Path]
) -> None:
    board = load_board(name)
    report = verify(Project.load(built(name)))
    assert report.ok, report.table()
    stacks = {s.context: s.static_bound for s in report.stacks}
    assert sorted(stacks) == sorted(c.name for c in board.contexts.values() if c.stack)
    assert all(bound is not None and bound > 0 for bound in stacks.values()), stacks


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        # NXP's startup_MIMXRT1176_cm7.S and _cm4.S: lines 0..217 on each core.
        ("imxrt1176", {"cm7": 218, "cm4": 218}),
        # RP2040 datasheet 2.3.2: lines 0..25 on each core; core1's table is in core0's image.
        ("rp2040", {"core0": 26, "core1": 26}),
    ],
)
def test_each_core_has_a_vector_table_of_its_own_nvics_lines(
    name: str, lines: dict[str, int], built: Callable[[str], Path]
) -> None:
    board = load_board(name)
    folder = built(name)
    for core in board.cores.values():
        assert core.interrupts == lines[core.name]
        image = core.image or core.name
        section_name = (
            contract.VECTORS if core.image is None else contract.vectors_section(core.name)
        )
        with (folder / BUILD_DIR / f"{image}.elf").open("rb") as stream:
            section = ELFFile(stream).get_section_by_name(section_name)
            assert section is not None, (core.name, section_name)
            assert section["sh_size"] == 4 * (16 + lines[core.name])
            # The table starts on its VTOR boundary: 1024 bytes for 234 entries, 256 for 42.
            assert section["sh_addr"] % (1024 if lines[core.name] > 100 else 256) == 0


@pytest.mark.parametrize("name", ["stm32h743", "stm32h747"])
def test_the_vector_table_holds_every_device_line_with_its_isr_wired(
    name: str, built: Callable[[str], Path]
) -> None:
    """RM0433/RM0399: 150 lines on each core; the H743's Ethernet ISR on line 61."""
    board = load_board(name)
    folder = built(name)
    wired = {}
    for core in board.cores.values():
        assert core.interrupts == 150
        with (folder / BUILD_DIR / f"{core.name}.elf").open("rb") as stream:
            elf = ELFFile(stream)
            section = elf.get_section_by_name(contract.VECTORS)
            assert section is not None and section["sh_size"] == 4 * (16 + 150)
            table = section.data()
            symbols = _symbols(elf)
            for context in board.contexts.values():
                if context.core == core.name and context.irq is not None:
                    at = 4 * (16 + context.irq)
                    handler = int.from_bytes(table[at : at + 4], "little")
                    assert handler == symbols[context.entry]["st_value"] | 1
                    wired[context.entry] = context.irq
    assert wired == ({"ETH_IRQHandler": 61} if name == "stm32h743" else {})
