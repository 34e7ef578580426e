"""Placement checks on images built from data: two cores sharing a memory, the areas a
plan reserves, the reset handler's copy table, and every finding at once."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

from memplace import contract
from memplace.board import Board
from memplace.contract import pool_section, stack_section
from memplace.planner.model import Plan, PoolUsage, StackUsage
from memplace.project import Project
from memplace.verify.elf import check_images
from memplace.verify.image import Image, Section, Symbol


def _memory(origin: int, access: list[str], **extra: Any) -> dict[str, Any]:
    fixed = {"origin": origin, "size": 0x10000, "attrs": "rwx", "kind": "sram", "latency": 1}
    return {**fixed, "access": access, **extra}


def _core(cpu: str, flash: str) -> dict[str, Any]:
    layout = {"vectors": flash, "code": flash, "data": "shared", "load": flash}
    return {"cpu": cpu, "float_abi": "soft", "layout": layout}


def _main(core: str) -> dict[str, Any]:
    return {"core": core, "kind": "thread", "entry": "main", "stack": None}


# Two cores; `shared` is seen by cpu1 at another address (a view).
BOARD = Board.from_resolved(
    {
        "name": "two",
        "cores": {"cpu0": _core("cortex-m7", "flash0"), "cpu1": _core("cortex-m4", "flash1")},
        "devices": {},
        "memories": {
            "flash0": _memory(0x0, ["cpu0"]),
            "flash1": _memory(0x10000, ["cpu1"]),
            "shared": _memory(0x20000000, ["cpu0", "cpu1"], views={"cpu1": 0x30000000}),
        },
        "pools": {},
        "contexts": {"main0": _main("cpu0"), "main1": _main("cpu1")},
    }
)
PLAN = Plan(
    board="two",
    workload="w",
    algorithm="greedy-size",
    steps=("0",),
    pools=(PoolUsage("ws", "workspace", "shared", 0x20008000, 0x1000, 0x100, 0x100, True),),
    placements=(),
    stacks=(
        StackUsage("main0", "shared", 0x2000F000, 0x800, 0),
        StackUsage("main1", "shared", 0x2000F800, 0x800, 0),
    ),
)


def project() -> Project:
    return Project(
        folder=Path("/p"),
        project_type="exerciser",
        board=BOARD,
        plan=PLAN,
        images={"cpu0": Path("/p/build/cpu0.elf"), "cpu1": Path("/p/build/cpu1.elf")},
        checksums={},
    )


def image(core: str, sections: list[Section], symbols: list[Symbol], **extra: Any) -> Image:
    return Image(Path(f"/p/build/{core}.elf"), tuple(sections), tuple(symbols), **extra)


def stack(context: str, address: int) -> tuple[Section, Symbol]:
    name = stack_section(context)
    return (
        Section(name, address, 0x800, nobits=True),
        Symbol(f"memplace_stack_{context}", address, 0x800, "object", section=name),
    )


def good_images() -> dict[str, Image]:
    stack0, symbol0 = stack("main0", 0x2000F000)
    stack1, symbol1 = stack("main1", 0x3000F800)
    pool = Section(pool_section("ws"), 0x20008000, 0x100, nobits=True)
    return {
        "cpu0": image(
            "cpu0",
            [
                Section(".text", 0x0, 0x400, executable=True),
                Section(".data", 0x20000000, 0x40, load_address=0x400, writable=True),
                pool,
                stack0,
            ],
            [
                Symbol("w_pool_ws", 0x20008000, 0x100, "object", section=pool_section("ws")),
                symbol0,
            ],
        ),
        "cpu1": image(
            "cpu1",
            [Section(".text", 0x10000, 0x400, executable=True), stack1],
            # The pool's storage is cpu0's; cpu1's linker script only names its address.
            [Symbol("w_pool_ws", 0x30008000, 0, "notype"), symbol1],
        ),
    }


def findings(images: dict[str, Image]) -> list[tuple[str, str, str]]:
    return [(f.check, f.subject, f.message) for f in check_images(project(), images)]


def test_two_images_that_agree_hold() -> None:
    assert findings(good_images()) == []


def test_a_private_section_on_top_of_another_images_section_is_a_clash() -> None:
    images = good_images()
    cpu1 = images["cpu1"]
    images["cpu1"] = image(
        "cpu1",
        [*cpu1.sections, Section(".bss", 0x30000020, 0x40, nobits=True, writable=True)],
        list(cpu1.symbols),
    )
    found = findings(images)
    assert [(check, subject) for check, subject, _ in found] == [
        ("shared", "shared: .data of cpu0/.bss of cpu1")
    ]
    assert "in shared memory shared" in found[0][2]


def test_a_shared_pool_at_two_addresses_is_caught_in_both_ways() -> None:
    images = good_images()
    cpu1 = images["cpu1"]
    images["cpu1"] = image(
        "cpu1",
        list(cpu1.sections),
        [Symbol("w_pool_ws", 0x30008040, 0, "notype"), cpu1.symbols[1]],
    )
    found = findings(images)
    assert ("placement", "ws", "w_pool_ws is at 0x30008040, the plan says 0x30008000") in found
    assert any(
        check == "shared" and subject == "ws" and "0x20008000 in cpu0, 0x20008040 in cpu1" in text
        for check, subject, text in found
    )


def test_an_image_growing_into_a_planned_area_overflows() -> None:
    images = good_images()
    cpu0 = images["cpu0"]
    sections = [s for s in cpu0.sections if s.name != ".data"]
    grown = Section(".data", 0x20000000, 0x8100, load_address=0x400, writable=True)
    images["cpu0"] = image("cpu0", [*sections, grown], list(cpu0.symbols))
    found = findings(images)
    assert any(
        check == "memory" and subject == ".data" and "runs into the area of pool ws" in text
        for check, subject, text in found
    )
    assert any(check == "overlap" for check, _, _ in found)


def test_the_copy_table_must_copy_each_load_copy_whole() -> None:
    images = good_images()
    cpu0 = images["cpu0"]
    table = struct.pack("<3I", 0x404, 0x20000000, 0x40)  # from the wrong place
    sections = [*cpu0.sections, Section(contract.COPY_TABLE, 0x500, 12)]
    symbols = [
        *cpu0.symbols,
        Symbol(contract.COPY_TABLE_START, 0x500, 0, "notype", section=contract.COPY_TABLE),
        Symbol(contract.COPY_TABLE_END, 0x50C, 0, "notype", section=contract.COPY_TABLE),
    ]
    images["cpu0"] = image("cpu0", sections, symbols, contents={contract.COPY_TABLE: table})
    assert findings(images) == [
        (
            "load-copy",
            ".data",
            "the reset handler copies 64 bytes from 0x00000404 to .data, but its load copy "
            "is 64 bytes at 0x00000400",
        )
    ]
    empty = {contract.COPY_TABLE: b""}
    images["cpu0"] = image(
        "cpu0",
        [*cpu0.sections, Section(contract.COPY_TABLE, 0x500, 0)],
        [*symbols[:-1], Symbol(contract.COPY_TABLE_END, 0x500, 0, "notype")],
        contents=empty,
    )
    assert [(c, s) for c, s, _ in findings(images)] == [("load-copy", ".data")]


def test_every_finding_is_reported_not_the_first() -> None:
    images = good_images()
    images["cpu0"] = image(
        "cpu0",
        [
            Section(".text", 0x0, 0x400, executable=True),
            Section(".data", 0x20000000, 0x40, load_address=0x30000, writable=True),
            Section(pool_section("ws"), 0x20008004, 0x100),  # moved and given bytes
            Section(stack_section("main0"), 0x2000F000, 0x800),
            Section(".rogue", 0x90000000, 0x10),
        ],
        [
            Symbol("w_pool_ws", 0x20008004, 0x80, "object", section=pool_section("ws")),
            Symbol("memplace_stack_main0", 0x2000F000, 0x800, "object", section=".bss"),
        ],
    )
    found = {(check, subject) for check, subject, _ in findings(images)}
    assert found >= {
        ("placement", "ws"),  # address, size, bytes in the image
        ("alignment", "ws"),
        ("placement", "main0.stack"),  # in the wrong section, taking bytes
        ("load-copy", ".data"),  # loaded outside flash0
        ("load-copy", "ws"),
        ("memory", ".rogue"),
    }


def test_a_worker_thread_stack_is_checked_like_a_context_stack() -> None:
    """main0 starts a worker thread; its stack is memplace_stack_main0_thread0 in section
    .memplace.stack.main0_thread0, at the address the plan gives main0.thread0."""
    thread = StackUsage("main0.thread0", "shared", 0x2000E800, 0x800, 0x100)
    threaded = replace(project(), plan=replace(PLAN, stacks=(*PLAN.stacks, thread)))

    def found(address: int, section: str = stack_section("main0_thread0")) -> list[Any]:
        images = good_images()
        cpu0 = images["cpu0"]
        symbol = Symbol("memplace_stack_main0_thread0", address, 0x800, "object", section=section)
        stack = Section(section, address, 0x800, nobits=True)
        images["cpu0"] = image("cpu0", [*cpu0.sections, stack], [*cpu0.symbols, symbol])
        return [(f.check, f.subject, f.message) for f in check_images(threaded, images)]

    assert found(0x2000E800) == []
    assert found(0x2000E000) == [
        (
            "placement",
            "main0.thread0.stack",
            "memplace_stack_main0_thread0 is 2048 bytes at 0x2000e000, the plan says 2048 "
            "bytes at 0x2000e800",
        )
    ]
    assert (
        "placement",
        "main0.thread0.stack",
        f"memplace_stack_main0_thread0 is in section .bss, not {stack_section('main0_thread0')}",
    ) in found(0x2000E800, ".bss")
    # The image the thread's context runs on must have it; the other core's need not.
    assert (
        "placement",
        "main0.thread0.stack",
        "memplace_stack_main0_thread0 is missing from build/cpu0.elf",
    ) in [(f.check, f.subject, f.message) for f in check_images(threaded, good_images())]
