"""UserMemory: facts that are never lost by an update, forgetting that leaves no content, and user isolation."""

from __future__ import annotations

import pytest

from coop.errors import NotFoundError, UsageError
from coop.memory.growth.embedding import embed_pending
from coop.memory.kinds import parse_ref
from coop.memory.text import content_hash, normalise_text


def test_exact_duplicate_counts_a_mention(memory):
    first = memory.facts.add("I live in Lyon.")
    second = memory.facts.add("  i live in   LYON ")
    assert (first.action, second.action) == ("ADD", "MERGE")
    assert second.fact_id == first.fact_id
    facts = memory.list_items("fact")
    assert len(facts) == 1 and facts[0].mention_count == 2
    assert [h.action for h in memory.facts.history(first.fact_id)] == ["ADD", "MERGE"]


def test_new_value_for_a_key_supersedes_and_keeps_the_old_row(memory):
    old = memory.facts.add("Lives in Paris", category="location", key="city")
    new = memory.facts.add("Lives in Lyon", category="location", key="city")
    assert new.action == "SUPERSEDE" and new.previous_id == old.fact_id
    active = memory.list_items("fact")
    assert [f.text for f in active] == ["Lives in Lyon"]
    kept = memory.get("fact", old.fact_id)
    assert kept.superseded_by == new.fact_id and kept.superseded_at is not None
    history = memory.facts.history(old.fact_id)
    assert history[-1].action == "SUPERSEDE"
    assert (history[-1].old_value, history[-1].new_value) == ("Lives in Paris", "Lives in Lyon")
    assert len(memory.list_items("fact", include_inactive=True)) == 2


def test_one_active_fact_per_category_and_key(memory):
    for city in ("Paris", "Lyon", "Nice"):
        memory.facts.add(f"Lives in {city}", category="location", key="city")
    active = memory.db.scalar("select count(*) from facts where key = 'city' and superseded_at is null")
    assert active == 1


@pytest.mark.sqlite_only
def test_forget_removes_text_index_and_vectors_but_keeps_a_record(memory, hash_embedder):
    fact = memory.facts.add("my locker code is 4417", category="secret", key="locker")
    memory.facts.add("my locker code is 9000", category="secret", key="locker")  # history mentions the old value
    embed_pending(memory, hash_embedder)
    memory.forget("fact", fact.fact_id)
    with pytest.raises(NotFoundError):
        memory.get("fact", fact.fact_id)
    db = memory.db
    assert list(db.execute("select rowid from facts_fts where facts_fts match '\"4417\"'")) == []
    assert db.scalar("select count(*) from embeddings where kind = 'fact' and item_id = $1", (fact.fact_id,)) == 0
    history = memory.facts.history(fact.fact_id)
    assert history[-1].action == "FORGET"
    assert all(h.old_value is None and h.new_value is None for h in history)
    dump = "\n".join(str(row) for table in ("fact_history", "forgotten")
                     for row in db.execute(f"select * from {table}"))
    assert "4417" not in dump
    assert memory.forgotten.was_forgotten("My locker code is 4417")


def test_forget_a_message(memory):
    session = memory.sessions.start()
    mid = memory.messages.add(session, "user", "delete me please")
    memory.forget("message", mid)
    assert memory.list_items("message") == []
    assert memory.db.scalar("select count(*) from forgotten where kind = 'message' and item_id = $1", (mid,)) == 1


def test_every_read_is_scoped_to_one_user(store, hash_embedder):
    ana, bob = store.user("ana"), store.user("bob")
    secret = ana.facts.add("ana's bank pin is 1234")
    session = ana.sessions.start()
    message = ana.messages.add(session, "user", "ana talks about her pin")
    summary = ana.summaries.add("ana discussed her pin", session_id=session)
    embed_pending(ana, hash_embedder)
    for kind, item_id in (("fact", secret.fact_id), ("message", message), ("summary", summary)):
        with pytest.raises(NotFoundError):
            bob.get(kind, item_id)
        assert bob.get_many(kind, [item_id]) == {}
    with pytest.raises(NotFoundError):
        bob.facts.history(secret.fact_id)
    with pytest.raises(NotFoundError):
        bob.forget("fact", secret.fact_id)
    assert bob.list_items() == [] and bob.messages.salient(0.0, 10) == []
    assert bob.messages.recent(session, 10) == []
    assert not bob.sessions.exists(session)
    with pytest.raises(NotFoundError):
        bob.messages.add(session, "user", "writing into ana's session")
    stats = bob.stats()
    assert stats["facts_active"] == 0 and stats["messages"] == 0
    assert ana.get("fact", secret.fact_id).text == "ana's bank pin is 1234"


def test_recency_and_salience_legs(memory):
    session = memory.sessions.start()
    other = memory.sessions.start()
    ids = [memory.messages.add(session, "user", f"message {i}") for i in range(15)]
    memory.messages.add(other, "user", "another session")
    assert [m.item_id for m in memory.messages.recent(session, 10)] == ids[-10:]
    memory.facts.add("always answer in French", importance=0.95)
    memory.facts.add("likes tea", importance=0.3)
    loud = memory.messages.add(session, "user", "remember: my daughter is Mia", importance=0.9)
    salient = memory.messages.salient(0.85, 10)
    assert {i.text for i in salient} == {"always answer in French", "remember: my daughter is Mia"}
    assert any(i.item_id == loud and i.kind == "message" for i in salient)


def test_external_ids_make_imports_idempotent(memory):
    session = memory.sessions.start(external_id="conv-1")
    assert memory.sessions.start(external_id="conv-1") == session
    first = memory.messages.add(session, "user", "hello", external_id="msg-1")
    assert first is not None
    assert memory.messages.add(session, "user", "hello", external_id="msg-1") is None
    assert len(memory.list_items("message")) == 1


@pytest.mark.parametrize("text", ["", "   ", "caf\udce9", "a\x00b", "x" * 10_001])
def test_bad_fact_text_is_a_usage_error_and_stores_nothing(memory, text):
    with pytest.raises(UsageError) as excinfo:
        memory.facts.add(text)
    assert excinfo.value.hint
    assert memory.list_items() == []


def test_refs_parse_and_reject():
    assert parse_ref("f12") == ("fact", 12)
    assert parse_ref("M3") == ("message", 3)
    assert parse_ref("s:7") == ("summary", 7)
    for bad in ("12", "x1", "f", "f-1", "", "f1 2"):
        with pytest.raises(UsageError):
            parse_ref(bad)


def test_normalisation_for_duplicates():
    assert normalise_text("I Live in  Lyon!") == normalise_text("i live in lyon")
    assert content_hash("Ｌｙｏｎ") == content_hash("lyon")  # NFKC folds full-width letters
    assert content_hash("I owe Ana 20 euros") != content_hash("I owe Boris 20 euros")
