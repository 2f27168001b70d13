"""Vector storage: one embedder's vectors never meet another's, the user filter is applied before k, search
needs no extension (coop loads no sqlite-vec), and a vector write writes `embeddings` alone (no vec0 table since
m012)."""

from __future__ import annotations

import numpy as np
import pytest

from coop.errors import EmbedderError
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore
from coop.memory.storage.vectors import index_status


@pytest.mark.sqlite_only
def test_embed_pending_fills_vectors_with_their_sign_bits(memory, hash_embedder):
    session = memory.sessions.start()
    for i in range(5):
        memory.messages.add(session, "user", f"note number {i}")
    memory.facts.add("likes green tea")
    assert embed_pending(memory, hash_embedder, batch_size=2) == 6
    assert embed_pending(memory, hash_embedder) == 0
    assert memory.stats()["unembedded"] == 0
    [status] = index_status(memory.db)
    assert status["stored"] == status["indexed"] == 6 and not status["dirty"]
    assert memory.db.scalar("SELECT count(*) FROM embeddings WHERE length(bits) * 8 = $1", (hash_embedder.dims,)) == 6


@pytest.mark.sqlite_only
def test_a_vector_write_creates_and_writes_no_vec0_table(memory, hash_embedder):
    """The vec0 table was written on every vector write and never read by search (issue 28): gone."""
    tables_before = {row[0] for row in memory.db.execute("SELECT name FROM sqlite_master")}
    memory.facts.add("likes green tea")
    embed_pending(memory, hash_embedder)
    tables_after = {row[0] for row in memory.db.execute("SELECT name FROM sqlite_master")}
    assert memory.db.scalar("SELECT count(*) FROM embeddings") == 1
    assert tables_after == tables_before
    assert memory.db.scalar("SELECT count(*) FROM sqlite_master WHERE sql LIKE '%USING vec0%'") == 0
    assert "vector_indexes" not in tables_after


def test_vectors_of_another_embedder_are_never_compared(memory):
    memory.facts.add("likes green tea")
    small, big = HashEmbedder(32), HashEmbedder(64)
    embed_pending(memory, small)
    query = big.embed_query("green tea")
    assert memory.vectors.nearest(big.id, big.dims, query, k=5) == []
    assert [h.item_id for h in memory.vectors.nearest(small.id, small.dims, small.embed_query("green tea"), k=5)]
    with pytest.raises(EmbedderError):
        memory.vectors.nearest(small.id, small.dims, query, k=5)  # a 64-dim query against a 32-dim index


def test_user_filter_applies_before_k(store, hash_embedder):
    """Other users' rows closer to the query must not push this user's only match out of the top k."""
    ana = store.user("ana")
    for i in range(300):
        other = store.user(f"user{i % 3}")
        other.facts.add(f"green tea ceremony {i}")
    for i in range(3):
        embed_pending(store.user(f"user{i}"), hash_embedder)
    ana.facts.add("I once drank coffee near a tea garden")
    embed_pending(ana, hash_embedder)
    hits = ana.vectors.nearest(hash_embedder.id, hash_embedder.dims, hash_embedder.embed_query("green tea ceremony"), k=1)
    assert [(h.kind, ana.get(h.kind, h.item_id).text) for h in hits] == [("fact", "I once drank coffee near a tea garden")]


def test_kind_filter_and_superseded_facts_apply_before_k(memory, hash_embedder):
    session = memory.sessions.start()
    for i in range(250):
        memory.messages.add(session, "user", f"tea time {i}")
    memory.facts.add("tea is my favourite drink", category="taste", key="drink")
    memory.facts.add("tea with milk is my favourite drink", category="taste", key="drink")
    embed_pending(memory, hash_embedder)
    query = hash_embedder.embed_query("tea")
    hits = memory.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=1, kinds=("fact",))
    assert len(hits) == 1 and memory.get("fact", hits[0].item_id).text == "tea with milk is my favourite drink"
    with_old = memory.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=5, kinds=("fact",),
                       include_inactive=True)
    assert len(with_old) == 2


def test_floor_drops_weak_matches(memory, hash_embedder):
    memory.facts.add("green tea")
    memory.facts.add("volcanic rock formations")
    embed_pending(memory, hash_embedder)
    query = hash_embedder.embed_query("green tea")
    hits = memory.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=5, floor=0.5)
    assert [memory.get("fact", h.item_id).text for h in hits] == ["green tea"]
    assert all(h.similarity >= 0.5 for h in hits)


def test_the_bit_scan_gives_exact_answers_and_sees_writes_from_any_connection(coop_home, hash_embedder):
    path = str(coop_home / "coop.db")
    first = open_database(path)
    memory = MemoryStore(first).user("ana")
    rng = np.random.default_rng(1)
    words = ["tea", "coffee", "mountain", "river", "piano", "guitar", "paris", "lyon", "bread", "cheese"]
    for _ in range(120):
        memory.facts.add(" ".join(rng.choice(words, size=3)) + f" {rng.integers(1e6)}")
    embed_pending(memory, hash_embedder)
    query = hash_embedder.embed_query("tea mountain piano")
    indexed = memory.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=10)
    exact = memory.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=10, exact=True)
    assert [h.item_id for h in indexed] == [h.item_id for h in exact]
    first.close()

    second = open_database(path)
    plain = MemoryStore(second).user("ana")
    assert [h.item_id for h in plain.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=10)] == \
        [h.item_id for h in exact]
    # A write is searchable at once, here and from another connection: nothing to rebuild.
    lesson = plain.facts.add("tea mountain piano lesson").fact_id
    embed_pending(plain, hash_embedder)
    assert plain.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=1)[0].item_id == lesson
    second.close()
    again = open_database(path)
    fresh = MemoryStore(again).user("ana")
    top = fresh.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=1)
    assert fresh.get("fact", top[0].item_id).text == "tea mountain piano lesson"
    [status] = index_status(again)
    assert status["stored"] == status["indexed"] == 121 and not status["dirty"]
    again.close()


def test_a_failing_embedder_records_the_error_per_row(memory):
    class Picky(HashEmbedder):
        def embed(self, texts):
            if any("poison" in t for t in texts):
                raise RuntimeError("cannot embed poison")
            return super().embed(texts)

    embedder = Picky(32)
    session = memory.sessions.start()
    good = memory.messages.add(session, "user", "a fine message")
    bad = memory.messages.add(session, "user", "poison pill")
    assert embed_pending(memory, embedder) == 1
    assert memory.get("message", good).embedder == embedder.id
    failed = memory.get("message", bad)
    assert failed.embedder is None and "cannot embed poison" in failed.embedding_error
