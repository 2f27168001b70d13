"""`UserScope`: a database connection bound to one user. Everything that touches user rows takes one, so no
statement can forget its `user_id`; `UserMemory` (store.py) is one, composed of `Part`s (sessions, messages,
facts...), each a view of it."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from coop.memory.storage.connection import Database
from coop.memory.storage.sql import Dialect, dialect_of

if TYPE_CHECKING:
    from coop.memory.storage.store import UserMemory


T = TypeVar("T")
# Ids per `IN (...)` list: one statement per chunk keeps each far below SQLite's host-parameter limit (32,766)
# and its plan a lookup per id; the vector re-rank's candidates go 2,000 at a time (one statement for its usual 1,000).
IN_LIST_CHUNK = 500


def in_chunks(ids: Sequence[T], size: int = IN_LIST_CHUNK) -> Iterator[list[T]]:
    """`ids` in lists of at most `size`, for `IN (...)` lists."""
    for start in range(0, len(ids), size):
        yield list(ids[start:start + size])


@dataclass
class UserScope:
    """One user's handle on the database. Every statement made through it binds `self.user_id`."""

    db: Database
    user_id: str

    def ensure_user(self) -> None:
        """Make sure the user's row exists. Not cached: a write that created it and then failed (a full disk, a
        session that was not this user's) rolls the row back, and the next write must create it again."""
        self.db.execute("INSERT INTO users (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        (self.user_id, time.time()))

    def transaction(self) -> AbstractContextManager[None]:
        """A unit of work over this user's memory: all of it is written, or (on any error) none. Nests."""
        return self.db.atomic()

    def checkpoint(self) -> None:
        """Make what was just deleted leave the store's files promptly (after a forget); best effort."""
        self.db.checkpoint()

    @property
    def read_only(self) -> bool:
        """True when the store was opened for reading only (nothing this session says will be kept)."""
        return self.db.read_only


class Part:
    """One concern of a user's memory (its sessions, messages, facts, sources, jobs, forgetting): a view of the
    `UserMemory` it belongs to, whose connection and user every statement uses. Parts reach each other through
    `self.memory` (a fact's write drops its vectors through `memory.vectors`)."""

    def __init__(self, memory: "UserMemory") -> None:
        self.memory = memory

    @property
    def db(self) -> Database:
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
