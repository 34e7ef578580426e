"""Finding FreeRTOS's task stacks in a running target's memory, as debuggers' RTOS
awareness does: through the kernel's task lists and task control blocks.

Every task is in one of the kernel's lists (`pxReadyTasksLists[]`, `xDelayedTaskList1/2`,
`xPendingReadyList`, `xSuspendedTaskList`, `xTasksWaitingTermination`); each list item's
`pvOwner` is its task's control block (TCB_t), which holds `pxStack`, the lowest address of
the task's stack, and `pcTaskName`. The offsets come from the ELF's debug information
(`tskTaskControlBlock`, `xLIST`, `xLIST_ITEM`, `xMINI_LIST_ITEM`); without it, from the
layout FreeRTOS has on 32-bit ports without an MPU or list integrity checks.

A task's stack is filled with `tskSTACK_FILL_BYTE` (0xA5) when it is created (FreeRTOS does
so whenever stack checking, tracing or `uxTaskGetStackHighWaterMark` is on): its mark is
its size less the bytes at its low end that still hold the fill, as
`uxTaskGetStackHighWaterMark` counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile

from memplace.errors import InputError
from memplace.verify.image import DAMAGED, Image
from memplace.verify.target_memory import RunMemory

FILL = 0xA5
LISTS = (
    "pxReadyTasksLists",
    "xDelayedTaskList1",
    "xDelayedTaskList2",
    "xPendingReadyList",
    "xSuspendedTaskList",
    "xTasksWaitingTermination",
)
STRUCTS = frozenset(("tskTaskControlBlock", "xLIST", "xLIST_ITEM", "xMINI_LIST_ITEM"))
MAX_TASKS = 1024
"""List items followed at most per list: a corrupt list must not loop for ever."""


@dataclass(frozen=True)
class Layout:
    """Offsets (bytes) of what the walk reads."""

    list_size: int = 20
    list_count: int = 0  # xLIST.uxNumberOfItems
    list_end: int = 8  # xLIST.xListEnd
    mini_next: int = 4  # xMINI_LIST_ITEM.pxNext
    item_next: int = 4  # xLIST_ITEM.pxNext
    item_owner: int = 12  # xLIST_ITEM.pvOwner
    tcb_stack: int = 48  # tskTaskControlBlock.pxStack
    tcb_name: int = 52  # tskTaskControlBlock.pcTaskName
    name_length: int = 16  # configMAX_TASK_NAME_LEN
    from_dwarf: bool = False  # read from the image's debug information


def layout_of(elf: Path) -> Layout:
    """The layout the ELF's debug information gives, else FreeRTOS's usual one."""
    with elf.open("rb") as handle:
        parsed = ELFFile(handle)
        if not parsed.has_dwarf_info():
            return Layout()
        try:
            structs = _structs(parsed, STRUCTS)
        except DAMAGED as exc:
            raise InputError(
                f"its DWARF debug information is damaged: {type(exc).__name__}: {exc}",
                key=str(elf),
            ) from exc
    tcb, lst = structs.get("tskTaskControlBlock"), structs.get("xLIST")
    item, mini = structs.get("xLIST_ITEM"), structs.get("xMINI_LIST_ITEM")
    if not (tcb and lst and item and mini):
        return Layout()
    try:
        return Layout(
            list_size=lst["<size>"],
            list_count=lst["uxNumberOfItems"],
            list_end=lst["xListEnd"],
            mini_next=mini["pxNext"],
            item_next=item["pxNext"],
            item_owner=item["pvOwner"],
            tcb_stack=tcb["pxStack"],
            tcb_name=tcb["pcTaskName"],
            name_length=tcb.get("<pcTaskName length>", 16),
            from_dwarf=True,
        )
    except KeyError:
        return Layout()


def system_call_stack_size(elf: Path) -> int | None:
    """Bytes of each task's system-call stack under an MPU port with the v2 wrappers
    (`SYSTEM_CALL_STACK_INFO.ulSystemCallStackBuffer`, configSYSTEM_CALL_STACK_SIZE words),
    from the debug information; None without it."""
    with elf.open("rb") as handle:
        parsed = ELFFile(handle)
        if not parsed.has_dwarf_info():
            return None
        info = _structs(parsed, frozenset(("SYSTEM_CALL_STACK_INFO",))).get(
            "SYSTEM_CALL_STACK_INFO", {}
        )
    words = info.get("<ulSystemCallStackBuffer length>")
    return None if words is None else 4 * words


def _structs(elf: ELFFile, names: frozenset[str]) -> dict[str, dict[str, int]]:
    """Member offsets (and `<size>`) of the named structures, from the first unit that
    defines each."""
    found: dict[str, dict[str, int]] = {}
    dwarf = elf.get_dwarf_info()
    for unit in dwarf.iter_CUs():
        for die in unit.iter_DIEs():
            if die.tag != "DW_TAG_structure_type" or "DW_AT_name" not in die.attributes:
                continue
            name = die.attributes["DW_AT_name"].value.decode(errors="replace")
            if name not in names or name in found or "DW_AT_byte_size" not in die.attributes:
                continue
            members = {"<size>": int(die.attributes["DW_AT_byte_size"].value)}
            for member in die.iter_children():
                location = member.attributes.get("DW_AT_data_member_location")
                label = member.attributes.get("DW_AT_name")
                if member.tag == "DW_TAG_member" and location is not None and label is not None:
                    key = label.value.decode(errors="replace")
                    members[key] = int(location.value)
                    length = _array_length(member)
                    if length is not None:
                        members[f"<{key} length>"] = length
            found[name] = members
        if len(found) == len(names):
            break
    return found


def _array_length(member: Any) -> int | None:
    kind = (
        member.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in member.attributes else None
    )
    if kind is None or kind.tag != "DW_TAG_array_type":
        return None
    for child in kind.iter_children():
        if child.tag == "DW_TAG_subrange_type":
            if "DW_AT_count" in child.attributes:
                return int(child.attributes["DW_AT_count"].value)
            if "DW_AT_upper_bound" in child.attributes:
                return int(child.attributes["DW_AT_upper_bound"].value) + 1
    return None


def task_stacks(image: Image, memory: RunMemory, layout: Layout) -> dict[str, tuple[int, ...]]:
    """Each task name and the lowest address of the stack of every task of that name
    (FreeRTOS lets tasks share one), from the kernel's lists."""
    tcbs: list[int] = []
    for name in LISTS:
        symbol = image.get_symbol(name)
        if symbol is None:
            continue
        count = max(1, symbol.size // layout.list_size)
        for index in range(count):
            tcbs += _owners(memory, symbol.address + index * layout.list_size, layout)
    current = image.get_symbol("pxCurrentTCB")
    running = memory.word(current.address) if current is not None else None
    if running:
        tcbs.append(running)
    stacks: dict[str, list[int]] = {}
    for tcb in dict.fromkeys(tcbs):
        raw = memory.read(tcb + layout.tcb_name, layout.name_length)
        stack = memory.word(tcb + layout.tcb_stack)
        if raw is None or stack is None:
            continue
        named = stacks.setdefault(raw.split(b"\0")[0].decode(errors="replace"), [])
        if stack not in named:
            named.append(stack)
    return {name: tuple(found) for name, found in stacks.items()}


def _owners(memory: RunMemory, address: int, layout: Layout) -> list[int]:
    """The owners of the items of the list at `address`."""
    count = memory.word(address + layout.list_count)
    end = address + layout.list_end
    item = memory.word(end + layout.mini_next)
    owners: list[int] = []
    if count is None or count > MAX_TASKS:
        return owners
    for _ in range(count):
        if item is None or item == end:
            break
        owner = memory.word(item + layout.item_owner)
        if owner:
            owners.append(owner)
        item = memory.word(item + layout.item_next)
    return owners


def untouched(memory: RunMemory, low: int, size: int, fill: int = FILL) -> int | None:
    """Bytes at the low end of a stack of `size` bytes from `low` that still hold `fill`;
    None when the run did not read them."""
    data = memory.read(low, size)
    if data is None:
        return None
    count = 0
    while count < len(data) and data[count] == fill:
        count += 1
    return count


def unused_words(memory: RunMemory, low: int, size: int, fill: int = FILL) -> int | None:
    """Bytes at the low end of a painted stack that still hold a fill, word by word: the
    one painted before the run, or the firmware's own (startup code that paints its stack
    itself, such as memplace's 0x5A5AA5A5, paints over the first; the lowest word then holds
    its pattern, as long as the stack never reached it). None when the run did not read
    them."""
    data = memory.read(low, size)
    if data is None or len(data) < 4:
        return None
    ours = bytes([fill]) * 4
    theirs = data[:4] if data[:4] != bytes(4) else ours
    count = 0
    while count + 4 <= len(data) and data[count : count + 4] in (ours, theirs):
        count += 4
    return count
