"""The keys each mapping of a board file accepts, declared once as data (`BOARD_KEYS` and
friends): the reader refuses anything else, and `schema.py` builds the JSON Schema from the
same tables."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    """One key a board file mapping accepts: its name, whether it must be there, its meaning."""

    name: str
    help: str
    required: bool = False


BOARD_KEYS = (
    Key("memplace", "format version; must be board/v1", required=True),
    Key("name", "the board's name (letters, digits, '.', '_', '-')", required=True),
    Key("summary", "one line about the board"),
    Key("extends", "a bundled board name or a path relative to this file; maps merge by key"),
    Key("cores", "every CPU that runs code; one image (ELF) per core", required=True),
    Key("devices", "bus masters that touch memory but run no code of ours (DMA, NPU)"),
    Key("memories", "the physical memory map", required=True),
    Key("pools", "planning pools carved out of memories"),
    Key("contexts", "execution contexts, each with a stack budget", required=True),
    Key("run", "how the board runs: under QEMU, or flashed through a debug probe"),
    Key(
        "stack_hints",
        "what the call graph cannot tell about this board's code (indirect calls, recursion, "
        "alloca, frames), each entry as in a stack_hints/v1 file",
    ),
)


CORE_KEYS = (
    Key("cpu", "the -mcpu of this core", required=True),
    Key("float_abi", "hard, softfp or soft (default soft)"),
    Key(
        "layout",
        "which memory holds each part of this core's own image (required unless `image` is set)",
    ),
    Key(
        "boot",
        "address of the vector table the core starts from, as it sees it "
        "(default: the start of its vectors memory)",
    ),
    Key("release", "how another core starts this one; absent: it starts at reset"),
    Key("rtos", "none, or the RTOS that switches this core's tasks (default none)"),
    Key(
        "interrupts",
        "device interrupt lines of its vector table (the vendor's IRQ count), or "
        "{lines: N, names: {LINE: NAME}} with the vendor's names (NAME_IRQHandler); a "
        "generated table holds 16 + lines entries (default 0: the core exceptions only)",
    ),
    Key(
        "image",
        "another core whose image (ELF) this core runs, with contexts, stacks and a vector "
        "table of its own; it releases this core",
    ),
)


LAYOUT_FIELDS = (
    Key("vectors", "memory of the vector table", required=True),
    Key("code", "memory of .text and .rodata", required=True),
    Key("data", "memory of .data and .bss", required=True),
    Key("load", "memory the image is programmed into (default: the code memory)"),
    Key(
        "copy",
        "what copies vectors and code from `load` to where they run before the core runs "
        "them: reset (the core's own reset code), releaser (the core that releases it) or "
        "boot-rom (the chip's boot ROM); absent: they run where they are programmed",
    ),
)


RELEASE_KEYS = (
    Key("by", "the core whose startup code releases this one", required=True),
    Key("steps", "register writes that release it, in order"),
    Key("handshake", "a start-up protocol instead of steps: rp2040-sio-fifo"),
)


STEP_KEYS = (
    Key("write", "address of a 32-bit register to write `value` to"),
    Key("set", "address of a 32-bit register in which to set the bits of `mask`"),
    Key("clear", "address of a 32-bit register in which to clear the bits of `mask`"),
    Key("value", "the word to write"),
    Key("mask", "the bits to set or clear"),
)


DEVICE_KEYS = (Key("kind", "dma, npu or other", required=True),)


MEMORY_KEYS = (
    Key("origin", "system address of the first byte", required=True),
    Key("size", "bytes; an integer or a number with K or M", required=True),
    Key("attrs", "letters of rwx", required=True),
    Key("kind", "flash, rom, tcm, sram, dram or other (default other)"),
    Key("access", "the cores and devices that reach this memory", required=True),
    Key("latency", "lower is faster; orders pool preference (default 1)"),
    Key("views", "{core: address} where a core sees this memory elsewhere"),
)


POOL_KEYS = (
    Key("memory", "the memory the pool is carved from", required=True),
    Key("kind", "workspace (buffers) or constant", required=True),
    Key("size", "bytes; leave it out to take what is left of a memory with no image sections"),
)


CONTEXT_KEYS = (
    Key("core", "the core it runs on", required=True),
    Key("kind", "thread, isr or task (an RTOS task; default thread)"),
    Key("entry", "root function of its call graph (default main, or <name>_handler for isr)"),
    Key("stack", "{memory, size}: its stack (per thread); required for threads"),
    Key(
        "threads", "worker threads this context starts, each with a stack like `stack` (default 0)"
    ),
    Key(
        "max_stack_alloca",
        "bytes: largest buffer planned on this stack under scope global (default 0)",
    ),
    Key("preempts", "contexts on the same core whose stacks this one runs on when it fires"),
    Key(
        "priority",
        "isr only: its preemption level, lower preempts higher (default 0); generated "
        "projects write it into the priority bits every core of the architecture implements "
        "(levels 0..7, or 0..3 on Armv6-M and Armv8-M Baseline)",
    ),
    Key("irq", "isr only: its device interrupt line; vector table entry 16 + irq is its entry"),
    Key("task", "task only: the name the RTOS knows the task by (default: the context's)"),
)


STACK_KEYS = (
    Key("memory", "the memory the stack is in", required=True),
    Key("size", "bytes per thread, a multiple of 8", required=True),
)


TASK_STACK_KEYS = (
    Key("size", "bytes of a stack the RTOS or the application allocates", required=True),
)


RUN_KEYS = (
    Key("qemu", "present when the board runs under QEMU"),
    Key("flash", "how a real board is programmed"),
    Key(
        "simulator",
        "true when the target is a simulator, whose semihosting is always there (default: "
        "true when the board runs under QEMU and has no flash)",
    ),
    Key(
        "on_exit",
        "what the firmware does when it ends or faults with no debugger attached: spin, "
        "reset (through AIRCR) or hook (calls memplace_on_exit(code)); default spin",
    ),
)


INTERRUPT_KEYS = (
    Key("lines", "device interrupt lines of the vector table", required=True),
    Key("names", "{LINE: NAME}: the vendor's name of a line; its handler is NAME_IRQHandler"),
)


QEMU_KEYS = (Key("machine", "the QEMU -M machine name", required=True),)


FLASH_KEYS = (
    Key("runner", "which runner programs the board (`memplace flash --help`)", required=True),
    Key("target", "pyOCD target name (runner pyocd)"),
    Key("config", "OpenOCD config file or files (runner openocd)"),
    Key("frequency", "SWD/JTAG clock in Hz, when the probe's default does not suit the board"),
)


def key_names(keys: Iterable[Key]) -> list[str]:
    return [key.name for key in keys]


def required_keys(keys: Iterable[Key]) -> list[str]:
    return [key.name for key in keys if key.required]
