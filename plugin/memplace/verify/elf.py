"""Placement checks read from the linked ELF files alone, compared with the plan."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from memplace.codegen import fnv1a
from memplace.errors import InputError
from memplace.project import Project
from memplace.verify.report import Finding


@dataclass(frozen=True)
class _Section:
    name: str
    address: int
    size: int
    nobits: bool
    load_address: int


@dataclass(frozen=True)
class _Range:
    name: str
    start: int
    end: int

    def holds(self, start: int, size: int) -> bool:
        return self.start <= start and start + size <= self.end


class _Image:
    """What the checks need from one ELF: allocated sections, symbols, bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise InputError(f"no image at {path}: build the project first", key="DIR") from exc
        with handle:
            elf = ELFFile(handle)
            segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            self.sections: list[_Section] = []
            self.data: dict[str, bytes] = {}
            for section in elf.iter_sections():
                if not section["sh_flags"] & SH_FLAGS.SHF_ALLOC or section["sh_size"] == 0:
                    continue
                nobits = section["sh_type"] == "SHT_NOBITS"
                address = section["sh_addr"]
                self.sections.append(
                    _Section(
                        section.name,
                        address,
                        section["sh_size"],
                        nobits,
                        _load_address(segments, address),
                    )
                )
                if not nobits:
                    self.data[section.name] = section.data()
            self.symbols: dict[str, tuple[int, int]] = {}
            symtab = elf.get_section_by_name(".symtab")
            if isinstance(symtab, SymbolTableSection):
                for symbol in symtab.iter_symbols():
                    if symbol.name and symbol["st_info"]["type"] in ("STT_OBJECT", "STT_NOTYPE"):
                        self.symbols.setdefault(
                            symbol.name, (symbol["st_value"], symbol["st_size"])
                        )

    def section_at(self, address: int) -> _Section | None:
        for section in self.sections:
            if section.address <= address < section.address + section.size:
                return section
        return None


def _load_address(segments: list[Any], address: int) -> int:
    for segment in segments:
        if segment["p_vaddr"] <= address < segment["p_vaddr"] + max(segment["p_memsz"], 1):
            return int(segment["p_paddr"] + address - segment["p_vaddr"])
    return address


def check_images(project: Project) -> list[Finding]:
    findings: list[Finding] = []
    for core, path in project.images.items():
        findings += _check_core(project, core, _Image(path))
    return findings


def _memories(board: Mapping[str, Any], core: str) -> list[_Range]:
    ranges = []
    for name, memory in board["memories"].items():
        if core in memory["access"]:
            start = memory["views"].get(core, memory["origin"])
            ranges.append(_Range(name, start, start + memory["size"]))
    return ranges


def _view(board: Mapping[str, Any], core: str, memory: str) -> int:
    data = board["memories"][memory]
    return int(data["views"].get(core, data["origin"]) - data["origin"])


def _check_core(project: Project, core: str, image: _Image) -> Iterator[Finding]:
    board, plan = project.board, project.plan
    memories = {r.name: r for r in _memories(board, core)}
    load = memories.get(board["cores"][core]["layout"]["load"])
    for pool in plan.pools:
        if not pool.used or pool.memory not in memories:
            continue
        symbol = f"{plan.workload}_pool_{pool.name}"
        expected = pool.address + _view(board, core, pool.memory)
        found = image.symbols.get(symbol)
        if found is None:
            yield Finding("placement", pool.name, f"{symbol} is missing from {image.path.name}")
            continue
        address, size = found
        if address != expected:
            yield Finding(
                "placement",
                pool.name,
                f"{symbol} is at 0x{address:08x}, the plan says 0x{expected:08x}",
            )
        if not memories[pool.memory].holds(address, max(size, 1)):
            yield Finding(
                "placement",
                pool.name,
                f"{symbol} [0x{address:08x}, 0x{address + size:08x}) is outside "
                f"memory {pool.memory}",
            )
        if size < pool.used:
            yield Finding(
                "placement", pool.name, f"{symbol} holds {size} bytes, the plan uses {pool.used}"
            )
        section = image.section_at(address)
        if section is None:
            continue
        if pool.kind == "workspace" and not section.nobits:
            yield Finding(
                "placement",
                pool.name,
                f"workspace pool takes {section.size} bytes in the image ({section.name})",
            )
        if pool.kind == "constant":
            if section.nobits:
                yield Finding(
                    "placement", pool.name, f"constant pool has no contents in {section.name}"
                )
            elif (
                load is not None
                and not load.holds(section.load_address, section.size)
                and not memories[pool.memory].holds(section.load_address, section.size)
            ):
                yield Finding(
                    "load-copy",
                    pool.name,
                    f"{section.name} is loaded at 0x{section.load_address:08x}, "
                    f"outside the load memory {load.name}",
                )
            yield from _check_constants(project, pool.name, image, section, address)
    for placement in plan.placements:
        base = plan.address(placement)
        if base is not None and base % placement.align:
            yield Finding(
                "alignment",
                placement.name,
                f"address 0x{base:08x} is not aligned to {placement.align}",
            )
    for stack in plan.stacks:
        if board["contexts"][stack.context]["core"] != core:
            continue
        symbol = f"memplace_stack_{stack.context}"
        expected = stack.address + _view(board, core, stack.memory)
        found = image.symbols.get(symbol)
        if found is None:
            yield Finding("placement", f"{stack.context}.stack", f"{symbol} is missing")
        elif found != (expected, stack.budget):
            yield Finding(
                "placement",
                f"{stack.context}.stack",
                f"{symbol} is {found[1]} bytes at 0x{found[0]:08x}, the plan says "
                f"{stack.budget} bytes at 0x{expected:08x}",
            )
    yield from _check_sections(image, list(memories.values()))


def _check_constants(
    project: Project, pool: str, image: _Image, section: _Section, pool_address: int
) -> Iterator[Finding]:
    data = image.data.get(section.name, b"")
    for placement in project.plan.in_place(pool):
        expected = project.checksums.get(placement.name)
        if expected is None:
            continue
        start = pool_address - section.address + placement.offset
        if fnv1a(data[start : start + placement.size]) != expected:
            yield Finding(
                "contents",
                placement.name,
                "the constant's bytes in the image differ from the workload's",
            )


def _check_sections(image: _Image, memories: list[_Range]) -> Iterator[Finding]:
    ordered = sorted(image.sections, key=lambda s: s.address)
    for section in ordered:
        if not any(m.holds(section.address, section.size) for m in memories):
            yield Finding(
                "memory",
                section.name,
                f"[0x{section.address:08x}, 0x{section.address + section.size:08x}) "
                f"lies outside every memory the core reaches",
            )
    for low, high in itertools.pairwise(ordered):
        if high.address < low.address + low.size:
            yield Finding(
                "overlap",
                f"{low.name}/{high.name}",
                f"{low.name} ends at 0x{low.address + low.size:08x}, after "
                f"{high.name} starts at 0x{high.address:08x}",
            )
