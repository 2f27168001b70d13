"""Retrieval: quoting, BM25 direction, the similarity floor, fusion, explain, filters before k, any script."""

from __future__ import annotations

import pytest

from coop.errors import UsageError
from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval.search import rrf, search
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.retrieval.terms import query_terms, query_words
from coop.memory.storage.text_index import match_expression


def _texts(result):
    return [hit.item.text for hit in result.hits]


FTS_FACT = "he said hi to the minus column value at the start"


# FTS5's syntax in a query is plain text: the query's words (quoted) find the fact when one of them is in it, and
# a query of signs and operators alone finds nothing, rather than raising.
@pytest.mark.parametrize("query, found", [
    ('"', False), ("*", False), ("-", False), (":", False), ("(", False), (")", False), ("AND", False),
    ("OR NOT", False), ("NEAR(a b)", False), ('he said "hi', True), ("col:value", True), ("-minus", True),
    ("prefix*", False), ("a AND (b OR", False), ("^start", True), ("{x}", False), ("'; drop table", False)])
def test_fts_syntax_in_user_text_never_raises(memory, query, found):
    memory.facts.add(FTS_FACT)
    result = search(memory, query)  # must not raise whatever the text
    assert _texts(result) == ([FTS_FACT] if found else [])
    assert result.legs["fts"] == (1 if found else 0)


def test_every_term_is_quoted():
    words = query_words('NEAR(hedgehog "world") AND xy:yz*')
    assert match_expression(words) == '"near" OR "hedgehog" OR "world" OR "xy" OR "yz"'
    assert match_expression(['say "hi"']) == '"say ""hi"""'
    assert query_words("!!! ...") == [] and match_expression(query_words("")) is None


def test_function_words_are_dropped_unless_nothing_else_is_left():
    assert query_terms("where do I live") == ["live"]
    assert query_terms("who are you") == ["who", "are", "you"]


def test_bm25_best_match_ranks_first(memory):
    """SQLite's bm25() is lower for better matches; ranking it the wrong way round puts the worst first."""
    memory.facts.add("a long note that mentions a kayak once among many many other unrelated words here")
    memory.facts.add("kayak kayak kayak trip")
    memory.facts.add("nothing relevant")
    result = search(memory, "kayak", embedder=None)
    assert _texts(result) == ["kayak kayak kayak trip",
                              "a long note that mentions a kayak once among many many other unrelated words here"]
    fts_scores = [hit.legs["fts"].score for hit in result.hits]
    assert fts_scores == sorted(fts_scores, reverse=True)
    assert [hit.legs["fts"].rank for hit in result.hits] == [1, 2]


def test_stemming_finds_other_forms(memory):
    memory.facts.add("she was running marathons last year")
    assert _texts(search(memory, "runs", embedder=None)) == ["she was running marathons last year"]


def test_similarity_floor_keeps_unrelated_items_out(memory, hash_embedder):
    memory.facts.add("green tea")
    memory.facts.add("volcanic rock")
    embed_pending(memory, hash_embedder)
    strict = search(memory, "green tea", embedder=hash_embedder, settings=RetrievalSettings.defaults().but(floor=0.99))
    loose = search(memory, "green tea", embedder=hash_embedder, settings=RetrievalSettings.defaults().but(floor=-1.0))
    assert "volcanic rock" not in _texts(strict)
    assert "volcanic rock" in _texts(loose)  # the nearest-but-unrelated item, kept out only by the floor


def test_items_in_both_legs_outrank_single_leg_items_and_explain_shows_legs(memory, hash_embedder):
    memory.facts.add("jazz piano lessons on tuesday")
    memory.facts.add("jazz festival")
    embed_pending(memory, hash_embedder)
    rrf = RetrievalSettings.defaults().but(floor=0.6, fusion="rrf")
    result = search(memory, "jazz piano lessons", embedder=hash_embedder, settings=rrf)
    top = result.hits[0]
    assert top.item.text == "jazz piano lessons on tuesday"
    assert set(top.legs) == {"vector", "fts"}
    assert top.legs["vector"].rank == 1 and top.legs["vector"].score > 0.6
    assert top.score == pytest.approx(1 / 61 + 1 / 61)
    assert all(set(hit.legs) <= {"vector", "fts"} and hit.legs for hit in result.hits)
    assert result.legs["fts"] >= 1 and result.vector_used


def test_rrf_sums_reciprocal_ranks():
    fused = rrf({"vector": [("fact", 1, 0.9), ("fact", 2, 0.8)], "fts": [("fact", 2, 3.0)]}, k=60)
    assert fused[("fact", 2)][0] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[("fact", 1)][0] == pytest.approx(1 / 61)
    assert fused[("fact", 2)][1]["fts"].score == 3.0  # relevance: higher is better everywhere


def test_chinese_and_japanese_words_inside_sentences(memory):
    memory.facts.add("我住在北京，喜欢吃饺子")
    memory.facts.add("東京タワーの近くに住んでいます")
    memory.facts.add("I live in Berlin")
    assert _texts(search(memory, "北京", embedder=None)) == ["我住在北京，喜欢吃饺子"]
    assert _texts(search(memory, "饺子", embedder=None)) == ["我住在北京，喜欢吃饺子"]
    assert _texts(search(memory, "東京", embedder=None)) == ["東京タワーの近くに住んでいます"]
    assert _texts(search(memory, "タワー", embedder=None)) == ["東京タワーの近くに住んでいます"]
    assert _texts(search(memory, "我喜欢饺子", embedder=None))[0] == "我住在北京，喜欢吃饺子"
    assert _texts(search(memory, "上海", embedder=None)) == []


def test_accents_and_case_are_folded(memory):
    memory.facts.add("Rendez-vous au Café de Flore")
    assert _texts(search(memory, "cafe", embedder=None)) == ["Rendez-vous au Café de Flore"]


def test_full_text_filters_apply_before_limit(store):
    ana = store.user("ana")
    for i in range(200):
        store.user("bob").facts.add(f"marmalade recipe number {i}")
    session = ana.sessions.start()
    for i in range(100):
        ana.messages.add(session, "user", f"marmalade again {i}")
    ana.facts.add("my grandmother's marmalade")
    unfloored = RetrievalSettings.defaults().but(bm25_floor=0.0)  # "marmalade" is in every row: no evidence
    only_facts = search(ana, "marmalade", embedder=None, limit=1, kinds=("fact",), settings=unfloored)
    assert _texts(only_facts) == ["my grandmother's marmalade"]
    everything = search(ana, "marmalade", embedder=None, limit=500, settings=unfloored)
    assert len(everything.hits) == 101  # nothing of bob's


def test_superseded_facts_are_hidden_unless_asked(memory):
    memory.facts.add("favourite colour is blue", category="taste", key="colour")
    memory.facts.add("favourite colour is green", category="taste", key="colour")
    assert _texts(search(memory, "favourite colour", embedder=None)) == ["favourite colour is green"]
    both = search(memory, "favourite colour", embedder=None, include_inactive=True)
    assert sorted(_texts(both)) == ["favourite colour is blue", "favourite colour is green"]


def test_searches_messages_and_summaries_too(memory, hash_embedder):
    session = memory.sessions.start()
    memory.messages.add(session, "user", "we talked about the aurora borealis trip")
    memory.summaries.add("Planned an aurora trip to Tromsø in March", session_id=session)
    embed_pending(memory, hash_embedder)
    result = search(memory, "aurora", embedder=hash_embedder)
    assert {hit.kind for hit in result.hits} == {"message", "summary"}
    assert all(hit.item.session_id == session for hit in result.hits)


def test_bad_queries(memory):
    assert search(memory, "", embedder=None).hits == []
    with pytest.raises(UsageError):
        search(memory, "x" * 20_001)
    with pytest.raises(UsageError):
        search(memory, "caf\udce9")
    with pytest.raises(UsageError):
        search(memory, "tea", kinds=("facts",))
    memory.facts.add("tea")
    assert _texts(search(memory, "tea\x00time", embedder=None)) == ["tea"]


@pytest.mark.real_model
def test_real_model_finds_by_meaning_and_keeps_unrelated_out(memory, real_embedder):
    memory.facts.add("I adore long walks on mountain trails")
    memory.facts.add("I owe Ana twenty euros")
    embed_pending(memory, real_embedder)
    result = search(memory, "hiking", embedder=real_embedder)
    assert _texts(result) == ["I adore long walks on mountain trails"]
    assert "vector" in result.hits[0].legs


@pytest.mark.parametrize(("query", "terms"), [
    ("How's the kayak?", ["kayak"]),             # the "s" of a contraction is never a term
    ("I don't like okra", ["like", "okra"]),   # nor "don"/"t"
    ("What's up?", []),                        # function words alone: small talk, no word search
    ("Hi there", []),
    ("thanks!", []),                           # filler alone: nothing to search by
    ("to be or not to be", ["to", "be", "or", "not"]),  # a phrase of function words is still searchable
    ("Route 66 and B 7", ["route", "66", "7"]),  # single letters go, numbers stay
])
def test_query_terms_have_real_content(query, terms):
    from coop.memory.retrieval.terms import query_terms

    assert query_terms(query) == terms


def test_a_word_match_far_in_meaning_is_not_a_hit(memory, hash_embedder):
    """With a vector, a candidate found by words alone also needs `word_floor` cosine."""
    from coop.memory.growth.embedding import embed_pending

    session = memory.sessions.start()
    memory.messages.add(session, "user", "spreadsheet formulas quarterly budget planning and going over taxes again")
    embed_pending(memory, hash_embedder)
    query = "taxes"
    loose = RetrievalSettings.defaults().but(word_floor=-1.0)
    assert len(search(memory, query, embedder=hash_embedder, settings=loose).hits) == 1
    [hit] = search(memory, query, embedder=hash_embedder, settings=loose).hits
    strict = RetrievalSettings.defaults().but(word_floor=(hit.cosine or 0) + 0.01)
    assert search(memory, query, embedder=hash_embedder, settings=strict).hits == []
