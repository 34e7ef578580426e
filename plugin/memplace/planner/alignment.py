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


class Alignment:
    """The rules of this module on one board, with what they ask of the board (each pool's
    bases, each set of candidates' grain and largest memory) worked out once: a plan of a
    million buffers asks the same few questions a million times."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self._bases: dict[str, tuple[int, ...]] = {}
        self._places: dict[tuple[Place, ...], tuple[int, int]] = {}

    def bases(self, pool: str) -> tuple[int, ...]:
        """`pool_bases` of the pool."""
        if pool not in self._bases:
            self._bases[pool] = pool_bases(self.board, pool)
        return self._bases[pool]

    def planning_block(self, options: Candidates) -> Block:
        """The block that stands for the buffer while offsets are searched (see the module
        doc). Refuses an alignment larger than every candidate's memory: no address there
        has it."""
        buffer = options.buffer
        known = self._places.get(options.places)
        if known is None:
            largest = max(memory_size(self.board, place) for place in options.places)
            grains = [place_grain(self.board, place) for place in options.places]
            known = self._places[options.places] = (largest, min(grains, default=MAX_GRAIN))
        largest, common = known
        if buffer.align > largest:
            raise buffer.error(
                "align",
                f"align {buffer.align} is larger than the largest memory that could hold "
                f"{buffer.name} ({largest} bytes)",
            )
        if buffer.align <= common:
            return Block(buffer.size, buffer.first, buffer.last, buffer.align)
        return Block(buffer.size + buffer.align - common, buffer.first, buffer.last, common)

    def aligned_offset(self, buffer: Buffer, place: Place, offset: int) -> int:
        """The offset of `buffer` inside its planning block at `offset`: the first one whose
        address is aligned in every view. Refuses views that no single offset aligns."""
        if place.pool is None:
            return offset + -offset % buffer.align  # a stack keeps offsets from its own start
        # Not only where this pool's base is aligned less than the buffer: the block may
        # have been planned at another candidate's grain (`planning_block`), so its offset
        # here can be aligned less than the buffer even in a pool whose base is aligned more.
        bases = self.bases(place.pool)
        if len(bases) > 1 and len({base % buffer.align for base in bases}) > 1:
            raise buffer.error(
                "align",
                f"align {buffer.align} cannot hold in every core's view of pool {place.pool}: "
                f"it starts at {_hex(bases)}, which differ modulo {buffer.align}",
            )
        return offset + (-(bases[0] + offset)) % buffer.align

    def misaligned(self, place: Place, name: str, offset: int, align: int) -> str | None:
        """Why a buffer at `offset` in `place` breaks its alignment in some core's view
        (None: it does not): the check every plan passes before it is returned."""
        if place.pool is None:
            bad = [offset] if offset % align else []
        else:
            bad = [base + offset for base in self.bases(place.pool) if (base + offset) % align]
        if not bad:
            return None
        return f"{name} at {_hex(bad)} in {place.label} is not aligned to {align}"


def planning_block(options: Candidates, board: Board) -> Block:
    """`Alignment.planning_block` on `board`."""
    return Alignment(board).planning_block(options)


def aligned_offset(board: Board, buffer: Buffer, place: Place, offset: int) -> int:
    """`Alignment.aligned_offset` on `board`."""
    return Alignment(board).aligned_offset(buffer, place, offset)


def misaligned(board: Board, place: Place, name: str, offset: int, align: int) -> str | None:
    """`Alignment.misaligned` on `board`."""
    return Alignment(board).misaligned(place, name, offset, align)


def _hex(addresses: Sequence[int]) -> str:
    return ", ".join(f"0x{a:08x}" for a in addresses)
