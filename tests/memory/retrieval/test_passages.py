"""What keeps search good as memory grows (issue 17): a long message is found by the one sentence that answers
the question (its sentences are embedded beside the whole), and a message among others of its session that
match the question, or next to a turn near it in meaning, outranks a lone match of the same strength."""

from __future__ import annotations

import numpy as np
import pytest

from coop.memory.growth.embedding import WHOLE_MAX_CHARS, embed_pending
from coop.memory.retrieval.search import search
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.text import MAX_PARTS, sentence_parts
from tests.memory.retrieval.table_embedder import TableEmbedder


def test_sentences_of_a_text_are_its_parts():
    assert sentence_parts("We hiked for hours. The view from the top was worth every step!") == [
        "We hiked for hours.", "The view from the top was worth every step!"]
    assert sentence_parts("One sentence only, however long it may be.") == []
    assert sentence_parts("Hi! Fine thanks. See you.") == []  # no sentence of three words or more: nothing to add
    # A transcript's speaker label stays on every part: it says who said it.
    assert sentence_parts("Ana: I moved to Lisbon. My sister lives there.") == [
        "Ana: I moved to Lisbon.", "Ana: My sister lives there."]
    many = " ".join(f"This is sentence number {i}." for i in range(20))
    parts = sentence_parts(many)
    assert len(parts) == MAX_PARTS and " ".join(parts) == many  # grouped, nothing lost


def test_a_long_message_is_found_by_its_nearest_sentence(memory):
    text = "We hiked for hours in the rain. My sister Sara got engaged to Tom last week."
    embedder = TableEmbedder({text: [0, 0, 1, 0], "We hiked for hours in the rain.": [0, 0, 1, 0],
                              "My sister Sara got engaged to Tom last week.": [1, 0, 0, 0],
                              "who did Sara get engaged to": [1, 0, 0, 0]})
    session = memory.sessions.start()
    message = memory.messages.add(session, "user", text)
    other = memory.messages.add(session, "user", "Nothing to see here at all")
    embed_pending(memory, embedder)
    assert "My sister Sara got engaged to Tom last week." in embedder.seen  # each sentence embedded
    query = embedder.embed_query("who did Sara get engaged to")
    for exact in (False, True):
        hits = memory.vectors.nearest(embedder.id, embedder.dims, query, k=2, exact=exact)
        assert [h.item_id for h in hits][0] == message
        assert hits[0].similarity == pytest.approx(1.0, abs=1e-3)  # the sentence's cosine, not the whole's 0
    assert memory.vectors.similarities(embedder.id, embedder.dims, query, [("message", message), ("message", other)]) == {
        ("message", message): pytest.approx(1.0, abs=1e-3), ("message", other): pytest.approx(0.0, abs=1e-3)}


def test_a_text_too_long_to_read_whole_is_read_once_by_its_sentences(memory):
    """The model reads a text of several sentences whole and sentence by sentence, unless it is longer than it
    can read whole (`WHOLE_MAX_CHARS`): then only its sentences are read, and the text's own vector is their
    mean, each weighted by its length, so a question about the whole text (near both sentences at once) finds
    it as near as that mean is. A shorter text keeps the model's own vector of it."""
    short = "We hiked for hours in the rain and the wind."
    long = "My sister Sara got engaged to Tom" + ", and the party went on" * (WHOLE_MAX_CHARS // 20) + "."
    text, brief = f"{short} {long}", f"{short} My sister Sara got engaged to Tom."
    embedder = TableEmbedder({short: [1, 0, 0, 0], long: [0, 1, 0, 0], brief: [0, 0, 1, 0]})
    session = memory.sessions.start()
    message = memory.messages.add(session, "user", text)
    shorter = memory.messages.add(session, "user", brief)
    embed_pending(memory, embedder)
    assert len(text) > WHOLE_MAX_CHARS >= len(brief)
    assert text not in embedder.seen and embedder.seen.count(short) == 2 and long in embedder.seen
    assert brief in embedder.seen  # read whole, and by its sentences
    weighted = np.array([len(short), len(long), 0, 0], dtype=np.float32)
    query = weighted / np.linalg.norm(weighted)  # the length-weighted mean itself
    found = memory.vectors.similarities(embedder.id, embedder.dims, query, [("message", message)])
    assert found[("message", message)] == pytest.approx(1.0, abs=2e-3)  # a plain mean would be at 0.73
    found = memory.vectors.similarities(embedder.id, embedder.dims, np.array([0, 0, 1, 0], dtype=np.float32),
                                        [("message", shorter)])
    assert found[("message", shorter)] == pytest.approx(1.0, abs=1e-3)  # the model's own vector of it


def test_a_message_in_a_session_about_the_question_outranks_a_lone_match(memory):
    """Two messages say the same; one is followed by more talk of the subject, the other by talk of other things.
    With the session's evidence the first ranks first; without it they tie."""
    lone_session, alone = memory.sessions.start(), None
    alone = memory.messages.add(lone_session, "user", "the quokka photo came out well")
    memory.messages.add(lone_session, "assistant", "shall we book the dentist then")
    memory.messages.add(lone_session, "user", "and the car needs new tyres")
    company_session = memory.sessions.start()
    accompanied = memory.messages.add(company_session, "user", "the quokka photo came out well")
    memory.messages.add(company_session, "assistant", "a quokka smiling at the camera on Rottnest")
    memory.messages.add(company_session, "user", "quokka families everywhere on the island")
    with_sessions = search(memory, "quokka photo", settings=RetrievalSettings.defaults().but(bm25_floor=0.0))
    scores = {hit.item.item_id: hit.score for hit in with_sessions.hits}
    assert scores[accompanied] > scores[alone]
    without = search(memory, "quokka photo", settings=RetrievalSettings.defaults().but(bm25_floor=0.0,
                                                                                       session_weight=0.0))
    flat = {hit.item.item_id: hit.score for hit in without.hits}
    assert flat[accompanied] == pytest.approx(flat[alone])


def test_a_message_next_to_talk_of_the_question_outranks_a_lone_match(memory):
    """Two messages say the same; the turn before one of them is near the question in meaning (though it shares
    no word with it, so it is no candidate itself), the turn before the other is not. The first gains
    `neighbour_weight` x its neighbour's cosine, the other nothing."""
    query, said = "quokka photo", "the quokka photo came out well"
    embedder = TableEmbedder({query: [1, 0, 0, 0], said: [1, 0, 0, 0],
                              "we spent a whole day on Rottnest island": [0.8, 0.6, 0, 0]})
    near_session, lone_session = memory.sessions.start(), memory.sessions.start()
    memory.messages.add(near_session, "user", "we spent a whole day on Rottnest island")
    beside = memory.messages.add(near_session, "user", said)
    memory.messages.add(lone_session, "user", "the car needs new tyres")
    alone = memory.messages.add(lone_session, "user", said)
    embed_pending(memory, embedder)
    settings = RetrievalSettings.defaults().but(bm25_floor=0.0, session_weight=0.0)
    scores = {hit.item.item_id: hit.score for hit in search(memory, query, embedder=embedder, settings=settings).hits}
    flat = {hit.item.item_id: hit.score
            for hit in search(memory, query, embedder=embedder, settings=settings.but(neighbour_weight=0.0)).hits}
    assert settings.neighbour_weight > 0 and scores[beside] > scores[alone]
    # the gain is the neighbour's cosine, weighed; the lone match's neighbour (cosine 0) adds nothing
    assert scores[beside] - flat[beside] == pytest.approx(settings.neighbour_weight * 0.8, abs=1e-3)
    assert scores[alone] == pytest.approx(flat[alone])


def test_neighbours_are_the_messages_just_before_and_after_in_the_same_session(store):
    ana, bob = store.user("ana"), store.user("bob")
    first, second = ana.sessions.start(), ana.sessions.start()
    a1 = ana.messages.add(first, "user", "one")
    b1 = ana.messages.add(second, "user", "other session")
    a2 = ana.messages.add(first, "assistant", "two")
    bob.messages.add(bob.sessions.start(), "user", "bob's own")
    a3 = ana.messages.add(first, "user", "three")
    assert ana.messages.neighbour_ids([a1, a2, a3, b1]) == {a1: (None, a2), a2: (a1, a3), a3: (a2, None), b1: (None, None)}
    assert bob.messages.neighbour_ids([a2]) == {}  # another user's message is not found at all


def test_items_embedded_before_sentence_parts_are_embedded_again_on_upgrade(coop_home):
    """m009: a multi-sentence item whose vector has no parts goes back to the backlog; its old vector still finds
    it until the new one (with parts) replaces it. One-sentence items and items that have parts are left alone."""
    from coop.memory.storage.database import open_database
    from coop.memory.storage.migrations import MIGRATIONS, apply_migrations
    from coop.memory.storage.store import MemoryStore

    story = "We hiked for hours in the rain. The view from the top was worth every step."
    path = str(coop_home / "m008.db")
    old = open_database(path, migrate=False)
    apply_migrations(old, MIGRATIONS[:8])  # schema 8: parts exist, but these vectors were made without them
    memory = MemoryStore(old).user("ana")
    session = memory.sessions.start()
    long_id = memory.messages.add(session, "user", story)
    short_id = memory.messages.add(session, "user", "Just one short sentence here.")
    with_parts = memory.messages.add(session, "user", "I moved to Lyon last year. The flat is near the river.")
    embedder = TableEmbedder({story: [1, 0, 0, 0], "hike view": [1, 0.2, 0, 0]})
    memory.vectors.store("message", [long_id, short_id], embedder.id, embedder.embed([story, "x"]))
    embed_pending(memory, embedder)  # with_parts: the current path, parts included
    summary = memory.summaries.add("They hiked up the hill. They talked about the view at length.", session_id=session)
    memory.vectors.store("summary", [summary], embedder.id, embedder.embed(["s"]))
    old.close()

    upgraded = open_database(path)
    memory = MemoryStore(upgraded).user("ana")
    pending = {(kind, row[0]) for kind in ("message", "summary")
               for row in upgraded.execute(f"SELECT id FROM {'messages' if kind == 'message' else 'summaries'} "
                                           "WHERE user_id = 'ana' AND embedder IS NULL")}
    assert ("message", long_id) in pending and ("message", short_id) not in pending
    assert ("message", with_parts) not in pending and ("summary", summary) in pending
    # still found by its old vector while it waits
    assert [h.item_id for h in memory.vectors.nearest(embedder.id, 4, embedder.embed_query("hike view"), k=1,
                                       kinds=("message",))] == [long_id]
    embedder.seen.clear()
    assert embed_pending(memory, embedder) == 2
    assert story in embedder.seen and "We hiked for hours in the rain." in embedder.seen
    assert upgraded.scalar("SELECT parts IS NOT NULL FROM embeddings WHERE kind = 'message' AND item_id = ?",
                           (long_id,)) == 1
    assert upgraded.scalar("SELECT count(*) FROM embeddings WHERE kind = 'message' AND item_id = ?", (long_id,)) == 1
    upgraded.close()
