"""The RTOS tasks a firmware creates, found in its code rather than listed by hand.

An RTOS creates a task with a call that takes the task's entry function, its name and its
stack depth (in words of 4 bytes, as FreeRTOS's `StackType_t` on Cortex-M counts it):
either in the first three argument registers (`arguments`), or in a structure the first
register points at whose first three members are the same three values (`parameters`,
FreeRTOS's `TaskParameters_t`, the depth's low half-word). The RTOS's module names its
creating functions and which way each takes them (`memplace.rtos`). Most applications pass
constants: the entry function, a string literal and a number. At each call of one of these
functions, the values the first argument registers hold are followed from the instructions
before the call in the same straight run of code (literal pool loads, moves of immediates,
`movw`/`movt` pairs, register copies, shifts); what is not a constant there stays unknown,
and such a task is left to the board file and to the run.

The name is the one the kernel keeps: cut to `name_length - 1` characters, as a run's task
lists show it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from memplace.verify.callgraph import CallGraph
from memplace.verify.frames import Instruction
from memplace.verify.image import Image

WORD = 4
"""Bytes of a stack depth's unit (FreeRTOS's `StackType_t` on Cortex-M)."""

# How far back from a call the constants in its argument registers are looked for.
MAX_RUN = 48
MAX_NAME = 64

_LITERAL = re.compile(r"@ \(?([0-9a-f]+) <")
_ADR = re.compile(r"\(adr \w+, ([0-9a-f]+)")
_REGISTER = re.compile(r"^(r\d+|ip|fp|sl|lr)$")
_CALLS = frozenset(("bl", "blx"))
_CALLER_SAVED = frozenset(("r0", "r1", "r2", "r3", "ip", "r12", "lr"))
_RUN_ENDS = frozenset(("b", "bl", "blx", "bx", "cbz", "cbnz", "tbb", "tbh", "udf", "svc"))


@dataclass(frozen=True)
class CreatedTask:
    """One call that creates a task, with what of it is a constant in the image."""

    creator: str  # the function making the call
    call: int  # the call's address
    via: str  # xTaskCreate, xTaskCreateStatic, ...
    entry: int | None  # the task function's address
    name: str | None  # as the kernel keeps it
    words: int | None  # the stack depth, in words

    @property
    def size(self) -> int | None:
        """The task's stack, in bytes."""
        return None if self.words is None else self.words * WORD

    @property
    def complete(self) -> bool:
        return self.entry is not None and self.name is not None and self.words is not None


def created_tasks(
    image: Image, graph: CallGraph, creators: Mapping[str, str], name_length: int = 16
) -> tuple[CreatedTask, ...]:
    """Every call in the image's code of a task-creating function of `creators` (its name →
    how it takes the task's entry, name and depth: `arguments` or `parameters`), in address
    order."""
    called = {graph.by_name[name]: kind for name, kind in creators.items() if name in graph.by_name}
    if not called:
        return ()
    read_word = _reader(image)
    found = []
    for node in graph.nodes.values():
        for call in node.calls:
            if call.target not in called or node.function.address in called:
                continue  # (a wrapper's call through to the kernel is not a creation)
            via = graph.nodes[call.target].name
            values = _registers_at(graph.code, call.address, node.function.address, read_word)
            entry, name, words = values.get("r0"), values.get("r1"), values.get("r2")
            if called[call.target] == "parameters":
                entry, name, words = _parameters(image, values.get("r0"), read_word)
            if entry is not None and (entry & ~1) not in graph.nodes:
                entry = None
            text = _string(image, name) if name is not None else None
            found.append(
                CreatedTask(
                    creator=node.name,
                    call=call.address,
                    via=via,
                    entry=None if entry is None else entry & ~1,
                    name=None if text is None else text[: max(0, name_length - 1)],
                    words=words if words else None,
                )
            )
    return tuple(sorted(found, key=lambda t: t.call))


def _reader(image: Image) -> Callable[[int], int | None]:
    def read_word(address: int) -> int | None:
        data = image.read(address, WORD)
        return None if data is None else int.from_bytes(data, "little")

    return read_word


def _parameters(
    image: Image, address: int | None, read_word: Callable[[int], int | None]
) -> tuple[int | None, int | None, int | None]:
    """Entry, name and depth of the TaskParameters_t at `address`: the task function, the
    name and the depth (configSTACK_DEPTH_TYPE, 16 or 32 bits: its low half-word either
    way) are its first three members."""
    if address is None:
        return None, None, None
    depth = image.read(address + 2 * WORD, 2)
    words = None if depth is None else int.from_bytes(depth, "little")
    return read_word(address), read_word(address + WORD), words


def _string(image: Image, address: int) -> str | None:
    """The NUL-terminated string at `address` in the image; None where it holds none."""
    data = bytearray()
    while len(data) < MAX_NAME:
        byte = image.read(address + len(data), 1)
        if byte is None:
            return None
        if byte == b"\0":
            return data.decode(errors="replace")
        data += byte
    return None


def _registers_at(
    code: Sequence[Instruction],
    call: int,
    function: int,
    read_word: Callable[[int], int | None],
) -> dict[str, int]:
    """The registers that hold a constant when the call at `call` is made: followed from
    the start of the straight run of code the call ends (after the last branch, or a
    label a branch of the function reaches) within `function`."""
    addresses = [insn.address for insn in code]
    end = _index(addresses, call)
    if end is None:
        return {}
    start = end
    while start > 0 and end - start < MAX_RUN:
        previous = code[start - 1]
        if previous.address < function or previous.is_data:
            break
        base = _base(previous.mnemonic)
        if (base in _RUN_ENDS and base not in _CALLS) or "pc" in previous.operands.split(",")[0]:
            break
        start -= 1
    values: dict[str, int] = {}
    for insn in code[start:end]:
        if _base(insn.mnemonic) in _CALLS:
            # A call keeps what r4-r11 hold (a constant kept for the next creation).
            values = {r: v for r, v in values.items() if r not in _CALLER_SAVED}
            continue
        _step(insn, values, read_word)
    return values


def _index(addresses: list[int], address: int) -> int | None:
    at = bisect.bisect_left(addresses, address)
    return at if at < len(addresses) and addresses[at] == address else None


def _base(mnemonic: str) -> str:
    return mnemonic.split(".", 1)[0]


def _step(
    insn: Instruction, values: dict[str, int], read_word: Callable[[int], int | None]
) -> None:
    """What `insn` leaves in the register it writes: a constant, or no longer known."""
    operands = [part.strip() for part in insn.operands.split(",")]
    base = _base(insn.mnemonic)
    destination = operands[0] if operands else ""
    if not _REGISTER.match(destination) or base.startswith(("str", "cmp", "cmn", "tst", "teq")):
        return
    if base.startswith(("ldm", "pop", "push", "stm")):
        for register in re.findall(r"r\d+", insn.operands):
            values.pop(register, None)
        return
    value = _value(insn, base, operands, values, read_word)
    if value is None:
        values.pop(destination, None)
    else:
        values[destination] = value & 0xFFFFFFFF
    if base in ("ldrd", "umull", "smull") and len(operands) > 1:
        values.pop(operands[1], None)


def _value(
    insn: Instruction,
    base: str,
    ops: list[str],
    values: dict[str, int],
    read_word: Callable[[int], int | None],
) -> int | None:
    plain = base[:-1] if base in ("movs", "adds", "subs", "lsls") else base
    immediate = _immediate(ops[-1]) if len(ops) > 1 else None
    if plain == "ldr" and "[pc" in insn.operands and (found := _LITERAL.search(insn.comment)):
        return read_word(int(found[1], 16))
    if plain == "add" and (found := _ADR.search(insn.comment)):
        return int(found[1], 16)
    if plain in ("mov", "movw") and len(ops) == 2:
        return immediate if immediate is not None else values.get(ops[1])
    if plain == "movt" and immediate is not None and ops[0] in values:
        return (values[ops[0]] & 0xFFFF) | (immediate << 16)
    source = values.get(ops[1] if len(ops) == 3 else ops[0]) if len(ops) > 1 else None
    if source is None or immediate is None:
        return None
    if plain == "lsl":
        return source << immediate
    if plain == "add":
        return source + immediate
    if plain == "sub":
        return source - immediate
    return None


def _immediate(text: str) -> int | None:
    if not text.startswith("#"):
        return None
    value = text[1:].split()[0]
    try:
        return int(value, 16) if value.lower().startswith(("0x", "-0x")) else int(value)
    except ValueError:
        return None
