"""The one way to open coop's database: connect (pragmas, SQL functions) and bring the schema up to date.

Every thread (the REPL, the embedding worker, the consolidation worker) calls `open_database()` for a
connection of its own: an apsw connection must not be shared across threads.
"""

from __future__ import annotations

import apsw

from coop.errors import StoreError
from coop.memory.storage.connection import Database, connect, not_a_database
from coop.memory.storage.migrations import apply_migrations

__all__ = ["Database", "open_database"]


def open_database(path: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> Database:
    """Open (creating if needed) the database at `path`, with pragmas and migrations applied.

    A database in a place nobody here can write (a read-only disk, a backup without write permission) opens
    read-only: everything that reads works, and every write is a `StoreError` that says the database is
    read-only."""
    db = connect(path, busy_timeout_ms=busy_timeout_ms)
    if migrate:
        try:
            if apply_migrations(db):
                db.checkpoint()  # rows a migration rewrote (masked keys) leave no old copy in the -wal file
        except apsw.NotADBError:
            raise not_a_database(path) from None
        except apsw.CorruptError:
            raise StoreError(f"the database {path} is corrupted",
                             hint="restore a backup, or move it aside and start again") from None
    return db
