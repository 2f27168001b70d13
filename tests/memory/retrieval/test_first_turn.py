"""A conversation's first message has no history to leave room for: what the turn asks for may use
`first_turn_memory_fraction` of the budget, while the profile and salient items keep the room they have on every
turn, so a question about nothing in memory costs no more than before."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from coop.config.sections import MemoryConfig
from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval.context import HistoryMessage
from coop.memory.retrieval.salience import SALIENCE_SHARE
from coop.memory.retrieval.turn import memory_shares, turn_context

FRACTIONS = st.floats(0.01, 0.9)


@given(FRACTIONS, FRACTIONS, st.floats(0.0, 1.0), st.integers(256, 2_000_000))
def test_the_first_turn_widens_only_what_the_turn_asked_for(base, first, profile_share, budget):
    cfg = MemoryConfig(memory_budget_fraction=base, first_turn_memory_fraction=first, profile_share=profile_share,
                       context_budget=budget)
    later = memory_shares(cfg, first_turn=False)
    opening = memory_shares(cfg, first_turn=True)
    assert later == (base, SALIENCE_SHARE, profile_share)
    assert opening[0] == max(base, first)
    for share in (1, 2):  # the salient items' and the profile's room, in tokens, is the same on both turns
        assert abs(opening[0] * opening[share] - later[0] * later[share]) < 1e-9


def test_a_first_message_shows_more_of_what_it_asked_for_than_a_later_one(memory, hash_embedder):
    session = memory.sessions.start("long ago")
    for n in range(60):
        memory.messages.add(session, "user", f"The lighthouse keeper of Varnholt logged storm number {n} "
                                             f"with its wind and tide readings, entry {n} of the logbook")
    memory.sessions.end(session)
    embed_pending(memory, hash_embedder)
    cfg = replace(MemoryConfig(), context_budget=4000, similarity_floor=-1.0, prompt_word_similarity_floor=-1.0)
    question = "What did the lighthouse keeper of Varnholt log about the storms?"
    first = turn_context(memory, question, cfg=cfg, embedder=hash_embedder).prompt
    later = turn_context(memory, question, cfg=cfg, embedder=hash_embedder,
                         history=[HistoryMessage("user", "hello"), HistoryMessage("assistant", "hi")]).prompt
    assert first.tokens["memory_budget"] == int(4000 * cfg.first_turn_memory_fraction)
    assert later.tokens["memory_budget"] == int(4000 * cfg.memory_budget_fraction)
    assert later.tokens["memory"] <= later.tokens["memory_budget"] < first.tokens["memory"]
    past = [r for r in first.recalled if r.item.kind == "message"]
    assert len(past) > len([r for r in later.recalled if r.item.kind == "message"])


def test_a_question_about_nothing_in_memory_gets_no_more_on_its_first_turn(memory, hash_embedder):
    for n in range(40):
        memory.facts.add(f"Collects stamp series number {n} from the Varnholt post office", category="hobbies")
    embed_pending(memory, hash_embedder)
    cfg = MemoryConfig(context_budget=4000)
    unrelated = "zzqx"
    first = turn_context(memory, unrelated, cfg=cfg, embedder=hash_embedder).prompt
    later = turn_context(memory, unrelated, cfg=cfg, embedder=hash_embedder,
                         history=[HistoryMessage("user", "hello"), HistoryMessage("assistant", "hi")]).prompt
    profile = [r.item.item_id for r in first.recalled if r.reason == "profile"]
    assert profile == [r.item.item_id for r in later.recalled if r.reason == "profile"]
    assert first.tokens["memory"] == later.tokens["memory"] <= later.tokens["memory_budget"]
