"""The planner's two hot loops, compiled, each with a pure-Python twin.

`assign` places blocks one by one at their first fit in the first candidate place that
holds them; `search` is the exact search's decision procedure (is there a placement whose
peak is at most a target?). Both run in `_core.c`, a plain C library that the normal
install builds beside this module and that is loaded with ctypes. Where it is missing (an
install without a C compiler), the twins below run instead: they make the same decisions
in the same order and count search nodes the same way, so results only differ in speed;
memplace logs a warning once when that happens. The tests run both and compare them.
"""

from __future__ import annotations

import array
import ctypes
import functools
import itertools
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memplace.planner.blocks import Block, align_up

__all__ = [
    "FOUND",
    "INFEASIBLE",
    "NODE_LIMIT",
    "TIME_LIMIT",
    "Assignment",
    "assign",
    "assign_python",
    "compiled",
    "first_fit",
    "search",
    "search_python",
    "skyline",
    "skyline_python",
]

ABI = 6
FOUND, INFEASIBLE, NODE_LIMIT, TIME_LIMIT = 0, 1, 2, 3
_NO_MEMORY = -1

_log = logging.getLogger(__name__)

_I64 = ctypes.c_int64
_INT = ctypes.c_int
_SEED_MIX = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1
NOISE = 300
"""A seeded search raises each block's first key by up to this many thousandths of it."""
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Assignment:
    """Where `assign` put every block: `place[i]` indexes the places, -1 where none of the
    block's candidates held it."""

    place: tuple[int, ...]
    offset: tuple[int, ...]
    tried: tuple[int, ...]
    """Per candidate of every block, in order, the end its first fit had there (-1: not
    tried); block i's candidates start at `starts[i]`."""
    starts: tuple[int, ...]

    def ends(self, block: int) -> tuple[int | None, ...]:
        """The end block's first fit had in each of its candidates (None: not tried)."""
        ends = self.tried[self.starts[block] : self.starts[block + 1]]
        return tuple(None if end < 0 else end for end in ends)


@functools.cache
def compiled() -> ctypes.CDLL | None:
    """The compiled core, or None (with a warning logged) when it is not built."""
    here = Path(__file__).resolve().parent
    for path in sorted(here.glob("_core*.so")) + sorted(here.glob("_core*.pyd")):
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        if library.mp_abi() != ABI:
            continue
        library.mp_assign.restype = _INT
        library.mp_search.restype = _INT
        library.mp_skyline.restype = _INT
        return library
    _log.warning(
        "the compiled planner core (_core.c) is not built; using its pure-Python twin, "
        "which finds the same plans more slowly (reinstall memplace with a C compiler)"
    )
    return None


_TYPECODES = {_I64: "q", _INT: "i"}


def _buffer(kind: type[ctypes._SimpleCData[int]], values: Sequence[int]) -> array.array[int]:
    """`values` as a C array of `kind` (one element at least: C gets no empty arrays)."""
    return array.array(_TYPECODES[kind], values if len(values) else [0])


def _array(kind: type[ctypes._SimpleCData[int]], values: Sequence[int]) -> ctypes.Array:  # type: ignore[type-arg]
    # Through array.array: several times faster than ctypes' own constructor for the
    # hundred thousand values of a large place, and the same bytes.
    return _view(kind, _buffer(kind, values))


def _view(kind: type[ctypes._SimpleCData[int]], data: array.array[int]) -> ctypes.Array:  # type: ignore[type-arg]
    """The C array sharing `data`'s memory, which C may write into."""
    return (kind * len(data)).from_buffer(data)


def assign(
    blocks: Sequence[Block],
    order: Sequence[int],
    candidates: Sequence[Sequence[int]],
    capacities: Sequence[int | None],
) -> Assignment:
    """Place `blocks` in `order`, each at its first fit in the first of its `candidates`
    (indices into `capacities`, None: unbounded) where it ends within the capacity."""
    library = compiled()
    if library is None:
        return assign_python(blocks, order, candidates, capacities)
    n = len(blocks)
    starts = list(itertools.accumulate(map(len, candidates), initial=0))
    flat = list(itertools.chain.from_iterable(candidates))
    chosen = _buffer(_INT, [0] * n)
    offsets = _buffer(_I64, [0] * n)
    ends = _buffer(_I64, [0] * len(flat))
    status = library.mp_assign(
        _INT(n),
        _array(_I64, [b.size for b in blocks]),
        _array(_I64, [b.first for b in blocks]),
        _array(_I64, [b.last for b in blocks]),
        _array(_I64, [b.align for b in blocks]),
        _array(_INT, order),
        _array(_INT, starts),
        _array(_INT, flat),
        _INT(len(capacities)),
        _array(_I64, [-1 if c is None else c for c in capacities]),
        _view(_INT, chosen),
        _view(_I64, offsets),
        _view(_I64, ends),
    )
    if status < 0:
        raise MemoryError("the planner core ran out of memory")
    return Assignment(
        place=tuple(chosen.tolist()[:n]),
        offset=tuple(offsets.tolist()[:n]),
        tried=tuple(ends.tolist()[: len(flat)]),
        starts=tuple(starts),
    )


def _columns(blocks: Sequence[Block]) -> tuple[ctypes.Array, ...]:  # type: ignore[type-arg]
    """The blocks' sizes, first and last steps and alignments: the arrays the compiled
    core takes for them."""
    return (
        _array(_I64, [b.size for b in blocks]),
        _array(_I64, [b.first for b in blocks]),
        _array(_I64, [b.last for b in blocks]),
        _array(_I64, [b.align for b in blocks]),
    )


def first_fit(blocks: Sequence[Block], order: Sequence[int]) -> list[int]:
    """The offsets `assign` gives `blocks` in `order` in one place without a capacity:
    each block at its first fit beside the blocks placed before it. The same call into the
    compiled core, with the candidates of one place made in C-backed arrays rather than
    from a list per block (a greedy order on a million blocks makes one of these a pass)."""
    library = compiled()
    n = len(blocks)
    if library is None or n == 0:
        return list(assign(blocks, order, [(0,)] * n, [None]).offset)
    offsets = _buffer(_I64, [0] * n)
    status = library.mp_assign(
        _INT(n),
        *_columns(blocks),
        _array(_INT, order),
        _view(_INT, array.array("i", range(n + 1))),
        _view(_INT, array.array("i", bytes(4 * n))),
        _INT(1),
        _array(_I64, [-1]),
        _view(_INT, array.array("i", bytes(4 * n))),
        _view(_I64, offsets),
        _view(_I64, array.array("q", bytes(8 * n))),
    )
    if status < 0:
        raise MemoryError("the planner core ran out of memory")
    return offsets.tolist()


def search(
    blocks: Sequence[Block],
    heuristic: str,
    target: int,
    node_limit: int,
    seconds: float,
    seed: int = 0,
) -> tuple[int, list[int], int]:
    """Look for offsets whose peak is at most `target`, trying blocks in the order of
    `heuristic` (three of the keys W, A, Z, T; see `_core.c`); `seed` != 0 raises each
    block's first key by seeded noise, up to NOISE thousandths of it, for another order.

    Returns (status, offsets, nodes): FOUND with the offsets, INFEASIBLE when no placement
    fits `target` (proven), NODE_LIMIT or TIME_LIMIT when it stopped before knowing.
    """
    library = compiled()
    if library is None:
        return search_python(blocks, heuristic, target, node_limit, seconds, seed)
    order = ctypes.c_char_p(heuristic.encode("ascii"))
    limits = (_I64(target), _I64(node_limit), ctypes.c_double(seconds))
    return _placed(library.mp_search, blocks, order, _I64(seed), *limits)


def skyline(
    blocks: Sequence[Block], target: int, seed: int, node_limit: int, seconds: float
) -> tuple[int, list[int], int]:
    """Look for offsets whose peak is at most `target` by filling the holes of the skyline
    (see `_core.c`); `seed` != 0 adds seeded noise to the order of the moves.

    Returns (status, offsets, nodes): FOUND with the offsets; INFEASIBLE when this search
    found none (not a proof), NODE_LIMIT or TIME_LIMIT when it stopped before that.
    """
    library = compiled()
    if library is None:
        return skyline_python(blocks, target, seed, node_limit, seconds)
    limits = (_I64(target), _I64(seed), _I64(node_limit), ctypes.c_double(seconds))
    return _placed(library.mp_skyline, blocks, *limits)


def _placed(
    function: Callable[..., int], blocks: Sequence[Block], *arguments: object
) -> tuple[int, list[int], int]:
    """(status, offsets, nodes) of a search of the compiled core: its arguments are the
    blocks' sizes, lifetimes and alignments, then `arguments`, then where it puts the
    offsets and its node count."""
    n = len(blocks)
    offsets = _buffer(_I64, [0] * n)
    nodes = _I64(0)
    status = function(
        _INT(n),
        *_columns(blocks),
        *arguments,
        _view(_I64, offsets),
        ctypes.byref(nodes),
    )
    if status == _NO_MEMORY:
        raise MemoryError("the planner core ran out of memory")
    return status, offsets.tolist()[:n], nodes.value


# ---------------------------------------------------------------------------------------
# The pure-Python twins. They follow _core.c step by step; see the comments there.


def _xorshift(x: int) -> int:
    """The next state of the seeded noise (xorshift64, as `_core.c`)."""
    x ^= (x << 13) & _MASK
    x ^= x >> 7
    return x ^ ((x << 17) & _MASK)


def _sections(blocks: Sequence[Block]) -> tuple[list[int], list[int], int]:
    points = sorted({b.first for b in blocks} | {b.last + 1 for b in blocks})
    index = {point: k for k, point in enumerate(points)}
    starts = [index[b.first] for b in blocks]
    ends = [index[b.last + 1] for b in blocks]
    return starts, ends, max(0, len(points) - 1)


def assign_python(
    blocks: Sequence[Block],
    order: Sequence[int],
    candidates: Sequence[Sequence[int]],
    capacities: Sequence[int | None],
) -> Assignment:
    """`assign` in Python: per place, the placed blocks covering each section and the
    placed blocks starting in each section; their union over a block's span is exactly
    the placed blocks it conflicts with."""
    a, b, sections = _sections(blocks)
    cover = [[[] for _ in range(sections)] for _ in capacities]  # type: list[list[list[int]]]
    starts = [[[] for _ in range(sections)] for _ in capacities]  # type: list[list[list[int]]]
    place = [-1] * len(blocks)
    offset = [0] * len(blocks)
    starts_at = [0]
    for options in candidates:
        starts_at.append(starts_at[-1] + len(options))
    tried = [-1] * starts_at[-1]
    for i in order:
        block = blocks[i]
        for k, p in enumerate(candidates[i]):
            near = list(cover[p][a[i]])
            for section in range(a[i] + 1, b[i]):
                near += starts[p][section]
            cursor = 0
            for other_offset, other_end in sorted(
                (offset[j], offset[j] + blocks[j].size) for j in near
            ):
                if cursor + block.size <= other_offset:
                    break
                cursor = max(cursor, align_up(other_end, block.align))
            tried[starts_at[i] + k] = cursor + block.size
            capacity = capacities[p]
            if capacity is None or cursor + block.size <= capacity:
                place[i], offset[i] = p, cursor
                for section in range(a[i], b[i]):
                    cover[p][section].append(i)
                starts[p][a[i]].append(i)
                break
    return Assignment(tuple(place), tuple(offset), tuple(tried), tuple(starts_at))


class _Undo:
    """The undo log both searches share (`undo_log` in `_core.c`): every change to their
    state goes through `set`, and `rollback` undoes them back to a mark (a log length)."""

    def __init__(self) -> None:
        self.log: list[tuple[list[int], int, int]] = []

    def set(self, values: list[int], index: int, value: int) -> None:
        self.log.append((values, index, values[index]))
        values[index] = value

    def rollback(self, mark: int) -> None:
        while len(self.log) > mark:
            values, index, old = self.log.pop()
            values[index] = old


class _Search(_Undo):
    """The state of one decision search; `node` is one node of the search tree."""

    def __init__(
        self,
        blocks: Sequence[Block],
        heuristic: str,
        target: int,
        node_limit: int,
        seconds: float,
        seed: int = 0,
    ) -> None:
        super().__init__()
        n = len(blocks)
        self.size = [b.size for b in blocks]
        self.align = [b.align for b in blocks]
        self.heuristic = heuristic
        self.rng = (_SEED_MIX ^ seed) & _MASK if seed else 0
        self.width = [b.last - b.first + 1 for b in blocks]
        self.rank = [0] * n
        self.a, self.b, m = _sections(blocks)
        self.sections = m
        by_start = sorted(range(n), key=lambda i: (self.a[i], i))
        self.overlaps: list[list[int]] = [[] for _ in range(n)]
        for p, i in enumerate(by_start):
            for j in by_start[p + 1 :]:
                if self.a[j] >= self.b[i]:
                    break
                self.overlaps[i].append(j)
                self.overlaps[j].append(i)
        self.covering: list[list[int]] = [[] for _ in range(m)]
        self.total = [0] * m
        self.cuts = [0] * m
        for i in range(n):
            for q in range(self.a[i], self.b[i]):
                self.covering[q].append(i)
                self.total[q] += self.size[i]
            for q in range(self.a[i], self.b[i] - 1):
                self.cuts[q] += 1
        self.floor = [0] * m
        self.off = [-1] * n
        self.minoff = [0] * n
        self.sol = [0] * n
        self.target = target
        self.nodes = 0
        self.tries = 0
        self.node_limit = node_limit
        self.deadline = time.monotonic() + seconds

    def place(self, c: int, x: int) -> bool:
        top = x + self.size[c]
        self.set(self.off, c, x)
        self.sol[c] = x
        if top > self.target:
            return False
        for q in range(self.a[c], self.b[c]):
            self.set(self.floor, q, top)
            self.set(self.total, q, self.total[q] - self.size[c])
        touched: dict[int, None] = {}
        for j in self.overlaps[c]:
            if self.off[j] >= 0:
                continue
            lowest = align_up(top, self.align[j])
            if self.minoff[j] >= lowest:
                continue
            self.set(self.minoff, j, lowest)
            for q in range(self.a[j], self.b[j]):
                touched[q] = None
        for q in touched:
            if self.total[q] == 0:
                continue
            lowest = min(self.minoff[j] for j in self.covering[q] if self.off[j] < 0)
            if lowest > self.floor[q]:
                self.set(self.floor, q, lowest)
            if self.floor[q] + self.total[q] > self.target:
                return False
        return True

    def rerank(self, part: list[int]) -> None:
        def key(i: int, letter: str) -> int:
            if letter == "W":
                return self.width[i]
            if letter == "A":
                return self.width[i] * self.size[i]
            if letter == "Z":
                return self.size[i]
            return max(self.total[self.a[i] : self.b[i]])

        keys = {i: [key(i, letter) for letter in self.heuristic] for i in part}
        if self.rng:
            for i in part:  # in the order C draws them
                self.rng = _xorshift(self.rng)
                draw, first = self.rng % (NOISE + 1), keys[i][0]
                small = first < _INT64_MAX // 1000 // (NOISE + 1)
                keys[i][0] += first * draw // 1000 if small else first // 1000 * draw
        ordered = sorted(part, key=lambda i: ([-k for k in keys[i]], i))
        for position, i in enumerate(ordered):
            self.set(self.rank, i, position)

    def node(self, part: list[int], s0: int, s1: int, last_off: int, last_rank: int) -> int:
        self.nodes += 1
        if self.nodes > self.node_limit:
            return NODE_LIMIT
        if self.nodes % 1024 == 0 and time.monotonic() > self.deadline:
            return TIME_LIMIT
        unplaced = [i for i in part if self.off[i] < 0]
        if not unplaced:
            return FOUND
        lowest_top = min(self.minoff[i] + self.size[i] for i in unplaced)
        candidates = sorted(
            (self.minoff[i], self.rank[i], i)
            for i in unplaced
            if self.minoff[i] < lowest_top
            and (self.minoff[i], self.rank[i]) >= (last_off, last_rank)
        )
        fullest = max(self.total[s0:s1])
        over = [
            q
            for q in range(s0, s1)
            if self.total[q] and self.floor[q] + self.total[q] > self.target
        ]
        status = INFEASIBLE
        for x, rank, c in candidates:
            if x + fullest > self.target:
                break
            if over and (self.a[c] > over[0] or self.b[c] <= over[-1]):
                continue
            self.tries += 1
            if self.tries % 64 == 0 and time.monotonic() > self.deadline:
                status = TIME_LIMIT
                break
            mark = len(self.log)
            alone = all(self.off[j] >= 0 for j in self.overlaps[c])
            if self.place(c, x):
                splits = []
                for q in range(self.a[c], self.b[c] - 1):
                    self.set(self.cuts, q, self.cuts[q] - 1)
                    if self.cuts[q] == 0 and s0 <= q and q + 1 < s1:
                        splits.append(q + 1)
                if splits:
                    status = self.decompose(part, s0, s1, splits)
                else:
                    status = self.node(part, s0, s1, x, rank)
            self.rollback(mark)
            if alone or status != INFEASIBLE:
                break
        return status

    def decompose(self, part: list[int], s0: int, s1: int, splits: list[int]) -> int:
        bounds = [s0, *splits, s1]
        for r0, r1 in itertools.pairwise(bounds):
            sub = [i for i in part if self.off[i] < 0 and self.a[i] < r1 and self.b[i] > r0]
            if sub:
                self.rerank(sub)
                status = self.node(sub, r0, r1, -1, -1)
                if status != FOUND:
                    return status
        return FOUND

    def run(self) -> int:
        if any(total > self.target for total in self.total):
            return INFEASIBLE
        start = 0
        for q in range(self.sections):
            if q + 1 < self.sections and self.cuts[q] > 0:
                continue
            part = [i for i in range(len(self.off)) if self.a[i] >= start and self.b[i] <= q + 1]
            if part:
                self.rerank(part)
                status = self.node(part, start, q + 1, -1, -1)
                if status != FOUND:
                    return status
            start = q + 1
        return FOUND


def search_python(
    blocks: Sequence[Block],
    heuristic: str,
    target: int,
    node_limit: int,
    seconds: float,
    seed: int = 0,
) -> tuple[int, list[int], int]:
    """`search` in Python, node for node."""
    state = _Search(blocks, heuristic, target, node_limit, seconds, seed)
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, 4 * len(blocks) + 1000))
    try:
        status = state.run()
    finally:
        sys.setrecursionlimit(depth)
    return status, state.sol, state.nodes


_CLOSED = 1 << 63


class _Skyline(_Undo):
    """The state of one skyline search (see `mp_skyline` in `_core.c`)."""

    def __init__(
        self, blocks: Sequence[Block], target: int, seed: int, node_limit: int, seconds: float
    ) -> None:
        super().__init__()
        n = len(blocks)
        self.size = [b.size for b in blocks]
        self.align = [b.align for b in blocks]
        self.a, self.b, m = _sections(blocks)
        self.sections = m
        points = sorted({b.first for b in blocks} | {b.last + 1 for b in blocks})
        self.length = [points[q + 1] - points[q] for q in range(m)]
        self.starts: list[list[int]] = [[] for _ in range(m)]
        self.rem = [0] * m
        for i in range(n):
            self.starts[self.a[i]].append(i)
            for q in range(self.a[i], self.b[i]):
                self.rem[q] += self.size[i]
        self.top = [_CLOSED if left == 0 else 0 for left in self.rem]
        self.off = [-1] * n
        self.sol = [0] * n
        self.target = target
        self.noisy = seed != 0
        self.rng = (_SEED_MIX ^ seed) & _MASK
        self.nodes = 0
        self.node_limit = node_limit
        self.deadline = time.monotonic() + seconds

    def random(self) -> int:
        self.rng = _xorshift(self.rng)
        return self.rng

    def level(self, q: int) -> int:
        return _CLOSED if q < 0 or q >= self.sections else self.top[q]

    def offset(self, c: int) -> tuple[int, int]:
        """(offset, waste) of block c at its hole, or (-1, 0)."""
        if self.off[c] >= 0:
            return -1, 0
        span = range(self.a[c], self.b[c])
        x = align_up(max((self.top[q] for q in span), default=0), self.align[c])
        if any(x + self.rem[q] > self.target for q in span):
            return -1, 0
        return x, sum((x - self.top[q]) * self.length[q] for q in span)

    def raised(self, h0: int, h1: int) -> int:
        up = min(self.level(h0 - 1), self.level(h1))
        if up == _CLOSED or any(up + self.rem[q] > self.target for q in range(h0, h1)):
            return -1
        return up

    def node(self) -> int:
        self.nodes += 1
        if self.nodes > self.node_limit:
            return NODE_LIMIT
        if self.nodes % 1024 == 0 and time.monotonic() > self.deadline:
            return TIME_LIMIT
        hole, best = None, 1 << 31
        q = 0
        while q < self.sections:
            level = self.top[q]
            e = q + 1
            while e < self.sections and self.top[e] == level:
                e += 1
            if level != _CLOSED and self.level(q - 1) > level and self.level(e) > level:
                moves = int(self.raised(q, e) >= 0)
                for c in self.starts[q]:
                    if moves >= 2:
                        break
                    moves += self.offset(c)[0] >= 0
                if moves == 0:
                    return INFEASIBLE
                if moves < best:
                    hole, best = (q, e), moves
            q = e
        if hole is None:
            return FOUND
        h0, h1 = hole
        left, right = self.level(h0 - 1), self.level(h1)
        keyed = []
        for c in self.starts[h0]:
            x, waste = self.offset(c)
            if x < 0:
                continue
            up = x + self.size[c]
            fit = (self.b[c] == h1) * 4 + (up in (left, right)) * 2
            if self.noisy and self.random() % 4 == 0:
                fit += self.random() % 6
            keyed.append(((waste, -fit, self.a[c] - self.b[c], -self.size[c]), c))
        keyed.sort(key=lambda pair: pair[0])  # stable: equal keys keep the block order
        status = INFEASIBLE
        for _, c in keyed:
            mark = len(self.log)
            x, _ = self.offset(c)
            self.set(self.off, c, x)
            self.sol[c] = x
            for q in range(self.a[c], self.b[c]):
                self.set(self.rem, q, self.rem[q] - self.size[c])
                self.set(self.top, q, _CLOSED if self.rem[q] == 0 else x + self.size[c])
            status = self.node()
            self.rollback(mark)
            if status != INFEASIBLE:
                return status
        up = self.raised(h0, h1)
        if up >= 0:
            mark = len(self.log)
            for q in range(h0, h1):
                self.set(self.top, q, up)
            status = self.node()
            self.rollback(mark)
        return status


def skyline_python(
    blocks: Sequence[Block], target: int, seed: int, node_limit: int, seconds: float
) -> tuple[int, list[int], int]:
    """`skyline` in Python, node for node."""
    state = _Skyline(blocks, target, seed, node_limit, seconds)
    if any(left > target for left in state.rem):
        return INFEASIBLE, state.sol, 0
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, 4 * len(blocks) + 1000))
    try:
        status = state.node()
    finally:
        sys.setrecursionlimit(depth)
    return status, state.sol, state.nodes
