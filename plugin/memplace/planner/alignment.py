"""Absolute alignment: a buffer's address, not only its offset, is a multiple of its
alignment, in every core's view of its pool.

Offset algorithms align offsets. Where every base address of a buffer's candidate pools is
aligned at least as much as the buffer, that is enough. Where one is not (a pool that
starts on a 64-byte boundary and a buffer aligned to 64 KiB), the buffer is planned as a
block aligned to the pools' common grain and longer by the difference, and then moved up
inside that block to the first address its alignment allows: sound in every candidate, at
the cost of at most `align - grain` bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplace.board import Board
from memplace.planner.blocks import Block
from memplace.scopes import Candidates, Place
from memplace.workload import Buffer

MAX_GRAIN = 1 << 32
"""The grain of address 0: every alignment up to 4 GiB."""


def pool_bases(board: Board, pool: str) -> tuple[int, ...]:
    """Where each core that reaches the pool's memory sees the pool's first byte."""
    found = board.pools[pool]
    memory = board.memories[found.memory]
    offset = found.address - memory.origin
    cores = memory.access or tuple(board.cores)
    return tuple(sorted({memory.address_for(core) + offset for core in cores} | {found.address}))


def grain(address: int) -> int:
    """The largest power of two `address` is a multiple of."""
    return address & -address if address else MAX_GRAIN


def place_grain(board: Board, place: Place) -> int:
    if place.pool is None:
        return MAX_GRAIN  # stacks keep offsets aligned to the stack's own start
    return min(grain(base) for base in pool_bases(board, place.pool))


def memory_size(board: Board, place: Place) -> int:
    """Bytes of the memory that holds the place."""
    if place.pool is not None:
        return board.memories[board.pools[place.pool].memory].size
    for context in board.contexts.values():
        for label, stack in context.stacks():
            if label == f"{place.stack}.stack":
                return board.memories[stack.memory].size
    raise KeyError(place)


def planning_block(options: Candidates, board: Board) -> Block:
    """The block that stands for the buffer while offsets are searched (see the module doc).
    Refuses an alignment larger than every candidate's memory: no address there has it."""
    buffer = options.buffer
    largest = max(memory_size(board, place) for place in options.places)
    if buffer.align > largest:
        raise buffer.error(
            "align",
            f"align {buffer.align} is larger than the largest memory that could hold "
            f"{buffer.name} ({largest} bytes)",
        )
    common = min((place_grain(board, place) for place in options.places), default=MAX_GRAIN)
    if buffer.align <= common:
        return Block(buffer.size, buffer.first, buffer.last, buffer.align)
    return Block(buffer.size + buffer.align - common, buffer.first, buffer.last, common)


def aligned_offset(board: Board, buffer: Buffer, place: Place, offset: int) -> int:
    """The offset of `buffer` inside its planning block at `offset`: the first one whose
    address is aligned in every view. Refuses views that no single offset aligns."""
    if place.pool is None:
        return offset + -offset % buffer.align  # a stack keeps offsets from its own start
    # Not only where this pool's base is aligned less than the buffer: the block may have
    # been planned at another candidate's grain (`planning_block`), so its offset here can
    # be aligned less than the buffer even in a pool whose base is aligned more.
    bases = pool_bases(board, place.pool)
    residues = {base % buffer.align for base in bases}
    if len(residues) > 1:
        raise buffer.error(
            "align",
            f"align {buffer.align} cannot hold in every core's view of pool {place.pool}: "
            f"it starts at {_hex(bases)}, which differ modulo {buffer.align}",
        )
    return offset + (-(bases[0] + offset)) % buffer.align


def misaligned(board: Board, place: Place, name: str, offset: int, align: int) -> str | None:
    """Why a buffer at `offset` in `place` breaks its alignment in some core's view (None:
    it does not): the check every plan passes before it is returned."""
    if place.pool is None:
        bad = [offset] if offset % align else []
    else:
        bad = [base + offset for base in pool_bases(board, place.pool) if (base + offset) % align]
    if not bad:
        return None
    return f"{name} at {_hex(bad)} in {place.label} is not aligned to {align}"


def _hex(addresses: Sequence[int]) -> str:
    return ", ".join(f"0x{a:08x}" for a in addresses)
