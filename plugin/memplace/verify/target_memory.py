"""Running firmware under QEMU, unchanged, and reading its memory at the end of the run
(QEMU launched by `memplace.qemu`, the one launcher `memplace run` uses too).

Before the CPU starts, QEMU's generic loader writes a fill pattern over the areas to watch
(`-device loader,file=F,addr=A`). The run goes on until the firmware exits or the time is
up, which is normal for firmware that never exits (an RTOS). Then the machine is stopped
and the memories asked for are saved through QMP (`memsave`: as the CPU sees them, TCMs
included) and read back. The firmware's console (UART on QEMU's stdio, and semihosting) is
kept.

Semihosting's exit call ends QEMU at once, so the run is held at it first: QEMU starts
paused with its gdbstub, which gets a breakpoint on every semihosting call of the image
(`bkpt 0xab`); at each, the call's number (r0) says whether it is the exit (then memory is
read, and the exit code taken from the call) or anything else (then the call is stepped
over and the run goes on).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memplace import qemu
from memplace.errors import InputError, ToolError


@dataclass(frozen=True)
class Paint:
    """`size` bytes of `fill` written at `address` before the CPU starts."""

    address: int
    size: int
    fill: int


@dataclass(frozen=True)
class LatePaints:
    """Paints applied while the firmware runs, through the gdbstub: `at_start` when it
    reaches `start` (its `main`, after its startup code zeroed .bss: a heap the RTOS takes
    task stacks from), and at each call of a function in `creators` (its address → how it
    takes a task's stack: `static`, `xTaskCreateStatic`'s depth in r2 and buffer as its
    sixth argument; `parameters`, a TaskParameters_t in r0; `dynamic`, xTaskCreate's,
    from the heap), the stack it is given. Every such call is recorded too (entry, name,
    depth), whatever its arguments are, with the low end of the stack it gets: the buffer
    given, or for `dynamic`, what the `allocator` (the kernel's pvPortMalloc) returns during
    the call for a block of the stack's size."""

    start: int | None = None
    at_start: tuple[Paint, ...] = ()
    creators: tuple[tuple[int, str], ...] = ()
    fill: int = 0xA5
    name_length: int = 16
    allocator: int | None = None
    current: int | None = None  # the kernel's pxCurrentTCB: which task makes a call


@dataclass(frozen=True)
class CreatedAtRun:
    """A task creation call the run made: its entry, name and depth (words) as the call
    was given them, and the low end of the stack the task got (None: the run did not see
    it)."""

    entry: int
    name: str
    words: int
    stack: int | None = None


@dataclass(frozen=True)
class RunMemory:
    """What a run left: its exit code (None: stopped when its time was up), its console,
    the bytes of each area read at the end, by start address, and the areas memplace
    painted ((address, size) each)."""

    exit_code: int | None
    console: str
    memory: dict[int, bytes] = field(default_factory=dict)
    painted: tuple[tuple[int, int], ...] = ()
    created: tuple[CreatedAtRun, ...] = ()

    def was_painted(self, address: int) -> bool:
        return any(start <= address < start + size for start, size in self.painted)

    def read(self, address: int, size: int) -> bytes | None:
        for start, data in self.memory.items():
            if start <= address and address + size <= start + len(data):
                return data[address - start : address - start + size]
        return None

    def word(self, address: int) -> int | None:
        data = self.read(address, 4)
        return None if data is None else int.from_bytes(data, "little")


def run_and_read(
    machine: str,
    elf: Path,
    paints: Sequence[Paint],
    areas: Sequence[tuple[int, int]],
    timeout: float,
    calls: Sequence[int] = (),
    late: LatePaints | None = None,
) -> RunMemory:
    """Run `elf` on QEMU's `machine` with `paints` applied, until it exits or `timeout`
    seconds pass; then read `areas` ((address, size) each) of its memory. `calls` are the
    addresses of the image's semihosting calls (`semihosting_calls`)."""
    loads = [(paint.address, bytes([paint.fill]) * paint.size) for paint in paints]
    with qemu.paused(machine, elf, loads) as session:
        stub = _Stub(session.gdbstub())
        try:
            code = stub.run(calls, time.monotonic() + timeout, late or LatePaints())
            memory = session.read(areas)
        except (ToolError, OSError) as exc:
            raise ToolError(f"QEMU ended the run: {session.said() or exc}") from exc
        finally:
            stub.close()
        session.stop()
        console = session.console()
    painted = tuple((p.address, p.size) for p in (*paints, *stub.painted))
    return RunMemory(code, console, memory, painted, tuple(stub.created))


PAINT_CHUNK = 512
"""Bytes written per memory-write packet (QEMU's gdbstub takes packets of 4 KB)."""
ALLOCATION_DEPTH = 4096
"""How far below a creation call's stack pointer the allocation of its stack is made, at
most (the kernel's own frames between them)."""
MAX_PAINT = 1 << 20
"""A task stack larger than this is no stack a creation call gives: left unpainted."""

SEMIHOSTING_CALL = b"\xab\xbe"
"""`bkpt 0xab` in Thumb: the semihosting call of Arm's M profile."""
SYS_EXIT = 0x18
SYS_EXIT_EXTENDED = 0x20
APPLICATION_EXIT = 0x20026
"""ADP_Stopped_ApplicationExit: the reason code of a normal exit."""


def semihosting_calls(image: Any) -> list[int]:
    """Addresses of the `bkpt 0xab` instructions in an image's code."""
    found = []
    for function in image.iter_functions():
        code = image.read(function.address, function.end - function.address) or b""
        for offset in range(0, len(code) - 1, 2):
            if code[offset : offset + 2] == SEMIHOSTING_CALL:
                found.append(function.address + offset)
    return sorted(set(found))


@dataclass(frozen=True)
class _Creation:
    """A dynamic task creation being followed: its record, the stack pointer and return
    address of the call, the allocator, and the return of the allocation awaited (with the
    stack pointer it returns to)."""

    index: int
    sp: int
    back: int
    allocator: int
    task: int  # the running task's control block (pxCurrentTCB) when the call was made
    allocated: int | None = None
    allocated_sp: int | None = None


class _Stub(qemu.GdbStub):
    """The gdbstub driven to a semihosting exit, or to a time, following task creations."""

    def __init__(self, stub: qemu.GdbStub) -> None:
        super().__init__(stub.connection)
        self.painted: list[Paint] = []
        self.created: list[CreatedAtRun] = []
        self.creations: list[_Creation] = []
        self.current: int | None = None
        self.last_call: tuple[int, ...] = ()  # the last creation call's (`repeated`)
        self.placed: set[int] = set()  # the breakpoints placed for them

    def run(self, calls: Sequence[int], deadline: float, late: LatePaints) -> int | None:
        """Run until the image exits through semihosting (its exit code) or `deadline`
        passes (None), painting as `late` says on the way; the machine is left stopped."""
        creators = dict(late.creators)
        self.current = late.current
        stops = {*calls, *creators}
        if late.start is not None and late.at_start:
            stops.add(late.start)
        for address in sorted(stops):
            self.insert_breakpoint(address)
        while True:
            stop = self.go("c", deadline)
            if stop is None:
                return None
            pc = self.register(15)
            if pc == late.start and pc not in creators and pc not in calls:
                for paint in late.at_start:
                    self.paint(paint)
                self.remove_breakpoint(pc)  # once is enough
                continue
            if self.follow(pc, deadline):
                continue
            if pc in creators and self.repeated(pc, creators[pc]):
                self.step_over(pc, deadline)
                continue
            if pc in creators:
                self.record(creators[pc], late.name_length)
                stack = self.created_stack(creators[pc], late.fill)
                if stack is not None:
                    self.paint(stack)
                    self.created[-1] = replace(self.created[-1], stack=stack.address)
                elif creators[pc] == "dynamic" and late.allocator is not None:
                    self.await_allocation(late.allocator, stops)
                self.step_over(pc, deadline)
                continue
            if pc not in calls:
                if time.monotonic() >= deadline:
                    return None
                continue  # another stop (a breakpoint of the firmware's own): go on
            call = self.register(0)
            if call == SYS_EXIT:
                return 0 if self.register(1) == APPLICATION_EXIT else 1
            if call == SYS_EXIT_EXTENDED:
                pointer = self.register(1)
                block = self.readable(pointer, 8)
                if block is None:
                    raise InputError(
                        f"the firmware exits through semihosting (SYS_EXIT_EXTENDED) with its "
                        f"parameter block at 0x{pointer:08x}, which is no memory of the machine",
                        key="FIRMWARE.elf",
                    )
                reason, code = int.from_bytes(block[:4], "little"), block[4:]
                return int.from_bytes(code, "little") if reason == APPLICATION_EXIT else 1
            self.step_over(pc, deadline)

    def repeated(self, pc: int, kind: str) -> bool:
        """Whether this stop at a creation call is the last one again (QEMU at times stops
        twice at a call's first instruction): the same arguments, stack pointer and return
        address, and for a dynamic creation, the last still being followed (a second call
        from the same place cannot start before the first returns); for a static one, the
        same stack buffer too (two tasks cannot share one)."""
        sp = self.register(13)
        call = (pc, sp, *(self.register(n) for n in (0, 1, 2, 3, 14)))
        if kind == "static":
            call = (*call, int.from_bytes(self.memory(sp + 4, 4), "little"))
        again = call == self.last_call
        if again and kind == "dynamic":
            back = call[-1] & ~1
            again = any(c.sp == sp and c.back == back for c in self.creations)
        self.last_call = call
        return again

    def await_allocation(self, allocator: int, stops: set[int]) -> None:
        """Follow the dynamic creation call just entered until it returns: the allocation
        of its stack's size made on the way gives the stack's low end. (Not where a
        breakpoint of the run's own is already there.) Several may be followed at once:
        a creation can be preempted by a task that creates one."""
        back = self.register(14) & ~1
        if allocator in stops or back in stops or allocator == back:
            return
        index = len(self.created) - 1
        task = self.running_task()
        self.creations.append(_Creation(index, self.register(13), back, allocator, task))
        self.place_breakpoints()

    def running_task(self) -> int:
        """The kernel's pxCurrentTCB (0 where the image has none)."""
        if self.current is None:
            return 0
        return int.from_bytes(self.memory(self.current, 4), "little")

    def place_breakpoints(self) -> None:
        """Insert the breakpoints the creations followed need, remove the ones no longer."""
        wanted = {
            address
            for creation in self.creations
            for address in (creation.allocator, creation.back, creation.allocated)
            if address is not None
        }
        for address in sorted(self.placed - wanted):
            self.remove_breakpoint(address)
        for address in sorted(wanted - self.placed):
            self.insert_breakpoint(address)
        self.placed = wanted

    def follow(self, pc: int, deadline: float) -> bool:
        """Whether the stop at `pc` is one of the creations being followed, now handled:
        the allocator entered for a stack's size (then its return is awaited), that
        allocation returning (the stack's low end in r0), or the creation returning (its
        following ends). The same addresses reached from another context are stepped over."""
        if pc not in self.placed:
            return False
        sp = self.register(13)
        for number, creation in enumerate(self.creations):
            task = self.created[creation.index]
            if pc == creation.allocated and sp == creation.allocated_sp:
                self.created[creation.index] = replace(task, stack=self.register(0))
                self.creations[number] = replace(creation, allocated=None, allocated_sp=None)
                break
            if pc == creation.back and sp == creation.sp:
                del self.creations[number]
                break
            wanted = task.stack is None and creation.allocated is None
            near = 0 <= creation.sp - sp <= ALLOCATION_DEPTH  # (the creation's own stack)
            if (
                pc == creation.allocator
                and wanted
                and near
                and self.running_task() == creation.task
            ):
                if self.register(0) == 4 * task.words:
                    allocated = self.register(14) & ~1
                    self.creations[number] = replace(creation, allocated=allocated, allocated_sp=sp)
                break
        self.place_breakpoints()
        if pc in self.placed:
            self.step_over(pc, deadline)
        return True

    def step_over(self, pc: int, deadline: float) -> None:
        self.remove_breakpoint(pc)
        self.go("s", deadline + qemu.QMP_TIMEOUT)
        self.insert_breakpoint(pc)

    def record(self, kind: str, name_length: int) -> None:
        """The entry, name and depth of the task a creation call is making."""
        if kind == "parameters":
            block = self.memory(self.register(0), 12)
            entry = int.from_bytes(block[0:4], "little")
            name = int.from_bytes(block[4:8], "little")
            words = int.from_bytes(block[8:10], "little")
        else:
            entry, name, words = self.register(0), self.register(1), self.register(2)
        text = self.memory(name, name_length - 1).split(b"\0")[0] if name else b""
        self.created.append(CreatedAtRun(entry & ~1, text.decode(errors="replace"), words))

    def created_stack(self, kind: str, fill: int) -> Paint | None:
        """The stack a task-creating call is given, at its first instruction: for
        `static`, r2 words at its sixth argument (the second word above the stack
        pointer); for `parameters`, what the TaskParameters_t at r0 says."""
        if kind == "dynamic":
            return None  # from the heap, painted at the start
        if kind == "static":
            words = self.register(2)
            buffer = int.from_bytes(self.memory(self.register(13) + 4, 4), "little")
        else:
            block = self.memory(self.register(0), 24)
            words = int.from_bytes(block[8:10], "little")
            buffer = int.from_bytes(block[20:24], "little")
        if not buffer or not 0 < words <= MAX_PAINT // 4:
            return None
        return Paint(buffer, words * 4, fill)

    def paint(self, paint: Paint) -> None:
        """Write the paint's fill over its area, a packet at a time."""
        for offset in range(0, paint.size, PAINT_CHUNK):
            size = min(PAINT_CHUNK, paint.size - offset)
            if not self.write(paint.address + offset, bytes([paint.fill]) * size):
                return  # memory the target does not have: left unpainted, so no mark
        self.painted.append(paint)

    def memory(self, address: int, size: int) -> bytes:
        """`size` bytes at `address`, which the firmware named: no memory there is its
        fault (an input error), not a failure of QEMU."""
        data = self.readable(address, size)
        if data is None:
            raise InputError(
                f"the firmware points at {size} bytes at 0x{address:08x}, which are no memory "
                "of the machine",
                key="FIRMWARE.elf",
            )
        return data
