"""Storage scopes: the set of places a buffer may live, read against a board.

A scope is a constraint, not a choice. `resolve` turns each buffer's scope, users and
`pools:` into its candidate places in preference order; the planner picks among them.
"""

from __future__ import annotations

from dataclasses import dataclass

from memplace.board import Board
from memplace.source import suggest
from memplace.workload import Buffer, Workload

POOL_KIND = {"buffer": "workspace", "constant": "constant"}


@dataclass(frozen=True)
class Place:
    """A pool, or the stack of a context: exactly one of the two is set."""

    pool: str | None = None
    stack: str | None = None

    @property
    def label(self) -> str:
        return self.pool if self.pool is not None else f"{self.stack}.stack"


@dataclass(frozen=True)
class Candidates:
    """Where one buffer may live, best first, and who touches it."""

    buffer: Buffer
    users: tuple[str, ...]
    places: tuple[Place, ...]
    pinned: bool


def valid_scopes(board: Board) -> list[str]:
    """Every scope this board accepts, in the order the docs list them."""
    scopes = ["global", "global.workspace", "local"]
    scopes += [f"global.{pool}" for pool in board.pools]
    scopes += [f"{context.name}.stack" for context in board.stack_contexts()]
    return scopes


def resolve(board: Board, workload: Workload) -> list[Candidates]:
    return [resolve_buffer(board, buffer) for buffer in workload.buffers]


def resolve_buffer(board: Board, buffer: Buffer) -> Candidates:
    scope = buffer.scope
    if scope not in valid_scopes(board):
        raise buffer.error(
            "scope", f"unknown scope {scope!r}; {suggest(scope, valid_scopes(board))}"
        )
    stack_owner = scope.removesuffix(".stack") if scope.endswith(".stack") else None
    users = _users(board, buffer, default=stack_owner)
    if buffer.kind == "constant" and not (scope == "global" or _pinned_pool(scope, board)):
        raise buffer.error(
            "scope",
            f"a constant lives in a constant pool: use 'global' or 'global.<pool>', not {scope!r}",
        )
    if scope == "local":
        owner = _single_context(board, buffer, users, scope)
        if buffer.first != buffer.last:
            raise buffer.error(
                "live",
                "a local buffer lives for one step; "
                f"this one lives from step {buffer.first} to {buffer.last}",
            )
        return _narrow(board, buffer, users, (Place(stack=owner),), pinned=True)
    if stack_owner is not None:
        _single_context(board, buffer, users, scope)
        if users != (stack_owner,):
            raise buffer.error("users", f"only {stack_owner!r} can use a buffer on its stack")
        return _narrow(board, buffer, users, (Place(stack=stack_owner),), pinned=True)
    pinned = _pinned_pool(scope, board)
    if pinned is not None:
        pool = board.pools[pinned]
        if pool.kind != POOL_KIND[buffer.kind]:
            raise buffer.error(
                "scope",
                f"pool {pinned!r} holds {pool.kind} data; a "
                f"{buffer.kind} needs a {POOL_KIND[buffer.kind]} pool",
            )
        for user in users:
            if not board.reaches(user, pool.memory):
                raise buffer.error(
                    "scope", f"{user!r} cannot reach pool {pinned!r} (memory {pool.memory!r})"
                )
        return _narrow(board, buffer, users, (Place(pool=pinned),), pinned=True)
    places = [Place(pool=name) for name in _reachable_pools(board, buffer, users)]
    if scope == "global" and buffer.kind == "buffer":
        small_enough = _stack_allowed(board, buffer, users)
        if small_enough is not None:
            places.insert(0, Place(stack=small_enough))
    if not places:
        raise buffer.error(
            "users", f"no {POOL_KIND[buffer.kind]} pool is reachable by all of {', '.join(users)}"
        )
    return _narrow(board, buffer, users, tuple(places), pinned=False)


def _users(board: Board, buffer: Buffer, default: str | None) -> tuple[str, ...]:
    if not buffer.users:
        return (default or next(iter(board.contexts)),)
    valid = [*board.contexts, *board.devices]
    for user in buffer.users:
        if user not in valid:
            raise buffer.error("users", f"no context or device {user!r}; {suggest(user, valid)}")
    return buffer.users


def _single_context(board: Board, buffer: Buffer, users: tuple[str, ...], scope: str) -> str:
    if len(users) != 1 or users[0] not in board.contexts:
        raise buffer.error(
            "users",
            f"a buffer with scope {scope!r} has exactly one user context, not {', '.join(users)}",
        )
    owner = users[0]
    if board.contexts[owner].stack is None:
        raise buffer.error("users", f"context {owner!r} has no stack of its own")
    return owner


def _pinned_pool(scope: str, board: Board) -> str | None:
    if scope.startswith("global.") and scope != "global.workspace":
        name = scope.removeprefix("global.")
        return name if name in board.pools else None
    return None


def _reachable_pools(board: Board, buffer: Buffer, users: tuple[str, ...]) -> list[str]:
    """Pools of the right kind every user reaches; lower latency first, then board order."""
    kind = POOL_KIND[buffer.kind]
    order = list(board.pools)
    reachable = [
        pool.name
        for pool in board.pools.values()
        if pool.kind == kind and all(board.reaches(user, pool.memory) for user in users)
    ]
    return sorted(
        reachable,
        key=lambda name: (board.memories[board.pools[name].memory].latency, order.index(name)),
    )


def _stack_allowed(board: Board, buffer: Buffer, users: tuple[str, ...]) -> str | None:
    """The single user context whose stack may take this buffer under `global`, if any."""
    if len(users) != 1 or users[0] not in board.contexts:
        return None
    context = board.contexts[users[0]]
    if context.stack is None or buffer.size > context.max_stack_alloca:
        return None
    return context.name


def _narrow(
    board: Board, buffer: Buffer, users: tuple[str, ...], places: tuple[Place, ...], pinned: bool
) -> Candidates:
    """Apply the buffer's `pools:` list: it narrows the scope's places, never widens them."""
    if not buffer.pools:
        return Candidates(buffer, users, places, pinned)
    for name in buffer.pools:
        if name not in board.pools:
            raise buffer.error("pools", f"no pool {name!r}; {suggest(name, board.pools)}")
    allowed = {place.pool for place in places if place.pool}
    narrowed = tuple(Place(pool=name) for name in buffer.pools if name in allowed)
    if not narrowed:
        labels = ", ".join(place.label for place in places)
        raise buffer.error(
            "pools",
            f"none of {', '.join(buffer.pools)} is allowed by scope "
            f"{buffer.scope!r} for {', '.join(users)}; allowed: {labels}",
        )
    return Candidates(buffer, users, narrowed, pinned or len(narrowed) == 1)
