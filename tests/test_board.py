"""The board model: the bundled default board, computed addresses, and every rule."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace.board import (
    Board,
    FlashRun,
    Release,
    ReleaseStep,
    board_path,
    load_board,
    memory_map_data,
    memory_map_text,
)
from memplace.cli import main
from memplace.errors import InputError


def test_default_board_matches_the_qemu_memory_map(board: Board) -> None:
    assert board.name == "qemu-mps3-an547"
    assert board.qemu_machine == "mps3-an547"
    assert board.run.qemu is not None and board.run.qemu.machine == "mps3-an547"
    memories = {m.name: (m.origin, m.size) for m in board.memories.values()}
    assert memories == {
        "itcm": (0x0, 512 * 1024),
        "sram": (0x01000000, 2 * 1024 * 1024),
        "dtcm": (0x20000000, 512 * 1024),
        "ddr": (0x60000000, 16 * 1024 * 1024),
    }
    assert board.cores["cpu0"].cpu == "cortex-m55"
    assert board.cores["cpu0"].layout.memories() == ("itcm", "itcm", "sram", "itcm")
    assert board.cores["cpu0"].boot == 0x0 and board.cores["cpu0"].release is None


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
    assert "\n" not in text
    assert caught.value.exit_code == 2
    return text


Change = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[part]
        data[last] = copy.deepcopy(value)

    return change


def _delete(path: str) -> Change:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            data = data[part]
        del data[last]

    return change


def _steps(*steps: dict[str, int]) -> Change:
    return _set("cores.cpu1.release.steps", list(steps))


# Each rule of the loader, broken once on the default board: (test id, change, message).
RULES: list[tuple[str, Change, str]] = [
    # The version gate and the top level.
    ("version missing", _delete("memplace"), r"missing 'memplace: board/v1'"),
    (
        "version wrong",
        _set("memplace", "board/v9"),
        r"memplace: this memplace reads board/v1, not 'board/v9'",
    ),
    ("unknown top key", _set("memries", {}), r"memries: unknown key; did you mean 'memories'"),
    ("required key missing", _delete("contexts"), r"missing required key 'contexts'"),
    (
        "board name with spaces",
        _set("name", "my board"),
        r"name: board names are letters, digits, '\.', '_' and '-', got 'my board'",
    ),
    # Memories.
    ("unknown memory key", _set("memories.itcm.orign", 0), r"memories.itcm.orign: unknown key"),
    (
        "memory name not C",
        lambda d: d["memories"].update({"my-ram": dict(d["memories"]["sram"], origin=0x70000000)}),
        r"memories.my-ram: 'my-ram' is not a C identifier",
    ),
    ("no memories", _set("memories", {}), r"memories: a board needs at least one memory"),
    ("bad attrs", _set("memories.itcm.attrs", "rz"), r"memories.itcm.attrs: attrs are letters"),
    ("attrs twice", _set("memories.itcm.attrs", "rr"), r"attrs are letters from 'rwx', got 'rr'"),
    ("bad size", _set("memories.itcm.size", "512Q"), r"memories.itcm.size: expected a size"),
    ("negative origin", _set("memories.itcm.origin", -4), r"memories.itcm.origin: must be at"),
    (
        "memory kind unknown",
        _set("memories.itcm.kind", "flsh"),
        r"memories.itcm.kind: 'flsh' is not allowed; did you mean 'flash'",
    ),
    (
        "unknown access",
        _set("memories.itcm.access", ["cpu1"]),
        r"memories.itcm.access\[0\]: no core or device 'cpu1'; did you mean 'cpu0'",
    ),
    (
        "access names nobody",
        _set("memories.itcm.access", []),
        r"memories.itcm.access: no core or device reaches this memory; list them: cpu0, npu0",
    ),
    (
        "memory past 4 GiB",
        _set("memories.ddr.origin", 0xFFFF0000),
        r"memories.ddr.size: the memory ends past the 4 GiB",
    ),
    (
        "views name cores",
        _set("memories.dtcm.views", {"cpu7": 0x30000000}),
        r"memories.dtcm.views.cpu7: views name cores; did you mean 'cpu0'\? valid: cpu0",
    ),
    (
        "view past 4 GiB",
        _set("memories.ddr.views", {"cpu0": 0xFF800000}),
        r"memories.ddr.views.cpu0: core 'cpu0' would see this memory end past 4 GiB",
    ),
    (
        "latency negative",
        _set("memories.ddr.latency", -1),
        r"memories.ddr.latency: must be at least 0",
    ),
    (
        "overlapping memories",
        _set("memories.dtcm.origin", 0x01100000),
        r"memories.dtcm.origin: core 'cpu0' sees memories 'sram' and 'dtcm' at overlapping "
        r"addresses \(\[0x01000000, 0x01200000\) and \[0x01100000, 0x01180000\)\); move one",
    ),
    # Cores and their image layout.
    ("no cores", _set("cores", {}), r"cores: a board needs at least one core"),
    ("unknown core key", _set("cores.cpu0.clock", 400), r"cores.cpu0.clock: unknown key"),
    (
        "unknown cpu",
        _set("cores.cpu0.cpu", "cortex-m56"),
        r"cores.cpu0.cpu: 'cortex-m56' is not allowed; did you mean",
    ),
    (
        "float abi unknown",
        _set("cores.cpu0.float_abi", "hardfp"),
        r"cores.cpu0.float_abi: 'hardfp' is not allowed; did you mean 'hard'",
    ),
    (
        "hard float without an FPU",
        _set("cores.cpu0.cpu", "cortex-m3"),
        r"cores.cpu0.float_abi: cortex-m3 has no floating-point unit; use float_abi: soft",
    ),
    (
        "core and device share a name",
        _set("devices", {"cpu0": {"kind": "dma"}}),
        r"cores.cpu0: 'cpu0' names both a core and a device; rename one",
    ),
    (
        "layout key unknown",
        _set("cores.cpu0.layout.stack", "dtcm"),
        r"cores.cpu0.layout.stack: unknown key",
    ),
    (
        "layout code missing",
        _delete("cores.cpu0.layout.code"),
        r"cores.cpu0.layout: missing required key 'code'",
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
        r"cores.cpu0.layout.data: data needs a memory with 'rw'; 'itcm' is 'rx'",
    ),
    (
        "code not executable",
        _set("cores.cpu0.layout.code", "dtcm"),
        r"cores.cpu0.layout.code: code needs a memory with 'rx'; 'dtcm' is 'rw'",
    ),
    (
        "vectors outside the load memory",
        _set("cores.cpu0.layout.vectors", "sram"),
        r"cores.cpu0.layout.vectors: the vector table must be in the load memory 'itcm', where "
        r"the image is when the core starts; set vectors: itcm",
    ),
    (
        "boot outside the vectors memory",
        _set("cores.cpu0.boot", 0x01000000),
        r"cores.cpu0.boot: the boot address must lie in the vectors memory 'itcm' "
        r"\[0x00000000, 0x00080000\)",
    ),
    (
        "boot not aligned",
        _set("cores.cpu0.boot", 0x40),
        r"cores.cpu0.boot: a vector table starts on a 128-byte boundary",
    ),
    (
        "released by no other core",
        _set("cores.cpu0.release", {"by": "cpu0"}),
        r"cores.cpu0.release.by: no other core 'cpu0'; there are none",
    ),
    (
        "release without by",
        _set("cores.cpu0.release", {"steps": []}),
        r"cores.cpu0.release: missing required key 'by'",
    ),
    # Devices.
    ("device kind missing", _set("devices.npu0", {}), r"devices.npu0: missing required key"),
    (
        "device kind unknown",
        _set("devices.npu0.kind", "gpu"),
        r"devices.npu0.kind: 'gpu' is not allowed",
    ),
    ("device key unknown", _set("devices.npu0.macs", 256), r"devices.npu0.macs: unknown key"),
    # Pools.
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
    ("pool kind missing", _delete("pools.dtcm_ws.kind"), r"pools.dtcm_ws: missing required key"),
    (
        "pool name not C",
        lambda d: d["pools"].update({"2fast": d["pools"].pop("dtcm_ws")}),
        r"pools.2fast: '2fast' is not a C identifier",
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
        "pool no core reaches",
        lambda d: d["memories"]["ddr"].update(access=["npu0"]),
        r"pools.ddr_ws.memory: no core reaches memory 'ddr', so no image can hold this pool",
    ),
    (
        "pools overflow the memory",
        _set("pools.dtcm_ws.size", "500K"),
        # Pools are reserved first: the stack is what no longer fits.
        r"contexts.main.stack: pools and stacks in memory 'dtcm' need 528384 bytes; it has "
        r"524288 \(pool dtcm_ws 500K, stack main.stack 16K\)",
    ),
    (
        "pools leave no room for the image",
        _set("pools.itcm_const.size", 523776),
        r"pools.itcm_const: pools and stacks leave 512 bytes of memory 'itcm' for the image "
        r"sections it holds; leave at least 1024",
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
        "open-ended pool with no room",
        _set("pools.ddr_const.size", "16M"),
        r"pools.ddr_ws: no room left in memory 'ddr' for this pool",
    ),
    (
        "pool pushed out by alignment",
        lambda d: (
            d["memories"].update(
                tiny={"origin": 0x70000000, "size": 100, "attrs": "rw", "access": ["cpu0"]}
            ),
            d["pools"].update(tiny_ws={"memory": "tiny", "size": 73, "kind": "workspace"}),
            d["contexts"]["main"].update(stack={"memory": "tiny", "size": 24}),
        ),
        r"pools.tiny_ws: does not fit in memory 'tiny' after alignment",
    ),
    (
        "stack pushed out by alignment",
        lambda d: (
            d["memories"].update(
                tiny={"origin": 0x70000004, "size": 104, "attrs": "rw", "access": ["cpu0"]}
            ),
            d["contexts"]["main"].update(stack={"memory": "tiny", "size": 104}),
        ),
        r"contexts.main.stack: does not fit in memory 'tiny' after alignment",
    ),
    # Contexts.
    ("no contexts", _set("contexts", {}), r"contexts: a board needs at least one context"),
    ("context key unknown", _set("contexts.main.prio", 1), r"contexts.main.prio: unknown key"),
    (
        "context core unknown",
        _set("contexts.main.core", "cpu9"),
        r"contexts.main.core: no core 'cpu9'",
    ),
    (
        "context named like a scope word",
        lambda d: d["contexts"].update({"global": d["contexts"].pop("main")}),
        r"contexts.global: 'global' is a scope word; give this context another name",
    ),
    (
        "context named like a device",
        lambda d: d["contexts"].update({"npu0": d["contexts"].pop("main")}),
        r"contexts.npu0: 'npu0' names both a context and a device; rename one",
    ),
    (
        "thread without stack",
        _delete("contexts.main.stack"),
        r"contexts.main: a thread context needs a stack",
    ),
    (
        "context kind unknown",
        _set("contexts.main.kind", "process"),
        r"contexts.main.kind: 'process' is not allowed",
    ),
    (
        "task on a core without an RTOS",
        _set("contexts.main.kind", "task"),
        r"contexts.main.kind: a task runs under an RTOS; say which on core 'cpu0' "
        r"\(rtos: freertos\)",
    ),
    (
        "task stack with a stray key",
        lambda d: (
            d["cores"]["cpu0"].update(rtos="freertos"),
            d["contexts"].update(
                rx={"core": "cpu0", "kind": "task", "entry": "main", "stack": {"bytes": 4}}
            ),
        ),
        r"contexts.rx.stack.bytes: unknown key",
    ),
    (
        "task name on a thread",
        _set("contexts.main.task", "Rx"),
        r"contexts.main.task: `task` names an RTOS task; this is no task",
    ),
    (
        "rtos unknown",
        _set("cores.cpu0.rtos", "zephyr"),
        r"cores.cpu0.rtos: 'zephyr' is not allowed",
    ),
    (
        "stack memory unreachable",
        lambda d: (d["memories"]["dtcm"].update(access=["npu0"]), d["pools"].pop("dtcm_ws")),
        r"contexts.main.stack.memory: core 'cpu0' cannot access memory 'dtcm'",
    ),
    (
        "stack in read-only memory",
        _set("contexts.main.stack.memory", "itcm"),
        r"contexts.main.stack.memory: a stack needs a writable memory; 'itcm' is rx",
    ),
    (
        "stack too big",
        _set("contexts.main.stack.size", "300K"),
        r"contexts.main.stack: pools and stacks in memory 'dtcm' need 569344 bytes",
    ),
    (
        "stack size not a multiple of 8",
        _set("contexts.main.stack.size", 1020),
        r"contexts.main.stack.size: a stack size is a multiple of 8 bytes, got 1020",
    ),
    (
        "stack key unknown",
        _set("contexts.main.stack.base", 0),
        r"contexts.main.stack.base: unknown key",
    ),
    (
        "threads zero",
        _set("contexts.main.threads", 0),
        r"contexts.main.threads: must be at least 1",
    ),
    (
        "threads overflow the memory",
        _set("contexts.main.threads", 20),
        r"contexts.main.threads: pools and stacks in memory 'dtcm' need 606208 bytes; it has "
        r"524288 \(pool dtcm_ws 256K, stack main.stack 16K, 20 thread stacks of main 16K each\)",
    ),
    (
        "max_stack_alloca not a size",
        _set("contexts.main.max_stack_alloca", "1Q"),
        r"contexts.main.max_stack_alloca: expected a size such as 4096, 16K or 2M, got '1Q'",
    ),
    (
        "max_stack_alloca negative",
        _set("contexts.main.max_stack_alloca", -8),
        r"contexts.main.max_stack_alloca: a size must be 0 or more, got -8",
    ),
    (
        "priority on a thread",
        _set("contexts.main.priority", 3),
        r"contexts.main.priority: priority is an isr's exception priority; a thread context "
        r"has none \(remove it\)",
    ),
    (
        "stack hints not a list",
        _set("stack_hints", {"recursion": []}),
        r"stack_hints: expected a list",
    ),
    (
        "stack hints entry not a mapping",
        _set("stack_hints", ["newlib-nano"]),
        r"stack_hints\[0\]: a stack hints entry is a mapping of indirect_calls, recursion",
    ),
    (
        "stack hints unknown key",
        _set("stack_hints", [{"recursoin": []}]),
        r"stack_hints\[0\].recursoin: unknown key; did you mean 'recursion'\?",
    ),
    (
        "stack hints wrong version",
        _set("stack_hints", [{"memplace": "stack_hints/v2"}]),
        r"stack_hints\[0\].memplace: this memplace reads stack_hints/v1, not 'stack_hints/v2'",
    ),
    (
        "stack hints bad depth",
        _set("stack_hints", [{"recursion": [{"function": "walk", "depth": 0}]}]),
        r"stack_hints\[0\].recursion\[0\].depth: must be at least 1, got 0",
    ),
    (
        "stack hints bad function name",
        _set("stack_hints", [{"alloca": [{"function": "a b", "size": 8}]}]),
        r"stack_hints\[0\].alloca\[0\].function: 'a b' is not a function name",
    ),
    (
        "max_stack_alloca above the stack",
        _set("contexts.main.max_stack_alloca", 20000),
        r"contexts.main.max_stack_alloca: 20000 is more than the whole stack \(16384 bytes\)",
    ),
    (
        "entry not a C name",
        _set("contexts.main.entry", "1main"),
        r"contexts.main.entry: '1main' is not a C identifier",
    ),
    (
        "entry a C keyword",
        _set("contexts.main.entry", "int"),
        r"contexts.main.entry: 'int' is a C keyword; name a function",
    ),
    (
        "two entries clash",
        _set("contexts.idle", {"core": "cpu0", "stack": {"memory": "dtcm", "size": "1K"}}),
        r"contexts.idle: context 'main' on core 'cpu0' already starts at main\(\); give each",
    ),
    (
        "preempts unknown",
        _set("contexts.main.preempts", ["idle"]),
        r"contexts.main.preempts\[0\]: no context 'idle'",
    ),
    (
        "preempts itself",
        _set("contexts.main.preempts", "main"),
        r"contexts.main.preempts: a context cannot preempt itself",
    ),
    (
        "isr with nowhere to run",
        _set("contexts.tick", {"core": "cpu0", "kind": "isr"}),
        r"contexts.tick: an isr runs on the stacks of the contexts it preempts",
    ),
    (
        "isr with threads",
        _set("contexts.tick", {"core": "cpu0", "kind": "isr", "preempts": ["main"], "threads": 2}),
        r"contexts.tick.threads: an isr is one handler; `threads` is for thread contexts",
    ),
    (
        "context named as a worker thread's stack",
        lambda data: data["contexts"].update(
            main={**data["contexts"]["main"], "threads": 1},
            main_thread0={
                "core": "cpu0",
                "entry": "other",
                "stack": {"memory": "sram", "size": 1024},
            },
        ),
        r"contexts.main_thread0: the stack of thread 0 of context 'main' has the C name "
        r"main_thread0 \(memplace_stack_main_thread0\); give this context another name",
    ),
    (
        "isr priority out of range",
        _set("contexts.tick", {"core": "cpu0", "kind": "isr", "preempts": "main", "priority": 256}),
        r"contexts.tick.priority: an exception priority is 0..255, got 256",
    ),
    (
        "isr planning on a stack it lacks",
        _set(
            "contexts.tick",
            {"core": "cpu0", "kind": "isr", "preempts": "main", "max_stack_alloca": 64},
        ),
        r"contexts.tick.max_stack_alloca: this context has no stack of its own",
    ),
    (
        "isr preempts a more urgent isr",
        lambda d: d["contexts"].update(
            tick={"core": "cpu0", "kind": "isr", "preempts": ["main"], "priority": 2},
            uart={"core": "cpu0", "kind": "isr", "preempts": ["main", "tick"], "priority": 2},
        ),
        r"contexts.uart.preempts\[1\]: an exception preempts only a less urgent one: "
        r"give 'uart' a priority below 2",
    ),
    # How the board runs.
    (
        "run has only qemu, flash, simulator and on_exit",
        _set("run", {"qemu": {"machine": "x"}, "jtag": {}}),
        r"run.jtag: unknown key; valid: flash, on_exit, qemu, simulator",
    ),
    (
        "on_exit is spin, reset or hook",
        _set("run.on_exit", "halt"),
        r"run.on_exit: 'halt' is not allowed; valid: hook, reset, spin",
    ),
    ("simulator is true or false", _set("run.simulator", "yes"), r"run.simulator: expected true"),
    (
        "an interrupt name is on a line of the table",
        _set("cores.cpu0.interrupts", {"lines": 128, "names": {128: "LATE"}}),
        r"cores.cpu0.interrupts.names.128: a line of this table is a number 0..127, got 128",
    ),
    (
        "an interrupt name is a C identifier",
        _set("cores.cpu0.interrupts", {"lines": 128, "names": {3: "3D"}}),
        r"cores.cpu0.interrupts.names.3: '3D' is not a C identifier",
    ),
    (
        "an interrupt name names one line",
        _set("cores.cpu0.interrupts", {"lines": 128, "names": {3: "UART", 4: "UART"}}),
        r"cores.cpu0.interrupts.names.4: line 3 is named 'UART' already",
    ),
    (
        "interrupts as a mapping needs its lines",
        _set("cores.cpu0.interrupts", {"names": {3: "UART"}}),
        r"cores.cpu0.interrupts: missing required key 'lines'",
    ),
    ("qemu without machine", _set("run.qemu", {}), r"run.qemu: missing required key 'machine'"),
    (
        "flash runner unknown",
        _set("run.flash", {"runner": "jlink"}),
        r"run.flash.runner: 'jlink' is not allowed",
    ),
    (
        "pyocd without target",
        _set("run.flash", {"runner": "pyocd"}),
        r"run.flash: runner pyocd needs `target`",
    ),
    (
        "pyocd with a config",
        _set("run.flash", {"runner": "pyocd", "target": "x", "config": "y.cfg"}),
        r"run.flash.config: runner pyocd takes `target`, `frequency`, not `config`",
    ),
    (
        "openocd without config",
        _set("run.flash", {"runner": "openocd"}),
        r"run.flash: runner openocd needs `config`",
    ),
    (
        "probe clock not positive",
        _set("run.flash", {"runner": "pyocd", "target": "x", "frequency": 0}),
        r"run.flash.frequency: must be at least 1, got 0",
    ),
    (
        "openocd with no config files",
        _set("run.flash", {"runner": "openocd", "config": []}),
        r"run.flash.config: name at least one OpenOCD config file",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [(c, m) for _, c, m in RULES], ids=[name for name, _, _ in RULES]
)
def test_rule(tmp_path: Path, board_data: dict[str, Any], change: Change, message: str) -> None:
    change(board_data)
    assert re.search(message, _error(tmp_path, board_data))


@pytest.fixture
def dual_data() -> dict[str, Any]:
    """Two cores, each with a private RAM that it sees at 0x20000000, a shared RAM, a DMA."""
    return {
        "memplace": "board/v1",
        "name": "dual",
        "cores": {
            "cpu0": {
                "cpu": "cortex-m33",
                "layout": {"vectors": "flash0", "code": "flash0", "data": "ram0"},
            },
            "cpu1": {
                "cpu": "cortex-m33",
                "layout": {"vectors": "flash1", "code": "flash1", "data": "ram1"},
                "release": {
                    "by": "cpu0",
                    "steps": [
                        {"write": 0x50021114, "value": 0x10080000},
                        {"clear": 0x50021118, "mask": 0x2},
                    ],
                },
            },
        },
        "devices": {"dma": {"kind": "dma"}},
        "memories": {
            "flash0": {"origin": 0x10000000, "size": "512K", "attrs": "rx", "access": ["cpu0"]},
            "flash1": {"origin": 0x10080000, "size": "512K", "attrs": "rx", "access": ["cpu1"]},
            "ram0": {"origin": 0x20000000, "size": "64K", "attrs": "rw", "access": ["cpu0"]},
            "ram1": {
                "origin": 0x30000000,
                "size": "64K",
                "attrs": "rw",
                "access": ["cpu1"],
                "views": {"cpu1": 0x20000000},
            },
            "shared": {
                "origin": 0x38000000,
                "size": "1M",
                "attrs": "rw",
                "access": ["cpu0", "cpu1", "dma"],
            },
        },
        "pools": {"shared_ws": {"memory": "shared", "kind": "workspace"}},
        "contexts": {
            "main": {"core": "cpu0", "stack": {"memory": "ram0", "size": "4K"}},
            "main1": {"core": "cpu1", "stack": {"memory": "ram1", "size": "4K"}},
            "tick": {"core": "cpu0", "kind": "isr", "preempts": ["main"], "priority": 2},
        },
    }


# Rules that need two cores, broken once on `dual_data`.
DUAL_RULES: list[tuple[str, Change, str]] = [
    (
        "a view that overlaps another memory",
        _set("memories.shared.views", {"cpu1": 0x20008000}),
        r"memories.shared.views.cpu1: core 'cpu1' sees memories 'ram1' and 'shared' at "
        r"overlapping addresses \(\[0x20000000, 0x20010000\) and \[0x20008000, 0x20108000\)\)",
    ),
    (
        "view of a core without access",
        _set("memories.ram0.views", {"cpu1": 0x40000000}),
        r"memories.ram0.views.cpu1: core 'cpu1' has a view of this memory but no access; "
        r"add it to `access`",
    ),
    (
        # Images may share a memory, each in a range of its own, but each starts at its
        # vector table: two tables at one address cannot both be there.
        "two vector tables at one address",
        lambda d: (
            d["memories"]["flash0"].update(access=["cpu0", "cpu1"]),
            d["cores"]["cpu1"]["layout"].update(vectors="flash0", code="flash0"),
        ),
        r"cores.cpu1.layout: cores 'cpu0' and 'cpu1' both start from a vector table at "
        r"0x10000000 in memory 'flash0'; their images share that memory one after the other: "
        r"give core 'cpu1' a `boot` address past the image of core 'cpu0'",
    ),
    (
        "released by a core that is itself released",
        _set("cores.cpu0.release", {"by": "cpu1"}),
        r"cores.cpu0.release.by: core 'cpu1' is itself released by another",
    ),
    (
        "released by an unknown core",
        _set("cores.cpu1.release.by", "cpu2"),
        r"cores.cpu1.release.by: no other core 'cpu2'; did you mean 'cpu0'",
    ),
    (
        "release key unknown",
        _set("cores.cpu1.release.when", "boot"),
        r"cores.cpu1.release.when: unknown key",
    ),
    (
        "step without operand",
        _steps({"write": 0x50021114}),
        r"cores.cpu1.release.steps\[0\]: a write step takes `value`",
    ),
    (
        "step with the wrong operand",
        _steps({"set": 0x50021118, "value": 2}),
        r"cores.cpu1.release.steps\[0\]: a set step takes `mask`",
    ),
    (
        "step with two actions",
        _steps({"set": 0x50021118, "clear": 0x50021118, "mask": 2}),
        r"cores.cpu1.release.steps\[0\]: a step is one of \{write: ADDRESS, value: WORD\}",
    ),
    (
        "step address not aligned",
        _steps({"write": 0x50021115, "value": 0}),
        r"cores.cpu1.release.steps\[0\].write: a register address is a multiple of 4",
    ),
    (
        "step value past 32 bits",
        _steps({"write": 0x50021114, "value": 1 << 32}),
        r"cores.cpu1.release.steps\[0\].value: expected a 32-bit value, got 0x100000000",
    ),
    (
        "boot in another core's view",
        _set("cores.cpu1.boot", 0x10000000),
        r"cores.cpu1.boot: the boot address must lie in the vectors memory 'flash1'",
    ),
    (
        "core without a thread",
        lambda d: d["contexts"].update(
            main1={"core": "cpu1", "kind": "isr", "stack": {"memory": "ram1", "size": "1K"}}
        ),
        r"contexts: core 'cpu1' has no thread context to start on; add one with core: cpu1",
    ),
    (
        "preempts a context of another core",
        _set("contexts.tick.preempts", ["main1"]),
        r"contexts.tick.preempts\[0\]: context 'main1' runs on core 'cpu1', not 'cpu0'",
    ),
    (
        "stack in another core's memory",
        _set("contexts.main1.stack.memory", "ram0"),
        r"contexts.main1.stack.memory: core 'cpu1' cannot access memory 'ram0'",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [(c, m) for _, c, m in DUAL_RULES],
    ids=[name for name, _, _ in DUAL_RULES],
)
def test_dual_core_rule(
    tmp_path: Path, dual_data: dict[str, Any], change: Change, message: str
) -> None:
    change(dual_data)
    assert re.search(message, _error(tmp_path, dual_data))


def test_dual_core_board_reads_views_releases_and_isrs(dual_data: dict[str, Any]) -> None:
    board = Board.from_data(dual_data)
    assert board.cores["cpu1"].boot == 0x10080000
    assert board.cores["cpu1"].release == Release(
        "cpu0",
        (ReleaseStep("write", 0x50021114, 0x10080000), ReleaseStep("clear", 0x50021118, 0x2)),
    )
    ram1 = board.memories["ram1"]
    assert (ram1.origin, ram1.address_for("cpu1")) == (0x30000000, 0x20000000)
    tick = board.contexts["tick"]
    assert (tick.kind, tick.stack, tick.preempts, tick.entry) == (
        "isr",
        None,
        ("main",),
        "tick_handler",
    )
    # Each core sees its own map: both private RAMs at 0x20000000, the stacks inside them.
    cpu1 = {entry.memory.name: entry for entry in board.memory_map("cpu1")}
    assert set(cpu1) == {"flash1", "ram1", "shared"}
    assert cpu1["ram1"].address == 0x20000000
    assert [(a.name, a.address) for a in cpu1["ram1"].areas] == [("main1.stack", 0x2000F000)]
    assert cpu1["shared"].shared_with == ("cpu0", "dma")
    assert board.to_data()["cores"]["cpu1"]["release"] == {
        "by": "cpu0",
        "steps": [{"write": 0x50021114, "value": 0x10080000}, {"clear": 0x50021118, "mask": 2}],
    }


def test_threads_get_a_stack_each_after_the_context_own(board_data: dict[str, Any]) -> None:
    board_data["contexts"]["main"]["threads"] = 2
    board = Board.from_data(board_data)
    main = board.contexts["main"]
    assert main.threads == 2
    assert main.stack is not None and len(main.thread_stacks) == 2
    own, first, second = main.stack, *main.thread_stacks
    assert own.size == first.size == second.size == 16 * 1024
    assert own.address + own.size == first.address
    assert second.address + second.size == 0x20080000
    assert [label for label, _ in main.stacks()] == [
        "main.stack",
        "main.thread0.stack",
        "main.thread1.stack",
    ]
    assert board.to_data()["contexts"]["main"]["threads"] == 2


def test_a_context_without_threads_has_only_its_own_stack(board: Board) -> None:
    main = board.contexts["main"]
    assert (main.threads, main.thread_stacks) == (0, ())
    assert [label for label, _ in main.stacks()] == ["main.stack"]


@pytest.mark.parametrize(
    ("flash", "expected"),
    [
        ({"runner": "pyocd", "target": "stm32h743xx"}, FlashRun("pyocd", target="stm32h743xx")),
        (
            {"runner": "openocd", "config": "board/x.cfg"},
            FlashRun("openocd", config=("board/x.cfg",)),
        ),
        (
            {"runner": "openocd", "config": ["interface/a.cfg", "target/b.cfg"]},
            FlashRun("openocd", config=("interface/a.cfg", "target/b.cfg")),
        ),
        (
            {"runner": "pyocd", "target": "rp2040", "frequency": 4000000},
            FlashRun("pyocd", target="rp2040", frequency=4000000),
        ),
    ],
)
def test_run_flash(board_data: dict[str, Any], flash: dict[str, Any], expected: FlashRun) -> None:
    board_data["run"]["flash"] = flash
    board = Board.from_data(board_data)
    assert board.run.flash == expected
    assert board.to_data()["run"]["flash"]["runner"] == expected.runner


def test_a_board_without_run_has_no_qemu(board_data: dict[str, Any]) -> None:
    del board_data["run"]
    board = Board.from_data(board_data)
    assert board.qemu_machine is None and board.run.qemu is None and board.run.flash is None


def test_error_names_the_exact_line_and_column(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "board.yaml",
        "memplace: board/v1\nname: b\ncores:\n  cpu0:\n"
        "    cpu: cortex-m4\n    layout: {vectors: rom, code: rom, "
        "data: ram}\nmemories:\n  rom: {origin: 0, size: 64K, attrs: rx, "
        "access: [cpu0]}\n  ram: {origin: 0x20000000, size: 16K, "
        "attrs: rw, access: [cpu0]}\ncontexts:\n  main:\n"
        "    core: cpu0\n    stack: {memory: ram, size: 2K}\n"
        "    max_stack_alloca: high\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value) == (
        f"{path}:14:23: contexts.main.max_stack_alloca: expected a size such as 4096, 16K or 2M, "
        "got 'high'"
    )


def test_a_key_given_twice_is_refused(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("board.yaml", "memplace: board/v1\nname: a\nname: b\n")
    with pytest.raises(InputError, match=r"board\.yaml:3:1: name: key given twice"):
        Board.from_file(path)


def test_yaml_tags_are_refused(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("board.yaml", "memplace: board/v1\nname: !!python/object:os.system echo\n")
    with pytest.raises(InputError, match=r"board\.yaml:2:7: YAML tag .* is not allowed"):
        Board.from_file(path)


def test_a_board_file_is_a_mapping(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("board.yaml", "- memplace: board/v1\n")
    with pytest.raises(InputError, match=r"board\.yaml:1:1: a board file is a mapping"):
        Board.from_file(path)


def test_views_give_a_core_its_own_address(tmp_path: Path, board_data: dict[str, Any]) -> None:
    board_data["memories"]["ddr"]["views"] = {"cpu0": 0x80000000}
    board = _load(tmp_path, board_data)
    assert board.memories["ddr"].address_for("cpu0") == 0x80000000
    assert board.memories["ddr"].origin == 0x60000000
    ddr = next(entry for entry in board.memory_map("cpu0") if entry.memory.name == "ddr")
    assert ddr.address == 0x80000000
    assert [(a.name, a.address) for a in ddr.areas] == [
        ("ddr_ws", 0x80000000),
        ("ddr_const", 0x80C00000),
    ]


def test_memory_map_text_and_data(board: Board) -> None:
    text = memory_map_text(board)
    assert "core cpu0 (cortex-m55, float hard): boots at 0x00000000, starts at reset" in text
    assert re.search(r"\[0x20000000, 0x20080000\)  dtcm +512K  rw  tcm", text)
    assert "      [0x2007c000, 0x20080000)  stack main.stack (16K)" in text
    assert "  npu0 (npu) reaches sram, ddr" in text
    data = memory_map_data(board)
    itcm = data["cores"]["cpu0"]["memories"][0]
    assert itcm["name"] == "itcm" and itcm["holds"] == ["vectors", "code", "load"]


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


def test_extends_removes_a_key_set_to_null(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "pools:\n  ddr_const: null\n  itcm_const: ~\n",
    )
    board = Board.from_file(path)
    assert set(board.pools) == {"dtcm_ws", "sram_ws", "ddr_ws"}
    assert board.pools["ddr_ws"].size == 16 * 1024 * 1024


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


def test_extends_in_plain_data_is_refused(board_data: dict[str, Any]) -> None:
    board_data["extends"] = "qemu-mps2-an385"
    with pytest.raises(InputError, match=r"<data>:1:1: extends: extends is resolved when"):
        Board.from_data(board_data)


def test_extends_needs_a_name_of_its_own(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("a.yaml", "memplace: board/v1\nextends: qemu-mps3-an547\n")
    with pytest.raises(
        InputError, match=r"a.yaml:1:1: a board that extends another needs a name of its own"
    ):
        Board.from_file(path)


def test_extends_checks_the_version_of_the_extending_file(
    write_yaml: Callable[[str, str], Path],
) -> None:
    path = write_yaml("a.yaml", "memplace: board/v2\nextends: qemu-mps3-an547\nname: a\n")
    with pytest.raises(InputError, match=r"a.yaml:1:11: memplace: this memplace reads board/v1"):
        Board.from_file(path)


def test_extends_points_at_the_stack_that_no_longer_fits(
    write_yaml: Callable[[str, str], Path],
) -> None:
    path = write_yaml(
        "big.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: big-stack\n"
        "contexts:\n  main: {stack: {memory: dtcm, size: 300K}}\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value) == (
        f"{path}:5:17: contexts.main.stack: pools and stacks in memory 'dtcm' need 569344 "
        "bytes; it has 524288 (pool dtcm_ws 256K, stack main.stack 300K)"
    )


def test_extends_points_at_what_the_extending_file_sets(
    write_yaml: Callable[[str, str], Path],
) -> None:
    # The base's stack is what passes the memory's end, but this file grew the pool.
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "pools:\n  dtcm_ws: {memory: dtcm, size: 500K, kind: workspace}\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value) == (
        f"{path}:5:12: pools.dtcm_ws: pools and stacks in memory 'dtcm' need 528384 bytes; it "
        "has 524288 (pool dtcm_ws 500K, stack main.stack 16K)"
    )
    # Of what this file sets, the first area past the end: here the thread it adds.
    path.write_text(path.read_text().replace("500K", "490K") + "contexts:\n  main: {threads: 1}\n")
    with pytest.raises(InputError, match=r"mine.yaml:7:19: contexts.main.threads: pools and"):
        Board.from_file(path)


def test_extends_a_misspelt_board_suggests_the_nearest(
    write_yaml: Callable[[str, str], Path],
) -> None:
    path = write_yaml("a.yaml", "memplace: board/v1\nextends: qemu-mps3-an574\nname: a\n")
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value).startswith(
        f"{path}:2:10: extends: no board 'qemu-mps3-an574' to extend (no bundled board and no "
        f"file {path.parent / 'qemu-mps3-an574'}); did you mean 'qemu-mps3-an547'? valid: "
    )


@pytest.mark.parametrize(("value", "size"), [("1K", 1024), (0, 0), ("0", 0), (512, 512)])
def test_max_stack_alloca_takes_a_size(board_data: dict[str, Any], value: Any, size: int) -> None:
    board_data["contexts"]["main"]["max_stack_alloca"] = value
    assert Board.from_data(board_data).contexts["main"].max_stack_alloca == size


def test_an_isr_keeps_its_priority(board_data: dict[str, Any]) -> None:
    board_data["contexts"]["tick"] = {
        "core": "cpu0",
        "kind": "isr",
        "preempts": ["main"],
        "priority": 7,
    }
    assert Board.from_data(board_data).contexts["tick"].priority == 7


def test_stack_hints_are_read_with_their_positions(
    write_yaml: Callable[[str, str], Path],
) -> None:
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "stack_hints:\n"
        "  - indirect_calls:\n"
        "      - {caller: dispatch, at: src/ops.c:42, targets: [op_add, op_mul]}\n"
        "    recursion:\n"
        "      - {function: walk_tree, depth: 12}\n"
        "  - memplace: stack_hints/v1\n"
        "    alloca: [{function: format_row, size: 256}]\n"
        "    frames: [{function: switch_stacks, size: 64}]\n",
    )
    board = Board.from_file(path)
    first, second = board.stack_hints
    assert first.targets(("dispatch",), "src/ops.c:42") == ["op_add", "op_mul"]
    assert first.recursion_depth(("walk_tree",)) == 12
    assert str(first.recursion[0].mark) == f"{path}:8:20"
    assert second.alloca_size(("format_row",)) == 256
    assert second.frame_size(("switch_stacks",)) == 64
    assert first.source == str(path)
    assert load_board("qemu-mps3-an547").stack_hints == ()


def test_stack_hints_errors_name_the_line_and_the_whole_key(
    write_yaml: Callable[[str, str], Path],
) -> None:
    path = write_yaml(
        "mine.yaml",
        "memplace: board/v1\nextends: qemu-mps3-an547\nname: mine\n"
        "stack_hints:\n"
        "  - recursion:\n"
        "      - {function: walk_tree, depth: 12}\n"
        "      - {function: walk_tree, depth: 3}\n",
    )
    with pytest.raises(InputError) as caught:
        Board.from_file(path)
    assert str(caught.value) == (
        f"{path}:7:20: stack_hints[0].recursion[1].function: walk_tree is given twice in "
        f"recursion (first at {path}:6:20)"
    )


def test_boards_show_refuses_a_file_that_is_not_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.yaml"
    path.write_bytes(b"\xff\xfe")
    assert main(["boards", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"memplace: error: {path}:1:1: not UTF-8 text (byte 0xff); save the file as UTF-8\n"
    )


def _isr(irq: int, **more: Any) -> dict[str, Any]:
    return {"core": "cpu0", "kind": "isr", "preempts": ["main"], "irq": irq, **more}


# Device interrupts, each rule broken once on the default board (128 lines on cpu0).
IRQ_RULES: list[tuple[str, Change, str]] = [
    (
        "irq on a core without interrupts",
        lambda data: (
            data["cores"]["cpu0"].pop("interrupts"),
            data["contexts"].update(uart=_isr(3)),
        ),
        r"contexts.uart.irq: core 'cpu0' declares no device interrupt lines; add "
        r"`interrupts: N` to it",
    ),
    (
        "irq past the last line",
        _set("contexts.uart", _isr(128)),
        r"contexts.uart.irq: core 'cpu0' has 128 device interrupt lines \(0..127\); there is "
        r"no line 128",
    ),
    (
        "negative irq",
        _set("contexts.uart", _isr(-1)),
        r"contexts.uart.irq: must be at least 0, got -1",
    ),
    (
        "two isrs on one line",
        lambda data: data["contexts"].update(
            uart=_isr(3, entry="UART0_IRQHandler"), spi=_isr(3, entry="SPI0_IRQHandler")
        ),
        r"contexts.spi.irq: context 'uart' is already wired to irq 3 of core 'cpu0'; a line "
        r"has one handler",
    ),
    (
        "irq on a thread",
        _set("contexts.main.irq", 3),
        r"contexts.main.irq: irq is the device interrupt line of an isr; a thread context has "
        r"none \(remove it, or set kind: isr\)",
    ),
    (
        "irq wired to a core exception's handler",
        _set("contexts.uart", _isr(3, entry="SysTick_Handler")),
        r"contexts.uart.entry: SysTick_Handler is the handler of a core exception; the handler "
        r"of irq 3 \(exception 19\) needs a name of its own",
    ),
    (
        "more lines than the cpu has",
        _set("cores.cpu0.interrupts", 481),
        r"cores.cpu0.interrupts: a cortex-m55 has at most 480 device interrupt lines, got 481",
    ),
    (
        "more lines than a cortex-m0 has",
        lambda data: data["cores"]["cpu0"].update(cpu="cortex-m0", float_abi="soft", interrupts=33),
        r"cores.cpu0.interrupts: a cortex-m0 has at most 32 device interrupt lines, got 33",
    ),
    (
        "a table with device lines off its boundary",
        _set("cores.cpu0.boot", 0x80),
        r"cores.cpu0.boot: a vector table of 144 entries starts on a 1024-byte boundary "
        r"\(VTOR\); core 'cpu0' boots from 0x00000080",
    ),
    (
        "negative line count",
        _set("cores.cpu0.interrupts", -1),
        r"cores.cpu0.interrupts: must be at least 0, got -1",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"),
    [(c, m) for _, c, m in IRQ_RULES],
    ids=[name for name, _, _ in IRQ_RULES],
)
def test_irq_rule(tmp_path: Path, board_data: dict[str, Any], change: Change, message: str) -> None:
    change(board_data)
    assert re.search(message, _error(tmp_path, board_data))


def test_an_irq_error_names_the_line_and_column_of_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], write_yaml: Callable[[str, str], Path]
) -> None:
    path = write_yaml(
        "board.yaml",
        "memplace: board/v1\nextends: qemu-mps2-an385\nname: b\ncontexts:\n"
        "  timer0: {core: cpu0, kind: isr, preempts: [main], irq: 32}\n",
    )
    assert main(["boards", "show", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"memplace: error: {path}:5:58: contexts.timer0.irq: core 'cpu0' has 32 device "
        "interrupt lines (0..31); there is no line 32\n"
    )


def test_a_core_keeps_its_lines_and_an_isr_its_line(board_data: dict[str, Any]) -> None:
    board_data["contexts"]["uart"] = _isr(31, entry="UART0_IRQHandler", priority=3)
    board = Board.from_data(board_data)
    assert board.cores["cpu0"].interrupts == 128
    assert (board.contexts["uart"].irq, board.contexts["main"].irq) == (31, None)
    again = Board.from_resolved(board.to_data())
    assert again.cores["cpu0"].interrupts == 128 and again.contexts["uart"].irq == 31


def test_boards_show_names_the_lines_and_the_wired_isrs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["boards", "show", "stm32h743"]) == 0
    text = capsys.readouterr().out
    assert "\n  150 device interrupt lines: a vector table of 166 entries\n" in text
    assert "\n  eth: isr on cm7, entry ETH_IRQHandler(), irq 61, on the stacks of main\n" in text
    assert main(["boards", "show", "stm32h743", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cores"]["cm7"]["interrupts"] == 150


def test_the_device_interrupts_example_of_the_docs_loads(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "boards.md"
    section = docs.read_text().split("## Device interrupts", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "my-h743.yaml"
    path.write_text(example)
    board = Board.from_file(path)
    assert board.cores["cm7"].interrupts == 150
    wired = {c.name: (c.entry, c.irq, c.priority) for c in board.contexts.values() if c.irq}
    assert wired == {"eth": ("ETH_IRQHandler", 61, 5), "uart": ("USART3_IRQHandler", 39, 4)}
