"""Migration m012 (issue 28): the vec0 tables an older coop wrote beside `embeddings` (never read by search) and
`vector_indexes` that named them are dropped by a connection without sqlite-vec (coop no longer loads it: m012
brings a stand-in vec0 module), and the vectors themselves, their search and their counts are untouched.

The old database is built with the real sqlite-vec (a dev dependency for this test and `bench/vectorleg.py`): its
vec0 table and shadow tables (`_info`, `_chunks`, `_rowids`, `_vector_chunks00`, ...) are exactly what an older
coop left, not an imitation of them."""

from __future__ import annotations

import hashlib

import apsw
import pytest

from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.storage.database import open_database
from coop.memory.storage.migrations import MIGRATIONS, SCHEMA_VERSION, apply_migrations, schema_version
from coop.memory.storage.store import MemoryStore
from coop.memory.storage.vectors import index_status, nearest

pytestmark = pytest.mark.sqlite_only  # SQLite's own index (the bit scan, FTS5's ranking): Postgres has its own tests

EMBEDDER = HashEmbedder(64)


def _load_sqlite_vec(db) -> None:
    """sqlite-vec on this one connection, as coop loaded it on every connection until issue 43."""
    import sqlite_vec

    db.conn.enable_load_extension(True)
    try:
        db.conn.load_extension(sqlite_vec.loadable_path())
    finally:
        db.conn.enable_load_extension(False)


def _old_database(path: str) -> str:
    """A database as coop left it at m011: vectors in `embeddings` and the sign bits of each in the embedder's
    vec0 table, made and filled as `vectors.index_table` did (sqlite-vec loaded). Returns the vec0 table's name."""
    db = open_database(path, migrate=False)
    _load_sqlite_vec(db)
    apply_migrations(db, MIGRATIONS[:11])
    memory = MemoryStore(db).user("ana")
    memory.facts.add("likes green tea")
    memory.facts.add("climbs in Fontainebleau")
    embed_pending(memory, EMBEDDER)
    name = "vec_" + hashlib.sha1(EMBEDDER.id.encode("utf-8")).hexdigest()[:12]
    with db.atomic():
        db.execute(f"CREATE VIRTUAL TABLE {name} USING vec0(embedding_id INTEGER PRIMARY KEY, "
                   f"user_id TEXT PARTITION KEY, kind TEXT, embedding bit[{EMBEDDER.dims}])")
        db.execute("INSERT INTO vector_indexes (embedder, table_name, dims) VALUES (?, ?, ?)",
                   (EMBEDDER.id, name, EMBEDDER.dims))
        db.execute(f"INSERT INTO {name} (embedding_id, user_id, kind, embedding) SELECT id, user_id, kind, "
                   "vec_quantize_binary(vector) FROM embeddings WHERE embedder = ?", (EMBEDDER.id,))
    assert db.scalar(f"SELECT count(*) FROM {name}") == 2
    assert len([t for t in _tables(db) if t.startswith(name + "_")]) >= 3  # vec0's shadow tables
    db.close()
    return name


def _tables(db) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_an_old_database_loses_its_vec0_tables_and_keeps_its_vectors(coop_home):
    path = str(coop_home / "coop.db")
    name = _old_database(path)
    db = open_database(path)  # no sqlite-vec: SQLite drops a virtual table only through its module, m012 brings one
    with pytest.raises(apsw.SQLError, match="no such function"):
        db.execute("SELECT vec_version()")
    assert schema_version(db) == SCHEMA_VERSION
    assert not [t for t in _tables(db) if t.startswith(name) or t == "vector_indexes"]
    assert db.scalar("PRAGMA integrity_check") == "ok"
    assert index_status(db) == [{"embedder": EMBEDDER.id, "dims": 64, "stored": 2, "indexed": 2, "dirty": False}]
    memory = MemoryStore(db).user("ana")
    hits = nearest(memory, EMBEDDER.id, EMBEDDER.dims, EMBEDDER.embed_query("green tea"), k=1)
    assert [memory.get("fact", h.item_id).text for h in hits] == ["likes green tea"]
    memory.facts.add("drinks oolong")  # writing vectors after the migration needs no index either
    embed_pending(memory, EMBEDDER)
    assert index_status(db)[0]["stored"] == 3
    db.close()
    again = open_database(path)
    _load_sqlite_vec(again)  # even with the vec0 module loaded again, nothing of the old tables is left
    assert not [t for t in _tables(again) if t.startswith("vec_")]
    assert again.scalar("PRAGMA integrity_check") == "ok"
    again.close()


def test_a_database_without_vec0_tables_migrates_as_well(coop_home):
    path = str(coop_home / "coop.db")
    db = open_database(path, migrate=False)
    apply_migrations(db, MIGRATIONS[:11])
    assert "vector_indexes" in _tables(db)
    assert apply_migrations(db, MIGRATIONS[:12]) == 1
    assert "vector_indexes" not in _tables(db)
    db.close()


def test_index_status_counts_the_vectors_the_bit_scan_cannot_see(memory):
    """A vector whose sign bits are missing is found by no bit scan: `coop check` learns it from index_status."""
    memory.facts.add("likes green tea")
    memory.facts.add("climbs in Fontainebleau")
    embed_pending(memory, EMBEDDER)
    memory.db.execute("UPDATE embeddings SET bits = NULL WHERE id = (SELECT min(id) FROM embeddings)")
    [status] = index_status(memory.db)
    assert (status["stored"], status["indexed"]) == (2, 1)
    assert status["dims"] == EMBEDDER.dims
