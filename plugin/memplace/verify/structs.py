"""Member offsets of C structures, from an ELF's DWARF debug information: how an RTOS's
task reader finds the fields of its kernel's structures as this build laid them out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from elftools.elf.elffile import ELFFile

from memplace.errors import InputError
from memplace.verify.image import DAMAGED


def struct_members(elf: Path, names: frozenset[str]) -> dict[str, dict[str, int]] | None:
    """Member offsets (bytes, and `<size>` the structure's size, `<member length>` an
    array member's element count) of the named structures, from the first unit that
    defines each; None when the ELF has no debug information. Damaged DWARF is an
    InputError naming the ELF."""
    with elf.open("rb") as handle:
        parsed = ELFFile(handle)
        if not parsed.has_dwarf_info():
            return None
        try:
            return _structs(parsed, names)
        except DAMAGED as exc:
            raise InputError(
                f"its DWARF debug information is damaged: {type(exc).__name__}: {exc}",
                key=str(elf),
            ) from exc


def _structs(elf: ELFFile, names: frozenset[str]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    dwarf = elf.get_dwarf_info()
    for unit in dwarf.iter_CUs():
        for die in unit.iter_DIEs():
            if die.tag != "DW_TAG_structure_type" or "DW_AT_name" not in die.attributes:
                continue
            name = die.attributes["DW_AT_name"].value.decode(errors="replace")
            if name not in names or name in found or "DW_AT_byte_size" not in die.attributes:
                continue
            members = {"<size>": int(die.attributes["DW_AT_byte_size"].value)}
            for member in die.iter_children():
                location = member.attributes.get("DW_AT_data_member_location")
                label = member.attributes.get("DW_AT_name")
                if member.tag == "DW_TAG_member" and location is not None and label is not None:
                    key = label.value.decode(errors="replace")
                    members[key] = int(location.value)
                    length = _array_length(member)
                    if length is not None:
                        members[f"<{key} length>"] = length
            found[name] = members
        if len(found) == len(names):
            break
    return found


def _array_length(member: Any) -> int | None:
    kind = (
        member.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in member.attributes else None
    )
    if kind is None or kind.tag != "DW_TAG_array_type":
        return None
    for child in kind.iter_children():
        if child.tag == "DW_TAG_subrange_type":
            if "DW_AT_count" in child.attributes:
                return int(child.attributes["DW_AT_count"].value)
            if "DW_AT_upper_bound" in child.attributes:
                return int(child.attributes["DW_AT_upper_bound"].value) + 1
    return None
