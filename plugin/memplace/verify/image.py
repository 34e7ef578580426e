"""What verification reads from one linked ELF file: sections, symbols and functions.

`Image.from_file` reads the file once with pyelftools and keeps plain frozen data, so the
checks, and their tests, work on an `Image` built from data as well.
"""

from __future__ import annotations

import bisect
import os
import posixpath
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import DWARFError, ELFError
from elftools.construct import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from memplace.errors import InputError

DAMAGED = (
    ELFError,
    DWARFError,
    ConstructError,
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    struct.error,
)
"""What pyelftools raises on an ELF file or DWARF data it cannot make sense of."""
ADDRESS_SPACE = 1 << 32


@dataclass(frozen=True)
class Section:
    """An allocated section: [address, address + size) where it runs, and where it loads."""

    name: str
    address: int
    size: int
    nobits: bool = False
    load_address: int | None = None
    writable: bool = False
    executable: bool = False

    @property
    def end(self) -> int:
        return self.address + self.size

    @property
    def lma(self) -> int:
        """Where the image holds the section's bytes (its load copy)."""
        return self.address if self.load_address is None else self.load_address

    @property
    def copied(self) -> bool:
        """Whether the bytes are loaded somewhere else and copied at reset."""
        return not self.nobits and self.lma != self.address


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int
    size: int
    kind: str  # "object", "func" or "notype"
    local: bool = False
    weak: bool = False
    file: str | None = None  # the source file of a local symbol (its STT_FILE)
    section: str | None = None  # None for an absolute symbol (`name = address;` in a script)


@dataclass(frozen=True)
class Function:
    """Code at [address, address + size), with every name the symbol table gives it."""

    address: int
    size: int
    names: tuple[str, ...]
    file: str | None = None

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass(frozen=True)
class Image:
    """One linked image (the ELF of one core)."""

    path: Path
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...] = ()
    entry: int = 0
    contents: Mapping[str, bytes] = field(default_factory=dict)
    # Each loadable segment's physical (load) address and the bytes its file part holds:
    # what a loader or debugger programs.
    segments: tuple[tuple[int, bytes], ...] = ()

    @classmethod
    def from_file(cls, path: Path, key: str = "DIR") -> Image:
        """The image at `path`; an ELF that is not a 32-bit Arm one, or whose headers point
        outside the file or the address space, is an InputError naming it (under `key`)."""
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise InputError(f"no image at {path}: build the project first", key=key) from exc
        try:
            with handle:
                elf = ELFFile(handle)
                _check_headers(path, elf, os.fstat(handle.fileno()).st_size, key)
                return cls._read(path, elf)
        except DAMAGED as exc:
            raise InputError(f"{path} is not a readable ELF file: {exc}", key=key) from exc

    @classmethod
    def _read(cls, path: Path, elf: ELFFile) -> Image:
        segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        sections: list[Section] = []
        contents: dict[str, bytes] = {}
        for section in elf.iter_sections():
            flags = section["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC or section["sh_size"] == 0:
                continue
            nobits = section["sh_type"] == "SHT_NOBITS"
            address = section["sh_addr"]
            sections.append(
                Section(
                    name=section.name,
                    address=address,
                    size=section["sh_size"],
                    nobits=nobits,
                    load_address=None if nobits else _load_address(segments, section),
                    writable=bool(flags & SH_FLAGS.SHF_WRITE),
                    executable=bool(flags & SH_FLAGS.SHF_EXECINSTR),
                )
            )
            if not nobits:
                contents[section.name] = section.data()
        return cls(
            path=path,
            sections=tuple(sections),
            symbols=tuple(_symbols(elf)),
            entry=elf.header["e_entry"] & ~1,
            contents=contents,
            segments=tuple((s["p_paddr"], s.data()) for s in segments if s["p_filesz"]),
        )

    def get_symbol(self, name: str) -> Symbol | None:
        """The first data (or untyped) symbol called `name`; None when there is none."""
        for symbol in self.symbols:
            if symbol.name == name and symbol.kind in ("object", "notype"):
                return symbol
        return None

    def get_section(self, name: str) -> Section | None:
        for section in self.sections:
            if section.name == name:
                return section
        return None

    def section_at(self, address: int) -> Section | None:
        for section in self.sections:
            if section.address <= address < section.end:
                return section
        return None

    def read(self, address: int, size: int) -> bytes | None:
        """`size` bytes at run-time `address`, as the image holds them; None if it holds none."""
        section = self.section_at(address)
        data = self.contents.get(section.name) if section else None
        if section is None or data is None or address + size > section.end:
            return None
        start = address - section.address
        return data[start : start + size]

    def read_loaded(self, address: int, size: int) -> bytes | None:
        """`size` bytes at load `address` as the image's segments program them; None if no
        one segment holds them all."""
        for start, data in self.segments:
            if start <= address and address + size <= start + len(data):
                return data[address - start : address - start + size]
        return None

    def iter_functions(self) -> Iterator[Function]:
        """Every function, once per address, in address order; a symbol of size 0 reaches
        to the next function."""
        by_address: dict[int, list[Symbol]] = {}
        for symbol in self.symbols:
            if symbol.kind == "func":
                by_address.setdefault(symbol.address, []).append(symbol)
        starts = sorted(by_address)
        for index, address in enumerate(starts):
            group = sorted(by_address[address], key=_name_preference)
            size = max(s.size for s in group)
            if size == 0 and index + 1 < len(starts):
                size = starts[index + 1] - address
            yield Function(
                address=address,
                size=size,
                names=tuple(dict.fromkeys(s.name for s in group)),
                file=next((s.file for s in group if s.local), None),
            )


def _name_preference(symbol: Symbol) -> tuple[bool, bool, bool, str]:
    # Strong global names first (what a user types, not a weak alias), then names
    # without a leading underscore.
    return (symbol.local, symbol.weak, symbol.name.startswith("_"), symbol.name)


def _load_address(segments: list[Any], section: Any) -> int:
    """Where the segment that holds `section` loads it: the segment its file bytes are in,
    else the loadable segment whose run addresses cover it (the program header may say
    another file offset than the section header: the bytes check finds that)."""
    address = section["sh_addr"]
    holding = [s for s in segments if s.section_in_segment(section)]
    holding = holding or [
        s
        for s in segments
        if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= address < s["p_vaddr"] + s["p_memsz"]
    ]
    if not holding:
        return int(address)
    return int(holding[0]["p_paddr"] + address - holding[0]["p_vaddr"])


_KINDS = {"STT_OBJECT": "object", "STT_FUNC": "func", "STT_NOTYPE": "notype"}


def _check_headers(path: Path, elf: ELFFile, file_size: int, key: str) -> None:
    machine = elf["e_machine"]
    if machine != "EM_ARM" or elf.elfclass != 32:
        raise InputError(
            f"{path} is a {elf.elfclass}-bit ELF file for {machine}; memplace reads images for "
            "Arm Cortex-M cores (EM_ARM, 32-bit)",
            key=key,
        )
    for index, section in enumerate(elf.iter_sections()):
        header = section.header
        size, offset = header["sh_size"], header["sh_offset"]
        where = f"{path}: section {index}"
        if header["sh_type"] != "SHT_NOBITS" and offset + size > file_size:
            raise InputError(
                f"{where} claims {size} bytes at offset {offset}, past the end of the file "
                f"({file_size} bytes)",
                key=key,
            )
        if header["sh_flags"] & SH_FLAGS.SHF_ALLOC and header["sh_addr"] + size > ADDRESS_SPACE:
            raise InputError(
                f"{where} of {size} bytes at 0x{header['sh_addr']:08x} runs past the 32-bit "
                "address space",
                key=key,
            )


def _symbols(elf: ELFFile) -> Iterator[Symbol]:
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        return
    names = {index: section.name for index, section in enumerate(elf.iter_sections())}
    current_file: str | None = None
    for symbol in symtab.iter_symbols():
        kind = symbol["st_info"]["type"]
        local = symbol["st_info"]["bind"] == "STB_LOCAL"
        weak = symbol["st_info"]["bind"] == "STB_WEAK"
        if kind == "STT_FILE":
            current_file = symbol.name
            continue
        if not local:
            current_file = None
        if kind not in _KINDS or not symbol.name or symbol["st_shndx"] == "SHN_UNDEF":
            continue
        value = symbol["st_value"]
        if kind == "STT_FUNC":
            value &= ~1  # the Thumb bit
        yield Symbol(
            name=symbol.name,
            address=value,
            size=symbol["st_size"],
            kind=_KINDS[kind],
            local=local,
            weak=weak,
            file=current_file if local else None,
            section=names.get(symbol["st_shndx"]) if isinstance(symbol["st_shndx"], int) else None,
        )


class LineTable:
    """Address → source line from an image's DWARF line programs, read on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rows: list[tuple[int, str, int, int]] | None = None

    def lookup(self, address: int) -> tuple[str, int, int] | None:
        """(file, line, column) of the code at `address`; None without debug information."""
        rows = self._load()
        index = bisect.bisect_right(rows, (address, "\uffff", 0, 0)) - 1
        if index < 0:
            return None
        found, file, line, column = rows[index]
        if address - found > 64:  # past the last row of a sequence: no line known here
            return None
        return file, line, column

    def _load(self) -> list[tuple[int, str, int, int]]:
        if self._rows is None:
            self._rows = sorted(self._read())
        return self._rows

    def _read(self) -> Iterator[tuple[int, str, int, int]]:
        try:
            with self.path.open("rb") as handle:
                elf = ELFFile(handle)
                if not elf.has_dwarf_info():
                    return
                dwarf = elf.get_dwarf_info()
                for unit in dwarf.iter_CUs():
                    program = dwarf.line_program_for_CU(unit)
                    if program is None:
                        continue
                    names = _file_names(program)
                    for entry in program.get_entries():
                        state = entry.state
                        if state is None or state.end_sequence:
                            continue
                        name = names.get(state.file, "?")
                        yield state.address, name, state.line, state.column
        except OSError:
            return
        except DAMAGED as exc:
            raise InputError(
                f"its DWARF debug information is damaged: {type(exc).__name__}: {exc}",
                key=str(self.path),
            ) from exc


def _file_names(program: Any) -> dict[int, str]:
    header = program.header
    version = header["version"]
    files = header["file_entry"]
    directories = header["include_directory"]
    names: dict[int, str] = {}
    for index, entry in enumerate(files):
        number = index if version >= 5 else index + 1
        name = _text(entry.name)
        directory_index = entry.dir_index
        if not name.startswith("/"):
            slot = directory_index if version >= 5 else directory_index - 1
            if 0 <= slot < len(directories) and (version >= 5 or directory_index > 0):
                name = f"{_text(directories[slot])}/{name}"
        names[number] = _tidy(name)
    return names


def _tidy(name: str) -> str:
    """A source path without the `../` a library's build put in front of it."""
    parts = [part for part in posixpath.normpath(name).split("/") if part != ".."]
    return "/".join(parts) if parts else name


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
