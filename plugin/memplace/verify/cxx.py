"""C++ in an image: where the indirect calls of its runtime and its virtual calls go, read
from the image itself, so a C++ firmware's stacks are bounded without hints.

The toolchain's C++ runtime (libgcc's Arm EHABI unwinder, libsupc++, newlib's `raise`)
calls through pointers the program gives it. Each is resolved from what the image holds:

- the personality routines the unwinder calls are those the image's exception index
  names (`.ARM.exidx`, and the `.ARM.extab` entries it points at): a generic entry names
  its routine (`__gxx_personality_v0`), a compact one its index (`__aeabi_unwind_cpp_prN`);
- a handler the runtime keeps (terminate, unexpected, new, a signal's) is the initial value
  of the variable that holds it, or a function the program hands to its setter
  (`std::set_terminate(f)`), read as the constant argument of every call of the setter;
- an exception's destructor is the constant third argument of every `__cxa_throw`; its
  cleanup is libsupc++'s own (`__gxx_exception_cleanup`): foreign exceptions are assumed
  away;
- the unwinder's stop and trace functions are the arguments of every
  `_Unwind_ForcedUnwind` and `_Unwind_Backtrace` call (none: the call is never made).

A runtime function is known by its name and by the runtime's source its call is in (the
image's line table), so a program's own function of that name is left alone. A setter
called with a pointer that is no constant leaves its calls unresolved (a finding, as
before). Calls inlined from libstdc++'s `std_function.h` reach the managers and invokers a
`std::function` can hold. A virtual call (an indirect call in C++ code that loads its target
from slot K of the table an object's word points to: `ldr r3, [r0]; ldr r3, [r3, #K];
blx r3`) reaches the functions at slot K of the image's vtables (`_ZTV*`, `_ZTC*`, from the
symbol table): every address point of a vtable (a word after the offset-to-top and the
type_info word) plus K. Each resolution is an assumption the reports list. What the image
cannot tell comes from the bundled set `cxx-runtime`, and the depth of type_info's
recursive methods from the image's chains of bases and pointees; the runtime's depths bound
only cycles all of whose functions they name (`stack.Analysis`).

The unwinder's frames count on the thrower's stack: `__cxa_throw` calls them, so the call
graph holds them under the throw. A landing pad (a catch or a cleanup) is reached only
through the unwinder: the walk of a function the exception index gives handlers
(`frames.read_frames`' `landing`) goes on from every instruction no branch reached, with the
stack as it was at its calls.
"""

from __future__ import annotations

import bisect
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memplace.errors import Mark
from memplace.hints import CutCall, FunctionHint, StackHints, load_hints
from memplace.verify.callgraph import CallGraph
from memplace.verify.frames import (
    Call,
    Instruction,
    branch_target,
    operands,
    registers,
    split_mnemonic,
)
from memplace.verify.image import Function, Image

EXIDX = ".ARM.exidx"
CANTUNWIND = 1
COMPACT = 0x8000_0000
BUNDLED = "cxx-runtime"
"""The bundled hints set for what the image cannot tell (recursion depths of the runtime's
error paths, the unwinder's stack switch): applied when the image holds the runtime."""
RUNTIME_TELLS = ("__cxa_throw", "__gxx_personality_v0", "__gnu_Unwind_RaiseException")

_SOURCES = (".cc", ".cpp", ".cxx", ".c++", ".C", ".hpp", ".hh", ".hxx", ".h++", ".tcc")
_VTABLES = ("_ZTV", "_ZTC")
_TYPE_INFO_SOURCES = frozenset(
    (
        "tinfo.h",
        "tinfo.cc",
        "tinfo2.cc",
        "class_type_info.cc",
        "si_class_type_info.cc",
        "vmi_class_type_info.cc",
        "pbase_type_info.cc",
        "pointer_type_info.cc",
        "pmem_type_info.cc",
        "dyncast.cc",
        "eh_arm.cc",
        "eh_call.cc",
        "eh_personality.cc",
    )
)
"""libsupc++'s sources whose virtual calls are calls of type_info methods (catching,
matching and casting by type): the type of a thrown object or of a catch clause."""
_TYPE_INFO_VTABLES = ("_ZTVSt9type_info", "_ZTVN10__cxxabiv1")
"""The vtables of std::type_info and of the runtime's classes derived from it."""
_REGISTERS = frozenset([*(f"r{n}" for n in range(13)), "ip", "lr", "fp", "sl", "sb"])
_CALLEE_SAVED = frozenset(("r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "sb", "sl", "fp"))
_LOOK_BACK = 24  # instructions searched back from a call for its operands


@dataclass(frozen=True)
class ExceptionIndex:
    """What `.ARM.exidx` says: the personality routines it names, and the functions with
    handlers (landing pads)."""

    personalities: frozenset[int] = frozenset()
    compact: frozenset[int] = frozenset()  # __aeabi_unwind_cpp_prN indexes
    handlers: frozenset[int] = frozenset()
    complete: bool = True  # False: an entry points at bytes the image does not hold


def exception_index(image: Image) -> ExceptionIndex:
    section = image.get_section(EXIDX)
    data = image.read(section.address, section.size) if section is not None else None
    if section is None or data is None:
        return ExceptionIndex()
    personalities: set[int] = set()
    compact: set[int] = set()
    handlers: set[int] = set()
    complete = True
    for at in range(0, len(data) // 8 * 8, 8):
        word, entry = struct.unpack_from("<II", data, at)
        place = section.address + at
        function = _prel31(word, place) & ~1
        if entry == CANTUNWIND:
            continue
        if entry & COMPACT:
            compact.add((entry >> 24) & 0xF)
            continue
        table = _prel31(entry, place + 4)
        raw = image.read(table, 4)
        handlers.add(function)
        if raw is None:
            complete = False
            continue
        (first,) = struct.unpack("<I", raw)
        if first & COMPACT:
            compact.add((first >> 24) & 0xF)
        else:
            personalities.add(_prel31(first, table) & ~1)
    return ExceptionIndex(
        frozenset(personalities), frozenset(compact), frozenset(handlers), complete
    )


def _prel31(word: int, place: int) -> int:
    offset = word & 0x7FFF_FFFF
    if offset & 0x4000_0000:
        offset -= 0x8000_0000
    return (place + offset) & 0xFFFF_FFFF


@dataclass(frozen=True)
class Handler:
    """A pointer the runtime keeps and calls: the variables holding its initial value, and
    the functions that set it, with the argument register the pointer is passed in."""

    what: str
    variables: tuple[str, ...] = ()
    setters: tuple[tuple[str, str], ...] = ()
    family: tuple[str, ...] = ()  # functions passing the pointer on (not a program's call)


HANDLERS = {
    "terminate": Handler(
        "the terminate handler",
        ("_ZN10__cxxabiv119__terminate_handlerE",),
        (("_ZSt13set_terminatePFvvE", "r0"),),
    ),
    "unexpected": Handler(
        "the unexpected handler",
        ("_ZN10__cxxabiv120__unexpected_handlerE",),
        (("_ZSt14set_unexpectedPFvvE", "r0"),),
    ),
    "new": Handler(
        "the new handler",
        ("_ZN12_GLOBAL__N_113__new_handlerE",),
        (("_ZSt15set_new_handlerPFvvE", "r0"),),
    ),
    "signal": Handler(
        "a signal handler",
        (),
        (("signal", "r1"), ("_signal_r", "r2")),
        ("signal", "_signal_r"),
    ),
    "destructor": Handler(
        "a thrown object's destructor",
        (),
        (("__cxa_throw", "r2"), ("__cxa_init_primary_exception", "r2")),
        ("__cxa_throw", "__cxa_init_primary_exception"),
    ),
    "stop": Handler(
        "a forced unwind's stop function",
        (),
        (("_Unwind_ForcedUnwind", "r1"), ("__gnu_Unwind_ForcedUnwind", "r1")),
        ("_Unwind_ForcedUnwind", "___Unwind_ForcedUnwind", "__gnu_Unwind_ForcedUnwind"),
    ),
    "exitproc": Handler(
        "a function registered to run at exit (atexit, C++ static destructors)",
        (),
        (
            ("atexit", "r0"),
            ("on_exit", "r0"),
            ("__cxa_atexit", "r0"),
            ("__aeabi_atexit", "r1"),
            ("__register_exitproc", "r1"),
        ),
        ("atexit", "on_exit", "__cxa_atexit", "__aeabi_atexit", "__register_exitproc"),
    ),
    "trace": Handler(
        "a backtrace's callback",
        (),
        (("_Unwind_Backtrace", "r0"), ("__gnu_Unwind_Backtrace", "r0")),
        ("_Unwind_Backtrace", "___Unwind_Backtrace", "__gnu_Unwind_Backtrace"),
    ),
}

# The runtime's functions that call through those pointers (by name, or a prefix or a part
# between `*`), what they call (`personality` and `cleanup` are the unwinder's), and the
# runtime's sources the calls are in: a function of that name whose calls are elsewhere
# (a program's own `operator new`) is no runtime's, and is not resolved.
_UNWINDER = ("unwind-arm-common.inc",)
_EH = ("eh_throw.cc", "eh_ptr.cc")
CALLERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "__gnu_Unwind_RaiseException": (("personality",), _UNWINDER),
    "__gnu_Unwind_Resume": (("personality",), _UNWINDER),
    "__gnu_Unwind_Resume_or_Rethrow": (("personality",), _UNWINDER),
    "unwind_phase2": (("personality",), _UNWINDER),
    "unwind_phase2_forced": (("personality", "stop"), _UNWINDER),
    "__gnu_Unwind_Backtrace": (("personality", "trace"), _UNWINDER),
    "_Unwind_DeleteException": (("cleanup",), _UNWINDER),
    "_ZN10__cxxabiv111__terminateEPFvvE": (("terminate",), ("eh_terminate.cc",)),
    "_ZN10__cxxabiv112__unexpectedEPFvvE": (("unexpected",), ("eh_terminate.cc",)),
    "_Znw*": (("new",), ("new_op.cc", "new_opa.cc", "new_opnt.cc", "new_opant.cc")),
    "_Zna*": (("new",), ("new_opv.cc", "new_opva.cc", "new_opvnt.cc", "new_opvant.cc")),
    "raise": (("signal",), ("signal.c",)),
    "__call_exitprocs": (("exitproc",), ("__call_atexit.c",)),
    "exit": (("stdio_cleanup",), ("exit.c",)),
    "__libc_fini_array": (("fini",), ("fini.c",)),
    "__libc_init_array": (("init",), ("init.c",)),
    "_raise_r": (("signal",), ("signal.c",)),
    "*__gxx_exception_cleanup*": (("destructor",), _EH),
    "*__gxx_dependent_exception_cleanup*": (("destructor",), _EH),
    "*__gxx_decrement_refcount*": (("destructor",), _EH),
    "_ZNSt15__exception_ptr13exception_ptr10_M_releaseEv": (("destructor",), _EH),
}
CLEANUPS = ("__gxx_exception_cleanup", "__gxx_dependent_exception_cleanup")
ARRAYS = {"fini": ("fini_array",), "init": ("preinit_array", "init_array")}
"""The kinds of call that go through arrays of function pointers the linker script lays
out (newlib's `__libc_init_array` and `__libc_fini_array`), and the arrays' names."""


@dataclass(frozen=True)
class Resolution:
    """Indirect calls resolved from the image: the call's address → its targets."""

    sites: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    hints: StackHints | None = None  # the bundled set, when the image holds the runtime
    assumptions: tuple[str, ...] = ()


def resolve(image: Image, graph: CallGraph, index: ExceptionIndex | None = None) -> Resolution:
    """Every indirect call of the image's C++ runtime and every virtual call, resolved where
    the image tells."""
    index = index if index is not None else exception_index(image)
    kinds: dict[str, tuple[int, ...] | None] = {}
    said: list[str] = []
    sites: dict[int, tuple[int, ...]] = {}
    code = graph.code
    starts = [insn.address for insn in code]
    vtables = _Vtables(image, graph)
    for address in sorted(graph.nodes):
        node = graph.nodes[address]
        indirect = [call for call in node.calls if call.target is None]
        if not indirect:
            continue
        wanted, sources = _kinds_of(node.function.names)
        if wanted and not _in_sources(indirect, sources):
            continue  # no runtime's code, or no line to tell: stays unresolved
        if wanted:
            targets: set[int] = set()
            for kind in wanted:
                if kind not in kinds:
                    kinds[kind] = _targets(kind, image, graph, index, code, starts)
                found = kinds[kind]
                if found is None:
                    break
                targets.update(found)
            else:
                for call in indirect:
                    sites[call.address] = tuple(sorted(targets))
                said.append(
                    f"{node.name} calls {_described(wanted)}: {_names(graph, targets)} "
                    f"({image.path.name})"
                )
            continue  # a pointer the image does not tell stays unresolved: a finding
        handled = [c for c in indirect if _source(c.location) == STD_FUNCTION]
        if handled:
            handlers = _function_handlers(graph)
            for call in handled:
                sites[call.address] = handlers
            where = ", ".join(sorted({str(c.location) for c in handled}))
            said.append(
                f"std::function's calls in {node.name} at {where} reach its managers and "
                f"invokers: {_names(graph, handlers)} ({image.path.name})"
            )
        if not _cxx(node.function.names, [c.location for c in indirect]):
            continue
        for call in indirect:
            if call in handled:
                continue
            slots = _slot(code, starts, call.address, node.function.address, node.function.end)
            if not slots or not vtables.points:
                continue
            # The runtime's own virtual calls in its type_info code are calls of type_info
            # methods: only the type_info classes' vtables hold their targets.
            classes = _TYPE_INFO_VTABLES if _type_matching(call.location) else ()
            found_targets = tuple(
                sorted({t for slot in slots for t in vtables.at_slot(slot, classes)})
            )
            sites[call.address] = found_targets
            where = call.location or f"0x{call.address:x}"
            numbers = ", ".join(str(slot // 4) for slot in slots)
            tables = "the type_info classes' vtables" if classes else "the image's vtables"
            said.append(
                f"virtual call in {node.name} at {where} (slot {numbers}) reaches slot "
                f"{numbers} of {tables}: {_names(graph, found_targets)} ({image.path.name})"
            )
    hints = None
    if any(name in graph.by_name for name in RUNTIME_TELLS):
        hints = load_hints([BUNDLED]) or StackHints()
        said += [f"{line} ({BUNDLED}, {image.path.name})" for line in bundled_said(hints)]
    forced = _never_forced(image, graph, code, starts)
    if forced is not None:
        hints = forced if hints is None else hints.merged(forced)
        said += [
            f"{cut.caller} never calls {cut.callee}: no forced unwind is started (no call "
            f"of _Unwind_ForcedUnwind) ({image.path.name})"
            for cut in forced.cut_calls
        ]
    depth = _type_info_depth(image)
    casts = sorted(
        {
            name
            for node in graph.nodes.values()
            for name in node.function.names
            if name.startswith(_TYPE_INFO_METHODS)
        }
    )
    if depth is not None and casts:
        mark = Mark(image.path.name, 1, 1)
        more = StackHints(
            recursion=tuple(FunctionHint(name, depth, mark) for name in casts),
            source=f"{image.path.name} (type_info)",
            lenient=frozenset({image.path.name}),
        )
        hints = more if hints is None else hints.merged(more)
        said.append(
            f"recursion depth {depth}: the type_info methods (catches, casts through "
            f"bases and pointees), the longest chain of bases and pointees of the image's "
            f"type_info objects ({image.path.name})"
        )
    return Resolution(sites, hints, tuple(dict.fromkeys(said)))


_FORCED = "unwind_phase2_forced"
_RESUMES = ("__gnu_Unwind_Resume", "__gnu_Unwind_Resume_or_Rethrow")


def _never_forced(
    image: Image, graph: CallGraph, code: Sequence[Instruction], starts: Sequence[int]
) -> StackHints | None:
    """The unwinder's resumes go on with a forced unwind (`unwind_phase2_forced`) only when
    one was started (its stop function is set only by `_Unwind_ForcedUnwind`): with no such
    call in the image, those calls are cut."""
    if (
        _FORCED not in graph.by_name
        or _targets("stop", image, graph, ExceptionIndex(), code, starts) != ()
    ):
        return None
    mark = Mark(image.path.name, 1, 1)
    cuts = tuple(
        CutCall(caller, _FORCED, mark, mark) for caller in _RESUMES if caller in graph.by_name
    )
    return StackHints(cut_calls=cuts, source=image.path.name, lenient=frozenset({image.path.name}))


_TYPE_INFO_METHODS = tuple(
    f"_ZNK10__cxxabiv1{len(name)}{name}"
    for name in (
        "__class_type_info",
        "__si_class_type_info",
        "__vmi_class_type_info",
        "__pbase_type_info",
        "__pointer_type_info",
        "__pointer_to_member_type_info",
    )
)
# The type_info classes whose objects link to others, by their vtable: where the links are
# (word indexes), or "vmi" for a base count and the bases after it. Every other type_info
# (a class without bases, a fundamental, enum, array or function type) links to none.
_LINKS: dict[str, tuple[int, ...] | str] = {
    "_ZTVN10__cxxabiv120__si_class_type_infoE": (2,),
    "_ZTVN10__cxxabiv121__vmi_class_type_infoE": "vmi",
    "_ZTVN10__cxxabiv119__pointer_type_infoE": (3,),
    "_ZTVN10__cxxabiv129__pointer_to_member_type_infoE": (3, 4),
}


def _type_info_depth(image: Image) -> int | None:
    """The most type_info objects on one chain of links, from the image's `_ZTI*` objects:
    an `__si_class_type_info`'s base (+8), a `__vmi_class_type_info`'s bases (count at +12,
    bases from +16, 8 bytes each), a pointer's pointee (+12) and a pointer to member's
    pointee and class (+12, +16). None when a link leads to no type_info object of the
    symbol table."""
    kinds: dict[int, tuple[int, ...] | str] = {}
    for name, links in _LINKS.items():
        symbol = image.get_symbol(name)
        if symbol is not None:
            kinds[symbol.address + 8] = links
    infos = {s.address: s for s in image.symbols if s.name.startswith("_ZTI") and s.size >= 8}
    linked: dict[int, list[int]] = {}
    for address, symbol in infos.items():
        data = image.read(address, symbol.size) or b""
        words = [w for (w,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])]
        kind = kinds.get(words[0]) if words else None
        if kind == "vmi":
            count = words[3] if len(words) > 3 else None
            if count is None or len(words) < 4 + 2 * count:
                return None
            linked[address] = [words[4 + 2 * n] for n in range(count)]
        elif isinstance(kind, tuple):
            if len(words) <= max(kind):
                return None
            linked[address] = [words[n] for n in kind]
        else:
            linked[address] = []
    memo: dict[int, int] = {}

    def depth(at: int, seen: frozenset[int]) -> int | None:
        if at in memo:
            return memo[at]
        if at not in linked or at in seen:
            return None
        longest = 0
        for link in linked[at]:
            below = depth(link, seen | {at})
            if below is None:
                return None
            longest = max(longest, below)
        memo[at] = longest + 1
        return memo[at]

    found = [depth(address, frozenset()) for address in sorted(linked)]
    if any(d is None for d in found):
        return None
    return max((d for d in found if d is not None), default=None)


def bundled_said(hints: StackHints) -> list[str]:
    """The bundled set's hints, as the reports list them."""
    said = [f"recursion depth {h.value}: {h.function}" for h in hints.recursion]
    said += [f"frame of {h.value} bytes: {h.function}" for h in hints.frames]
    said += [f"call cut: {cut}" for cut in hints.cut_calls]
    return said


def _kinds_of(names: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a runtime function of these names calls through pointers, and its sources."""
    for name in names:
        for pattern, (kinds, sources) in CALLERS.items():
            if _matches(pattern, name):
                return kinds, sources
    return (), ()


def _in_sources(calls: Sequence[Call], sources: Sequence[str]) -> bool:
    """Whether every call is located, by the image's line table, in one of the sources."""
    for call in calls:
        if call.location is None or Path(call.location.split(":", 1)[0]).name not in sources:
            return False
    return True


def _matches(pattern: str, name: str) -> bool:
    if pattern.startswith("*") and pattern.endswith("*"):
        return pattern.strip("*") in name
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern


def _array(image: Image, name: str) -> list[int] | None:
    """The words of the array the linker script brackets with `__NAME_start` and
    `__NAME_end` (`__init_array_start`): none where it defines neither (newlib declares
    them weak, so both are then 0 and its loop runs no time); None when the image does not
    tell."""
    start, end = image.get_symbol(f"__{name}_start"), image.get_symbol(f"__{name}_end")
    if start is None and end is None:
        return []
    if start is None or end is None:
        return None
    if end.address == start.address:
        return []
    words = image.read(start.address, end.address - start.address)
    if words is None:
        return None
    return [w for (w,) in struct.iter_unpack("<I", words[: len(words) // 4 * 4])]


def _described(kinds: Sequence[str]) -> str:
    words = {
        "personality": "the personality routines",
        "cleanup": "an exception's cleanup",
        "stdio_cleanup": "stdio's cleanup",
        "fini": "the .fini_array functions",
        "init": "the .preinit_array and .init_array functions (static constructors)",
    }
    return " and ".join(words.get(kind) or HANDLERS[kind].what for kind in kinds)


def _names(graph: CallGraph, targets: Iterable[int]) -> str:
    names = sorted(graph.nodes[t].name for t in targets if t in graph.nodes)
    return ", ".join(names) if names else "none (the call is never made)"


def _targets(
    kind: str,
    image: Image,
    graph: CallGraph,
    index: ExceptionIndex,
    code: Sequence[Instruction],
    starts: Sequence[int],
) -> tuple[int, ...] | None:
    """The functions a pointer of this kind can hold; None when the image does not tell."""
    if kind == "personality":
        if not index.complete:
            return None
        found = set(index.personalities)
        for number in index.compact:
            routine = graph.by_name.get(f"__aeabi_unwind_cpp_pr{number}")
            if routine is not None:
                found.add(routine)
        if not found <= set(graph.nodes):
            return None  # a routine at an address that is no function
        return tuple(sorted(found))
    if kind == "cleanup":
        return tuple(
            sorted(
                address
                for address, node in graph.nodes.items()
                if any(cleanup in name for name in node.function.names for cleanup in CLEANUPS)
            )
        )
    if kind == "stdio_cleanup":  # what newlib's __sinit leaves in the reent structure
        cleanup = graph.by_name.get("_cleanup_r")
        if cleanup is None:
            # Without stdio nothing sets it; a newlib whose stdio leaves another: not told.
            return None if "__sinit" in graph.by_name else ()
        return (cleanup,)
    values: set[int] = set()
    if kind in ARRAYS:
        for array in ARRAYS[kind]:
            words = _array(image, array)
            if words is None:
                return None
            values.update(words)
        return _functions(values, graph)
    handler = HANDLERS[kind]
    for variable in handler.variables:
        symbol = image.get_symbol(variable)
        section = image.section_at(symbol.address) if symbol is not None else None
        if symbol is None or section is None:
            return None  # the runtime keeps it elsewhere: the image does not tell
        raw = image.read(symbol.address, 4)
        if raw is None and not section.nobits:
            return None
        values.add(0 if raw is None else struct.unpack("<I", raw)[0])  # .bss: zero
    family = {graph.by_name[name] for name in handler.family if name in graph.by_name}
    for setter, register in handler.setters:
        target = graph.by_name.get(setter)
        if target is None:
            continue
        for caller, node in graph.nodes.items():
            if caller in family:
                continue
            for call in node.calls:
                if call.target != target:
                    continue
                value = _argument(image, code, starts, call.address, register, node.function)
                if value is None:
                    return None
                values.add(value)
    return _functions(values, graph)


def _functions(values: Iterable[int], graph: CallGraph) -> tuple[int, ...] | None:
    """The functions pointers of these values call; None when one is no function."""
    found = set()
    for value in set(values) - {0, 1, 0xFFFF_FFFF}:  # null, SIG_IGN, SIG_ERR
        function = value & ~1
        if function not in graph.nodes:
            return None  # a pointer into no function: the image does not tell
        found.add(function)
    return tuple(sorted(found))


def _argument(
    image: Image,
    code: Sequence[Instruction],
    starts: Sequence[int],
    call: int,
    register: str,
    function: Function,
) -> int | None:
    """The constant `register` holds at the call at `call`: a literal load, a small move,
    or a `movw` and `movt` pair (Armv8-M Baseline's libstdc++, and code built to keep
    constants out of flash) in the straight run of code before it; None when it is not
    one."""
    at = bisect.bisect_left(starts, call)
    joins = _joins(code, starts, function.address, function.end)
    if call in joins:
        return None  # other paths join at the call
    high: int | None = None  # a `movt`'s upper half, waiting for its `movw`
    for before in range(at - 1, max(at - _LOOK_BACK, -1), -1):
        insn = code[before]
        if insn.address < function.address or insn.is_data:
            return None
        base, conditional = split_mnemonic(insn.mnemonic)
        ops = operands(insn.operands)
        if base in _BRANCH_NAMES or "pc" in _written(base, insn.operands, ops):
            return None  # another path's end: what follows is not this one's
        if register not in _written(base, insn.operands, ops):
            if insn.address in joins:
                return None  # other paths join here
            continue
        if conditional or ops[0] != register:
            return None
        immediate = len(ops) == 2 and ops[1].startswith("#")
        if base == "movt" and immediate and high is None:
            high = int(ops[1][1:], 0) & 0xFFFF
            continue  # the lower half was moved in before it
        if high is not None:
            return (high << 16) | int(ops[1][1:], 0) if base == "movw" and immediate else None
        if base == "ldr" and (literal := _LITERAL.search(insn.comment)):
            raw = image.read(int(literal[1], 16), 4)
            return None if raw is None else int(struct.unpack("<I", raw)[0])
        if base in ("mov", "movs", "movw") and immediate:
            return int(ops[1][1:], 0)
        return None
    return None


_LITERAL = re.compile(r"@ \(?([0-9a-f]+) <")


STD_FUNCTION = "std_function.h"
"""libstdc++'s std::function: it calls only the managers and invokers it stores."""


def _source(location: str | None) -> str | None:
    return None if location is None else Path(location.split(":", 1)[0]).name


def _type_matching(location: str | None) -> bool:
    """Whether a call lies in libsupc++'s type-matching code, by the line table: one of
    _TYPE_INFO_SOURCES in a `libsupc++` folder (a program's own file of such a name is not)."""
    if location is None:
        return False
    path = Path(location.split(":", 1)[0])
    return path.name in _TYPE_INFO_SOURCES and path.parent.name == "libsupc++"


def _function_handlers(graph: CallGraph) -> tuple[int, ...]:
    """Every manager and invoker a std::function can hold: `_Function_handler<...>`'s
    `_M_invoke` and `_M_manager`, and `_Function_base::_Base_manager<...>::_M_manager`."""
    found = set()
    for address, node in graph.nodes.items():
        for name in node.function.names:
            handler = "17_Function_handler" in name and (
                "9_M_invoke" in name or "10_M_manager" in name
            )
            if handler or ("13_Base_manager" in name and "10_M_manager" in name):
                found.add(address)
    return tuple(sorted(found))


def _cxx(names: Sequence[str], locations: Iterable[str | None]) -> bool:
    """Whether a function is C++ code: a mangled name, or its calls in a C++ source."""
    if any(name.startswith("_Z") for name in names):
        return True
    for location in locations:
        if location is None:
            continue
        file = location.split(":", 1)[0]
        if Path(file).suffix in _SOURCES:
            return True
    return False


def _slot(
    code: Sequence[Instruction], starts: Sequence[int], call: int, function: int, end: int
) -> tuple[int, ...] | None:
    """The byte offsets of the vtable slots a virtual call at `call` loads its target from:
    the target register loaded from [rV, #K] where rV was loaded from an object ([rO, #n]),
    with additions to rV on the way (-O0's `adds r3, #8`) and copies of the registers
    (`mov ip, r4`), along every path of the function that leads to the call (GCC's
    speculative devirtualisation loads the slot, compares it and branches to the call);
    None when a path is not of that shape, or the paths are too many to follow."""
    at = bisect.bisect_left(starts, call)
    if at >= len(code) or code[at].address != call:
        return None
    base, _ = split_mnemonic(code[at].mnemonic)
    ops = operands(code[at].operands)
    if base not in ("blx", "bx") or not ops or ops[0] not in _REGISTERS:
        return None
    first = bisect.bisect_left(starts, function)
    last = bisect.bisect_left(starts, end)
    before = _predecessors(code, first, last)
    if before is None:
        return None
    slots: set[int] = set()
    seen: set[tuple[int, str, int, bool]] = set()
    work = [(i, ops[0], 0, False) for i in before.get(at, ())]
    if not work:
        return None
    while work:
        if len(seen) > _PATH_STEPS:
            return None
        state = work.pop()
        if state in seen:
            continue
        seen.add(state)
        index, tracked, slot, loaded = state
        step = _back(code[index], tracked, slot, loaded)
        if step is None:
            return None
        if isinstance(step, int):
            slots.add(step)
            continue
        following = before.get(index, ())
        if not following:
            return None  # the function's entry, with nothing found
        work += [(i, *step) for i in following]
    return tuple(sorted(slots))


_PATH_STEPS = 512


def _back(
    insn: Instruction, tracked: str, slot: int, loaded: bool
) -> int | tuple[str, int, bool] | None:
    """One instruction walked back from a call: the slot when it loads the vtable pointer,
    what is followed before it, or None when it breaks the shape."""
    if insn.is_data:
        return None
    name, conditional = split_mnemonic(insn.mnemonic)
    args = operands(insn.operands)
    if name in ("bl", "blx"):
        # A call keeps r4-r11 (AAPCS) and may change every other register.
        return (tracked, slot, loaded) if tracked in _CALLEE_SAVED else None
    written = _written(name, insn.operands, args)
    if tracked not in written:
        return tracked, slot, loaded
    if conditional:
        return None
    offset = _load(name, args, tracked)
    if offset is not None:
        if loaded:
            return slot  # the vtable pointer, loaded from the object
        return offset[0], offset[1], True
    if loaded and name in ("add", "adds", "addw") and (added := _added(args)) is not None:
        return added[0], slot + added[1], True
    if name in ("mov", "movs") and len(args) == 2 and args[1] in _REGISTERS:
        return args[1], slot, loaded
    return None


_BRANCH_NAMES = frozenset(("b", "bx", "bl", "blx", "cbz", "cbnz", "tbb", "tbh"))
_NO_DESTINATION = (
    *("str", "cmp", "cmn", "tst", "teq", "push", "it", "nop", "vstr", "vpush", "vcmp"),
    *("dmb", "dsb", "isb", "pld", "bkpt", "svc"),
)


def _written(name: str, text: str, args: Sequence[str]) -> set[str]:
    """The core registers an instruction writes (its destinations, a base register written
    back, a loaded register list)."""
    written: set[str] = set()
    if name == "pop" or name.startswith("ldm"):
        written.update(registers(text))
    elif name.startswith("strex") and args:
        written.add(args[0])  # its status
    elif (
        args
        and name not in _BRANCH_NAMES
        and not name.startswith(_NO_DESTINATION)
        and not name.startswith("stm")
    ):
        written.add(args[0].rstrip("!"))
        if name.startswith(("ldrd", "ldrexd", "umull", "smull", "umlal", "smlal", "vmov")):
            written.update(args[1:2])
    if args and args[0].endswith("!") and name.startswith(("ldm", "stm")):
        written.add(args[0].rstrip("!"))
    if match := re.search(r"\[(\w+)(?:, [^\]]*)?\]!|\[(\w+)\], ", text):
        written.add(match[1] or match[2])
    return written


_ENDS = ("b", "bx", "tbb", "tbh", "udf")


def _predecessors(
    code: Sequence[Instruction], first: int, last: int
) -> dict[int, list[int]] | None:
    """For each instruction of a function (indexes in [first, last)), those that can run
    just before it: the one before it unless that one ends its path, and every branch and
    jump table entry to it; None when a jump table cannot be read."""
    index = {code[i].address: i for i in range(first, last)}
    before: dict[int, list[int]] = {}
    for i in range(first, last):
        insn = code[i]
        if insn.is_data:
            continue
        name, conditional = split_mnemonic(insn.mnemonic)
        args = operands(insn.operands)
        target = branch_target(insn)
        if target is not None and name in ("b", "cbz", "cbnz") and target in index:
            before.setdefault(index[target], []).append(i)
        if name in ("tbb", "tbh") or (name == "ldr" and args and args[0] == "pc"):
            entries = _table(code, i, last, name)
            if entries is None:
                return None
            for entry in entries:
                if entry in index:
                    before.setdefault(index[entry], []).append(i)
        ends = name in _ENDS and not (name == "b" and conditional)
        returns = (name == "pop" or name.startswith("ldm")) and "pc" in registers(insn.operands)
        if (ends or returns or (args and args[0] == "pc")) and not conditional:
            continue
        if i + 1 < last and not code[i + 1].is_data:
            before.setdefault(i + 1, []).append(i)
    return before


def _table(code: Sequence[Instruction], at: int, last: int, name: str) -> list[int] | None:
    """The targets of the jump table at `at`: `tbb`/`tbh` (bytes or halfwords after it,
    twice each from the table's start) or `ldr pc, [rX, rY, lsl #2]` (addresses); None for
    another way of writing the pc."""
    data = bytearray()
    for insn in code[at + 1 : last]:
        if not insn.is_data:
            break
        size = {".word": 4, ".short": 2, ".2byte": 2, ".byte": 1}.get(insn.mnemonic, 4)
        for value in insn.operands.split(","):
            data += int(value.strip(), 0).to_bytes(size, "little")
    start = code[at].address + 4
    if name == "tbb":
        return [start + 2 * b for b in data]
    if name == "tbh":
        return [start + 2 * h for (h,) in struct.iter_unpack("<H", data[: len(data) // 2 * 2])]
    if re.search(r", lsl #2\]$", code[at].operands):
        return [w & ~1 for (w,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])]
    if "[pc" in code[at].operands or "[sp" in code[at].operands:
        return []  # a veneer's jump or a return: nothing of the function follows
    return None


def _joins(code: Sequence[Instruction], starts: Sequence[int], start: int, end: int) -> set[int]:
    """The addresses the branches in [start, end) go to."""
    first, last = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
    return {t for insn in code[first:last] if (t := branch_target(insn)) is not None}


def _load(name: str, args: Sequence[str], register: str) -> tuple[str, int] | None:
    """(base register, offset) of the word `ldr rD, [rB, #K]` or `ldrd rD, rE, [rB, #K]`
    loads into `register`; None for any other instruction."""
    if name == "ldr" and len(args) == 2 and args[0] == register:
        address = args[1]
        offset = 0
    elif name == "ldrd" and len(args) == 3 and register in args[:2]:
        address = args[2]
        offset = 4 * args[:2].index(register)
    else:
        return None
    match = re.fullmatch(r"\[(r\d+|ip|lr|fp|sl|sb)(?:, #(-?\d+))?\]", address)
    if match is None:
        return None
    return match[1], int(match[2] or 0) + offset


def _added(args: Sequence[str]) -> tuple[str, int] | None:
    """(source register, amount) of `adds rD, #K` or `add rD, rS, #K`."""
    if len(args) == 2 and args[1].startswith("#"):
        return args[0], int(args[1][1:], 0)
    if len(args) == 3 and args[2].startswith("#") and args[1].startswith("r"):
        return args[1], int(args[2][1:], 0)
    return None


class _Vtables:
    """The image's vtables: each address point (a word of a `_ZTV`/`_ZTC` object after its
    offset-to-top and type_info words, that is after a word that is no code pointer)."""

    def __init__(self, image: Image, graph: CallGraph) -> None:
        self.graph = graph
        self.points: list[tuple[str, bytes, int]] = []  # (name, data, offset of the point)
        for symbol in image.symbols:
            if not symbol.name.startswith(_VTABLES) or symbol.kind != "object" or symbol.size < 12:
                continue
            data = image.read(symbol.address, symbol.size)
            if data is None:
                continue
            words = [w for (w,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])]
            for n in range(2, len(words)):
                if not self._code(words[n - 1]):
                    self.points.append((symbol.name, data, n * 4))

    def _code(self, word: int) -> bool:
        return bool(word & 1) and (word & ~1) in self.graph.nodes

    def at_slot(self, slot: int, classes: tuple[str, ...] = ()) -> tuple[int, ...]:
        """The functions at `slot` of every vtable, or of those whose names start with one
        of `classes` (none: all)."""
        found = set()
        for name, data, point in self.points:
            if classes and not name.startswith(classes):
                continue
            at = point + slot
            if at + 4 <= len(data):
                (word,) = struct.unpack_from("<I", data, at)
                if self._code(word):
                    found.add(word & ~1)
        return tuple(sorted(found))
