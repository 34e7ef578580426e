"""The frame walk over disassembly: depths through prologues, paths, calls and what it
cannot follow. The listings are `objdump -d --no-show-raw-insn` text, as it prints them."""

from __future__ import annotations

from memplace.verify.frames import Frame, parse_objdump, read_frames
from memplace.verify.image import Function


def frame_of(listing: str, words: dict[int, int] | None = None, end: int | None = None) -> Frame:
    """The frame of the one function a listing holds (it starts at its first address)."""
    code = parse_objdump(listing)
    start = code[0].address
    stop = end if end is not None else code[-1].address + 4
    function = Function(address=start, size=stop - start, names=("f",))
    return read_frames([function], code, (words or {}).get)[start]


def test_objdump_lines_become_instructions() -> None:
    code = parse_objdump(
        "00000068 <memplace_write_u32>:\n"
        "      6c:\tpush\t{r4, lr}\n"
        "      6e:\tldr\tr4, [pc, #60]\t@ (ac <memplace_write_u32+0x44>)\n"
        "      ac:\t.word\t0xcccccccd\n"
    )
    assert [(i.address, i.mnemonic, i.operands) for i in code] == [
        (0x6C, "push", "{r4, lr}"),
        (0x6E, "ldr", "r4, [pc, #60]"),
        (0xAC, ".word", "0xcccccccd"),
    ]
    assert code[1].comment == "@ (ac <memplace_write_u32+0x44>)"
    assert code[2].is_data


def test_push_and_sub_make_the_frame_and_calls_see_their_depth() -> None:
    frame = frame_of(
        "  100:\tpush\t{r4, r5, r6, lr}\n"
        "  102:\tsub\tsp, #16\n"
        "  104:\tbl\t200 <g>\n"
        "  108:\tadd\tsp, #16\n"
        "  10a:\tpop\t{r4, r5, r6, pc}\n"
    )
    assert frame.size == 32
    assert [(c.depth, c.target) for c in frame.calls] == [(32, 0x200)]
    assert frame.unknown is None


def test_registers_ranges_and_wide_forms_count() -> None:
    frame = frame_of(
        "  100:\tstmdb\tsp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}\n"
        "  104:\tvpush\t{d8-d15}\n"
        "  108:\tsub.w\tsp, sp, #1024\n"
        "  10c:\tstr.w\tr0, [sp, #-4]!\n"
        "  110:\tbl\t200 <g>\n"
        "  114:\tldr.w\tr0, [sp], #4\n"
        "  118:\taddw\tsp, sp, #1024\n"
        "  11c:\tvpop\t{d8-d15}\n"
        "  120:\tldmia.w\tsp!, {r4, r5, r6, r7, r8, r9, sl, fp, pc}\n"
    )
    assert frame.size == 36 + 64 + 1024 + 4
    assert frame.calls[0].depth == frame.size


def test_a_variadic_save_area_counts() -> None:
    # printf's prologue: the argument registers, then its own saves.
    frame = frame_of(
        "  328:\tpush\t{r0, r1, r2, r3}\n"
        "  32a:\tpush\t{r0, r1, r2, lr}\n"
        "  32c:\tbl\t400 <v>\n"
        "  330:\tpop\t{r0, r1, r2, lr}\n"
        "  332:\tadd\tsp, #16\n"
        "  334:\tbx\tlr\n"
    )
    assert frame.size == 32


def test_an_early_return_does_not_hide_a_later_push() -> None:
    # Shrink-wrapped: the fast path returns before the frame; the slow path after it
    # continues at full depth after a return in the middle.
    frame = frame_of(
        "  100:\tcbz\tr0, 10c <f+0xc>\n"
        "  102:\tpush\t{r4, lr}\n"
        "  104:\tcmp\tr0, #1\n"
        "  106:\tbne.n\t10e <f+0xe>\n"
        "  108:\tpop\t{r4, pc}\n"
        "  10a:\tnop\n"
        "  10c:\tbx\tlr\n"
        "  10e:\tsub\tsp, #8\n"
        "  110:\tbl\t200 <g>\n"
        "  114:\tadd\tsp, #8\n"
        "  116:\tpop\t{r4, pc}\n"
    )
    assert frame.size == 16
    assert frame.calls[0].depth == 16


def test_a_conditional_return_keeps_the_depth_for_what_follows() -> None:
    frame = frame_of(
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tit\teq\n"
        "  104:\tpopeq\t{r4, pc}\n"
        "  106:\tsub\tsp, #8\n"
        "  108:\tbl\t200 <g>\n"
        "  10c:\tadd\tsp, #8\n"
        "  10e:\tpop\t{r4, pc}\n"
    )
    assert frame.calls[0].depth == 16


def test_tail_calls_and_indirect_calls_are_calls() -> None:
    frame = frame_of(
        "  100:\tpush\t{r4, lr}\n  102:\tblx\tr3\n  104:\tpop.w\t{r4, lr}\n  108:\tb.w\t300 <h>\n"
    )
    assert [(c.depth, c.target, c.tail) for c in frame.calls] == [
        (8, None, False),
        (0, 0x300, True),
    ]


def test_bx_through_a_register_that_was_not_popped_is_an_indirect_tail_call() -> None:
    frame = frame_of("  100:\tmov\tr3, r0\n  102:\tbx\tr3\n")
    assert [(c.target, c.tail) for c in frame.calls] == [(None, True)]
    returned = frame_of("  100:\tpush\t{r3}\n  102:\tpop\t{r3}\n  104:\tbx\tr3\n")
    assert returned.calls == ()


def test_bx_through_the_return_address_loaded_back_from_its_slot_returns() -> None:
    # Armv6-M cannot load pc from sp plus an offset: libgcc's unwinder stubs reload the
    # return address lr was pushed with into r3 and return through it.
    stub = (
        "  100:\tpush\t{r0}\n"
        "  102:\tpush\t{r0, lr}\n"
        "  104:\tsub\tsp, #20\n"
        "  106:\tbl\t200 <g>\n"
        "  10a:\tldr\tr3, [sp, #24]\n"
        "  10c:\tadd\tsp, #32\n"
        "  10e:\tbx\tr3\n"
    )
    frame = frame_of(stub)
    assert (frame.size, [(c.target, c.tail) for c in frame.calls]) == (32, [(0x200, False)])
    # A word from another slot (here r0's) is no return address: a tail call.
    other = frame_of(stub.replace("[sp, #24]", "[sp, #20]"))
    assert [(c.target, c.tail) for c in other.calls] == [(0x200, False), (None, True)]
    # Nor is the word once a call may have changed the register.
    clobbered = frame_of(
        "  100:\tpush\t{r0, lr}\n"
        "  102:\tldr\tr3, [sp, #4]\n"
        "  104:\tbl\t200 <g>\n"
        "  108:\tadd\tsp, #8\n"
        "  10a:\tbx\tr3\n"
    )
    assert [(c.target, c.tail) for c in clobbered.calls] == [(0x200, False), (None, True)]
    # Nor a word read where lr's slot was, once the frame that held it is given back.
    released = frame_of(
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tpop\t{r4, lr}\n"
        "  104:\tsub\tsp, #8\n"
        "  106:\tldr\tr3, [sp, #4]\n"
        "  108:\tadd\tsp, #8\n"
        "  10a:\tbx\tr3\n"
    )
    assert [(c.target, c.tail) for c in released.calls] == [(None, True)]


def test_an_armv6m_switch_jumps_through_a_table_in_data() -> None:
    # `ldr r0, =table; lsls r4, #2; ldr r0, [r0, r4]; mov pc, r0`: each case is walked at
    # the switch's depth, none is a call.
    frame = frame_of(
        "  100:\tpush\t{r4, lr}\n"
        "  102:\tldr\tr0, [pc, #16]\t@ (114 <f+0x14>)\n"
        "  104:\tlsls\tr4, r4, #2\n"
        "  106:\tldr\tr0, [r0, r4]\n"
        "  108:\tmov\tpc, r0\n"
        "  10a:\tsub\tsp, #8\n"
        "  10c:\tbl\t200 <g>\n"
        "  110:\tadd\tsp, #8\n"
        "  112:\tpop\t{r4, pc}\n"
        "  114:\t.word\t0x00000900\n",
        words={0x114: 0x900, 0x900: 0x10B},
    )
    assert (frame.size, [(c.depth, c.target) for c in frame.calls]) == (16, [(16, 0x200)])
    # A register loaded from a table of other code's addresses is an indirect jump.
    away = frame_of(
        "  100:\tldr\tr0, [pc, #8]\t@ (10c <f+0xc>)\n"
        "  102:\tldr\tr0, [r0, r4]\n"
        "  104:\tmov\tpc, r0\n"
        "  10c:\t.word\t0x00000900\n",
        words={0x10C: 0x900, 0x900: 0x501},
    )
    assert [(c.target, c.tail) for c in away.calls] == [(None, True)]


def test_code_before_the_entry_that_the_function_branches_to_is_its_own() -> None:
    # newlib's strcmp for Armv7-M keeps an exit before its aligned entry, in no function.
    code = parse_objdump(
        "  ff0:\tbx\tlr\n"
        "  ff2:\tnop\n"
        "  ff4:\tsub.w\tr0, r2, r3\n"
        "  ff8:\tbx\tlr\n"
        " 1000:\tpush\t{r4, lr}\n"
        " 1002:\tcmp\tr2, r3\n"
        " 1004:\tbne.n\tff4 <g+0x4>\n"
        " 1006:\tpop\t{r4, pc}\n"
    )
    before = Function(address=0xFF0, size=2, names=("g",))
    entry = Function(address=0x1000, size=8, names=("strcmp",))
    frames = read_frames([before, entry], code, {}.get)
    assert (frames[0x1000].size, frames[0x1000].calls) == (8, ())


def test_a_call_through_a_literal_is_a_known_call() -> None:
    # A weak function: its address comes from the literal pool; 0 means it was never
    # defined, so the guarded call never happens.
    frame = frame_of(
        "  100:\tpush\t{r3, lr}\n"
        "  102:\tldr\tr3, [pc, #8]\t@ (10c <f+0xc>)\n"
        "  104:\tblx\tr3\n"
        "  106:\tldr\tr2, [pc, #8]\t@ (110 <f+0x10>)\n"
        "  108:\tblx\tr2\n"
        "  10a:\tpop\t{r3, pc}\n"
        "  10c:\t.word\t0x00000301\n"
        "  110:\t.word\t0x00000000\n",
        words={0x10C: 0x301, 0x110: 0},
    )
    assert [(c.depth, c.target) for c in frame.calls] == [(8, 0x300)]


def test_a_veneer_jumps_to_its_literal() -> None:
    frame = frame_of(
        "  100:\tldr.w\tpc, [pc]\t@ 104 <f+0x4>\n  104:\t.word\t0x08000201\n",
        words={0x104: 0x08000201},
    )
    assert [(c.target, c.tail) for c in frame.calls] == [(0x08000200, True)]


def test_jump_table_cases_are_walked_at_the_switch_depth() -> None:
    frame = frame_of(
        "  100:\tpush\t{r4, lr}\n"
        "  102:\ttbb\t[pc, r0]\n"
        "  106:\t.word\t0x00000402\n"
        "  10a:\tsub\tsp, #24\n"
        "  10c:\tbl\t200 <g>\n"
        "  110:\tadd\tsp, #24\n"
        "  112:\tpop\t{r4, pc}\n"
        "  114:\tpop\t{r4, pc}\n"
    )
    assert frame.size == 32
    assert frame.calls[0].depth == 32


def test_alloca_with_a_frame_pointer() -> None:
    frame = frame_of(
        "  00:\tpush\t{r4, r5, r7, lr}\n"
        "  02:\tadds\tr3, r0, #7\n"
        "  04:\tadd\tr7, sp, #0\n"
        "  06:\tsub.w\tsp, sp, r3\n"
        "  0a:\tbl\t200 <sink>\n"
        "  0e:\tmov\tsp, r7\n"
        "  10:\tbl\t300 <after>\n"
        "  14:\tpop\t{r4, r5, r7, pc}\n"
    )
    assert frame.dynamic == (0x06,)
    assert [(c.depth, c.dynamic) for c in frame.calls] == [(16, True), (16, False)]
    assert frame.unknown is None


def test_a_stack_pointer_from_nowhere_is_unknown() -> None:
    frame = frame_of("  100:\tpush\t{r4, lr}\n  102:\tmov\tsp, r0\n  104:\tpop\t{r4, pc}\n")
    assert frame.unknown is not None and "from r0" in frame.unknown


def test_a_stack_pointer_loaded_from_memory_is_unknown() -> None:
    frame = frame_of("  100:\tldr\tsp, [r0, #4]\n  102:\tbx\tlr\n")
    assert frame.unknown is not None and "ldr sp, [r0, #4]" in frame.unknown


def test_a_stack_that_grows_in_a_loop_is_unknown() -> None:
    frame = frame_of("  100:\tpush\t{r4}\n  102:\tb.n\t100 <f>\n")
    assert frame.unknown is not None and "loop" in frame.unknown


def test_a_call_to_itself_is_recursion_and_a_branch_to_itself_a_loop() -> None:
    recursive = frame_of("  100:\tpush\t{r4, lr}\n  102:\tbl\t100 <f>\n  106:\tpop\t{r4, pc}\n")
    assert [(c.depth, c.target) for c in recursive.calls] == [(8, 0x100)]
    looping = frame_of("  100:\tsubs\tr0, #1\n  102:\tbne.n\t100 <f>\n  104:\tbx\tlr\n")
    assert looping.calls == () and looping.unknown is None
