"""A user's memory as its own parts and indexes see it (`Scope`: the whole, and the connection bound to its user),
and `Part`, what each part (sessions, messages, facts...) is: a view of it. Everything that touches user rows
takes one, so no statement can forget its `user_id`.

The parts see the whole and each other only through Protocols (`interface.UserStore`, and the connection's
`sql.SqlDatabase`), never through `user_memory.UserMemory`: so no part imports the class that is composed of
them, and one set of parts serves both engines."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, TypeAlias, TypeVar

from coop.memory.storage.interface import UserStore
from coop.memory.storage.sql import Dialect, SqlDatabase, dialect_of

T = TypeVar("T")
DB = TypeVar("DB", bound=SqlDatabase, covariant=True)
# Ids per `IN (...)` list: one statement per chunk keeps each far below SQLite's host-parameter limit (32,766)
# and its plan a lookup per id; the vector re-rank's candidates go 2,000 at a time (one statement for its usual 1,000).
IN_LIST_CHUNK = 500


def in_chunks(ids: Sequence[T], size: int = IN_LIST_CHUNK) -> Iterator[list[T]]:
    """`ids` in lists of at most `size`, for `IN (...)` lists."""
    for start in range(0, len(ids), size):
        yield list(ids[start:start + size])


class Scope(UserStore, Protocol[DB]):
    """One user's memory with its connection (`DB`: the engine's own, for an index that is that engine's). Every
    statement made through it binds `user_id`."""

    @property
    def db(self) -> DB: ...


UserScope: TypeAlias = Scope[SqlDatabase]  # a user's memory on either engine, as the shared parts see it


class Part:
    """One concern of a user's memory (its sessions, messages, facts, sources, jobs, forgetting): a view of the
    memory it belongs to, whose connection and user every statement uses. Parts reach each other through
    `self.memory` (a fact's write drops its vectors through `memory.vectors`)."""

    def __init__(self, memory: UserScope) -> None:
        self.memory = memory

    @property
    def db(self) -> SqlDatabase:
        return self.memory.db

    @property
    def user_id(self) -> str:
        return self.memory.user_id

    @property
    def sql(self) -> Dialect:
        """The pieces of a shared statement that differ on this part's engine (`sql.py`)."""
        return dialect_of(self.db)

    def ensure_user(self) -> None:
        self.memory.ensure_user()
