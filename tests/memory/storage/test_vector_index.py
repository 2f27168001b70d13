"""The vector index reads each item's vector once per turn (`storage/vector_index.py`): a turn asks for the
cosines of search's candidates, their neighbours, the salient messages and the facts it dedups, and the same
items come up again and again."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from coop.config.loading import Config
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval.turn import turn_context
from coop.memory.storage.interface import TextIndex, VectorIndex

EMBEDDER = HashEmbedder(64)


def _fill(memory):
    for day in range(6):
        session = memory.sessions.start()
        for line in (f"We walked the dog along the river on day {day}", "The river was high after the rain",
                     f"Mochi the cat slept on the sofa on day {day}", "I planted tomatoes in the garden"):
            memory.messages.add(session, "user", line, importance=0.9 if "Mochi" in line else 0.0)
    memory.facts.add("Has a dog called Biscuit", category="pets")
    memory.facts.add("Lives by the river in Porto", category="location")
    embed_pending(memory, EMBEDDER)


def test_within_reading_once_each_vector_is_read_from_the_database_once(memory):
    _fill(memory)
    index = memory.vectors
    items = [("message", i) for i in range(1, 13)] + [("fact", 1), ("fact", 2)]
    query = EMBEDDER.embed_query("the river")
    index.reads = 0
    for _ in range(3):
        index.similarities(EMBEDDER.id, EMBEDDER.dims, query, items)
    assert index.reads == 3 * len(items)  # outside the scope: every call reads
    index.reads = 0
    with index.reading_once():
        first = index.similarities(EMBEDDER.id, EMBEDDER.dims, query, items)
        again = index.similarities(EMBEDDER.id, EMBEDDER.dims, query, items[::-1])
        wholes = index.read(EMBEDDER.id, EMBEDDER.dims, items)
        hits = index.nearest(EMBEDDER.id, EMBEDDER.dims, query, k=5, exact=True)
        after_nearest = index.reads
        index.similarities(EMBEDDER.id, EMBEDDER.dims, query, [(h.kind, h.item_id) for h in hits])
    assert index.reads == after_nearest  # what nearest read is not read again
    assert again == first and set(wholes) == set(items)
    assert np.allclose([first[item] for item in items],
                       [float(wholes[item] @ query) for item in items], atol=1e-5)  # whole vectors: no parts here
    index.reads = 0
    index.similarities(EMBEDDER.id, EMBEDDER.dims, query, items)
    assert index.reads == len(items)  # the scope is over: reads again


@pytest.mark.sqlite_only  # Postgres scores on the server: a read there is a score per query, not a vector
def test_a_turn_reads_each_vector_once_but_the_profiles_own_scan(memory, monkeypatch):
    _fill(memory)
    question = "Where did we walk the dog by the river?"
    memory.vectors.reads = 0
    ctx = turn_context(memory, question, cfg=Config().memory, embedder=EMBEDDER)
    assert ctx.recollection.past or ctx.recollection.facts
    once = memory.vectors.reads
    stored = memory.stats()["embedders"][EMBEDDER.id]
    # every item at most once, but the facts, which the profile compares exactly with a scan of its own
    assert 0 < once <= stored + memory.stats()["facts_active"]
    monkeypatch.setattr(type(memory.vectors), "reading_once", lambda self: contextlib.nullcontext())
    memory.vectors.reads = 0
    turn_context(memory, question, cfg=Config().memory, embedder=EMBEDDER)
    assert memory.vectors.reads > once  # without the scope the stages read the same items again


def test_the_sqlite_indexes_are_the_seams_protocols(memory):
    text: TextIndex = memory.text  # mypy checks the assignment; this checks the methods exist at run time
    vectors: VectorIndex = memory.vectors
    for name in ("matches", "rare_word_score"):
        assert callable(getattr(text, name))
    for name in ("reading_once", "store", "delete", "pending", "nearest", "read", "similarities", "size"):
        assert callable(getattr(vectors, name))


@pytest.mark.sqlite_only
def test_an_exact_scan_of_a_rare_kind_uses_the_index_whatever_analyze_says(memory):
    """With ANALYZE's statistics the planner once scanned every vector of the database to find a user's (absent)
    facts: 92 ms at 100,000 messages for the profile's exact pass. The exact pass goes through the index."""
    session = memory.sessions.start()
    for i in range(400):
        memory.messages.add(session, "user", f"message number {i} about the weather and the garden")
    embed_pending(memory, EMBEDDER)
    memory.db.execute("ANALYZE")
    query = EMBEDDER.embed_query("the weather")
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    memory.db.conn.set_progress_handler(count, 100)  # called every 100 virtual machine instructions
    try:
        assert memory.vectors.nearest(EMBEDDER.id, EMBEDDER.dims, query, k=5, kinds=("fact",), exact=True) == []
        facts_steps = steps[0]
        steps[0] = 0
        assert len(memory.vectors.nearest(EMBEDDER.id, EMBEDDER.dims, query, k=5, kinds=("message",),
                                          exact=True)) == 5
    finally:
        memory.db.conn.set_progress_handler(None)
    assert facts_steps * 20 < steps[0]  # finding no fact costs next to nothing beside reading 400 vectors
