"""Write an `OfflineMemoryAllocation` entry into a copy of a `.tflite` flatbuffer.

A flatbuffer refers forward only (its offsets are unsigned), so the new parts go in front:
a new root `Model` table that refers to the old one's parts, a buffers vector with one more
buffer (the offsets), a metadata vector with the new entry (an existing one of the same
name left out) and the entry itself. The old bytes follow unchanged, moved by a multiple of
16 bytes, so every weight buffer keeps its alignment. The entry's buffer holds int32 words
`[1, 0, count, offsets...]` (version, subgraph, number of offsets), as TFLite Micro reads
it (`micro_allocation_info.cc`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from memplace.importers.tflite import OFFLINE_METADATA

SHIFT_ALIGN = 16
# Model table fields (schema.fbs): 0 version, 1 operator_codes, 2 subgraphs, 3 description,
# 4 buffers, 5 metadata_buffer, 6 metadata, 7 signature_defs.
_MODEL_FIELDS = 8
_OFFSET_FIELDS = {1, 2, 3, 4, 5, 6, 7}
_BUFFERS, _METADATA = 4, 6


class ModelLayoutError(ValueError):
    """The flatbuffer's root table holds fields this writer does not know."""


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])


def _fields(data: bytes) -> dict[int, int]:
    """The root table's fields: field id -> absolute position of its value."""
    table = _u32(data, 0)
    vtable = table - struct.unpack_from("<i", data, table)[0]
    count = (struct.unpack_from("<H", data, vtable)[0] - 4) // 2
    found = {}
    for field in range(count):
        slot = struct.unpack_from("<H", data, vtable + 4 + 2 * field)[0]
        if slot:
            if field >= _MODEL_FIELDS:
                raise ModelLayoutError(f"the model's root table has an unknown field {field}")
            found[field] = table + slot
    return found


def _vector(data: bytes, fields: dict[int, int], field: int) -> list[int]:
    """Absolute positions of the tables a root vector field refers to."""
    if field not in fields:
        return []
    start = fields[field] + _u32(data, fields[field])
    return [start + 4 + 4 * k + _u32(data, start + 4 + 4 * k) for k in range(_u32(data, start))]


def _name(data: bytes, table: int) -> str:
    vtable = table - struct.unpack_from("<i", data, table)[0]
    if struct.unpack_from("<H", data, vtable)[0] < 6:
        return ""
    slot = struct.unpack_from("<H", data, vtable + 4)[0]
    if not slot:
        return ""
    at = table + slot + _u32(data, table + slot)
    return data[at + 4 : at + 4 + _u32(data, at)].decode("utf-8", "replace")


class _Front:
    """The bytes that go in front of the old model, built from the start."""

    def __init__(self) -> None:
        self.data = bytearray(8)  # root offset and file identifier

    def here(self) -> int:
        return len(self.data)

    def pad(self, align: int) -> None:
        self.data += bytes(-len(self.data) % align)

    def put(self, fmt: str, *values: int) -> int:
        at = len(self.data)
        self.data += struct.pack(fmt, *values)
        return at

    def offset_to(self, at: int, target: int) -> None:
        struct.pack_into("<I", self.data, at, target - at)


def with_offline_plan(data: bytes, offsets: Sequence[int]) -> bytes:
    """A copy of the model `data` whose metadata carries `offsets` for TFLite Micro."""
    fields = _fields(data)
    buffers = _vector(data, fields, _BUFFERS)
    metadata = [m for m in _vector(data, fields, _METADATA) if _name(data, m) != OFFLINE_METADATA]
    front = _Front()
    # The new root table: a vtable of every Model field, then the table.
    front.pad(4)
    vtable = front.here()
    front.put("<HH", 4 + 2 * _MODEL_FIELDS, 4 + 4 * _MODEL_FIELDS)
    slots = [front.put("<H", 4 + 4 * field) for field in range(_MODEL_FIELDS)]
    front.pad(4)
    table = front.put("<i", 0)
    struct.pack_into("<i", front.data, table, table - vtable)
    values = [front.put("<I", 0) for _ in range(_MODEL_FIELDS)]
    struct.pack_into("<I", front.data, 0, table)
    front.data[4:8] = data[4:8]
    # Old parts are referred to at their place after the move; fixed once the shift is known.
    moved: list[tuple[int, int]] = []  # (position of an offset in front, old position)
    for field in range(_MODEL_FIELDS):
        if field in (_BUFFERS, _METADATA):
            continue
        if field not in fields:
            struct.pack_into("<H", front.data, slots[field], 0)
        elif field in _OFFSET_FIELDS:
            moved.append((values[field], fields[field] + _u32(data, fields[field])))
        else:
            struct.pack_into("<I", front.data, values[field], _u32(data, fields[field]))
    buffers_vector = front.put("<I", len(buffers) + 1)
    front.offset_to(values[_BUFFERS], buffers_vector)
    buffer_slots = [front.put("<I", 0) for _ in range(len(buffers) + 1)]
    moved += list(zip(buffer_slots, buffers, strict=False))
    metadata_vector = front.put("<I", len(metadata) + 1)
    front.offset_to(values[_METADATA], metadata_vector)
    metadata_slots = [front.put("<I", 0) for _ in range(len(metadata) + 1)]
    moved += list(zip(metadata_slots, metadata, strict=False))
    # The new Buffer table (field 0: data) and Metadata table (0: name, 1: buffer).
    buffer_vtable = front.put("<HHH", 6, 8, 4)
    front.pad(4)
    buffer_table = front.put("<i", front.here() - buffer_vtable)
    buffer_data = front.put("<I", 0)
    front.offset_to(buffer_slots[-1], buffer_table)
    entry_vtable = front.put("<HHHH", 8, 12, 4, 8)
    entry_table = front.put("<i", front.here() - entry_vtable)
    entry_name = front.put("<I", 0)
    front.put("<I", len(buffers))
    front.offset_to(metadata_slots[-1], entry_table)
    name = OFFLINE_METADATA.encode()
    front.offset_to(entry_name, front.put("<I", len(name)))
    front.data += name + b"\0"
    words = [1, 0, len(offsets), *offsets]
    # The vector's length word sits just before 16-byte aligned int32 data.
    front.data += bytes(-(len(front.data) + 4) % 16)
    front.offset_to(buffer_data, front.put("<I", 4 * len(words)))
    front.put(f"<{len(words)}i", *words)
    front.pad(SHIFT_ALIGN)
    shift = front.here()
    for at, old in moved:
        front.offset_to(at, old + shift)
    return bytes(front.data) + data
