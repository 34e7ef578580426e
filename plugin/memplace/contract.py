"""The names the generated firmware and the verifier agree on: sections and symbols.

The one place for them. The generator gives them to the templates as values (`names()`,
and the `section`/`symbol` fields of what it renders), and the verifier reads the linked
images by the same functions, so a name changed here changes in the C, the linker
scripts and the checks at once. Read them at call time, as `contract.X` or through the
functions below, never copied into another module's globals (`from memplace.contract
import POOL_SECTION`): then a name changed here, even at run time, is the name everyone
uses (`tests/test_contract.py` changes them and builds, runs and verifies a project).

Standard library only, below every stage.
"""

from __future__ import annotations

from dataclasses import dataclass

# Sections memplace's linker scripts and startup code make.
POOL_SECTION = ".memplace.pool."  # + pool: a pool's storage
STACK_SECTION = ".memplace.stack."  # + stack: a stack, by its C name
FREE_SECTION = ".memplace.free."  # + memory, + .data/.bss: the application's room there
COPY_TABLE = ".memplace.copy_table"  # what the reset handler copies
ZERO_TABLE = ".memplace.zero_table"  # what the reset handler zeroes
RELEASE_TABLE = ".memplace.release_table"  # what a releaser copies of a released image
BOOT = ".memplace.boot"  # the reset handler and its copier, run from the load memory
BOOT_VECTORS = ".memplace.boot_vectors"  # the table a core boots from before its copy
VECTORS = ".vectors"  # + .<core> for a core that runs another core's image
TEXT = ".text"
EXIDX = ".ARM.exidx"
DATA = ".data"
BSS = ".bss"

# Symbols.
POOL_SYMBOL = "{workload}_pool_{pool}"
STACK_SYMBOL = "memplace_stack_{stack}"
STACK_START = "__memplace_stack_{stack}_start"
STACK_END = "__memplace_stack_{stack}_end"
VECTORS_SYMBOL = "memplace_vectors"  # + _<core> for a core that runs another core's image
BOOT_VECTORS_SYMBOL = "memplace_boot_vectors"
COPY_TABLE_START = "__memplace_copy_table_start"
COPY_TABLE_END = "__memplace_copy_table_end"
ZERO_TABLE_START = "__memplace_zero_table_start"
ZERO_TABLE_END = "__memplace_zero_table_end"
ROM_COPY_LOAD = "__memplace_rom_copy_load"
ROM_COPY_RUN = "__memplace_rom_copy_run"
ROM_COPY_SIZE = "__memplace_rom_copy_size"
HEAP_LIMIT = "__memplace_heap_limit"
MAILBOX_SYMBOL = "memplace_mailbox"
THREAD_FUNCTION = "memplace_thread_{stack}"

# The first word of a released core's release table, so its releaser knows the image is there.
RELEASE_TABLE_MAGIC = 0x4D504C43


def pool_section(pool: str) -> str:
    return POOL_SECTION + pool


def stack_section(stack: str) -> str:
    return STACK_SECTION + stack


def free_section(memory: str) -> str:
    """The prefix of the application's sections in a memory's free room (+ .data, .bss)."""
    return FREE_SECTION + memory


def vectors_section(core: str | None = None) -> str:
    """The vector table's section: the image's own, or that of a core joining the image."""
    return VECTORS if core is None else f"{VECTORS}.{core}"


def pool_of(section: str) -> str | None:
    """The pool whose storage `section` is, if it is one."""
    return section[len(POOL_SECTION) :] if section.startswith(POOL_SECTION) else None


def stack_of(section: str) -> str | None:
    """The stack (its C name) `section` is, if it is one."""
    return section[len(STACK_SECTION) :] if section.startswith(STACK_SECTION) else None


def is_area(section: str) -> bool:
    """Whether `section` is a pool or a stack: an area of its own, not the image's."""
    return pool_of(section) is not None or stack_of(section) is not None


def layout_sections() -> dict[str, str]:
    """The sections a core's layout places, by the part of the layout that holds each."""
    return {VECTORS: "vectors", TEXT: "code", EXIDX: "code", DATA: "data"}


def code_sections() -> tuple[str, ...]:
    """The code sections a copier moves out of the load memory before they run."""
    return (TEXT, EXIDX)


def pool_symbol(workload: str, pool: str) -> str:
    return POOL_SYMBOL.format(workload=workload, pool=pool)


def stack_symbol(stack: str) -> str:
    return STACK_SYMBOL.format(stack=stack)


def stack_start(stack: str) -> str:
    return STACK_START.format(stack=stack)


def stack_end(stack: str) -> str:
    return STACK_END.format(stack=stack)


def vectors_symbol(core: str | None = None) -> str:
    """The vector table's symbol: the image's own, or that of a core joining the image."""
    return VECTORS_SYMBOL if core is None else f"{VECTORS_SYMBOL}_{core}"


def thread_function(stack: str) -> str:
    """The function a worker thread (`stack` as the plan's stack usage names it) starts
    in: the root verify bounds that thread's stack from."""
    return THREAD_FUNCTION.format(stack=stack)


def rom_copy() -> tuple[str, str, str]:
    """The symbols that tell a boot ROM what to copy: load address, run address, bytes."""
    return (ROM_COPY_LOAD, ROM_COPY_RUN, ROM_COPY_SIZE)


@dataclass(frozen=True)
class Names:
    """The fixed names, as the templates read them (`names.copy_table`, ...)."""

    copy_table: str
    zero_table: str
    release_table: str
    boot: str
    boot_vectors: str
    vectors: str
    vectors_symbol: str
    boot_vectors_symbol: str
    copy_table_start: str
    copy_table_end: str
    zero_table_start: str
    zero_table_end: str
    rom_copy_load: str
    rom_copy_run: str
    rom_copy_size: str
    heap_limit: str
    mailbox: str


def names() -> Names:
    """The fixed names as they are now."""
    return Names(
        copy_table=COPY_TABLE,
        zero_table=ZERO_TABLE,
        release_table=RELEASE_TABLE,
        boot=BOOT,
        boot_vectors=BOOT_VECTORS,
        vectors=VECTORS,
        vectors_symbol=VECTORS_SYMBOL,
        boot_vectors_symbol=BOOT_VECTORS_SYMBOL,
        copy_table_start=COPY_TABLE_START,
        copy_table_end=COPY_TABLE_END,
        zero_table_start=ZERO_TABLE_START,
        zero_table_end=ZERO_TABLE_END,
        rom_copy_load=ROM_COPY_LOAD,
        rom_copy_run=ROM_COPY_RUN,
        rom_copy_size=ROM_COPY_SIZE,
        heap_limit=HEAP_LIMIT,
        mailbox=MAILBOX_SYMBOL,
    )


def fnv1a(data: bytes) -> int:
    """The checksum generated firmware computes over a constant's bytes (32-bit FNV-1a),
    which the verifier compares with the manifest's."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value
