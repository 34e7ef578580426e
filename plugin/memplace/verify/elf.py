"""Placement checks read from the linked ELF files alone, compared with the plan.

Every check reports every disagreement it finds. Addresses are compared in the view of
the core whose image is read; images of different cores are compared in system addresses.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace import contract
from memplace.board import FIRST_IRQ_EXCEPTION, POOL_ALIGN, STACK_ALIGN, Board
from memplace.project import Project
from memplace.project_files import IMAGE_MAP
from memplace.verify.image import Image, Section
from memplace.verify.report import Finding


@dataclass(frozen=True)
class _Range:
    name: str
    start: int
    end: int

    def holds(self, start: int, size: int) -> bool:
        return self.start <= start and start + size <= self.end

    def meets(self, start: int, end: int) -> bool:
        return start < self.end and self.start < end


def check_images(project: Project, images: Mapping[str, Image] | None = None) -> list[Finding]:
    """Every placement finding about the images of `project` (read from disk if not given)."""
    if images is None:
        images = {core: Image.from_file(path) for core, path in project.images.items()}
    findings: list[Finding] = []
    for core, image in images.items():
        checker = _CoreChecker(project, core, image)
        findings += checker.check()
    findings += _check_shared(project, images)
    findings += _check_release_tables(project, images)
    return findings


def subject_of(section: str) -> str:
    """What a finding about `section` is about: its pool or stack where it holds one."""
    pool, stack = contract.pool_of(section), contract.stack_of(section)
    if pool is not None:
        return pool
    return section if stack is None else f"{stack}.stack"


def memories_of(board: Board, core: str) -> dict[str, _Range]:
    """The memories `core` reaches, at the addresses it sees them."""
    ranges = {}
    for name, memory in board.memories.items():
        if core in memory.access:
            start = memory.address_for(core)
            ranges[name] = _Range(name, start, start + memory.size)
    return ranges


class _CoreChecker:
    def __init__(self, project: Project, core: str, image: Image) -> None:
        self.project = project
        self.board = project.board
        self.plan = project.plan
        self.core = core
        self.image = image
        self.memories = memories_of(self.board, core)
        load = self.board.cores[core].layout.load
        self.load = self.memories.get(load)
        try:
            self.file = str(image.path.relative_to(project.folder))
        except ValueError:
            self.file = str(image.path)

    def finding(self, check: str, subject: str, message: str) -> Finding:
        return Finding(check, subject, message, file=self.file)

    def check(self) -> list[Finding]:
        findings: list[Finding] = []
        for pool in self.plan.pools:
            if pool.used and pool.memory in self.memories:
                findings += self._check_pool(pool)
        for stack in self.plan.stacks:
            context = self.board.contexts.get(stack.owner)
            if context is not None and context.core == self.core:
                findings += self._check_stack(stack)
        findings += self._check_sections()
        findings += self._check_copies()
        findings += self._check_load_copies()
        findings += self._check_release_table()
        findings += self._check_rom_copy()
        findings += self._check_joined_vectors()
        findings += self._check_boot_table()
        findings += self._check_vector_lines()
        findings += self._check_regions()
        findings += self._check_mailbox()
        return findings

    def _check_regions(self) -> Iterator[Finding]:
        """Every section of an image, and every load copy, lies in a region the project's
        image map gives that image (its own parts of memories, its pools', stacks' and free
        regions): the image is linked as the map says."""
        core = self.board.cores[self.core]
        if self.project.image_map is None or core.image is not None:
            return
        regions = self.project.image_map.core(self.core).regions
        for section in self.image.sections:
            spans = [("", section.address)]
            if section.copied:
                spans.append((" (load copy)", section.lma))
            for what, start in spans:
                if not any(r.origin <= start and start + section.size <= r.end for r in regions):
                    yield self.finding(
                        "memory",
                        subject_of(section.name),
                        f"{section.name}{what} [0x{start:08x}, 0x{start + section.size:08x}) "
                        f"lies in no region the image map ({IMAGE_MAP}) gives core {self.core}",
                    )

    def _check_mailbox(self) -> Iterator[Finding]:
        """The mailbox released cores report to is where the image map puts it, in the image
        of each core that uses it."""
        box = None if self.project.image_map is None else self.project.image_map.mailbox
        if box is None or self.core not in (box.releaser, *box.cores):
            return
        symbol = self.image.get_symbol(contract.MAILBOX_SYMBOL)
        expected = self._expected(box.memory, box.system_address)
        if symbol is None or symbol.address != expected:
            where = "missing" if symbol is None else f"at 0x{symbol.address:08x}"
            yield self.finding(
                "shared",
                contract.MAILBOX_SYMBOL,
                f"{contract.MAILBOX_SYMBOL} is {where}, but the image map ({IMAGE_MAP}) puts "
                f"the mailbox at 0x{expected:08x} for core {self.core}",
            )

    def _check_boot_table(self) -> list[Finding]:
        """A core with an image of its own starts from the vector table at its `boot`
        address: the table its reset code copies from (`copy: reset`), else its own. (A
        boot ROM or a releaser copying the image starts it elsewhere: checked with them.)"""
        core = self.board.cores[self.core]
        if core.image is not None or core.layout.copy not in (None, "reset"):
            return []
        moves = core.layout.moves_vectors
        name = contract.BOOT_VECTORS_SYMBOL if moves else contract.vectors_symbol()
        symbol = self.image.get_symbol(name)
        if symbol is None or symbol.address == core.boot:
            return []
        return [
            self.finding(
                "vectors",
                self.core,
                f"{name} is at 0x{symbol.address:08x}, but core {self.core} starts from the "
                f"vector table at 0x{core.boot:08x} (its `boot`)",
            )
        ]

    def _check_vector_lines(self) -> list[Finding]:
        """Each isr wired to a device interrupt line (`irq`) is that line's entry of its
        core's vector table (the one VTOR points at once the startup code has run)."""
        core = self.board.cores[self.core]
        name = contract.vectors_symbol(None if core.image is None else self.core)
        table = self.image.get_symbol(name)
        findings = []
        for context in self.board.contexts.values():
            if context.core != self.core or context.irq is None or table is None:
                continue
            exception = FIRST_IRQ_EXCEPTION + context.irq
            where = f"entry {exception} (irq {context.irq}) of {name}"
            data = self.image.read(table.address + 4 * exception, 4)
            if data is None or 4 * exception >= table.size:
                message = f"isr {context.name}: {self.file} has no {where}"
            else:
                held = self._function_at(int.from_bytes(data, "little") & ~1)
                if held == context.entry:
                    continue
                message = f"isr {context.name}: {where} holds {held}, not {context.entry}()"
            findings.append(self.finding("vector", context.name, message))
        return findings

    def _function_at(self, address: int) -> str:
        """The function at `address` (the global one where aliases share it), by name."""
        functions = [s for s in self.image.symbols if s.kind == "func" and s.address == address]
        functions.sort(key=lambda s: (s.local, s.weak, s.name))
        return functions[0].name if functions else f"0x{address:08x}"

    def _check_joined_vectors(self) -> list[Finding]:
        """A core that runs another core's image starts from its own vector table, where its
        release points it: at its `boot` address, with its main stack's top and a reset
        handler of the image."""
        core = self.board.cores[self.core]
        if core.image is None:
            return []
        name = contract.vectors_symbol(self.core)
        symbol = self.image.get_symbol(name)
        if symbol is None:
            return [self.finding("vectors", self.core, f"{name} is missing from {self.file}")]
        if symbol.address != core.boot:
            return [
                self.finding(
                    "vectors",
                    self.core,
                    f"{name} is at 0x{symbol.address:08x}, but core {self.core}'s release "
                    f"starts it from 0x{core.boot:08x}",
                )
            ]
        table = self.image.read(symbol.address, 8)
        stack = next((s for s in self.plan.stacks if s.context == _main_context(self)), None)
        if table is None or stack is None:
            return []
        sp, reset = struct.unpack("<II", table)
        top = self._expected(stack.memory, stack.address) + stack.budget
        problems = []
        if sp != top:
            problems.append(
                f"its stack pointer is 0x{sp:08x}, not the top of its stack 0x{top:08x}"
            )
        if not any(s.kind == "func" and s.address == reset & ~1 for s in self.image.symbols):
            problems.append(f"its reset entry 0x{reset:08x} is no function of the image")
        return [self.finding("vectors", self.core, f"{name}: {problem}") for problem in problems]

    def _expected(self, memory: str, address: int) -> int:
        return address + self.board.memories[memory].shift(self.core)

    def _check_pool(self, pool: Any) -> Iterator[Finding]:
        name = contract.pool_symbol(self.plan.workload, pool.name)
        symbol = self.image.get_symbol(name)
        if symbol is None:
            yield self.finding("placement", pool.name, f"{name} is missing from {self.file}")
            return
        expected = self._expected(pool.memory, pool.address)
        memory = self.memories[pool.memory]
        if symbol.address != expected:
            yield self.finding(
                "placement",
                pool.name,
                f"{name} is at 0x{symbol.address:08x}, the plan says 0x{expected:08x}",
            )
        if not memory.holds(symbol.address, max(symbol.size, 1)):
            yield self.finding(
                "placement",
                pool.name,
                f"{name} [0x{symbol.address:08x}, 0x{symbol.address + symbol.size:08x}) is "
                f"outside memory {pool.memory} [0x{memory.start:08x}, 0x{memory.end:08x})",
            )
        yield from self._check_alignment(pool.name, symbol.address)
        if symbol.section is None:
            # Another image owns the storage; this one only names its address.
            return
        wanted = contract.pool_section(pool.name)
        if symbol.section != wanted:
            yield self.finding(
                "placement", pool.name, f"{name} is in section {symbol.section}, not {wanted}"
            )
        if symbol.size < pool.used:
            yield self.finding(
                "placement",
                pool.name,
                f"{name} holds {symbol.size} bytes, the plan uses {pool.used}",
            )
        section = self.image.get_section(symbol.section)
        if section is None:
            return
        if pool.kind == "workspace" and not section.nobits:
            yield self.finding(
                "placement",
                pool.name,
                f"workspace pool takes {section.size} bytes in the image ({section.name})",
            )
        if pool.kind == "constant":
            if section.nobits:
                yield self.finding(
                    "load-copy",
                    pool.name,
                    f"constant pool has no contents in the image: {section.name} holds no bytes",
                )
            else:
                yield from self._check_constants(pool.name, section, symbol.address)

    def _check_alignment(self, pool: str, base: int) -> Iterator[Finding]:
        if base % POOL_ALIGN:
            yield self.finding(
                "alignment", pool, f"pool address 0x{base:08x} is not aligned to {POOL_ALIGN}"
            )
        for placement in self.plan.in_place(pool):
            address = base + placement.offset
            if address % placement.align:
                yield self.finding(
                    "alignment",
                    placement.name,
                    f"address 0x{address:08x} is not aligned to {placement.align}",
                )

    def _check_constants(self, pool: str, section: Section, base: int) -> Iterator[Finding]:
        for placement in self.plan.in_place(pool):
            expected = self.project.checksums.get(placement.name)
            if expected is None:
                continue
            data = self.image.read(base + placement.offset, placement.size)
            if data is None or contract.fnv1a(data) != expected:
                yield self.finding(
                    "contents",
                    placement.name,
                    f"the constant's bytes in {section.name} differ from the workload's",
                )

    def _check_stack(self, stack: Any) -> Iterator[Finding]:
        subject = f"{stack.context}.stack"
        name = contract.stack_symbol(stack.c_name)
        symbol = self.image.get_symbol(name)
        if symbol is None:
            yield self.finding("placement", subject, f"{name} is missing from {self.file}")
            return
        expected = self._expected(stack.memory, stack.address)
        if (symbol.address, symbol.size) != (expected, stack.budget):
            yield self.finding(
                "placement",
                subject,
                f"{name} is {symbol.size} bytes at 0x{symbol.address:08x}, the plan says "
                f"{stack.budget} bytes at 0x{expected:08x}",
            )
        memory = self.memories.get(stack.memory)
        if memory is not None and not memory.holds(symbol.address, max(symbol.size, 1)):
            yield self.finding(
                "placement",
                subject,
                f"{name} [0x{symbol.address:08x}, 0x{symbol.address + symbol.size:08x}) is "
                f"outside memory {stack.memory}",
            )
        if symbol.address % STACK_ALIGN:
            yield self.finding(
                "alignment",
                subject,
                f"{name} at 0x{symbol.address:08x} is not aligned to {STACK_ALIGN}",
            )
        wanted = contract.stack_section(stack.c_name)
        if symbol.section != wanted:
            yield self.finding(
                "placement", subject, f"{name} is in section {symbol.section}, not {wanted}"
            )
        section = self.image.get_section(wanted)
        if section is not None and not section.nobits:
            yield self.finding(
                "placement",
                subject,
                f"the stack takes {section.size} bytes in the image ({section.name})",
            )

    def _reserved(self) -> list[_Range]:
        """The areas the plan reserves (pool capacity, stack budget) in this core's view."""
        areas = []
        for pool in self.plan.pools:
            if pool.memory in self.memories:
                start = self._expected(pool.memory, pool.address)
                areas.append(_Range(f"pool {pool.name}", start, start + pool.capacity))
        for stack in self.plan.stacks:
            if stack.memory in self.memories:
                start = self._expected(stack.memory, stack.address)
                areas.append(_Range(f"stack {stack.context}", start, start + stack.budget))
        return areas

    def _check_sections(self) -> Iterator[Finding]:
        memories = list(self.memories.values())
        reserved = self._reserved()
        for section in self.image.sections:
            inside = [m for m in memories if m.holds(section.address, section.size)]
            if not inside:
                yield self.finding(
                    "memory",
                    subject_of(section.name),
                    f"{section.name} [0x{section.address:08x}, 0x{section.end:08x}) overflows "
                    f"or lies outside "
                    f"every memory core {self.core} reaches",
                )
            if not contract.is_area(section.name):
                for area in reserved:
                    if area.meets(section.address, section.end):
                        yield self.finding(
                            "memory",
                            section.name,
                            f"{section.name} [0x{section.address:08x}, 0x{section.end:08x}) runs "
                            f"into the area "
                            f"of {area.name} [0x{area.start:08x}, 0x{area.end:08x})",
                        )
            if section.nobits or self.load is None:
                continue
            if not self.load.holds(section.lma, section.size):
                yield self.finding(
                    "load-copy",
                    subject_of(section.name),
                    f"{section.name} is loaded at [0x{section.lma:08x}, "
                    f"0x{section.lma + section.size:08x}), outside the load memory "
                    f"{self.load.name}",
                )
        yield from _overlaps(self._occupied(), self.finding)

    def _occupied(self) -> list[tuple[str, int, int]]:
        """What the image takes: every section where it runs, and every load copy."""
        spans = [(s.name, s.address, s.end) for s in self.image.sections]
        spans += [
            (f"{s.name} (load copy)", s.lma, s.lma + s.size)
            for s in self.image.sections
            if s.copied
        ]
        return spans

    def _check_copies(self) -> Iterator[Finding]:
        """Each section loaded apart from where it runs is in the reset handler's copy table,
        from its load copy, to its address, whole; and the table copies nothing else."""
        table = self._copy_table()
        if table is None:
            return
        entries = {to: (source, size) for source, to, size in table if size}
        # Vectors and code a releaser or the boot ROM copies are checked on their own.
        others_copy = self.board.cores[self.core].layout.copy in ("releaser", "boot-rom")
        for section in self.image.sections:
            entry = entries.pop(section.address, None)
            if entry is None:
                boot_part = contract.layout_sections().get(section.name) in ("vectors", "code")
                if section.copied and not (others_copy and boot_part):
                    yield self.finding(
                        "load-copy",
                        subject_of(section.name),
                        f"{section.name} runs at 0x{section.address:08x} but the reset handler "
                        f"never copies it from its load copy at 0x{section.lma:08x}",
                    )
            elif entry != (section.lma, section.size):
                yield self.finding(
                    "load-copy",
                    subject_of(section.name),
                    f"the reset handler copies {entry[1]} bytes from 0x{entry[0]:08x} to "
                    f"{section.name}, but its load copy is {section.size} bytes at "
                    f"0x{section.lma:08x}",
                )
        for to, (source, size) in sorted(entries.items()):
            yield self.finding(
                "load-copy",
                f"0x{to:08x}",
                f"the reset handler copies {size} bytes from 0x{source:08x} to "
                f"0x{to:08x}, where the image has no section",
            )

    def _run_memory(self, section: str) -> str | None:
        """The memory the plan or the layout says `section` runs in; None if neither says."""
        part = contract.layout_sections().get(section)
        if part is not None:
            return str(getattr(self.board.cores[self.core].layout, part))
        name = contract.pool_of(section)
        pool = None if name is None else self.board.pools.get(name)
        return pool.memory if pool is not None else None

    def _check_load_copies(self) -> Iterator[Finding]:
        """Every section that runs apart from its load copy: it runs in the memory its
        layout or pool names, and the bytes programmed at its load address are its own."""
        for section in self.image.sections:
            if not section.copied:
                continue
            subject = subject_of(section.name)
            memory = self._run_memory(section.name)
            where = self.memories.get(memory) if memory else None
            if where is not None and not where.holds(section.address, section.size):
                yield self.finding(
                    "load-copy",
                    subject,
                    f"{section.name} runs at [0x{section.address:08x}, 0x{section.end:08x}), "
                    f"outside its run memory {memory}",
                )
            loaded = self.image.read_loaded(section.lma, section.size)
            if loaded is not None and loaded != self.image.contents.get(section.name):
                yield self.finding(
                    "load-copy",
                    subject,
                    f"the bytes loaded at 0x{section.lma:08x} differ from {section.name}'s "
                    f"contents: the copy would run something else",
                )

    def _check_release_table(self) -> Iterator[Finding]:
        """An image its releaser copies names, in its release table, every section the
        releaser must copy: from its load copy to its run address, whole, as the releaser
        sees them."""
        core = self.board.cores[self.core]
        if core.layout.copy != "releaser" or core.release is None:
            return
        table = self.image.get_section(contract.RELEASE_TABLE)
        data = self.image.contents.get(contract.RELEASE_TABLE, b"")
        words = struct.unpack(f"<{len(data) // 4}I", data[: len(data) // 4 * 4])
        if table is None or len(words) < 2 or words[0] != contract.RELEASE_TABLE_MAGIC:
            yield self.finding(
                "load-copy",
                contract.RELEASE_TABLE,
                f"the image has no release table for core {core.release.by} to copy it by",
            )
            return
        entries = {(words[i], words[i + 1], words[i + 2]) for i in range(2, 2 + 3 * words[1], 3)}
        by = core.release.by
        for section in self.image.sections:
            part = contract.layout_sections().get(section.name)
            if not section.copied or part not in ("vectors", "code"):
                continue
            load = self.board.memories[core.layout.load]
            run = self.board.memories[getattr(core.layout, part)]
            wanted = (
                section.lma - load.address_for(self.core) + load.address_for(by),
                section.address - run.address_for(self.core) + run.address_for(by),
                section.size,
            )
            if wanted not in entries:
                yield self.finding(
                    "load-copy",
                    section.name,
                    f"core {by} never copies {section.name} ({section.size} bytes from "
                    f"0x{wanted[0]:08x} to 0x{wanted[1]:08x} as it sees them): the release "
                    f"table does not say so",
                )

    def _check_rom_copy(self) -> Iterator[Finding]:
        """The block the boot ROM copies holds vectors and code, at one offset between
        where they are loaded and where they run."""
        layout = self.board.cores[self.core].layout
        if layout.copy != "boot-rom":
            return
        names = contract.rom_copy()
        symbols = [self.image.get_symbol(name) for name in names]
        if any(symbol is None for symbol in symbols):
            yield self.finding(
                "load-copy", "boot-rom", f"the image lacks {', '.join(names)} for the boot ROM"
            )
            return
        load, run, size = (symbol.address for symbol in symbols if symbol is not None)
        for name, address, memory in (("load", load, layout.load), ("run", run, layout.code)):
            if not self.memories[memory].holds(address, size):
                yield self.finding(
                    "load-copy",
                    "boot-rom",
                    f"the boot ROM's {name} block [0x{address:08x}, 0x{address + size:08x}) "
                    f"is outside memory {memory}",
                )
        for section in self.image.sections:
            if contract.layout_sections().get(section.name) not in ("vectors", "code"):
                continue
            inside = run <= section.address and section.end <= run + size
            if not inside or section.lma - load != section.address - run:
                yield self.finding(
                    "load-copy",
                    section.name,
                    f"the boot ROM copies [0x{load:08x}, 0x{load + size:08x}) to 0x{run:08x}, "
                    f"which does not carry {section.name} from 0x{section.lma:08x} to "
                    f"0x{section.address:08x}",
                )

    def _copy_table(self) -> list[tuple[int, int, int]] | None:
        start = self.image.get_symbol(contract.COPY_TABLE_START)
        end = self.image.get_symbol(contract.COPY_TABLE_END)
        if start is None or end is None or end.address < start.address:
            return None
        data = self.image.read(start.address, end.address - start.address)
        if data is None:
            return [] if end.address == start.address else None
        words = struct.unpack(f"<{len(data) // 4}I", data[: len(data) // 4 * 4])
        return [(words[i], words[i + 1], words[i + 2]) for i in range(0, len(words) - 2, 3)]


def _overlaps(
    spans: Iterable[tuple[str, int, int]], finding: Any, subject_prefix: str = ""
) -> Iterator[Finding]:
    """Every pair of spans that share a byte."""
    ordered = sorted((s for s in spans if s[2] > s[1]), key=lambda s: (s[1], s[2], s[0]))
    active: list[tuple[str, int, int]] = []
    for name, start, end in ordered:
        active = [a for a in active if a[2] > start]
        for other, other_start, other_end in active:
            yield finding(
                "overlap",
                f"{subject_prefix}{other}/{name}",
                f"{other} [0x{other_start:08x}, 0x{other_end:08x}) overlaps "
                f"{name} [0x{start:08x}, 0x{end:08x})",
            )
        active.append((name, start, end))


def _check_shared(project: Project, images: Mapping[str, Image]) -> Iterator[Finding]:
    """Memories several images use: one address for each pool, and no private section of
    one image on top of another image's."""
    board = project.board
    if len(images) < 2:
        return
    for memory, data in board.memories.items():
        cores = [core for core in images if core in data.access]
        if len(cores) < 2:
            continue
        yield from _check_shared_memory(project, memory, cores, images)


def _check_shared_memory(
    project: Project, memory: str, cores: list[str], images: Mapping[str, Image]
) -> Iterator[Finding]:
    board = project.board
    data = board.memories[memory]
    spans: dict[tuple[str, int, int, Path], list[str]] = {}
    for core in cores:
        shift = data.shift(core)
        start, end = data.origin + shift, data.origin + shift + data.size
        image = images[core]
        for section in image.sections:
            if start <= section.address < end:
                key = (section.name, section.address - shift, section.end - shift, image.path)
                spans.setdefault(key, []).append(core)
            # A load copy here is the image's too: programmed bytes of two images never mix.
            if section.copied and start <= section.lma < end:
                lma = section.lma - shift
                key = (f"{section.name} (load copy)", lma, lma + section.size, image.path)
                spans.setdefault(key, []).append(core)
    # Cores that run one image (one ELF) hold its sections once; sections of different
    # images sharing a byte are a clash, whatever their names.
    named = [
        (f"{name} of {'+'.join(owners)}", lo, hi) for (name, lo, hi, _), owners in spans.items()
    ]
    for item in _overlaps(named, Finding, subject_prefix=f"{memory}: "):
        yield Finding("shared", item.subject, f"in shared memory {memory}: {item.message}")
    for pool in project.plan.pools:
        if pool.memory != memory or not pool.used:
            continue
        name = contract.pool_symbol(project.plan.workload, pool.name)
        seen = {}
        for core in cores:
            symbol = images[core].get_symbol(name)
            if symbol is not None:
                seen[core] = symbol.address - data.shift(core)
        if len(set(seen.values())) > 1:
            where = ", ".join(f"0x{address:08x} in {core}" for core, address in seen.items())
            yield Finding(
                "shared",
                pool.name,
                f"{name} has different system addresses in the images: {where}",
            )


def _check_release_tables(project: Project, images: Mapping[str, Image]) -> Iterator[Finding]:
    """Each releaser reads the release table of the image it copies where the image map
    says, and the image has its table there (both as the releaser sees them)."""
    if project.image_map is None:
        return
    board = project.board
    for mapped in project.image_map.cores:
        for release in mapped.releases:
            image = images.get(release.core)
            if release.copy_table is None or image is None:
                continue
            load = board.memories[board.cores[release.core].layout.load]
            table = image.get_section(contract.RELEASE_TABLE)
            seen = (
                None
                if table is None
                else table.address - load.address_for(release.core) + load.address_for(mapped.core)
            )
            if seen != release.copy_table:
                where = "has none" if seen is None else f"has it at 0x{seen:08x}"
                yield Finding(
                    "load-copy",
                    contract.RELEASE_TABLE,
                    f"core {mapped.core} reads core {release.core}'s release table at "
                    f"0x{release.copy_table:08x} (the image map, {IMAGE_MAP}), but the image "
                    f"{where} as core {mapped.core} sees it",
                    file=_relative(project, image.path),
                )


def _relative(project: Project, path: Path) -> str:
    try:
        return str(path.relative_to(project.folder))
    except ValueError:
        return str(path)


def _main_context(checker: _CoreChecker) -> str | None:
    """The context whose stack a core starts on: its first thread context with a stack."""
    for context in checker.board.contexts.values():
        if context.core == checker.core and context.kind == "thread" and context.stack:
            return context.name
    return None
