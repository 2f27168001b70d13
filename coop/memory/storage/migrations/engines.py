"""Each engine's side of the runner (`__init__.py`): where it reads the schema's history (the same `_migrations`
table, `id, name, applied_at`, on both), how it holds every other client off while it migrates, and which form of
a migration it runs. Statements here are each engine's own SQL: `?` through apsw, `%s` through `PgDatabase.run`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from coop.errors import StoreError
from coop.memory.storage.migrations.migration import Migration

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database
    from coop.memory.storage.postgres.connection import PgDatabase

# m001's Postgres form is the schema SQLite reached at m013: the migrations up to here have nothing else to run
# on Postgres, and a database made before the runner (`coop_schema` version 1) stands at this one.
POSTGRES_BEGAN_AT = 13
# What `coop_schema` says once the history is in `_migrations`: the coop releases before it read only that table,
# and stop at a version above their own 1 with "made by a newer coop" (rather than making the schema again and
# failing on a table that exists), so a team's devices can upgrade one at a time.
MARKER_FOR_OLDER_RELEASES = 2


class SQLiteHistory:
    """A SQLite file's history; `locked` is BEGIN IMMEDIATE, so a second process waits, then finds it done."""

    def __init__(self, db: "Database") -> None:
        self.db = db

    def recorded(self) -> int:
        exists = self.db.scalar("select count(*) from sqlite_master where type = 'table' and name = '_migrations'")
        if not exists:
            return 0
        return int(self.db.scalar("select coalesce(max(id), 0) from _migrations"))

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.db.atomic():
            yield

    def prepare(self, migrations: tuple[Migration, ...]) -> None:
        self.db.conn.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                             "applied_at REAL NOT NULL)")

    def run(self, number: int, migration: Migration) -> None:
        if migration.step is not None:
            migration.step(self.db)
        self.db.conn.execute(migration.sql)

    def record(self, number: int, name: str, applied_at: float | None = None) -> None:
        self.db.conn.execute("INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)",
                             (number, name, time.time() if applied_at is None else applied_at))


class PostgresHistory:
    """A Postgres database's history; `locked` is a transaction holding the schema's advisory lock, so two
    clients starting at once migrate once (the second waits, then finds it done)."""

    def __init__(self, db: "PgDatabase") -> None:
        self.db = db

    def _exists(self, table: str) -> bool:
        """Read from `pg_class` with this statement's snapshot: `to_regclass` asks a cache that waiting on the
        advisory lock does not refresh, and would miss the table the client before us just made."""
        return bool(self.db.run("SELECT EXISTS (SELECT 1 FROM pg_class WHERE relname = %s "
                                "AND relnamespace = current_schema()::regnamespace)", (table,))[0][0])

    def recorded(self) -> int:
        if not self._exists("_migrations"):
            return 0
        return int(self.db.run("SELECT coalesce(max(id), 0) FROM _migrations")[0][0])

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.db.atomic():
            self.db.run("SELECT pg_advisory_xact_lock(hashtext('coop:schema'))")
            yield

    def prepare(self, migrations: tuple[Migration, ...]) -> None:
        if self._exists("_migrations"):
            return
        self.db.run("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                    "applied_at DOUBLE PRECISION NOT NULL)")
        if self._exists("coop_schema"):
            self._adopt(migrations)
        else:
            self.db.run("CREATE TABLE coop_schema (version INTEGER NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
        self.db.run("INSERT INTO coop_schema (version, applied_at) VALUES (%s, %s)",
                    (MARKER_FOR_OLDER_RELEASES, time.time()))

    def _adopt(self, migrations: tuple[Migration, ...]) -> None:
        """A database made before the runner kept its version in `coop_schema` (version 1: m001's Postgres form,
        so m001..m013 stand run). Recorded as such, at the time it was made; `coop_schema` stays, for the releases
        before the history (`MARKER_FOR_OLDER_RELEASES`); no row of any other table is touched."""
        version, made = self.db.run("SELECT max(version), min(applied_at) FROM coop_schema")[0]
        if version != 1:
            raise StoreError(f"the database at {self.db.path} was made by a newer coop (schema {version})",
                             hint="upgrade coop on this machine")
        for number, migration in enumerate(migrations[:POSTGRES_BEGAN_AT], start=1):
            self.record(number, migration.name, float(made))

    def run(self, number: int, migration: Migration) -> None:
        if migration.postgres is None:
            if number > POSTGRES_BEGAN_AT:
                raise ValueError(f"migration {migration.name} has no Postgres form: every migration after "
                                 f"m{POSTGRES_BEGAN_AT:03d} needs one ('' when it means nothing on Postgres)")
            return
        if migration.postgres_step is not None:
            migration.postgres_step(self.db)
        if migration.postgres.strip():
            self.db.run(migration.postgres)

    def record(self, number: int, name: str, applied_at: float | None = None) -> None:
        self.db.run("INSERT INTO _migrations (id, name, applied_at) VALUES (%s, %s, %s)",
                    (number, name, time.time() if applied_at is None else applied_at))
