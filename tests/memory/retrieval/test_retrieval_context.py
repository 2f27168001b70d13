"""Retrieval quality features: messages indexed with their preceding turns and date (m002), score-aware fusion,
the settings that reach every caller, and the LoCoMo benchmark script itself (on a tiny synthetic file)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from coop.config.loading import MemoryConfig
from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval.search import score_fusion, search
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.storage import migrations as dbmod
from coop.memory.storage.database import open_database
from tests import REPO
from tests.memory.retrieval.table_embedder import TableEmbedder


def _texts(result):
    return [hit.item.text for hit in result.hits]


def _conversation(memory, texts, session=None):
    session = session if session is not None else memory.sessions.start()
    return session, [memory.messages.add(session, "user" if i % 2 == 0 else "assistant", text)
                     for i, text in enumerate(texts)]


def test_a_reply_is_found_by_the_words_of_the_question_before_it(memory):
    _conversation(memory, ["How was the hike up Mount Rainier?", "Exhausting, but the glaciers were worth it",
                           "Did you camp?", "Yes, two nights by a lake", "What did you eat?"])
    found = _texts(search(memory, "Rainier", embedder=None, kinds=("message",)))
    # the question itself first (its own, shorter column matches), then the two turns after it; not the fourth
    assert found == ["How was the hike up Mount Rainier?", "Exhausting, but the glaciers were worth it",
                     "Did you camp?"]


def test_context_comes_only_from_earlier_messages_of_the_same_session(memory):
    first, _ = _conversation(memory, ["the weather is fine", "I bought a theremin yesterday"])
    _conversation(memory, ["unrelated talk in another session"])
    memory.messages.add(first, "user", "a later message")  # a later message: its context is the theremin turn
    found = _texts(search(memory, "theremin", embedder=None, kinds=("message",)))
    assert found == ["I bought a theremin yesterday", "a later message"]
    assert "the weather is fine" not in found  # an earlier message never borrows the words of a later one
    # a message without a session has no neighbours
    memory.messages.add(None, "user", "no session here")
    assert "no session here" not in _texts(search(memory, "theremin", embedder=None, kinds=("message",)))


def test_forgetting_a_message_removes_its_words_from_its_neighbours_entries(memory):
    _, ids = _conversation(memory, ["bonjour", "my locker code is zanzibar", "okapi", "noted"])
    assert len(search(memory, "zanzibar", embedder=None).hits) == 3
    memory.forget("message", ids[1])
    assert search(memory, "zanzibar", embedder=None).hits == []
    # the followers are indexed again with what now precedes them
    assert set(_texts(search(memory, "bonjour", embedder=None))) == {"bonjour", "okapi", "noted"}


def test_changing_a_messages_text_reindexes_it_and_its_followers(memory):
    _, ids = _conversation(memory, ["I love kumquats", "me too", "really"])
    memory.db.execute("UPDATE messages SET content = 'I love figs' WHERE id = $1", (ids[0],))
    assert search(memory, "kumquats", embedder=None).hits == []
    assert set(_texts(search(memory, "figs", embedder=None))) == {"I love figs", "me too", "really"}


def test_the_day_a_message_was_written_is_searchable(memory):
    session = memory.sessions.start()
    when = datetime(2023, 5, 8, 13, 56).timestamp()  # a Monday, local time
    memory.messages.add(session, "user", "we met at the cafe", created_at=when)
    memory.messages.add(session, "user", "another day entirely", created_at=when + 86400)
    assert _texts(search(memory, "monday", embedder=None)) == ["we met at the cafe"]
    assert _texts(search(memory, "8 May", embedder=None))[0] == "we met at the cafe"
    assert len(search(memory, "2023", embedder=None).hits) == 2


def test_an_old_database_gets_the_context_index_on_upgrade(coop_home):
    path = str(coop_home / "old.db")
    old = open_database(path, migrate=False)
    dbmod.apply_migrations(old, dbmod.MIGRATIONS[:1])
    with old.atomic():
        old.conn.execute("INSERT INTO users VALUES ('ana', 0)")
        old.conn.execute("INSERT INTO sessions (id, user_id, started_at, last_activity_at) VALUES (1, 'ana', 0, 0)")
        old.conn.executemany("INSERT INTO messages (id, user_id, session_id, role, content, created_at) "
                             "VALUES (?, 'ana', 1, 'user', ?, ?)", [(1, "do you like okra?", 1.0), (2, "not at all", 2.0)])
        old.conn.executemany("INSERT INTO embeddings (user_id, kind, item_id, embedder, vector) "
                             "VALUES ('ana', 'message', ?, 'hash/tokens/4', zeroblob(16))", [(1,), (2,)])
    old.close()
    upgraded = open_database(path)
    assert dbmod.schema_version(upgraded) == dbmod.SCHEMA_VERSION
    assert list(upgraded.execute("SELECT user_id, embedder, count FROM embedding_counts")) == [
        ("ana", "hash/tokens/4", 2)]
    from coop.memory.storage.store import MemoryStore

    found = _texts(search(MemoryStore(upgraded).user("ana"), "okra", embedder=None))
    assert found == ["do you like okra?", "not at all"]
    upgraded.close()


def test_score_fusion_lets_meaning_reorder_word_matches_below_the_floor(memory):
    """Two facts match the query's word equally well; the one closer in meaning (cosine 0.6, under the floor, so
    the vector leg alone would not return it) comes first with score fusion, while reciprocal ranks keep the
    word order. Both are recalled either way; nothing the words did not match is let in below the floor."""
    embedder = TableEmbedder({"tennis": [1, 0, 0, 0], "tennis elbow again": [0.6, 0.8, 0, 0],
                              "tennis club fees": [0.1, 0, 0.995, 0], "a racket sport": [0.5, 0, 0, 0.866]})
    memory.facts.add("tennis club fees")
    memory.facts.add("tennis elbow again")
    memory.facts.add("a racket sport")
    embed_pending(memory, embedder)
    by_words = _texts(search(memory, "tennis", embedder=None))
    score = search(memory, "tennis", embedder=embedder, settings=RetrievalSettings.defaults().but(floor=0.7))
    rrf = search(memory, "tennis", embedder=embedder, settings=RetrievalSettings.defaults().but(floor=0.7, fusion="rrf"))
    assert _texts(rrf) == by_words
    assert _texts(score)[0] == "tennis elbow again" and by_words[0] != "tennis elbow again"
    assert "a racket sport" not in _texts(score)  # cosine 0.5 and no shared word: below the floor, left out
    top = score.hits[0]
    defaults = RetrievalSettings.defaults()
    words = top.legs["fts"].score / max(h.legs["fts"].score for h in score.hits)
    assert top.score == pytest.approx(words + defaults.vector_weight * 0.6 + defaults.agreement_weight * words * 0.6,
                                      abs=1e-5)


def test_score_fusion_formula():
    legs = {"fts": [("fact", 1, 10.0), ("fact", 2, 5.0)], "vector": [("fact", 3, 0.8), ("fact", 2, 0.7)]}
    cosines = {("fact", 1): 0.1, ("fact", 2): 0.7, ("fact", 3): 0.8}
    fused = score_fusion(legs, cosines, vector_weight=2.0)
    assert fused[("fact", 1)][0] == pytest.approx(1.0 + 0.2)
    assert fused[("fact", 2)][0] == pytest.approx(0.5 + 1.4)
    assert fused[("fact", 3)][0] == pytest.approx(1.6)
    assert set(fused[("fact", 2)][1]) == {"fts", "vector"} and fused[("fact", 2)][1]["fts"].score == 5.0
    # no vector at all: words alone
    assert score_fusion({"fts": legs["fts"]}, {}, 1.0)[("fact", 2)][0] == pytest.approx(0.5)
    # agreement: words x cosine on top of the sum; a negative cosine adds nothing, it does not subtract twice
    agreeing = score_fusion(legs, {**cosines, ("fact", 1): -0.5}, vector_weight=2.0, agreement_weight=3.0)
    assert agreeing[("fact", 2)][0] == pytest.approx(0.5 + 1.4 + 3.0 * 0.5 * 0.7)
    assert agreeing[("fact", 1)][0] == pytest.approx(1.0 - 1.0)
    assert agreeing[("fact", 3)][0] == pytest.approx(1.6)  # no words: nothing to agree with


def test_a_match_of_words_and_meaning_outranks_a_stronger_match_of_either_alone():
    """The sum alone ranks the one-sided matches first; the default agreement weight puts the balanced one on top."""
    legs = {"fts": [("message", 1, 10.0), ("message", 2, 5.0), ("message", 3, 0.5)]}
    cosines = {("message", 1): 0.15, ("message", 2): 0.45, ("message", 3): 0.8}
    weights = RetrievalSettings.defaults()

    def order(agreement):
        fused = score_fusion(legs, cosines, weights.vector_weight, agreement)
        return [key[1] for key, _ in sorted(fused.items(), key=lambda kv: -kv[1][0])]

    assert order(0.0) == [3, 1, 2]  # the sum: meaning alone first, words alone next, the balanced one last
    assert order(weights.agreement_weight)[0] == 2


def test_similarities_are_exact_and_stay_within_the_user(store):
    ana, bob = store.user("ana"), store.user("bob")
    embedder = TableEmbedder({})
    a = ana.facts.add("a").fact_id
    b = bob.facts.add("b").fact_id
    unembedded = ana.facts.add("c").fact_id
    ana.vectors.store("fact", [a], embedder.id, np.array([[0.6, 0.8, 0, 0]], np.float32))
    bob.vectors.store("fact", [b], embedder.id, np.array([[1, 0, 0, 0]], np.float32))
    got = ana.vectors.similarities(embedder.id, 4, np.array([1, 0, 0, 0], np.float32),
                       [("fact", a), ("fact", b), ("fact", unembedded)])
    assert got == {("fact", a): pytest.approx(0.6)}


def test_engine_defaults_are_the_config_defaults_and_reach_search():
    config = MemoryConfig()
    assert RetrievalSettings.defaults().as_dict() == {
        "floor": config.similarity_floor, "rrf_k": config.rrf_k, "fusion": config.fusion,
        "vector_weight": config.vector_weight, "context_weight": config.context_weight,
        "word_floor": config.word_similarity_floor, "bm25_floor": config.bm25_floor,
        "session_weight": config.session_weight, "agreement_weight": config.agreement_weight,
        "neighbour_weight": config.neighbour_weight, "assistant_weight": config.assistant_weight}
    assert RetrievalSettings.from_config(config) == RetrievalSettings.defaults()


def test_an_unknown_fusion_is_a_usage_error(memory):
    from coop.errors import UsageError

    with pytest.raises(UsageError):
        search(memory, "x", settings=RetrievalSettings(0.655, "borda", 1.0, 0.5, 60))


def test_the_chat_turn_uses_the_configured_fusion(memory, monkeypatch):
    """`recall` passes `[memory]`'s retrieval settings to search: a config with fusion = rrf reaches it."""
    import dataclasses

    from coop.chat import session as session_module
    from coop.config.loading import Config
    from coop.memory.retrieval import recall as recall_module

    seen = {}

    def fake(memory, query, *, embedder, limit, settings):
        seen.update(settings.as_dict())
        return search(memory, query, embedder=None, limit=limit, settings=settings), None

    monkeypatch.setattr(recall_module, "search_or_full_text", fake)
    config = Config()
    config = dataclasses.replace(config, memory=dataclasses.replace(config.memory, fusion="rrf", context_weight=0.2))
    chat = session_module.ChatSession(memory, config, embedder=lambda: None, incognito=True)
    chat.prepare("anything")
    assert seen["fusion"] == "rrf" and seen["context_weight"] == 0.2


# -- the benchmark script -------------------------------------------------------------------------------------


def _tiny_locomo(path: Path) -> None:
    turns = [("Ana", "I adopted a grey cat named Pixel last week"), ("Bo", "What a lovely name for a cat"),
             ("Ana", "We went kayaking on the lake on Sunday"), ("Bo", "Did you see any herons?"),
             ("Ana", "Yes, two herons and a kingfisher")]
    data = [{"sample_id": "conv-x", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns[:3])],
        "session_2_date_time": "10:00 am on 9 May, 2023",
        "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t, "blip_caption": "a heron"}
                      for i, (s, t) in enumerate(turns[3:])]},
        "qa": [{"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
               {"question": "Which birds did Ana see?", "answer": "herons", "evidence": ["D2:2; D9:9"], "category": 1},
               {"question": "Is this adversarial?", "answer": "n/a", "evidence": [], "category": 5}],
        "observation": {"never": "read"}}]
    path.write_text(json.dumps(data), encoding="utf-8")


def test_the_locomo_benchmark_runs_on_a_tiny_file(tmp_path):
    data = tmp_path / "tiny.json"
    _tiny_locomo(data)
    # (the hash embedder has no meaning: the cosine a word-only match needs is switched off for it)
    run = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data), "--json",
                          "--embedder", "hash", "--set", "word_similarity_floor=-1"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["questions"] == 2 and result["messages"] == 5 and result["conversations"] == 1
    assert result["embedder"].startswith("hash/")
    assert result["settings"]["fusion"] == "score" and result["settings"]["limit"] == 10
    assert result["overall"]["R_any@5"] == 1.0  # five messages: every evidence turn is in the top 5
    assert set(result["categories"]) == {"1 multi-hop", "4 single-hop"}


def test_the_scale_benchmark_keeps_a_database_per_user_and_searches_it_again(tmp_path):
    """bench/scale.py at N = 0 on the tiny file: one database per conversation under --keep, and a second run
    searches the kept one (same figures, the file left as it was) instead of building it again."""
    data, keep = tmp_path / "tiny.json", tmp_path / "kept"
    _tiny_locomo(data)

    def run() -> dict:
        done = subprocess.run([sys.executable, str(REPO / "bench" / "scale.py"), "--data", str(data), "--json",
                               "--embedder", "hash", "--distractors", "0", "--keep", str(keep), "--cache",
                               str(tmp_path / "vectors.sqlite"), "--set", "word_similarity_floor=-1"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = run()
    kept = keep / "scale-tiny-1-0-conv-x.db"
    assert sorted(p.name for p in keep.glob("*.db")) == [kept.name]
    built = kept.stat().st_mtime_ns
    second = run()
    assert kept.stat().st_mtime_ns == built
    assert first["results"][0]["coop"] == second["results"][0]["coop"]
    assert first["results"][0]["coop"]["R_any@5"] == 1.0 and first["results"][0]["questions"] == 2


def test_the_locomo_benchmark_says_clearly_when_the_model_is_missing(tmp_path):
    data = tmp_path / "tiny.json"
    _tiny_locomo(data)
    run = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--data", str(data),
                          "--model-path", str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "model" in run.stderr and "--model-path" in run.stderr


# -- bounded cost at scale ----------------------------------------------------------------------------------------


def test_the_most_common_words_are_left_out_when_matching_them_all_would_cost_too_much(memory, monkeypatch):
    from coop.memory.storage import text_index

    def affordable_terms(memory, terms, budget=None):
        return memory.text.affordable_terms(terms, budget)

    session = memory.sessions.start()
    for i in range(30):
        memory.messages.add(session, "user", f"weather report number {i}")
    memory.messages.add(session, "user", "the weather turned into a blizzard")
    assert affordable_terms(memory, ["weather", "blizzard"]) == ["weather", "blizzard"]  # cheap: all kept
    assert affordable_terms(memory, ["weather", "blizzard"], budget=10) == ["blizzard"]
    assert affordable_terms(memory, ["weather", "report"], budget=1) in (["weather"], ["report"])  # one always kept
    assert affordable_terms(memory, ["weathers", "blizzards"], budget=10) == ["blizzards"]  # counted by stem
    everything = search(memory, "weather blizzard", embedder=None, limit=100)
    monkeypatch.setattr(text_index, "POSTINGS_BUDGET", 10)
    bounded = search(memory, "weather blizzard", embedder=None, limit=100)
    assert len(everything.hits) == 31
    # only the rare word is matched: the blizzard message and the two after it (none here) are candidates
    assert _texts(bounded) == ["the weather turned into a blizzard"]


def test_vector_counts_follow_every_insert_and_delete(store, hash_embedder):
    from coop.memory.storage.vectors import partition_size

    ana, bob = store.user("ana"), store.user("bob")
    session = ana.sessions.start()
    ids = [ana.messages.add(session, "user", f"note {i}") for i in range(5)]
    bob.facts.add("bob's fact")
    embed_pending(ana, hash_embedder)
    embed_pending(bob, hash_embedder)
    assert partition_size(ana, hash_embedder.id) == 5 and partition_size(bob, hash_embedder.id) == 1
    ana.forget("message", ids[0])
    assert partition_size(ana, hash_embedder.id) == 4
    ana.vectors.store("message", ids[1:3], hash_embedder.id, hash_embedder.embed(["a", "b"]))  # replaced, not added
    assert partition_size(ana, hash_embedder.id) == 4
    assert partition_size(ana, "some/other/384") == 0


def test_the_bit_scan_keeps_enough_candidates_and_a_bounded_number():
    from coop.memory.storage.vectors import BIT_CANDIDATES_MAX, BIT_CANDIDATES_MIN, bit_candidates

    assert bit_candidates(10, 150) == BIT_CANDIDATES_MIN  # a small memory: every vector is a candidate
    assert bit_candidates(10, 10_000_000) == BIT_CANDIDATES_MAX  # a large one: bounded, whatever its size
    assert bit_candidates(100, 1_000) >= 100 * 10  # many results asked for: several candidates each
    sizes = [bit_candidates(10, n) for n in (1_000, 10_000, 50_000, 100_000, 300_000, 1_000_000)]
    assert sizes == sorted(sizes)


@pytest.mark.sqlite_only
def test_another_users_better_matches_never_crowd_out_this_users(store):
    """The message leg takes the best matches of all users before filtering by user (cheaper than joining every
    match); when others' messages fill that set, it must still find this user's."""
    ana, bob = store.user("ana"), store.user("bob")
    session = bob.sessions.start()
    for i in range(300):
        bob.messages.add(session, "user", f"quokka quokka quokka {i}")
    ana.messages.add(ana.sessions.start(), "user", "a long note that mentions one quokka among many other words")
    # (no word floor: "quokka" is in every message here, which BM25 rightly scores as no evidence at all)
    unfloored = RetrievalSettings.defaults().but(bm25_floor=0.0)
    found = search(ana, "quokka", embedder=None, limit=5, settings=unfloored)
    assert _texts(found) == ["a long note that mentions one quokka among many other words"]
    assert [hit.item.text for hit in search(bob, "quokka", embedder=None, limit=3, settings=unfloored).hits][0] \
        .startswith("quokka")
    # the leg itself with a small limit: bob's 300 matches fill the over-fetched set (2 x 5 + 100), so the
    # user-first query must run and still find ana's one message
    matched = ana.text.fts5_matches([], ["quokka"], kinds=("message",), limit=5)
    assert [ana.get("message", item_id).text for _, item_id, _ in matched] == [
        "a long note that mentions one quokka among many other words"]
