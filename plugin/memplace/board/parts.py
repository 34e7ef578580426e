"""The parts of a board, frozen: memories, cores and their image layouts, devices, pools,
stacks, contexts and how the board runs; and the constants the rest of memplace reads
(CPUs, kinds, alignments)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memplace.errors import Mark

VERSION = "board/v1"

CPUS = {
    "cortex-m0": "armv6-m",
    "cortex-m0plus": "armv6-m",
    "cortex-m3": "armv7-m",
    "cortex-m4": "armv7e-m",
    "cortex-m7": "armv7e-m",
    "cortex-m23": "armv8-m.base",
    "cortex-m33": "armv8-m.main",
    "cortex-m55": "armv8.1-m.main",
    "cortex-m85": "armv8.1-m.main",
}

FLOAT_ABIS = ("hard", "softfp", "soft")

MEMORY_KINDS = ("flash", "rom", "tcm", "sram", "dram", "other")

DEVICE_KINDS = ("dma", "npu", "other")

POOL_KINDS = ("workspace", "constant")

CONTEXT_KINDS = ("thread", "isr", "task")

# The parts of a core's own image, each in the memory its `layout` names (`ImageLayout`).
IMAGE_PARTS = ("vectors", "code", "data", "load")

# What copies an image out of its load memory before it runs (`layout.copy`): the core's
# own reset code, the core that releases it, or the boot ROM.
COPIERS = ("reset", "releaser", "boot-rom")

# Cores without a VTOR: their vector table cannot move off the address they boot from.
CPUS_WITHOUT_VTOR = ("cortex-m0",)


OPERANDS = {"write": "value", "set": "mask", "clear": "mask"}

BOARD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# Reserved areas (pools and stacks) start on these boundaries, in bytes.
POOL_ALIGN = 64

STACK_ALIGN = 8

# Bytes a memory holding image sections keeps free of pools and stacks, at the least.
IMAGE_ROOM = 1024

ADDRESS_SPACE = 1 << 32

MAX_PRIORITY = 255

RELEASE_HANDSHAKES = ("rp2040-sio-fifo",)

# Device interrupt lines each CPU's NVIC can have at most (the Technical Reference
# Manuals: Cortex-M0/M0+ 32, Cortex-M3/M4/M7/M23 240, Cortex-M33/M55/M85 480).
MAX_INTERRUPTS = {
    "cortex-m0": 32,
    "cortex-m0plus": 32,
    "cortex-m3": 240,
    "cortex-m4": 240,
    "cortex-m7": 240,
    "cortex-m23": 240,
    "cortex-m33": 480,
    "cortex-m55": 480,
    "cortex-m85": 480,
}

# Exception 16 + K of the vector table is device interrupt line K.
FIRST_IRQ_EXCEPTION = 16


def vector_align(interrupts: int) -> int:
    """The boundary a vector table of 16 + `interrupts` entries starts on, for VTOR: its
    size rounded up to a power of two, and at least 128 bytes (Armv7-M and Armv8-M)."""
    size = 4 * (FIRST_IRQ_EXCEPTION + interrupts)
    return max(128, 1 << (size - 1).bit_length())


# Where the vector table of a core that runs another core's image goes by default, past
# that core's own: 2K holds the largest Cortex-M table (16 + 496 entries of 4 bytes).
JOINED_VECTORS_OFFSET = 0x800


@dataclass(frozen=True)
class Memory:
    name: str
    origin: int
    size: int
    attrs: str
    kind: str
    access: tuple[str, ...]
    latency: int
    views: Mapping[str, int]

    def address_for(self, core: str) -> int:
        """Where `core` sees this memory's first byte."""
        return self.views.get(core, self.origin)

    def shift(self, core: str) -> int:
        """What to add to a system address in this memory to get the address `core` sees:
        the one place a per-core view is applied."""
        return self.address_for(core) - self.origin

    def readable(self) -> bool:
        return "r" in self.attrs

    def writable(self) -> bool:
        return "w" in self.attrs

    def executable(self) -> bool:
        return "x" in self.attrs


@dataclass(frozen=True)
class ImageLayout:
    """Which memory holds each part of a core's own image: the `layout` of a core in the
    board file."""

    vectors: str
    code: str
    data: str
    load: str
    copy: str | None = None
    """What copies the vectors and code out of `load` before they run (one of `COPIERS`);
    None when they run where they are programmed."""

    def memories(self) -> tuple[str, ...]:
        return (self.vectors, self.code, self.data, self.load)

    @property
    def moves_vectors(self) -> bool:
        """Whether the core's reset code copies its vector table out of `load`: it then
        boots on a small table of its own in `load`, and points VTOR at the copy."""
        return self.copy == "reset" and self.vectors != self.load

    @property
    def boot_memory(self) -> str:
        """The memory of the vector table the core starts from (where `boot` is)."""
        return self.load if self.moves_vectors else self.vectors

    def roles(self, memory: str) -> tuple[str, ...]:
        """The parts of the image (vectors, code, data, load) that live in `memory`."""
        return tuple(
            key for key, name in zip(IMAGE_PARTS, self.memories(), strict=True) if name == memory
        )


@dataclass(frozen=True)
class ReleaseStep:
    """One 32-bit register access: `write` stores `value`; `set`/`clear` change `value`'s bits."""

    action: str
    address: int
    value: int


@dataclass(frozen=True)
class Release:
    """How a core that does not start at reset is started: core `by` performs `steps`, or
    the start-up protocol `handshake` names."""

    by: str
    steps: tuple[ReleaseStep, ...]
    handshake: str | None = None


@dataclass(frozen=True)
class Core:
    name: str
    cpu: str
    float_abi: str
    layout: ImageLayout
    boot: int = 0
    release: Release | None = None
    rtos: str = "none"
    interrupts: int = 0
    """Device interrupt lines of its vector table (after the 16 core exceptions)."""
    interrupt_names: tuple[tuple[int, str], ...] = ()
    """(line, name) of the lines the vendor names; line K's handler is `<name>_IRQHandler`."""
    # The core whose image (ELF) this one runs; None: its own image, laid out by `layout`.
    image: str | None = None

    def line_handler(self, line: int) -> str:
        """The CMSIS name of device interrupt line `line`'s handler: the vendor's
        `<NAME>_IRQHandler`, else `Interrupt<line>_Handler` (CMSIS's generic devices)."""
        named = dict(self.interrupt_names).get(line)
        return f"{named}_IRQHandler" if named else f"Interrupt{line}_Handler"

    @property
    def image_name(self) -> str:
        """The image this core runs: its own, or the one `image` names."""
        return self.image or self.name


@dataclass(frozen=True)
class Device:
    name: str
    kind: str


@dataclass(frozen=True)
class Pool:
    """A planning pool: a fixed area [address, address + size) of one memory."""

    name: str
    memory: str
    kind: str
    size: int
    address: int
    mark: Mark | None = field(default=None, compare=False, repr=False)
    """Where the board file declares the pool, for errors about it."""


@dataclass(frozen=True)
class Stack:
    """A stack area [address, address + size); it grows down from the top."""

    memory: str
    size: int
    address: int


@dataclass(frozen=True)
class Context:
    """An execution context. `stack` is the stack its entry runs on (None for an isr that
    runs on the stacks it preempts); a context that declares `threads: N` also starts N
    worker threads, each on a stack of its own (`thread_stacks`, the size of `stack`)."""

    name: str
    core: str
    kind: str
    entry: str
    stack: Stack | None
    max_stack_alloca: int
    preempts: tuple[str, ...]
    priority: int
    threads: int = 0
    thread_stacks: tuple[Stack, ...] = ()
    task: str | None = None
    """For a task: the name the RTOS gives it."""
    budget: int | None = None
    """For a task whose stack the RTOS or the application allocates: its size."""
    irq: int | None = None
    """For an isr of a device: its interrupt line (vector table entry 16 + irq)."""
    mark: Mark | None = field(default=None, compare=False, repr=False)
    """Where the board file declares the context, for errors about it."""

    def stack_budget(self) -> int | None:
        """Bytes of the stack this context's entry runs on, wherever it is."""
        return self.stack.size if self.stack is not None else self.budget

    def stacks(self) -> tuple[tuple[str, Stack], ...]:
        """Every stack of this context with its label: its own, then each thread's."""
        own = ((f"{self.name}.stack", self.stack),) if self.stack else ()
        threads = tuple(
            (f"{self.name}.thread{index}.stack", stack)
            for index, stack in enumerate(self.thread_stacks)
        )
        return own + threads


@dataclass(frozen=True)
class QemuRun:
    machine: str


@dataclass(frozen=True)
class FlashRun:
    """A debug-probe runner: pyOCD with a `target`, or OpenOCD with `config` files; and the
    probe clock (`frequency`, Hz) if the board needs one."""

    runner: str
    target: str | None = None
    config: tuple[str, ...] = ()
    frequency: int | None = None


# How firmware ends when no debugger or simulator takes its exit: `on_exit` of `run`.
ON_EXIT = ("spin", "reset", "hook")


@dataclass(frozen=True)
class Run:
    qemu: QemuRun | None = None
    flash: FlashRun | None = None
    simulator: bool | None = None
    """Whether the target is a simulator (semihosting always there); None: it is when the
    board runs under QEMU and is never flashed."""
    on_exit: str = "spin"
    """What the firmware does at its end (or on a fault) when no debugger is attached."""

    @property
    def is_simulator(self) -> bool:
        if self.simulator is not None:
            return self.simulator
        return self.qemu is not None and self.flash is None


@dataclass(frozen=True)
class Area:
    """A pool or a stack inside a memory, at the address one core sees it."""

    kind: str
    name: str
    address: int
    size: int


@dataclass(frozen=True)
class MappedMemory:
    """A memory as one core sees it: where, which parts of its image, who else reaches it."""

    memory: Memory
    address: int
    roles: tuple[str, ...]
    shared_with: tuple[str, ...]
    areas: tuple[Area, ...]


def human_size(size: int) -> str:
    """Bytes as a board file would spell them: 2M, 512K, or a plain number."""
    for unit, scale in (("M", 1024 * 1024), ("K", 1024)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)
