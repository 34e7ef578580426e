"""Stack frames and calls of every function of an image, read from its disassembly.

This covers code that GCC's `-fstack-usage` never saw (newlib, libgcc, hand-written
assembly) and checks the code it did see: the walk follows the stack pointer through
every path of a function (pushes, `sub sp`, frame-pointer restores, returns inside IT
blocks), so a frame is the deepest the function itself takes the stack, and each call is
known with the depth its caller had reached at that instruction.

Depths are bytes below the stack pointer at the function's entry. Where the walk cannot
tell (a stack pointer loaded from memory, a `sub sp, rN` of unknown size) it says so, and
the bound built on it is unbounded until a hint bounds it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from memplace.verify.image import Function

# Visits of one instruction after which a stack pointer that still moves is taken to
# grow in a loop (an alloca in a loop, or a push without its pop).
MAX_VISITS = 64

_LINE = re.compile(r"^\s*([0-9a-f]+):\t(\S+)(?:\t(.*))?$")
_TARGET = re.compile(r"\b([0-9a-f]+) <[^>]*>\s*$")
_LITERAL = re.compile(r"@ \(?([0-9a-f]+) <")
_CONDITIONS = frozenset(
    "eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al".split()  # noqa: SIM905
)
_BASES = frozenset(
    """b bl blx bx cbz cbnz tbb tbh pop push ldm ldmia ldmfd stmdb stmfd ldr ldrd str strd
    add addw sub subw mov vpush vpop vstmdb vldmia udf msr""".split()  # noqa: SIM905
)
_BRANCHES = frozenset(("b", "bl", "blx", "bx", "cbz", "cbnz", "tbb", "tbh"))
# Instructions whose first operand is not written (besides the branches).
_NO_DESTINATION = (
    "str",
    "stm",
    "push",
    "cmp",
    "cmn",
    "tst",
    "teq",
    "vstr",
    "vstm",
    "vpush",
    "vcmp",
    "pld",
    "pli",
    "it",
    "nop",
    "dmb",
    "dsb",
    "isb",
    "bkpt",
    "svc",
    "msr",
    "cps",
    "wf",
    "sev",
    "udf",
)
_TWO_DESTINATIONS = ("ldrd", "ldrexd", "umull", "smull", "umlal", "smlal", "vmov")
_DATA = (".word", ".short", ".byte", ".2byte", ".4byte")


@dataclass(frozen=True)
class Instruction:
    address: int
    mnemonic: str  # as objdump prints it, lower case: "push", "ldr.w", "popeq"
    operands: str = ""
    comment: str = ""

    @property
    def is_data(self) -> bool:
        return self.mnemonic.startswith(_DATA)


@dataclass(frozen=True)
class Call:
    """A call (or a tail call) made at `address` with `depth` bytes of the caller's frame on
    the stack; `target` is None for an indirect call."""

    address: int
    depth: int
    target: int | None
    tail: bool = False
    dynamic: bool = False  # made while a dynamic allocation (alloca, VLA) is on the stack
    location: str | None = None  # source file:line of an indirect call, where known


@dataclass(frozen=True)
class Frame:
    """What one function does to the stack by itself."""

    function: Function
    size: int
    calls: tuple[Call, ...] = ()
    dynamic: tuple[int, ...] = ()  # addresses of `sub sp, rN` (alloca, VLAs)
    unknown: str | None = None  # why the stack pointer could not be followed

    @property
    def name(self) -> str:
        return self.function.name


def parse_objdump(text: str) -> list[Instruction]:
    """The instructions (and data words) of `objdump -d --no-show-raw-insn` output."""
    instructions = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        rest = match[3] or ""
        operands, _, comment = rest.partition("\t@")
        if not comment and " @ " in operands:
            operands, _, comment = operands.partition(" @ ")
        instructions.append(
            Instruction(
                address=int(match[1], 16),
                mnemonic=match[2].lower(),
                operands=operands.strip(),
                comment=("@" + comment).strip() if comment else "",
            )
        )
    instructions.sort(key=lambda i: i.address)
    return instructions


ReadWord = Callable[[int], int | None]


def read_frames(
    functions: Iterable[Function],
    instructions: Sequence[Instruction],
    read_word: ReadWord,
    landing: frozenset[int] = frozenset(),
) -> dict[int, Frame]:
    """The frame of every function, by its address. The functions in `landing` have landing
    pads (C++ catches and cleanups, which only the unwinder jumps to): their code no branch
    reaches is walked too, with the stack as it is at their calls (a landing pad runs with
    the registers of the call that threw)."""
    addresses = [i.address for i in instructions]
    frames = {}
    owned = 0  # the end of the functions before this one: code between is no one's
    for function in sorted(functions, key=lambda f: f.address):
        low = bisect.bisect_left(addresses, function.address)
        high = bisect.bisect_left(addresses, function.end)
        low = _with_code_before(instructions, addresses, low, high, owned)
        code = instructions[low:high]
        walker = _Walker(function, code, read_word, landing=function.address in landing)
        frames[function.address] = walker.walk()
        owned = max(owned, function.end)
    return frames


def _with_code_before(
    instructions: Sequence[Instruction], addresses: Sequence[int], low: int, high: int, owned: int
) -> int:
    """Where a function's code starts, from `low`, its first instruction: earlier where it
    branches back into code no function owns (after `owned`), as hand-written assembly puts
    a shared exit before its aligned entry (newlib's strcmp for Armv7-M: `bne` to
    `sub.w r0, r2, r3; bx lr` in the padding before `strcmp`)."""
    before = bisect.bisect_left(addresses, owned)
    if before >= low:
        return low
    gap = range(addresses[before], addresses[low])
    for insn in instructions[low:high]:
        base, _ = _split(insn.mnemonic)
        target = _target(insn) if base in ("b", "cbz", "cbnz") else None
        if target is not None and target in gap:
            return before
    return low


@dataclass(frozen=True)
class _State:
    depth: int
    # Registers known to hold a stack address, as a depth: a frame pointer.
    pointers: tuple[tuple[str, int], ...] = ()
    dynamic: bool = False
    # Where the return address was pushed (lr's slot, as a depth), and the registers
    # loaded back from there: a `bx` through one returns (Armv6-M cannot load pc from an
    # offset of sp, so libgcc's unwinder stubs end `ldr r3, [sp, #64]; add sp, #72; bx r3`).
    link: int | None = None
    returning: tuple[str, ...] = ()

    def join(self, other: _State) -> _State:
        # A register that points at different depths on two paths (a pointer walking a
        # buffer in a loop) is no frame pointer: dropped, so that the walk converges.
        mine, theirs = dict(self.pointers), dict(other.pointers)
        pointers = tuple(sorted((r, v) for r, v in mine.items() if theirs.get(r) == v))
        return _State(
            max(self.depth, other.depth),
            pointers,
            self.dynamic or other.dynamic,
            self.link if self.link == other.link else None,
            tuple(r for r in self.returning if r in other.returning),
        )

    def pointer(self, register: str) -> int | None:
        return dict(self.pointers).get(register)

    def with_pointer(self, register: str, depth: int | None) -> _State:
        pointers = {r: v for r, v in self.pointers if r != register}
        if depth is not None:
            pointers[register] = depth
        returning = tuple(r for r in self.returning if r != register)
        return replace(self, pointers=tuple(sorted(pointers.items())), returning=returning)

    def without(self, registers: Iterable[str]) -> _State:
        gone = set(registers)
        if not gone.intersection(r for r, _ in self.pointers) and not gone.intersection(
            self.returning
        ):
            return self
        return replace(
            self,
            pointers=tuple(p for p in self.pointers if p[0] not in gone),
            returning=tuple(r for r in self.returning if r not in gone),
        )

    def deeper(self, step: int, dynamic: bool | None = None) -> _State:
        """The state with the stack `step` bytes deeper (negative: shallower)."""
        return self.at(self.depth + step, self.dynamic if dynamic is None else dynamic)

    def at(self, depth: int, dynamic: bool) -> _State:
        """The state with the stack at `depth`: lr's slot forgotten once the frame that held
        it is given back."""
        link = self.link if self.link is not None and self.link <= depth else None
        return replace(self, depth=depth, dynamic=dynamic, link=link)


@dataclass
class _Walker:
    function: Function
    code: Sequence[Instruction]
    read_word: ReadWord
    states: list[_State | None] = field(default_factory=list)
    visits: list[int] = field(default_factory=list)
    calls: dict[int, Call] = field(default_factory=dict)
    dynamic: set[int] = field(default_factory=set)
    tables: list[_State] = field(default_factory=list)
    deepest: int = 0
    unknown: str | None = None
    landing: bool = False

    def walk(self) -> Frame:
        self.index = {insn.address: n for n, insn in enumerate(self.code)}
        self.popped = _popped_registers(self.code)
        self.targets = {t for insn in self.code if (t := _target(insn)) is not None}
        self.states = [None] * len(self.code)
        self.visits = [0] * len(self.code)
        if self.code:
            self._run([(self.index.get(self.function.address, 0), _State(0))])
        # A jump table's targets are in data the disassembly does not follow: every
        # instruction not reached otherwise is taken as one of them.
        while self.tables and self.unknown is None:
            seed = self.tables[0]
            for state in self.tables[1:]:
                seed = seed.join(state)
            self.tables = []
            pending = [
                (n, seed)
                for n, insn in enumerate(self.code)
                if self.states[n] is None and not insn.is_data
            ]
            if not pending:
                break
            self._run(pending)
        if self.landing and self.unknown is None:
            self._landing_pads()
        return Frame(
            function=self.function,
            size=self.deepest,
            calls=tuple(self.calls[a] for a in sorted(self.calls)),
            dynamic=tuple(sorted(self.dynamic)),
            unknown=self.unknown,
        )

    def _landing_pads(self) -> None:
        """Walks the code nothing reached from the state of the function's calls joined:
        the landing pads the unwinder enters with the registers of the call that threw."""
        at_calls = [
            state
            for insn, state in zip(self.code, self.states, strict=True)
            if state is not None and _split(insn.mnemonic)[0] in ("bl", "blx")
        ]
        if not at_calls:
            return
        seed = at_calls[0]
        for state in at_calls[1:]:
            seed = seed.join(state)
        pending = [
            (n, seed)
            for n, insn in enumerate(self.code)
            if self.states[n] is None and not insn.is_data
        ]
        self._run(pending)

    def _run(self, work: list[tuple[int, _State]]) -> None:
        while work and self.unknown is None:
            at, state = work.pop()
            old = self.states[at]
            new = state if old is None else old.join(state)
            if old == new:
                continue
            self.visits[at] += 1
            if self.visits[at] > MAX_VISITS:
                self.unknown = (
                    f"the stack pointer keeps moving in a loop at 0x{self.code[at].address:x}"
                )
                return
            self.states[at] = new
            self.deepest = max(self.deepest, new.depth)
            for successor in self._step(at, new):
                if 0 <= successor[0] < len(self.code) and not self.code[successor[0]].is_data:
                    work.append(successor)

    def _step(self, at: int, state: _State) -> list[tuple[int, _State]]:
        insn = self.code[at]
        if insn.is_data:
            return []
        base, conditional = _split(insn.mnemonic)
        operands = _operands(insn.operands)
        after = self._effect(insn, base, operands, state)
        if self.unknown is not None:
            return []
        self.deepest = max(self.deepest, after.depth)
        next_ = at + 1
        flow = self._flow(insn, base, operands, after)
        if conditional and flow in ("return", "stop"):
            return [(next_, state)]  # when the condition fails, the next one runs
        if conditional and flow in ("next", "call"):
            return [(next_, state.join(after))]
        if flow == "next":
            return [(next_, after)]
        if flow == "branch":
            target = self._local(insn, loop=True)
            out = [] if target is None else [(target, after)]
            if conditional or base in ("cbz", "cbnz"):
                out.append((next_, after))
            return out
        if flow == "call":
            return [(next_, after)]
        return []

    def _effect(self, insn: Instruction, base: str, ops: list[str], state: _State) -> _State:
        """The state after `insn`'s effect on the stack pointer and frame pointers."""
        first = ops[0] if ops else ""
        if base in ("bl", "blx") and state.returning:
            # A call may change the registers a callee need not keep (AAPCS: r0-r3, r12, lr).
            kept = tuple(r for r in state.returning if r not in _CALL_CLOBBERED)
            state = replace(state, returning=kept)
        if base in ("push", "vpush") or (base in ("stmdb", "stmfd", "vstmdb") and first == "sp!"):
            pushed = state.deeper(_list_bytes(insn.operands))
            if state.link is None and "lr" in _registers(insn.operands):
                pushed = replace(pushed, link=state.depth + 4)  # lr goes highest in the list
            return pushed
        if base in ("pop", "vpop") or (
            base in ("ldm", "ldmia", "ldmfd", "vldmia") and first == "sp!"
        ):
            after = state.without(_registers(insn.operands))
            return after.deeper(-_list_bytes(insn.operands))
        if first == "sp" and base in ("sub", "subw", "add", "addw", "mov"):
            return self._sp_arithmetic(insn, base, ops, state)
        writeback = _writeback(insn.operands)
        if writeback is not None:
            state = state.deeper(writeback)
        if first == "sp" and not _writes_nothing(base):
            return self._sp_loaded(insn, base, state)
        if base in ("msr",) and first.lower() in ("msp", "psp"):
            return _State(0, (), False)  # a switch of stacks: start counting again
        after = self._pointers(base, ops, state)
        loaded = _STACK_LOAD.fullmatch(insn.operands) if base == "ldr" else None
        if loaded and state.link is not None and state.depth - int(loaded[2] or 0) == state.link:
            return replace(after, returning=(*after.returning, loaded[1]))
        return after

    def _sp_arithmetic(self, insn: Instruction, base: str, ops: list[str], state: _State) -> _State:
        source = ops[1] if len(ops) == 3 else "sp"
        amount = ops[-1]
        if base == "mov":
            source, amount = ops[1] if len(ops) > 1 else "", "#0"
        sign = 1 if base.startswith("sub") else -1
        if source == "sp":
            if amount.startswith("#"):
                return state.deeper(sign * _immediate(amount))
            loaded = self._literal(insn, amount)
            if loaded is not None:
                # Armv6-M's large frames: `ldr r7, =-1008; add sp, r7`.
                step = loaded - (1 << 32) if loaded >= 1 << 31 else loaded
                return state.deeper(sign * step)
            if sign > 0:
                self.dynamic.add(insn.address)
                return state.deeper(0, dynamic=True)
            return state  # giving back a dynamic allocation: the depth stays an upper bound
        pointer = state.pointer(source)
        if pointer is None and self._lowered(insn, source):
            self.dynamic.add(insn.address)  # Armv6-M's alloca: `subs r3, r2, r3; mov sp, r3`
            return state.deeper(0, dynamic=True)
        if pointer is None or not amount.startswith("#"):
            self.unknown = (
                f"the stack pointer is set from {source} at 0x{insn.address:x}, "
                f"which does not hold a known stack address"
            )
            return state
        return state.at(pointer + sign * _immediate(amount), False)

    def _sp_loaded(self, insn: Instruction, base: str, state: _State) -> _State:
        if base == "ldr" and "[pc" in insn.operands:
            return _State(0, (), False)  # `ldr sp, =top`: a stack (re)started at its top
        self.unknown = (
            f"the stack pointer is set by `{insn.mnemonic} {insn.operands}` at 0x{insn.address:x}"
        )
        return state

    def _pointers(self, base: str, ops: list[str], state: _State) -> _State:
        if not ops or _writes_nothing(base):
            return state
        if base.startswith(("ldm", "pop")):
            return state.without(_registers(" ".join(ops)))
        destination = ops[0].rstrip("!")
        if base.startswith(_TWO_DESTINATIONS) and len(ops) > 1:
            state = state.without([ops[1]])
        if state.dynamic:
            return state.with_pointer(destination, None)
        return state.with_pointer(destination, _pointer_moved(base, ops, state))

    def _flow(self, insn: Instruction, base: str, ops: list[str], state: _State) -> str:
        """next, branch, call, return or stop; records calls on the way."""
        if base in ("b", "cbz", "cbnz"):
            if self._local(insn, loop=True) is not None:
                return "branch"
            self._call(insn, state, _target(insn), tail=True)
            return "branch" if base != "b" else "stop"
        if base in ("bl", "blx"):
            target = _target(insn)
            if base == "blx" and target is None:
                loaded = self._literal(insn, ops[0] if ops else "")
                if loaded != 0:  # 0: a weak function no one defined, never called
                    self._call(insn, state, None if loaded is None else loaded & ~1)
                return "call"
            if self._local(insn) is not None:
                return "branch"  # a local subroutine: its pushes are walked as ours
            self._call(insn, state, target)
            return "call"
        if base == "bx":
            register = ops[0] if ops else ""
            if register == "lr" or register in self.popped or register in state.returning:
                return "return"
            self._call(insn, state, None, tail=True)
            return "stop"
        if base in ("pop",) or (base.startswith("ldm") and ops and ops[0] == "sp!"):
            return "return" if "pc" in _registers(insn.operands) else "next"
        if base in ("tbb", "tbh"):
            self.tables.append(state)
            return "stop"
        if base == "udf":
            return "stop"
        if ops and ops[0] == "pc":
            return self._pc_written(insn, base, ops, state)
        return "next"

    def _pc_written(self, insn: Instruction, base: str, ops: list[str], state: _State) -> str:
        source = " ".join(ops[1:])
        if base == "ldr" and source.startswith("[sp"):
            return "return"
        if base == "mov" and source == "lr":
            return "return"
        if base == "ldr" and re.fullmatch(r"\[pc(, #-?\d+)?\]", source):
            literal = _LITERAL.search(insn.comment)
            word = self.read_word(int(literal[1], 16)) if literal else None
            # A veneer: a jump through a literal to a function out of `bl` range.
            self._call(insn, state, None if word is None else word & ~1, tail=True)
            return "stop"
        if source.startswith("[pc") or base == "add" or self._table_base(insn, source):
            self.tables.append(state)
            return "stop"
        if base == "mov" and self._loaded_from_table(insn, source):
            self.tables.append(state)
            return "stop"
        self._call(insn, state, None, tail=True)
        return "stop"

    def _table_base(self, insn: Instruction, source: str) -> bool:
        """Whether `ldr pc, [rX, rY, lsl #2]` reads a jump table: rX set by `adr rX, table`
        (`add rX, pc, #n`) in the straight run of code before it, as GCC's -Os switches."""
        found = re.fullmatch(r"\[(\w+), \w+, lsl #2\]", source)
        if found is None:
            return False
        at = self.index[insn.address]
        for before in range(at - 1, max(at - 4, -1), -1):
            previous = self.code[before]
            ops = _operands(previous.operands)
            if previous.is_data or not ops or ops[0] != found[1]:
                continue
            base, _ = _split(previous.mnemonic)
            return base in ("add", "adr", "addw") and len(ops) == 3 and ops[1] == "pc"
        return False

    def _loaded_from_table(self, insn: Instruction, register: str) -> bool:
        """Whether `register` was last loaded, in the straight run of code before `insn`,
        from a table of this function's addresses: `ldr r0, [r0, r4]` with r0 the table's
        address from a literal pool, as Armv6-M's switches jump (`mov pc, r0`)."""
        writer = self._writer(insn, register, 8)
        if writer is None:
            return False
        previous = self.code[writer]
        found = re.fullmatch(r"\w+, \[(\w+), \w+\]", previous.operands)
        if _split(previous.mnemonic)[0] != "ldr" or found is None:
            return False
        table = self._literal(previous, found[1])
        entry = None if table is None else self.read_word(table)
        return entry is not None and self.function.address <= entry & ~1 < self.function.end

    def _writer(self, insn: Instruction, register: str, reach: int) -> int | None:
        """The index of the instruction that last set `register` in the straight run of at
        most `reach` instructions before `insn`; None when there is none (a branch, data or
        a place other paths join comes first)."""
        at = self.index[insn.address]
        for before in range(at - 1, max(at - reach, -1), -1):
            previous = self.code[before]
            base, _ = _split(previous.mnemonic)
            ops = _operands(previous.operands)
            if previous.is_data or base in _BRANCHES or previous.address in self.targets:
                return None
            if ops and ops[0] == register and not _writes_nothing(base):
                return before
        return None

    def _literal(self, insn: Instruction, register: str) -> int | None:
        """The word `register` was loaded with from a literal pool in the same straight run
        of code before `insn` (`ldr r3, [pc, #8]; blx r3` calls a known function, such as a
        weak one); None when not known."""
        at = self.index[insn.address]
        for before in range(at - 1, max(at - 16, -1), -1):
            previous = self.code[before]
            base, _ = _split(previous.mnemonic)
            ops = _operands(previous.operands)
            if previous.is_data or base in _BRANCHES or base == "pop":
                return None
            if ops and ops[0] == register and not _writes_nothing(base):
                literal = _LITERAL.search(previous.comment)
                if base != "ldr" or not literal or not previous.operands.endswith("]"):
                    return None
                return self.read_word(int(literal[1], 16))
            if previous.address in self.targets:
                return None  # other paths join here
        return None

    def _lowered(self, insn: Instruction, register: str) -> bool:
        """Whether `register` was last set, in the same straight run of code before `insn`,
        to a stack address less an amount known only at run time (`subs r3, r2, r3` with r2
        a copy of the stack pointer): a dynamic allocation."""
        writer = self._writer(insn, register, 16)
        if writer is None:
            return False
        base, _ = _split(self.code[writer].mnemonic)
        ops = _operands(self.code[writer].operands)
        earlier = self.states[writer]
        return (
            base in ("sub", "subs")
            and len(ops) == 3
            and not ops[2].startswith("#")
            and earlier is not None
            and (ops[1] == "sp" or earlier.pointer(ops[1]) is not None)
        )

    def _call(
        self, insn: Instruction, state: _State, target: int | None, tail: bool = False
    ) -> None:
        old = self.calls.get(insn.address)
        depth = state.depth if old is None else max(old.depth, state.depth)
        dynamic = state.dynamic or (old is not None and old.dynamic)
        self.calls[insn.address] = Call(insn.address, depth, target, tail=tail, dynamic=dynamic)

    def _local(self, insn: Instruction, loop: bool = False) -> int | None:
        """The index of a branch target inside this function. A call (`loop` False) to the
        function's own first instruction is recursion, not a branch."""
        target = _target(insn)
        if target is None or (target == self.function.address and not loop):
            return None
        return self.index.get(target)


def _pointer_moved(base: str, ops: list[str], state: _State) -> int | None:
    """The stack address (as a depth) an instruction leaves in its destination register,
    when it is one: `mov r7, sp`, `add r7, sp, #8`, and a frame pointer moved by a constant
    (`adds r7, #108`, `add.w r7, r7, #512`, `subs r3, r7, #4`), as GCC's -O0 epilogues
    restore the stack pointer from it (`mov sp, r7`)."""
    # The flag-setting forms (adds, subs, movs) move a pointer as the plain ones do.
    plain = base[:-1] if base in ("adds", "subs", "movs") else base
    if plain == "mov" and len(ops) == 2:
        return state.depth if ops[1] == "sp" else state.pointer(ops[1])
    if plain not in ("add", "addw", "sub", "subw") or len(ops) not in (2, 3):
        return None
    source = ops[0] if len(ops) == 2 else ops[1]
    amount = ops[-1]
    if not amount.startswith("#"):
        return None
    start = state.depth if source == "sp" else state.pointer(source)
    if start is None:
        return None
    # A depth counts down from the entry's stack pointer: adding moves a pointer up.
    return start - _immediate(amount) if plain.startswith("add") else start + _immediate(amount)


def _writes_nothing(base: str) -> bool:
    return base in _BRANCHES or base.startswith(_NO_DESTINATION)


def _split(mnemonic: str) -> tuple[str, bool]:
    """("pop", True) for "popeq"; the width qualifier (.n, .w) dropped."""
    name = mnemonic.split(".", 1)[0]
    if name in _BASES:
        return name, False
    if len(name) > 2 and name[-2:] in _CONDITIONS and name[:-2] in _BASES:
        return name[:-2], True
    return name, False


def _operands(text: str) -> list[str]:
    """Top-level operands: "r0, [sp, #4]" → ["r0", "[sp, #4]"]; a register list is one."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _registers(text: str) -> list[str]:
    """The registers of a register list "{r4, r5, d8-d9, lr}" (ranges expanded)."""
    start, end = text.find("{"), text.find("}")
    if start < 0 or end < start:
        return []
    names = []
    for item in text[start + 1 : end].split(","):
        item = item.strip()
        if "-" in item:
            low, high = item.split("-", 1)
            bank = low.rstrip("0123456789")
            names += [
                f"{bank}{n}" for n in range(int(low[len(bank) :]), int(high[len(bank) :]) + 1)
            ]
        elif item:
            names.append(item)
    return names


def _list_bytes(text: str) -> int:
    return sum(
        8 if name.startswith("d") else 16 if name.startswith("q") else 4
        for name in _registers(text)
    )


def _writeback(text: str) -> int | None:
    """Bytes a load or store with writeback moves the stack pointer down by."""
    if match := re.search(r"\[sp, #(-?\d+)\]!", text):
        return -int(match[1])
    if match := re.search(r"\[sp\], #(-?\d+)", text):
        return -int(match[1])
    return None


def _immediate(text: str) -> int:
    value = text.lstrip("#").strip()
    return int(value, 16) if value.lower().startswith(("0x", "-0x")) else int(value)


_CALL_CLOBBERED = frozenset(("r0", "r1", "r2", "r3", "ip", "r12", "lr"))
"""The registers a called function may change (AAPCS)."""
_STACK_LOAD = re.compile(r"(\w+), \[sp(?:, #(\d+))?\]")
"""`ldr rX, [sp, #k]`: a register loaded from the stack at an offset, without writeback."""


def _target(insn: Instruction) -> int | None:
    match = _TARGET.search(insn.operands)
    return int(match[1], 16) if match else None


def _popped_registers(code: Sequence[Instruction]) -> set[str]:
    """Registers the function reloads from its stack: a `bx` through one is a return."""
    popped: set[str] = set()
    for insn in code:
        base, _ = _split(insn.mnemonic)
        ops = _operands(insn.operands)
        if base == "pop" or (base.startswith("ldm") and ops and ops[0] == "sp!"):
            popped.update(_registers(insn.operands))
        elif base == "ldr" and re.search(r"\[sp\], #", insn.operands) and ops:
            popped.add(ops[0])
    popped.discard("pc")
    return popped


# What the C++ reader (`cxx.py`) reads instructions with.
branch_target = _target
operands = _operands
registers = _registers
split_mnemonic = _split
