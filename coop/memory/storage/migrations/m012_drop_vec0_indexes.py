"""Migration 012, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop.memory.storage.migrations.migration import Migration

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database


def drop_vec0_tables(db: "Database") -> None:
    """Drop every embedder's vec0 table (named in `vector_indexes`). SQLite drops a virtual table only through its
    module: without sqlite-vec on this connection, a stand-in `vec0` module that owns nothing is registered for
    the drop and the table's shadow tables (`<name>_info`, `_chunks`, `_rowids`, ...) are dropped as the plain
    tables they then are."""
    conn = db.conn
    names = [row[0] for row in conn.execute("SELECT table_name FROM vector_indexes")]
    present = [name for name in names
               if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()]
    if not present:
        return
    conn.create_module("vec0", _StandIn())  # type: ignore[arg-type]
    try:
        for name in present:
            conn.execute(f'DROP TABLE "{name}"')
            shadows = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
                (len(name) + 1, name + "_"))]
            for shadow in shadows:
                conn.execute(f'DROP TABLE "{shadow}"')
    finally:
        conn.create_module("vec0", None)


class _StandInTable:
    def Disconnect(self) -> None:  # apsw's method names
        pass

    Destroy = Disconnect


class _StandIn:
    """Just enough of a virtual table module for SQLite to drop a vec0 table whose module is not loaded."""

    def Create(self, *_args: object) -> tuple[str, _StandInTable]:  # apsw's method names
        return "CREATE TABLE x(embedding)", _StandInTable()

    Connect = Create


M012_DROP_VEC0_INDEXES = Migration("m012_drop_vec0_indexes", why="""\
The sqlite-vec `vec0` table of each embedder (the sign bits of each whole vector, partitioned by user) was written
on every vector write and never read by search: the in-memory bit scan (`bit_index.py`, over `embeddings.bits`)
pre-selects candidates, and `bench/vectorleg.py` measured vec0's own bit KNN slower for the same recall. Dropped
with `vector_indexes`, which named them: a vector write costs less, a connection without sqlite-vec no longer
forces a rebuild, and the file is about 95 bytes a vector smaller.""", sql="""
DROP TABLE vector_indexes;
""", step=drop_vec0_tables)
