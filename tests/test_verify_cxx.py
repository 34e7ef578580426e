"""What memplace reads of C++ from an image: virtual calls' slots and the vtables they reach,
the pointers the C++ runtime calls through (personality routines from the exception index,
handlers from their setters' constant arguments), the depth of type_info's recursive casts,
and the landing pads and jump tables the walk must follow. The listings are `objdump -d
--no-show-raw-insn` text, as it prints them; the C++ QEMU test (`test_product.py`) checks
the same on a real image, end to end."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

from memplace.hints import bundled_hints, load_hints
from memplace.verify.callgraph import CallGraph, merge
from memplace.verify.cxx import exception_index, resolve
from memplace.verify.frames import parse_objdump, read_frames
from memplace.verify.image import Image, Section, Symbol
from memplace.verify.stack import Analysis

CODE = 0x100
DATA = 0x1000


def _image(functions: dict[str, tuple[int, int]], data: dict[str, tuple[int, list[int]]]) -> Image:
    """An image of functions (name: (address, size)) in .text from CODE and words (name:
    (address, words)) in .text or in .rodata from DATA."""
    end = max((a + 4 * len(w) for a, w in data.values() if a >= DATA), default=DATA)
    blobs = {".text": bytearray(DATA - CODE), ".rodata": bytearray(end - DATA)}
    symbols = [Symbol(n, a, s, "func") for n, (a, s) in functions.items()]
    for name, (address, words) in data.items():
        section, base = (".rodata", DATA) if address >= DATA else (".text", CODE)
        struct.pack_into(f"<{len(words)}I", blobs[section], address - base, *words)
        symbols.append(Symbol(name, address, 4 * len(words), "object"))
    sections = (
        Section(".text", CODE, DATA - CODE, executable=True),
        Section(".rodata", DATA, end - DATA),
    )
    contents = {name: bytes(blob) for name, blob in blobs.items()}
    return Image(Path("app.elf"), sections, tuple(symbols), contents=contents)


def _graph(image: Image, listing: str, landing: frozenset[int] = frozenset()) -> CallGraph:
    code = parse_objdump(listing)

    def word(address: int) -> int | None:
        raw = image.read(address, 4)
        return None if raw is None else int(struct.unpack("<I", raw)[0])

    frames = read_frames(image.iter_functions(), code, word, landing)
    return replace(merge(frames, []), code=tuple(code))


def _located(graph: CallGraph, function: int, location: str) -> CallGraph:
    """The graph with the indirect calls of `function` located at `location` (the line
    table of a real image does that)."""
    node = graph.nodes[function]
    calls = tuple(c if c.target else replace(c, location=location) for c in node.calls)
    nodes = {**graph.nodes, function: replace(node, calls=calls)}
    return replace(graph, nodes=nodes)


# Two classes' vtables: offset-to-top, type_info, then the slots (Thumb addresses).
VTABLES = {
    "_ZTI1A": (0x1000, [0, 0]),
    "_ZTV1A": (0x1010, [0, 0x1000, 0x141, 0x151]),  # A::f, A::g
    "_ZTV1B": (0x1020, [0, 0x1000, 0x161, 0x151]),  # B::f, A::g
}
CLASSES = {"_ZNK1A1fEv": (0x140, 4), "_ZNK1A1gEv": (0x150, 4), "_ZNK1B1fEv": (0x160, 4)}
LEAVES = "  140:\tbx\tlr\n  142:\tnop\n  150:\tbx\tlr\n  152:\tnop\n  160:\tbx\tlr\n  162:\tnop\n"


def _resolved(caller: str, listing: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The targets the one indirect call of `caller` (at 0x100) resolves to, and what the
    resolution assumes."""
    image = _image({caller: (CODE, 0x40), **CLASSES}, VTABLES)
    graph = _graph(image, listing + LEAVES)
    resolution = resolve(image, graph)
    (call,) = [c for c in graph.nodes[CODE].calls if c.target is None]
    return resolution.sites.get(call.address, ()), resolution.assumptions


def test_a_virtual_call_reaches_its_slot_of_every_vtable() -> None:
    # -O2: the vtable pointer from the object, the function from its slot 1 (byte 4).
    targets, said = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #4]\n"
        "  106:\tblx\tr3\n"
        "  108:\tpop\t{r3, pc}\n",
    )
    assert targets == (0x150,)  # A::g, in both vtables
    assert said == (
        "virtual call in _Z3useRK1A at 0x106 (slot 1) reaches slot 1 of the image's vtables: "
        "_ZNK1A1gEv (app.elf)",
    )
    targets, _ = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0]\n"
        "  104:\tldr\tr3, [r3, #0]\n"
        "  106:\tblx\tr3\n"
        "  108:\tpop\t{r3, pc}\n",
    )
    assert targets == (0x140, 0x160)  # slot 0: A::f and B::f


def test_the_runtimes_type_matching_calls_reach_only_type_info_methods() -> None:
    # __cxa_type_match (libsupc++'s eh_arm.cc) calls a method of a catch clause's type_info
    # through its slot 0: of the image's vtables only the type_info classes' hold its
    # targets, not a program's A::f and B::f at the same slot (which, when they throw, made
    # a cycle through the unwinder that no hint could bound).
    listing = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #0]\n"
        "  106:\tblx\tr3\n"
        "  108:\tpop\t{r3, pc}\n"
    )
    do_catch = "_ZNK10__cxxabiv117__class_type_info10__do_catchEPKSt9type_infoPPvj"
    vtable = {"_ZTVN10__cxxabiv117__class_type_infoE": (0x1030, [0, 0x1000, 0x171, 0x151])}
    functions = {"__cxa_type_match": (CODE, 0x40), do_catch: (0x170, 4), **CLASSES}
    image = _image(functions, {**VTABLES, **vtable})
    graph = _graph(image, listing + LEAVES + "  170:\tbx\tlr\n  172:\tnop\n")
    eh_arm = "/build/gcc/src/libstdc++-v3/libsupc++/eh_arm.cc:86:29"
    resolution = resolve(image, _located(graph, CODE, eh_arm))
    assert resolution.sites[0x106] == (0x170,)
    assert resolution.assumptions[0] == (
        f"virtual call in __cxa_type_match at {eh_arm} (slot 0) reaches slot 0 of the "
        f"type_info classes' vtables: {do_catch} (app.elf)"
    )
    # The same call in a program's source reaches slot 0 of every vtable, also in a file of
    # the program's that happens to share a name with libsupc++'s.
    for where in ("app/main.cpp:20:5", "app/eh_arm.cc:20:5"):
        resolution = resolve(image, _located(graph, CODE, where))
        assert resolution.sites[0x106] == (0x140, 0x160, 0x170)


def test_virtual_calls_at_o0_and_as_tail_calls_are_read() -> None:
    # -O0: the object spilled, the slot added to the vtable pointer.
    targets, _ = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r7, lr}\n"
        "  102:\tsub\tsp, #8\n"
        "  104:\tadd\tr7, sp, #0\n"
        "  106:\tstr\tr0, [r7, #4]\n"
        "  108:\tldr\tr3, [r7, #4]\n"
        "  10a:\tldr\tr3, [r3, #0]\n"
        "  10c:\tadds\tr3, #4\n"
        "  10e:\tldr\tr3, [r3, #0]\n"
        "  110:\tldr\tr0, [r7, #4]\n"
        "  112:\tblx\tr3\n"
        "  114:\tadds\tr7, #8\n"
        "  116:\tmov\tsp, r7\n"
        "  118:\tpop\t{r7, pc}\n",
    )
    assert targets == (0x150,)
    # A tail call after the epilogue, through ip (libsupc++'s __do_upcast).
    targets, _ = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r4, r5, lr}\n"
        "  102:\tldr\tr5, [r0, #8]\n"
        "  104:\tldr\tr4, [r5, #4]\n"
        "  106:\tmov\tip, r4\n"
        "  108:\tpop\t{r4, r5, lr}\n"
        "  10a:\tbx\tip\n",
    )
    assert targets == (0x150,)
    # Two slots loaded at once (ldrd), the second one called.
    targets, _ = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldrd\tr4, r2, [r3, #0]\n"
        "  108:\tblx\tr2\n"
        "  10a:\tpop\t{r4, pc}\n",
    )
    assert targets == (0x150,)


def test_calls_not_of_a_virtual_call_shape_or_outside_cxx_stay_unresolved() -> None:
    virtual_shape = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #4]\n"
        "  106:\tblx\tr3\n"
        "  108:\tpop\t{r3, pc}\n"
    )
    # A C function calling through an ops table is no virtual call, whatever its shape.
    assert _resolved("dispatch", virtual_shape) == ((), ())
    # A function pointer loaded from an object's member: not through a vtable.
    pointer = "  100:\tpush\t{r3, lr}\n  102:\tldr\tr3, [r0, #4]\n  104:\tblx\tr3\n"
    assert _resolved("_Z3useP1S", pointer + "  106:\tpop\t{r3, pc}\n") == ((), ())
    # Paths that join before the call: each must load from a vtable slot.
    both = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tcbz\tr1, 108 <x>\n"
        "  106:\tldr\tr3, [r1, #0]\n"
        "  108:\tldr\tr3, [r3, #4]\n"
        "  10a:\tblx\tr3\n"
        "  10c:\tpop\t{r3, pc}\n"
    )
    assert _resolved("_Z3useRK1A", both)[0] == (0x150,)
    one = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tcbz\tr1, 10a <x>\n"
        "  106:\tldr\tr3, [r3, #4]\n"
        "  108:\tb.n\t10c <x>\n"
        "  10a:\tldr\tr3, [r0, #8]\n"  # a member function pointer on this path
        "  10c:\tblx\tr3\n"
        "  10e:\tpop\t{r3, pc}\n"
    )
    assert _resolved("_Z3useRK1A", one) == ((), ())
    # The slot's word changed before the call (bic writes too): no virtual call's shape.
    changed = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #4]\n"
        "  106:\tbic.w\tr3, r3, #1\n"
        "  10a:\tblx\tr3\n"
        "  10c:\tpop\t{r3, pc}\n"
    )
    assert _resolved("_Z3useRK1A", changed) == ((), ())


def test_a_speculatively_devirtualised_call_is_read_through_its_branch() -> None:
    # GCC compares the slot with the function it expects and calls it directly; the
    # indirect call sits after the return, reached only by the branch.
    targets, _ = _resolved(
        "_Z3useRK1A",
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #4]\n"
        "  106:\tldr\tr2, [pc, #12]\t@ (114 <x>)\n"
        "  108:\tcmp\tr3, r2\n"
        "  10a:\tbne.n\t110 <x>\n"
        "  10c:\tmovs\tr0, #1\n"
        "  10e:\tpop\t{r4, pc}\n"
        "  110:\tblx\tr3\n"
        "  112:\tpop\t{r4, pc}\n"
        "  114:\t.word\t0x00000151\n",
    )
    assert targets == (0x150,)


def test_an_unresolved_call_stays_a_finding_and_a_resolved_one_counts_its_targets() -> None:
    image = _image({"_Z3useRK1A": (CODE, 0x40), **CLASSES}, VTABLES)
    graph = _graph(
        image,
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [r0, #0]\n"
        "  104:\tldr\tr3, [r3, #4]\n"
        "  106:\tblx\tr3\n"
        "  108:\tpop\t{r3, pc}\n" + LEAVES,
    )
    assert Analysis(graph).bound(CODE).problems[0].kind == "indirect"
    resolution = resolve(image, graph)
    resolved = Analysis(replace(graph, resolved=resolution.sites))
    assert resolved.bound(CODE).bytes == 8  # r3, lr; the leaf takes nothing


SETTER = "_ZSt13set_terminatePFvvE"
TERMINATE = "_ZN10__cxxabiv111__terminateEPFvvE"


def _terminate(
    setting: str, source: str = "src/libstdc++-v3/libsupc++/eh_terminate.cc"
) -> tuple[int, ...] | None:
    """What __terminate's indirect call reaches when main sets the handler so."""
    functions = {
        TERMINATE: (0x100, 8),
        "main": (0x110, 0x10),
        SETTER: (0x130, 4),
        "my_handler": (0x140, 4),
        "abort": (0x150, 4),
    }
    handler = {"_ZN10__cxxabiv119__terminate_handlerE": (0x1000, [0x151]), "lit": (0x11C, [0x141])}
    image = _image(functions, handler)
    listing = (
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tblx\tr0\n"
        "  104:\tpop\t{r3, pc}\n"
        "  110:\tpush\t{r3, lr}\n" + setting + "  116:\tbl\t130 <_ZSt13set_terminatePFvvE>\n"
        "  11a:\tpop\t{r3, pc}\n"
        "  11c:\t.word\t0x00000141\n"
        "  130:\tbx\tlr\n  140:\tbx\tlr\n  150:\tbx\tlr\n"
    )
    graph = _located(_graph(image, listing), 0x100, f"{source}:48:15")
    return resolve(image, graph).sites.get(0x102)


def test_the_terminate_handler_is_its_initial_value_or_what_the_program_sets() -> None:
    # std::set_terminate(my_handler): the literal the call is given.
    assert _terminate("  112:\tldr\tr0, [pc, #8]\t@ (11c <main+0xc>)\n  114:\tnop\n") == (
        0x140,
        0x150,
    )
    assert _terminate("  112:\tmovs\tr0, #0\n  114:\tnop\n") == (0x150,)  # nullptr: abort only
    # A pointer computed at run time: the image does not tell, the call stays unresolved.
    assert _terminate("  112:\tmov\tr0, r4\n  114:\tnop\n") is None
    # The literal overwritten before the call (as a second destination): not known.
    overwritten = "  112:\tldr\tr0, [pc, #8]\t@ (11c <main+0xc>)\n  114:\tldrd\tr1, r0, [sp]\n"
    assert _terminate(overwritten) is None
    # A function of the runtime's name whose call is in a program's source is no runtime's.
    assert _terminate("  112:\tmovs\tr0, #0\n  114:\tnop\n", "app/terminate.cc") is None


def test_personality_routines_come_from_the_exception_index() -> None:
    # .ARM.exidx: f (generic: its .ARM.extab entry names __gxx_personality_v0), g (compact,
    # inline: __aeabi_unwind_cpp_pr0), h (cannot unwind).
    functions = {
        "f": (0x100, 4),
        "g": (0x104, 4),
        "h": (0x108, 4),
        "__gxx_personality_v0": (0x10C, 4),
        "__aeabi_unwind_cpp_pr0": (0x110, 4),
        "unwind_phase2": (0x120, 8),
    }
    index_at, extab = 0x1100, 0x1000

    def prel31(target: int, place: int) -> int:
        return (target - place) & 0x7FFF_FFFF

    words = [
        prel31(0x100, index_at),
        prel31(extab, index_at + 4),
        prel31(0x104, index_at + 8),
        0x80A8B0B0,
        prel31(0x108, index_at + 16),
        1,
    ]
    image = _image(functions, {"extab": (extab, [prel31(0x10D, extab), 0])})
    exidx = struct.pack("<6I", *words)
    image = Image(
        image.path,
        (*image.sections, Section(".ARM.exidx", index_at, len(exidx))),
        image.symbols,
        contents={**image.contents, ".ARM.exidx": exidx},
    )
    index = exception_index(image)
    assert index.personalities == {0x10C}
    assert index.compact == {0}
    assert index.handlers == {0x100}  # the function with landing pads
    listing = (
        "  100:\tbx\tlr\n  104:\tbx\tlr\n  108:\tbx\tlr\n  10c:\tbx\tlr\n  110:\tbx\tlr\n"
        "  120:\tpush\t{r3, lr}\n  122:\tblx\tr3\n  124:\tpop\t{r3, pc}\n"
    )
    graph = _located(_graph(image, listing), 0x120, "libgcc/unwind-arm-common.inc:450:20")
    resolution = resolve(image, graph)
    assert resolution.sites[0x122] == (0x10C, 0x110)
    assert (
        "unwind_phase2 calls the personality routines: __aeabi_unwind_cpp_pr0, "
        "__gxx_personality_v0 (app.elf)"
    ) in resolution.assumptions


def test_landing_pads_are_walked_from_the_stack_of_the_calls() -> None:
    # A catch no branch reaches: the unwinder enters it with the stack of the call that
    # threw (24 bytes deep), and its call to __cxa_begin_catch counts from there.
    functions = {"app": (0x100, 0x20), "thrower": (0x140, 4), "__cxa_begin_catch": (0x150, 4)}
    image = _image(functions, {})
    listing = (
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tsub\tsp, #16\n"
        "  104:\tbl\t140 <thrower>\n"
        "  108:\tadd\tsp, #16\n"
        "  10a:\tpop\t{r4, pc}\n"
        "  10c:\tbl\t150 <__cxa_begin_catch>\n"
        "  110:\tb.n\t108 <app+0x8>\n"
        "  140:\tbx\tlr\n  150:\tbx\tlr\n"
    )
    plain = _graph(image, listing).nodes[0x100]
    assert [c.target for c in plain.calls] == [0x140]
    pads = _graph(image, listing, frozenset({0x100})).nodes[0x100]
    assert [(c.target, c.depth) for c in pads.calls] == [(0x140, 24), (0x150, 24)]


def test_a_jump_table_through_adr_is_walked_not_taken_for_a_call() -> None:
    image = _image({"f": (0x100, 0x20), "g": (0x140, 4)}, {})
    listing = (
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tadd\tr3, pc, #4\t@ (adr r3, 108 <f+0x8>)\n"
        "  104:\tldr.w\tpc, [r3, r2, lsl #2]\n"
        "  108:\t.word\t0x00000111\n"
        "  10c:\t.word\t0x00000115\n"
        "  110:\tbl\t140 <g>\n"
        "  114:\tpop\t{r4, pc}\n"
        "  140:\tbx\tlr\n"
    )
    node = _graph(image, listing).nodes[0x100]
    assert [(c.target, c.depth) for c in node.calls] == [(0x140, 8)]


def test_type_info_methods_recurse_as_deep_as_the_longest_chain_of_links() -> None:
    si = "_ZTVN10__cxxabiv120__si_class_type_infoE"
    cast = "_ZNK10__cxxabiv120__si_class_type_info11__do_upcastEPKNS_17__class_type_infoE"
    data = {
        si: (0x1000, [0, 0, 0x101, 0x101]),
        "_ZTI4Base": (0x1010, [0x2000, 0]),  # a class without bases
        "_ZTI3Mid": (0x1020, [0x1008, 0, 0x1010]),  # si: Mid -> Base
        "_ZTI4Leaf": (0x1030, [0x1008, 0, 0x1020]),  # si: Leaf -> Mid
    }
    image = _image({cast: (0x100, 4), "__cxa_throw": (0x110, 4)}, data)
    resolution = resolve(image, _graph(image, "  100:\tbx\tlr\n  110:\tbx\tlr\n"))
    assert resolution.hints is not None
    assert resolution.hints.recursion_depth((cast,)) == 3
    assert any(
        a.startswith("recursion depth 3: the type_info methods") for a in resolution.assumptions
    )
    assert "frame of 0 bytes: __restore_core_regs (cxx-runtime, app.elf)" in resolution.assumptions
    # A pointer's pointee is a link too (catching Leaf** descends through both pointers):
    # Leaf** > Leaf* > Leaf > Mid > Base.
    pointer = "_ZTVN10__cxxabiv119__pointer_type_infoE"
    data[pointer] = (0x1040, [0, 0, 0x101])
    data["_ZTIP4Leaf"] = (0x1050, [0x1048, 0, 0, 0x1030])
    data["_ZTIPP4Leaf"] = (0x1060, [0x1048, 0, 0, 0x1050])
    image = _image({cast: (0x100, 4), "__cxa_throw": (0x110, 4)}, data)
    resolution = resolve(image, _graph(image, "  100:\tbx\tlr\n  110:\tbx\tlr\n"))
    assert resolution.hints is not None and resolution.hints.recursion_depth((cast,)) == 5
    # A link to an object the symbol table does not name: the depth is not known.
    data["_ZTIPP4Leaf"] = (0x1060, [0x1048, 0, 0, 0x3000])
    image = _image({cast: (0x100, 4), "__cxa_throw": (0x110, 4)}, data)
    resolution = resolve(image, _graph(image, "  100:\tbx\tlr\n  110:\tbx\tlr\n"))
    assert resolution.hints is not None and resolution.hints.recursion_depth((cast,)) is None


def test_the_runtimes_recursion_depths_bound_only_its_own_cycles() -> None:
    # __cxa_begin_catch > std::terminate > __terminate > __cxa_begin_catch, the bundled set
    # names all three: bounded. A terminate handler of the program's own that calls back in
    # joins the cycle: then the program must say how deep.
    functions = {
        "__cxa_begin_catch": (0x100, 8),
        "_ZSt9terminatev": (0x110, 8),
        "_ZN10__cxxabiv111__terminateEPFvvE": (0x120, 8),
        "my_handler": (0x130, 8),
        "__cxa_throw": (0x140, 4),
    }
    image = _image(functions, {})

    def bound(via: str) -> int | None:
        listing = (
            "  100:\tpush\t{r3, lr}\n  102:\tbl\t110 <_ZSt9terminatev>\n  106:\tpop\t{r3, pc}\n"
            "  110:\tpush\t{r3, lr}\n  112:\tbl\t120 <x>\n  116:\tpop\t{r3, pc}\n"
            f"  120:\tpush\t{{r3, lr}}\n  122:\tbl\t{via} <x>\n  126:\tpop\t{{r3, pc}}\n"
            "  130:\tpush\t{r3, lr}\n  132:\tbl\t100 <__cxa_begin_catch>\n  136:\tpop\t{r3, pc}\n"
            "  140:\tbx\tlr\n"
        )
        graph = _graph(image, listing)
        resolution = resolve(image, graph)
        return Analysis(replace(graph, runtime_hints=resolution.hints)).bound(0x100).bytes

    assert bound("100") == 2 * 24  # two passes of three 8-byte frames
    assert bound("130") is None


def test_the_bundled_sets_for_cxx_images_load() -> None:
    assert {"cxx-runtime", "newlib", "newlib-nano"} <= set(bundled_hints())
    runtime = load_hints(["cxx-runtime"])
    assert runtime is not None and runtime.frame_size(("__restore_core_regs",)) == 0
    newlib = load_hints(["newlib"])
    assert newlib is not None and newlib.recursion_depth(("_vfiprintf_r",)) == 2
    assert newlib.targets(("__sflush_r",), None) == [
        "__sclose",
        "__seofread",
        "__sread",
        "__sseek",
        "__swrite",
    ]


def test_std_function_calls_reach_its_managers_and_invokers() -> None:
    invoke = "_ZNSt17_Function_handlerIFviEZ8app_mainEUliE_E9_M_invokeERKSt9_Any_dataOi"
    manager = (
        "_ZNSt14_Function_base13_Base_managerIZ8app_mainEUliE_E10_M_manager"
        "ERSt9_Any_dataRKS3_St18_Manager_operation"
    )
    functions = {"app_main": (0x100, 8), invoke: (0x110, 4), manager: (0x120, 4)}
    image = _image(functions, {})
    listing = (
        "  100:\tpush\t{r3, lr}\n  102:\tldr\tr3, [r0, #12]\n  104:\tblx\tr3\n"
        "  106:\tpop\t{r3, pc}\n  110:\tbx\tlr\n  120:\tbx\tlr\n"
    )
    graph = _graph(image, listing)
    # Inlined from libstdc++'s header into a C function of a C++ file: std::function's own.
    header = "/usr/include/newlib/c++/12.2.1/bits/std_function.h:591:9"
    resolution = resolve(image, _located(graph, 0x100, header))
    assert resolution.sites[0x104] == (0x110, 0x120)
    assert resolution.assumptions[0].startswith(
        f"std::function's calls in app_main at {header} reach its managers and invokers: "
    )
    # The same call anywhere else is a plain call through a pointer: unresolved.
    assert 0x104 not in resolve(image, _located(graph, 0x100, "app/main.cpp:20:5")).sites


def test_exit_runs_what_was_registered_with_atexit_and_static_destructors() -> None:
    # A static object's constructor registers its destructor (r1 of __aeabi_atexit), in a
    # tail call after its epilogue; exit's __call_exitprocs calls it.
    functions = {
        "__call_exitprocs": (0x100, 8),
        "__aeabi_atexit": (0x110, 4),
        "_GLOBAL__sub_I_app": (0x120, 0x10),
        "_ZN4LateD1Ev": (0x140, 4),
    }
    image = _image(functions, {"lit": (0x12C, [0x141])})
    listing = (
        "  100:\tpush\t{r3, lr}\n  102:\tblx\tr3\n  104:\tpop\t{r3, pc}\n"
        "  110:\tbx\tlr\n"
        "  120:\tpush\t{r4, lr}\n"
        "  122:\tldr\tr1, [pc, #8]\t@ (12c <_GLOBAL__sub_I_app+0xc>)\n"
        "  124:\tldmia.w\tsp!, {r4, lr}\n"
        "  128:\tb.w\t110 <__aeabi_atexit>\n"
        "  140:\tbx\tlr\n"
    )
    graph = _located(_graph(image, listing), 0x100, "newlib/libc/stdlib/__call_atexit.c:121:6")
    resolution = resolve(image, graph)
    assert resolution.sites[0x102] == (0x140,)
    assert resolution.assumptions[0] == (
        "__call_exitprocs calls a function registered to run at exit (atexit, C++ static "
        "destructors): _ZN4LateD1Ev (app.elf)"
    )


def test_a_resume_goes_on_with_a_forced_unwind_only_when_one_is_started() -> None:
    functions = {
        "__gnu_Unwind_Resume": (0x100, 8),
        "unwind_phase2_forced": (0x110, 4),
        "_Unwind_ForcedUnwind": (0x120, 4),
        "app": (0x130, 0x10),
        "stop": (0x150, 4),
        "__cxa_throw": (0x160, 4),
    }
    image = _image(functions, {"lit": (0x13C, [0x151])})
    resume = (
        "  100:\tpush\t{r3, lr}\n  102:\tbl\t110 <unwind_phase2_forced>\n  106:\tpop\t{r3, pc}\n"
    )
    leaves = "  110:\tbx\tlr\n  120:\tbx\tlr\n  150:\tbx\tlr\n  160:\tbx\tlr\n"
    never = _graph(image, resume + leaves)
    resolution = resolve(image, never)
    assert resolution.hints is not None
    assert resolution.hints.is_cut(("__gnu_Unwind_Resume",), ("unwind_phase2_forced",))
    assert (
        "__gnu_Unwind_Resume never calls unwind_phase2_forced: no forced unwind is started "
        "(no call of _Unwind_ForcedUnwind) (app.elf)"
    ) in resolution.assumptions
    assert Analysis(replace(never, runtime_hints=resolution.hints)).bound(0x100).bytes == 8
    started = _graph(
        image,
        resume
        + "  130:\tpush\t{r3, lr}\n"
        + "  132:\tldr\tr1, [pc, #8]\t@ (13c <app+0xc>)\n"
        + "  134:\tbl\t120 <_Unwind_ForcedUnwind>\n"
        + "  138:\tpop\t{r3, pc}\n"
        + leaves,
    )
    resolution = resolve(image, started)
    assert resolution.hints is not None
    assert not resolution.hints.is_cut(("__gnu_Unwind_Resume",), ("unwind_phase2_forced",))
