"""Storage scopes: the set of places a buffer may live, read against a board.

A scope is a constraint, not a choice. `resolve` turns each buffer's scope, users and
`pools:` into its candidate places in preference order; the planner picks among them.

| scope                       | may live in                                               |
|-----------------------------|-----------------------------------------------------------|
| `global`                    | pools of the right kind every user reaches; also the one  |
|                             | user context's stack when size <= its max_stack_alloca    |
| `global.workspace`          | the same pools, never a stack                             |
| `global.<pool>`             | that pool                                                 |
| `local`                     | the stack of its one user context, for one step           |
| `<context>.stack`           | that context's stack                                      |
| `<context>.thread<N>.stack` | the stack of thread N of that context                     |

Every place of the board is either a candidate or excluded for a reason that
`Candidates.excluded` keeps, so `memplace plan --explain` can say why. A scope that cannot
hold the buffer at all (an unreachable pinned pool, a constant on a stack, a local buffer
living two steps) is an input error naming the buffer's key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memplace.board import Board
from memplace.errors import InputError
from memplace.source import suggest
from memplace.workload import Buffer, Workload

POOL_KIND = {"buffer": "workspace", "constant": "constant"}
_THREAD_STACK = re.compile(r"^(?P<context>\w+)\.thread(?P<thread>\d+)$")


@dataclass(frozen=True)
class Place:
    """A pool, or a stack: exactly one of the two is set.

    `stack` names a context (its stack) or `<context>.thread<N>` (the stack of thread N of
    that context)."""

    pool: str | None = None
    stack: str | None = None

    @property
    def label(self) -> str:
        return self.pool if self.pool is not None else f"{self.stack}.stack"

    @property
    def context(self) -> str | None:
        """The context whose stack this is; None for a pool."""
        if self.stack is None:
            return None
        match = _THREAD_STACK.match(self.stack)
        return match.group("context") if match else self.stack

    @property
    def thread(self) -> int | None:
        match = _THREAD_STACK.match(self.stack or "")
        return int(match.group("thread")) if match else None


@dataclass(frozen=True)
class Candidates:
    """Where one buffer may live, best first, who touches it, and where it may not and why.

    `pinned` is true when the scope (or `pools:`) leaves no choice of kind: a stack scope,
    a pinned pool, or a single pool named in `pools:`."""

    buffer: Buffer
    users: tuple[str, ...]
    places: tuple[Place, ...]
    pinned: bool
    excluded: tuple[tuple[Place, str], ...] = ()


def stack_places(board: Board) -> list[Place]:
    """Every stack of the board, context by context: its own, then its threads' in order."""
    return [
        Place(stack=label.removesuffix(".stack"))
        for context in board.contexts.values()
        for label, _ in context.stacks()
    ]


def stack_sizes(board: Board) -> dict[Place, int]:
    """The budget in bytes of every stack of the board."""
    return {
        Place(stack=label.removesuffix(".stack")): stack.size
        for context in board.contexts.values()
        for label, stack in context.stacks()
    }


def pool_places(board: Board) -> list[Place]:
    """Every pool, fastest memory first (its `latency`); ties keep the board's order."""
    order = list(board.pools)
    return [
        Place(pool=name)
        for name in sorted(
            board.pools,
            key=lambda name: (board.memories[board.pools[name].memory].latency, order.index(name)),
        )
    ]


def valid_scopes(board: Board) -> list[str]:
    """Every scope this board accepts, in the order the docs list them."""
    scopes = ["global", "global.workspace", "local"]
    scopes += [f"global.{pool}" for pool in board.pools]
    scopes += [place.label for place in stack_places(board)]
    return scopes


def resolve(board: Board, workload: Workload) -> list[Candidates]:
    known = _BoardScopes(board)
    return [known.resolve(buffer) for buffer in workload.buffers]


def resolve_buffer(board: Board, buffer: Buffer) -> Candidates:
    return _resolve(_BoardScopes(board), buffer)


_Sifted = tuple[tuple[Place, ...], tuple[tuple[Place, str], ...]]


class _BoardScopes:
    """What resolving needs from one board, worked out once rather than for every buffer:
    its scopes and places, and which of them each kind of buffer may take. The answer for a
    pool is the same for every buffer with the same scope, kind, users and `pools:`; for a
    stack, size and `dynamic` matter too. Workloads repeat these a lot, so each answer is
    kept."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.scopes = valid_scopes(board)
        self.scope_set = frozenset(self.scopes)
        self.stacks = stack_places(board)
        self.pools = pool_places(board)
        self.known: dict[tuple[object, ...], _Sifted] = {}
        self.resolved: dict[tuple[object, ...], Candidates] = {}

    def resolve(self, buffer: Buffer) -> Candidates:
        """`_resolve` of the buffer, from the answer for an earlier buffer that differs from
        it in nothing `_resolve` reads (its name, alignment and lifetime but whether it
        lives one step), where there was one: only answers are kept, so every buffer that
        breaks a rule is refused under its own name."""
        key = (
            buffer.scope,
            buffer.kind,
            buffer.users,
            buffer.pools,
            buffer.dynamic,
            buffer.size,
            buffer.first == buffer.last,
        )
        known = self.resolved.get(key)
        if known is None:
            known = self.resolved[key] = _resolve(self, buffer)
        return Candidates(buffer, known.users, known.places, known.pinned, known.excluded)

    def sift(self, buffer: Buffer, users: tuple[str, ...], stacks: bool) -> _Sifted:
        """The stacks (or the pools) of the board that `buffer` may take, and why not the
        others."""
        key: tuple[object, ...] = (stacks, buffer.scope, buffer.kind, users, buffer.pools)
        if stacks:
            key += (buffer.size, buffer.dynamic)
        if key not in self.known:
            places: list[Place] = []
            excluded: list[tuple[Place, str]] = []
            for place in self.stacks if stacks else self.pools:
                why = why_not(self.board, buffer, users, place)
                if why is None:
                    places.append(place)
                else:
                    excluded.append((place, why))
            self.known[key] = (tuple(places), tuple(excluded))
        return self.known[key]


def _resolve(known: _BoardScopes, buffer: Buffer) -> Candidates:
    board = known.board
    scope = buffer.scope
    if scope not in known.scope_set:
        raise buffer.error("scope", f"unknown scope {scope!r}; {suggest(scope, known.scopes)}")
    target = _scope_stack(scope)
    users = _users(board, buffer, default=target.context if target else None)
    _check_pools(board, buffer)
    if buffer.kind == "constant":
        _check_constant(buffer)
    if scope == "local":
        target = Place(stack=_local_owner(board, buffer, users))
    elif target is not None:
        _check_stack_scope(buffer, users, target)
    pinned_pool = _pinned_pool(scope)
    if pinned_pool is not None:
        _check_pinned_pool(board, buffer, users, pinned_pool)
    if target is not None and buffer.dynamic:
        raise buffer.error(
            "dynamic",
            f"a dynamic buffer takes its memory from an arena in a pool; scope {scope!r} "
            "puts it on a stack",
        )
    places, excluded = _sift(known, buffer, users)
    if not places:
        raise _nowhere(known, buffer, users)
    pinned = scope not in ("global", "global.workspace") or len(buffer.pools) == 1
    return Candidates(buffer, users, tuple(places), pinned, tuple(excluded))


def why_not(board: Board, buffer: Buffer, users: tuple[str, ...], place: Place) -> str | None:
    """Why `place` cannot hold `buffer` under its scope, or None when it can."""
    scope = buffer.scope
    target = _scope_stack(scope)
    if scope == "local" and users[0] in board.contexts:
        target = Place(stack=users[0])
    why = _why_not_stack(board, buffer, users, place, target) if place.stack else None
    if place.pool is not None:
        why = _why_not_pool(board, buffer, users, place.pool, target)
    if why is None and buffer.pools and place.pool not in buffer.pools:
        why = f"not in its pools: list ({', '.join(buffer.pools)})"
    return why


def _why_not_stack(
    board: Board, buffer: Buffer, users: tuple[str, ...], place: Place, target: Place | None
) -> str | None:
    scope = buffer.scope
    if buffer.kind == "constant":
        return "a constant lives in a constant pool"
    if target is not None:
        return None if place == target else f"scope {scope} puts it on {target.label}"
    if scope == "global.workspace":
        return "scope global.workspace never uses a stack"
    pinned = _pinned_pool(scope)
    if pinned is not None:
        return f"scope {scope} pins pool {pinned}"
    if place.thread is not None:
        return f"a thread's stack takes only buffers scoped {place.label}"
    if buffer.dynamic:
        return "a dynamic buffer takes its memory from an arena in a pool"
    devices = [user for user in users if user in board.devices]
    if devices:
        return f"device {devices[0]} uses it, and a stack is reached by its own context only"
    if len(users) != 1:
        return f"{len(users)} contexts use it; a stack belongs to one"
    if users[0] != place.context:
        return f"{users[0]} uses it, not {place.context}"
    allowed = board.contexts[users[0]].max_stack_alloca
    if buffer.size > allowed:
        return f"{buffer.size} bytes is over {users[0]}'s max_stack_alloca ({allowed})"
    return None


def _why_not_pool(
    board: Board, buffer: Buffer, users: tuple[str, ...], name: str, target: Place | None
) -> str | None:
    scope = buffer.scope
    if target is not None:
        return f"scope {scope} puts it on {target.label}"
    pinned = _pinned_pool(scope)
    if pinned is not None and pinned != name:
        return f"scope {scope} pins pool {pinned}"
    pool = board.pools[name]
    needed = POOL_KIND[buffer.kind]
    if pool.kind != needed:
        return f"a {pool.kind} pool; a {buffer.kind} needs a {needed} pool"
    for user in users:
        if not board.reaches(user, pool.memory):
            return f"{user} cannot reach memory {pool.memory}"
    return None


def _sift(
    known: _BoardScopes, buffer: Buffer, users: tuple[str, ...]
) -> tuple[list[Place], list[tuple[Place, str]]]:
    """Every place of the board as a candidate or with the reason it is not one."""
    stacks, stacks_excluded = known.sift(buffer, users, stacks=True)
    pools, pools_excluded = known.sift(buffer, users, stacks=False)
    places = [*stacks, *pools]
    if buffer.pools:
        # `pools:` narrows in its own order of preference.
        places.sort(key=lambda place: buffer.pools.index(place.pool or ""))
    return places, [*stacks_excluded, *pools_excluded]


def _nowhere(known: _BoardScopes, buffer: Buffer, users: tuple[str, ...]) -> InputError:
    who = ", ".join(users)
    if buffer.pools:
        allowed, _ = _sift(known, replace(buffer, pools=()), users)
        labels = ", ".join(place.label for place in allowed) or "nothing"
        return buffer.error(
            "pools",
            f"none of {', '.join(buffer.pools)} is allowed by scope {buffer.scope!r} for "
            f"{who}; allowed: {labels}",
        )
    return buffer.error("users", f"no {POOL_KIND[buffer.kind]} pool is reachable by all of {who}")


def _scope_stack(scope: str) -> Place | None:
    """The stack a `<context>.stack` or `<context>.thread<N>.stack` scope names."""
    if scope.endswith(".stack") and not scope.startswith("global."):
        return Place(stack=scope.removesuffix(".stack"))
    return None


def _pinned_pool(scope: str) -> str | None:
    if scope.startswith("global.") and scope != "global.workspace":
        return scope.removeprefix("global.")
    return None


def _users(board: Board, buffer: Buffer, default: str | None) -> tuple[str, ...]:
    if not buffer.users:
        return (default or next(iter(board.contexts)),)
    valid = [*board.contexts, *board.devices]
    for index, user in enumerate(buffer.users):
        if user not in valid:
            raise buffer.error(
                f"users[{index}]", f"no context or device {user!r}; {suggest(user, valid)}"
            )
    return buffer.users


def _check_pools(board: Board, buffer: Buffer) -> None:
    for index, name in enumerate(buffer.pools):
        if name not in board.pools:
            raise buffer.error(f"pools[{index}]", f"no pool {name!r}; {suggest(name, board.pools)}")


def _check_constant(buffer: Buffer) -> None:
    scope = buffer.scope
    if scope != "global" and _pinned_pool(scope) is None:
        raise buffer.error(
            "scope",
            f"a constant lives in a constant pool: use 'global' or 'global.<pool>', not {scope!r}",
        )


def _local_owner(board: Board, buffer: Buffer, users: tuple[str, ...]) -> str:
    owner = _single_context(board, buffer, users, "local")
    if buffer.first != buffer.last:
        raise buffer.error(
            "live",
            "a local buffer lives for one step; "
            f"this one lives from step {buffer.first} to {buffer.last}",
        )
    return owner


def _check_stack_scope(buffer: Buffer, users: tuple[str, ...], target: Place) -> None:
    owner = target.context
    if len(users) != 1:
        raise buffer.error(
            "users",
            f"a buffer with scope {buffer.scope!r} has exactly one user context, "
            f"not {', '.join(users)}",
        )
    if users != (owner,):
        raise buffer.error("users", f"only {owner!r} can use a buffer on its stack")


def _single_context(board: Board, buffer: Buffer, users: tuple[str, ...], scope: str) -> str:
    if len(users) != 1 or users[0] not in board.contexts:
        raise buffer.error(
            "users",
            f"a buffer with scope {scope!r} has exactly one user context, not {', '.join(users)}",
        )
    owner = users[0]
    if board.contexts[owner].stack is None:
        raise buffer.error(
            "users",
            f"context {owner!r} has no stack of its own (an isr runs on the stack it preempts)",
        )
    return owner


def _check_pinned_pool(board: Board, buffer: Buffer, users: tuple[str, ...], name: str) -> None:
    pool = board.pools[name]
    needed = POOL_KIND[buffer.kind]
    if pool.kind != needed:
        raise buffer.error(
            "scope",
            f"pool {name!r} holds {pool.kind} data; a {buffer.kind} needs a {needed} pool",
        )
    for user in users:
        if not board.reaches(user, pool.memory):
            raise buffer.error(
                "scope", f"{user!r} cannot reach pool {name!r} (memory {pool.memory!r})"
            )
