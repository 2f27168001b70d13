"""The in-memory bit pre-selection of a large memory (`bit_index.py`): the same answers as exact search when it
keeps enough candidates, and never a stale copy: inserts, forgets, re-embeds (an id reused) and another
connection's writes are all seen by the next search; a write that rolls back leaves nothing behind."""

from __future__ import annotations

import numpy as np
import pytest

from coop.memory.storage import sign_bits as bit_index
from coop.memory.storage import vectors
from coop.memory.storage.connection import Database
from coop.memory.storage.database import open_database
from coop.memory.storage.migrations import MIGRATIONS, apply_migrations
from coop.memory.storage.store import MemoryStore
from coop.memory.storage.vectors import nearest, store_vectors

pytestmark = pytest.mark.sqlite_only  # SQLite's own index (the bit scan, FTS5's ranking): Postgres has its own tests

DIMS = 384  # six 64-bit words, as the real model's vectors
EMBEDDER = "test:random:384"


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture
def small_threshold(monkeypatch):
    """Every vector a candidate below 400 (the re-rank is then exact), so answers can be compared with exact
    search."""
    monkeypatch.setattr(vectors, "bit_candidates", lambda k, size: 400)


def fill(memory, count: int, seed: int = 0) -> tuple[list[int], np.ndarray]:
    session = memory.sessions.start()
    ids = [memory.messages.add(session, "user", f"note {i}") for i in range(count)]
    matrix = unit(np.random.default_rng(seed).standard_normal((count, DIMS)))
    store_vectors(memory, "message", ids, EMBEDDER, matrix)
    return ids, matrix


def top(memory, query: np.ndarray, k: int = 5, exact: bool = False) -> list[int]:
    return [h.item_id for h in nearest(memory, EMBEDDER, DIMS, query, k=k, exact=exact)]


def test_sign_bits_pack_one_bit_per_dimension():
    vector = np.array([0.5, -1, 0, 2, -0.1, 3, 4, -5, 1], dtype=np.float32)
    assert bit_index.sign_bits(vector).tolist() == [0b10010110, 0b10000000]
    assert bit_index.sign_bits_blob(vector.tobytes()) == bytes([0b10010110, 0b10000000])
    assert bit_index.sign_bits_blob(None) is None


def test_bit_scan_finds_what_exact_search_finds(memory, small_threshold):
    ids, matrix = fill(memory, 300)
    rng = np.random.default_rng(1)
    for _ in range(20):
        query = unit(matrix[rng.integers(300)] + 0.3 * rng.standard_normal(DIMS))
        assert top(memory, query) == top(memory, query, exact=True)
    assert memory.db.caches, "the bit index was not used"


def test_bit_scan_ranks_by_hamming_distance(memory, monkeypatch):
    """With few candidates, the ones kept are the nearest by sign bits: a vector with the query's signs is kept
    over any vector with other signs."""
    monkeypatch.setattr(vectors, "bit_candidates", lambda k, size: 1)
    ids, matrix = fill(memory, 100)
    query = matrix[37]
    assert top(memory, query, k=1) == [ids[37]]


def test_new_vectors_forgotten_items_and_reused_ids_are_seen(memory, small_threshold):
    ids, matrix = fill(memory, 60)
    query = matrix[0]
    assert top(memory, query, k=1) == [ids[0]]
    # An insert after the copy was loaded: a vector equal to the query, on a new message.
    [new_id], new = fill(memory, 1, seed=5)[0], unit(query[None, :] * 1.0)
    store_vectors(memory, "message", [new_id], EMBEDDER, new)
    assert new_id in top(memory, query, k=2)
    # Forget the original: the next search does not return it.
    memory.forget("message", ids[0])
    assert ids[0] not in top(memory, query, k=60)
    # Re-embed the newest item (its row is the largest id, so its id is reused by the insert): the new vector
    # is used, though the id list did not change.
    store_vectors(memory, "message", [new_id], EMBEDDER, unit(-query[None, :]))
    assert top(memory, query, k=60)[-1] == new_id
    assert top(memory, -query, k=1) == [new_id]


def test_another_connection_s_writes_are_seen(coop_home, small_threshold):
    path = str(coop_home / "two.db")
    first, second = open_database(path), open_database(path)
    ana_here, ana_there = MemoryStore(first).user("ana"), MemoryStore(second).user("ana")
    _, matrix = fill(ana_here, 50)
    top(ana_here, matrix[0])
    [their_id], _ = fill(ana_there, 1, seed=9)
    store_vectors(ana_there, "message", [their_id], EMBEDDER, unit(-matrix[0][None, :]))
    assert top(ana_here, -matrix[0], k=1) == [their_id]
    first.close()
    second.close()


def test_a_write_that_rolls_back_leaves_no_trace_in_the_copy(memory, small_threshold):
    ids, matrix = fill(memory, 50)
    top(memory, matrix[0])
    session = memory.sessions.start()
    with pytest.raises(RuntimeError), memory.db.atomic():
        ghost = memory.messages.add(session, "user", "never committed")
        store_vectors(memory, "message", [ghost], EMBEDDER, unit(-matrix[0][None, :]))
        assert top(memory, -matrix[0], k=1) == [ghost]  # seen inside its own transaction
        raise RuntimeError("rolled back")
    fill(memory, 1, seed=3)  # as many changes as the ghost made, committed this time (and its id reused)
    assert top(memory, -matrix[0], k=10) == top(memory, -matrix[0], k=10, exact=True)


def test_the_kind_filter_applies_in_the_scan(memory, small_threshold):
    _, matrix = fill(memory, 60)
    fact = memory.facts.add("the one fact").fact_id
    store_vectors(memory, "fact", [fact], EMBEDDER, unit(matrix[3][None, :] * -1))
    hits = nearest(memory, EMBEDDER, DIMS, -matrix[3], k=3, kinds=("fact",))
    assert [(h.kind, h.item_id) for h in hits] == [("fact", fact)]


def test_upgrading_fills_the_bits_of_existing_vectors(coop_home):
    path = str(coop_home / "old.db")
    old = open_database(path, migrate=False)
    apply_migrations(old, MIGRATIONS[:7])  # as coop wrote it before m008
    matrix = unit(np.random.default_rng(2).standard_normal((3, DIMS)))
    old.execute("INSERT INTO users (id, created_at) VALUES ('ana', 0)")
    for i, vector in enumerate(matrix):
        old.execute("INSERT INTO embeddings (user_id, kind, item_id, embedder, vector) VALUES ('ana', 'message', ?, ?, ?)",
                    (i + 1, EMBEDDER, vector.tobytes()))
    old.close()
    upgraded = open_database(path)
    stored = [row[0] for row in upgraded.execute("SELECT bits FROM embeddings ORDER BY id")]
    assert stored == [bit_index.sign_bits(v).tobytes() for v in matrix]
    assert upgraded.one("SELECT count, changes FROM embedding_counts WHERE user_id = 'ana'")[0] == 3
    upgraded.close()


def test_a_re_embedded_vector_s_new_bits_are_used(memory, monkeypatch):
    """One candidate only: the scan itself must see the new bits of a vector whose row id was reused."""
    monkeypatch.setattr(vectors, "bit_candidates", lambda k, size: 1)
    ids, matrix = fill(memory, 60)
    probe = unit(np.ones((1, DIMS)))[0]
    assert top(memory, probe, k=1) != [ids[-1]] or bool(np.all(matrix[-1] > 0))
    store_vectors(memory, "message", [ids[-1]], EMBEDDER, probe[None, :])
    assert memory.db.scalar("SELECT max(id) FROM embeddings") == 60  # the id was reused
    assert top(memory, probe, k=1) == [ids[-1]]


def test_an_item_is_pre_selected_by_the_bits_of_one_of_its_sentences(memory, monkeypatch):
    """One candidate only: an item whose whole vector is far from the query but one of its sentence vectors is
    the query must be the one kept; its parts' bits are rows of the scan."""
    monkeypatch.setattr(vectors, "bit_candidates", lambda k, size: 1)
    ids, matrix = fill(memory, 60)
    probe = unit(np.random.default_rng(7).standard_normal((1, DIMS)))[0]
    [long_one], _ = fill(memory, 1, seed=8)
    store_vectors(memory, "message", [long_one], EMBEDDER, unit(-probe[None, :]),
                  parts=[unit(np.stack([matrix[5], probe]))])
    assert top(memory, probe, k=1) == [long_one]


def test_bits_loaded_beside_are_used_by_the_first_search_and_checked_first(memory, monkeypatch):
    """`load_beside` (the chat runs it in the embedder's loading thread) loads on a connection of its own and hands
    the copy over: the first search on the chat's connection reads no rows, and a vector added after the copy was
    made is still found (the copy is brought up to date before use)."""
    from coop.memory.storage import bit_index as loader

    ids, matrix = fill(memory, 50)
    db = memory.db
    used = []
    execute, scalar = Database.execute, Database.scalar
    monkeypatch.setattr(Database, "execute", lambda self, *a, **k: (used.append(self), execute(self, *a, **k))[1])
    monkeypatch.setattr(Database, "scalar", lambda self, *a, **k: (used.append(self), scalar(self, *a, **k))[1])
    assert loader.load_beside(db, memory.user_id, EMBEDDER) is True
    assert used and all(connection is not db for connection in used)  # loaded on its own connection
    monkeypatch.undo()
    assert loader.load_beside(db, memory.user_id, EMBEDDER) is False  # there already
    read = []
    real_rows = loader._rows
    monkeypatch.setattr(loader, "_rows", lambda *a, **k: (read.append(a), real_rows(*a, **k))[1])
    assert top(memory, matrix[7], k=1) == [ids[7]]
    assert read == []  # used as it was loaded
    session = memory.sessions.start()
    late = memory.messages.add(session, "user", "late")
    store_vectors(memory, "message", [late], EMBEDDER, unit(-matrix[3][None, :]))
    assert top(memory, -matrix[3], k=1) == [late]


def test_nothing_is_loaded_beside_a_database_in_memory():
    from coop.memory.storage import bit_index as loader

    db = open_database(":memory:")
    try:
        assert loader.load_beside(db, "ana", EMBEDDER) is False and db.caches == {}
    finally:
        db.close()
