"""The checksum generated firmware computes over a constant's bytes (32-bit FNV-1a)."""

from __future__ import annotations


def fnv1a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value
