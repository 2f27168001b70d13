"""Messages are ranked by their words with a weaker length normalisation than FTS5's BM25 (`storage/lengths.py`):
a long message that tells the story is not buried under one-liners that share a word with the question."""

from __future__ import annotations

import pytest

from coop.memory.retrieval.search import search
from coop.memory.retrieval.terms import query_terms, unspaced_phrases
from coop.memory.storage import lengths
from coop.memory.storage.lengths import FTS5_B, MESSAGE_B, length_factor, with_message_lengths

pytestmark = pytest.mark.sqlite_only  # SQLite's own index (the bit scan, FTS5's ranking): Postgres has its own tests

STORY = "Last month I had a setback: I hurt my ankle at the trail race and needed six weeks of physical therapy."
ONE_LINER = "Be careful, that must hurt."


def _fill(memory):
    """Each message in its own session (no neighbours' words), among unrelated ones, so IDF is meaningful."""
    for i in range(30):
        memory.messages.add(memory.sessions.start(), "user", f"talking about the weather and gardening, day {i}")
    for text in (ONE_LINER, STORY):
        memory.messages.add(memory.sessions.start(), "user", text)


def test_the_factor_keeps_the_average_and_favours_longer_messages_less_than_bm25_does():
    assert length_factor(100, 100) == pytest.approx(1.0)
    assert length_factor(30, 100) < 1.0 < length_factor(300, 100)
    assert length_factor(30, 100, b=FTS5_B) == pytest.approx(1.0)  # FTS5's own b changes nothing
    # never wild: a one-word message keeps 60% of its score, a very long one gains at most FTS5_B / MESSAGE_B
    assert length_factor(1, 100) > 0.6
    assert length_factor(10_000, 100) < FTS5_B / MESSAGE_B


def fts_leg(memory, query, *, kinds, limit=50, lengths=None):
    """FTS5's own ranking (bm25 negative, best first), before the length re-weighting."""
    return memory.text.fts5_matches(unspaced_phrases(query), query_terms(query), kinds=kinds, limit=limit,
                                    lengths=lengths)


def _scores(memory, query):
    return {hit.item.text: hit.score for hit in search(memory, query, embedder=None, kinds=("message",)).hits}


def test_a_long_message_that_answers_closes_on_a_one_liner_sharing_its_word(memory, monkeypatch):
    _fill(memory)
    query = "When did I get hurt?"
    raw = [item_id for _, item_id, _ in fts_leg(memory, query, kinds=("message",))]
    texts = {item_id: item.text for item_id, item in memory.get_many("message", raw).items()}
    assert [texts[i] for i in raw] == [ONE_LINER, STORY]  # FTS5's bm25: the short one well ahead
    weighted = _scores(memory, query)
    monkeypatch.setattr(lengths.with_message_lengths, "__defaults__", (FTS5_B,))  # the re-weighting off
    unweighted = _scores(memory, query)
    # the story's score against the one-liner's: from well behind to much nearer (scores are normalised to the
    # best match, the one-liner, in both)
    assert weighted[STORY] / weighted[ONE_LINER] > 1.25 * unweighted[STORY] / unweighted[ONE_LINER]


def test_facts_keep_their_scores_and_unknown_ids_are_left_alone(memory):
    _fill(memory)
    matches = fts_leg(memory, "hurt", kinds=("message",))
    foreign = [("fact", 7, -3.0), ("message", 10_000_000, -2.0)]
    adjusted = with_message_lengths(memory, matches + foreign)
    assert ("fact", 7, -3.0) in adjusted and ("message", 10_000_000, -2.0) in adjusted
    assert [score for _, _, score in adjusted] == sorted(score for _, _, score in adjusted)
    assert with_message_lengths(memory, foreign[:1]) == foreign[:1]


def test_the_full_text_cut_is_made_after_re_weighting(memory, monkeypatch):
    """FTS5 ranks the story below every one-liner; the leg reads POOL_FACTOR times the candidates it keeps, so the
    story is re-weighted and kept instead of being cut before its length is weighed."""
    from coop.memory.storage import text_index

    for i in range(30):
        memory.messages.add(memory.sessions.start(), "user", f"talking about the weather and gardening, day {i}")
    shorts = ["That must hurt a bit.", "Ouch, does it hurt?", "It can hurt, be careful.", "Did that hurt much?"]
    story = ("Last month I had a setback at the trail race: I hurt my ankle on the rocks near the end of the course, "
             "and it hurt for weeks while I went to physical therapy twice a week and slowly got back to running.")
    for text in [*shorts, story]:
        memory.messages.add(memory.sessions.start(), "user", text)
    raw = [memory.get("message", i).text for _, i, _ in fts_leg(memory, "hurt", kinds=("message",), limit=10)]
    assert raw.index(story) == len(shorts)  # FTS5 alone: behind every one-liner

    def kept() -> list[str]:
        hits = search(memory, "hurt", embedder=None, kinds=("message",), limit=2, candidates=2).hits
        return [hit.item.text for hit in hits]

    assert story in kept()
    monkeypatch.setattr(text_index, "POOL_FACTOR", 1.0)  # cut first, then re-weight
    assert story not in kept()


def test_lengths_read_with_the_matches_are_the_stored_lengths(memory):
    _fill(memory)
    lengths: dict[int, int] = {}
    matches = fts_leg(memory, "hurt weather", kinds=("message",), lengths=lengths)
    ids = [item_id for _, item_id, _ in matches]
    assert len(ids) == 32 and lengths == memory.messages.lengths(ids)
    assert with_message_lengths(memory, matches, lengths=lengths) == with_message_lengths(memory, matches)
