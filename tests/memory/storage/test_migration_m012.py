"""Migration m012 (issue 28): the vec0 tables an older coop wrote beside `embeddings` (never read by search) and
`vector_indexes` that named them are dropped, with or without sqlite-vec on the connection that migrates, and the
vectors themselves, their search and their counts are untouched."""

from __future__ import annotations

import hashlib

import pytest

from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.storage.database import open_database
from coop.memory.storage.migrations import MIGRATIONS, SCHEMA_VERSION, apply_migrations, schema_version
from coop.memory.storage.store import MemoryStore
from coop.memory.storage.vectors import index_status, nearest

pytestmark = pytest.mark.sqlite_only  # SQLite's own index (the bit scan, FTS5's ranking): Postgres has its own tests

EMBEDDER = HashEmbedder(64)


def _old_database(path: str) -> str:
    """A database as coop left it at m011: vectors in `embeddings` and the sign bits of each in the embedder's
    vec0 table, made and filled as `vectors.index_table` did. Returns the vec0 table's name."""
    db = open_database(path, migrate=False)
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
    db.close()
    return name


def _tables(db) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.mark.parametrize("with_sqlite_vec", [True, False])
def test_an_old_database_loses_its_vec0_tables_and_keeps_its_vectors(coop_home, monkeypatch, with_sqlite_vec):
    path = str(coop_home / "coop.db")
    name = _old_database(path)
    if not with_sqlite_vec:  # SQLite drops a virtual table only through its module: m012 brings a stand-in
        monkeypatch.setenv("COOP_DISABLE_SQLITE_VEC", "1")
    db = open_database(path)
    assert db.has_vec is with_sqlite_vec
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
    monkeypatch.delenv("COOP_DISABLE_SQLITE_VEC", raising=False)
    again = open_database(path)  # the vec0 module, loaded again, finds nothing of the old tables
    assert not [t for t in _tables(again) if t.startswith("vec_")]
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
