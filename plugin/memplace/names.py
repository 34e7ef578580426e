"""Names the generated project can hold: every name the loaders accept becomes valid C, a
valid GNU ld script and distinct identifiers.

A name is a C identifier (`source.Node.name`). Where the project uses a board's name bare,
it may not be a word of the language there (`kind_problem`): a pool is a struct member (no
C11 or C23 keyword), a memory a linker region (no word of the linker script language, none
of the region names memplace generates), a core a CMake target. Beyond that, the generator
derives names from several at once: header macros from upper-cased pool, buffer and stack
names (`<W>_<POOL>_SIZE`, `<W>_<BUFFER>_OFFSET`, `<W>_STACK_<CONTEXT>_BUDGET`,
`<W>_<BUFFER>_STACK_OFFSET`), linker regions from memory, pool and stack names (`<memory>`,
`pool_<pool>`, `stack_<context>`), C symbols from stacks (`memplace_stack_<context>`,
`<context>_thread<N>` for worker threads). `check_derived` finds two things of a board and
a workload whose derived names would be the same, and refuses them as an input error
naming both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memplace.errors import InputError, Mark

if TYPE_CHECKING:  # the loaders use the keyword checks: no import of them at run time
    from memplace.board import Board
    from memplace.workload import Buffer, Workload

C_KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Bool",
        "_Complex",
        "_Generic",
        "_Imaginary",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        "alignas",
        "alignof",
        "bool",
        "constexpr",
        "false",
        "nullptr",
        "static_assert",
        "thread_local",
        "true",
        "typeof",
        "typeof_unqual",
        "_BitInt",
        "_Decimal32",
        "_Decimal64",
        "_Decimal128",
    ]
)
"""C11's keywords and C23's new ones: none can name a struct member or a variable."""

LINKER_KEYWORDS = frozenset(
    [
        "ABSOLUTE",
        "ADDR",
        "AFTER",
        "ALIGN",
        "ALIGNOF",
        "ASSERT",
        "AT",
        "BEFORE",
        "BLOCK",
        "BYTE",
        "COMMON",
        "CONSTANT",
        "CONSTRUCTORS",
        "COPY",
        "CREATE_OBJECT_SYMBOLS",
        "DATA_SEGMENT_ALIGN",
        "DATA_SEGMENT_END",
        "DATA_SEGMENT_RELRO_END",
        "DEFINED",
        "DSECT",
        "ENTRY",
        "EXCLUDE_FILE",
        "EXTERN",
        "FILL",
        "FLOAT",
        "FORCE_COMMON_ALLOCATION",
        "GROUP",
        "HIDDEN",
        "INCLUDE",
        "INFO",
        "INHIBIT_COMMON_ALLOCATION",
        "INPUT",
        "INSERT",
        "KEEP",
        "LD_FEATURE",
        "LENGTH",
        "LOADADDR",
        "LONG",
        "MAX",
        "MEMORY",
        "MIN",
        "NEXT",
        "NOCROSSREFS",
        "NOCROSSREFS_TO",
        "NOFLOAT",
        "NOLOAD",
        "ONLY_IF_RO",
        "ONLY_IF_RW",
        "ORIGIN",
        "OUTPUT",
        "OUTPUT_ARCH",
        "OUTPUT_FORMAT",
        "OVERLAY",
        "PHDRS",
        "PROVIDE",
        "PROVIDE_HIDDEN",
        "QUAD",
        "REGION_ALIAS",
        "SEARCH_DIR",
        "SECTIONS",
        "SEGMENT_START",
        "SHORT",
        "SIZEOF",
        "SIZEOF_HEADERS",
        "SORT",
        "SORT_BY_ALIGNMENT",
        "SORT_BY_INIT_PRIORITY",
        "SORT_BY_NAME",
        "SORT_NONE",
        "SQUAD",
        "STARTUP",
        "SUBALIGN",
        "TARGET",
        "l",
        "len",
        "o",
        "org",
    ]
)
"""Words of GNU ld's script language (and MEMORY's short forms `o`, `org`, `l`, `len`):
a memory so named is a region the script cannot declare."""

GENERATED_REGIONS = ("pool_", "stack_")
"""Prefixes of the linker regions memplace itself generates for pools and stacks."""


CMAKE_TARGETS = frozenset(
    ["all", "clean", "depend", "edit_cache", "help", "install", "package", "rebuild_cache", "test"]
)
"""Targets CMake and Ninja make themselves: a core (whose image is a target) cannot be one."""


GENERATED_PREFIX = "memplace_"
"""Functions and data of the generated C start so: no handler of the user's may."""

C_LIBRARY = frozenset(
    [
        *("memchr", "memcmp", "memcpy", "memmove", "memset", "strcat", "strchr", "strcmp"),
        *("strcoll", "strcpy", "strcspn", "strerror", "strlen", "strncat", "strncmp"),
        *("strncpy", "strpbrk", "strrchr", "strspn", "strstr", "strtok", "strxfrm", "errno"),
        *("main", "app_main", "abort", "exit", "_exit", "_sbrk", "_write", "_read"),
    ]
)
"""Names the generated C's headers (string.h, errno.h) and runtime declare or define: a
handler so named would be declared twice, differently."""


def handler_problem(name: str) -> str | None:
    """Why an isr's entry cannot be `name` in a generated vector table, or None."""
    if name.startswith(GENERATED_PREFIX):
        return f"names starting with {GENERATED_PREFIX!r} are kept for memplace's generated code"
    if name in C_LIBRARY:
        return f"{name!r} is a function of the C library or runtime the generated code uses"
    return None


def kind_problem(kind: str, name: str) -> str | None:
    """Why `name` cannot name a board part of this kind, or None. Pools are struct members
    in the generated header, memories regions of the linker script, cores CMake targets."""
    if kind == "pool" and name in C_KEYWORDS:
        return f"{name!r} is a C keyword; the generated header could not name a pool so"
    if kind == "memory" and name in LINKER_KEYWORDS:
        return f"{name!r} is a word of the linker script language; rename the memory"
    if kind == "memory":
        for prefix in GENERATED_REGIONS:
            if name.startswith(prefix):
                return (
                    f"memory names starting with {prefix!r} are kept for the linker regions "
                    "memplace generates; rename the memory"
                )
    if kind == "core" and name in CMAKE_TARGETS:
        return f"{name!r} is a target CMake makes itself; rename the core"
    return None


def check_derived(board: Board, workload: Workload) -> None:
    """Refuse two things whose generated names would be the same (see the module doc)."""
    seen: dict[str, tuple[str, Mark | None]] = {}
    for stem, owner, buffer, mark in _stems(board, workload):
        first, where = seen.setdefault(stem, (owner, mark))
        if first == owner:
            continue
        place = f" ({where})" if where is not None else ""
        message = (
            f"{owner} and {first}{place} would give the generated project the same name "
            f"({stem}); rename one of them"
        )
        if buffer is not None:
            raise buffer.error("name", message)
        raise InputError(message, mark, "name")


def _stems(
    board: Board, workload: Workload
) -> Iterator[tuple[str, str, Buffer | None, Mark | None]]:
    """Each derived name's distinctive part, with who it comes from, the buffer (for its
    place in the workload file) and where the board declares it. Board parts come first,
    so a clash blames the workload's buffer where there is one."""
    for memory in board.memories:
        yield f"region {memory}", f"memory {memory!r}", None, None
    for pool in board.pools.values():
        owner = f"pool {pool.name!r}"
        yield pool.name.upper(), owner, None, pool.mark
        yield f"region pool_{pool.name}", owner, None, pool.mark
    for context in board.contexts.values():
        for label, _ in context.stacks():
            stack = label.removesuffix(".stack")
            c_name = stack.replace(".", "_")
            owner = f"stack {stack!r}"
            yield f"STACK_{c_name.upper()}", owner, None, None
            yield f"region stack_{c_name}", owner, None, None
            yield f"symbol {c_name}", owner, None, None
    for buffer in workload.buffers:
        owner = f"buffer {buffer.name!r}"
        yield buffer.name.upper(), owner, buffer, buffer.mark("name")
        if buffer.scope.endswith(".stack") or buffer.scope == "local":
            yield f"{buffer.name.upper()}_STACK", owner, buffer, buffer.mark("name")
