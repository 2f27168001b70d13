"""`MemoryStore`: the SQLite backend (`interface.Backend`): one file, opened and migrated on `open`, handing out
`UserMemory` handles (`user_memory.py`) built with SQLite's two indexes: full text by FTS5 (`text_index.py`),
vectors by the in-memory bit scan (`vector_index.py`). The Postgres backend (`postgres/store.py`) stands beside
it, built the same way; neither is the other's subclass.
"""

from __future__ import annotations

from collections.abc import Callable

from coop.errors import UsageError
from coop.memory.storage import fulltext, health, vectors
from coop.memory.storage.connection import THROWAWAY, Database
from coop.memory.storage.items import Finding, check_user_id
from coop.memory.storage.text_index import SqliteTextIndex
from coop.memory.storage.user_memory import UserMemory
from coop.memory.storage.vector_index import SqliteVectorIndex


class MemoryStore:
    """The store as a whole (`interface.Backend`, SQLite): opened and migrated on `open`, hands out `UserMemory`
    handles, a handle of its own for another thread (`reopen`), and says how it is (`check`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, location: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> "MemoryStore":
        """The store at `location` (a file path, created if need be; `THROWAWAY` for one that lives in memory and
        is gone at exit), migrated to the current schema."""
        from coop.memory.storage.database import open_database

        return cls(open_database(location, busy_timeout_ms=busy_timeout_ms, migrate=migrate))

    @property
    def location(self) -> str:
        return self.db.path

    @property
    def read_only(self) -> bool:
        return self.db.read_only

    @property
    def throwaway(self) -> bool:
        """True for a store that lives in memory only: no other handle can reach it, nothing outlives the process."""
        return self.db.path == THROWAWAY

    def reopen(self) -> "MemoryStore":
        """A handle of its own on the same store, for another thread (an apsw connection is one thread's)."""
        if self.throwaway:
            raise UsageError("a throwaway store cannot be opened twice", hint="give memory.db_path a file")
        return MemoryStore.open(self.db.path, busy_timeout_ms=self.db.busy_timeout_ms)

    def close(self) -> None:
        self.db.close()

    def user(self, user_id: str) -> UserMemory[Database]:
        """One user's memory in this file, with SQLite's indexes."""
        return UserMemory(self.db, check_user_id(user_id), backend=self, text=SqliteTextIndex,
                          vectors=SqliteVectorIndex)

    def sole_user(self) -> str | None:
        """None: a file has no roles; whoever opens it reaches every user in it."""
        return None

    def unbound(self) -> str | None:
        """None: a file is one person's, kept apart by its permissions (0600), not by policies."""
        return None

    def user_ids(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT id FROM users ORDER BY id")]

    def check(self) -> list[Finding]:
        """How the store is: its engine, schema, integrity, full-text indexes, whether it can be written, its
        permissions, its embedding backlog and vector index (`health.py`)."""
        db = self.db
        return (health.guarded("sqlite", lambda: health.engine(db)) +
                health.guarded("integrity", lambda: health.integrity(db)) +
                health.guarded("stored vectors", lambda: health.vector_findings(db)))

    def guarded(self, name: str, run: Callable[[], list[Finding]]) -> list[Finding]:
        """`run`'s findings; a SQLite error while it reads (a damaged page, another program's lock) is one."""
        return health.guarded(name, run)

    def embedders(self) -> dict[str, int]:
        """Every embedder that has vectors in the store, with its count (any user)."""
        return vectors.stored_embedders(self.db)

    def rebuild_fulltext(self) -> dict[str, int]:
        """Build every full-text index again from the stored text; the rows indexed per index."""
        return fulltext.rebuild_fulltext(self.db)
