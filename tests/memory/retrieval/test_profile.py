"""The profile and the facts' floors: which facts a turn shows when there are more than fit, that a fact near the
turn is recalled by relevance at a floor made for facts, that superseded values are never current, and that every
front end (chat, `coop memory recall`, MCP `memory_context`) gets the one recall."""

from __future__ import annotations

import json
import time

import pytest

from coop.config.loading import Config, apply_overrides, load_config
from coop.memory.embedder import profile_of
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval import profile
from coop.memory.retrieval.turn import turn_context
from tests.memory.retrieval.table_embedder import TableEmbedder

EMBEDDER = HashEmbedder(64)
FLOOR = profile_of(EMBEDDER).continuity_floor


def context(memory, text, **overrides):
    cfg = apply_overrides(load_config(), overrides).memory if overrides else Config().memory
    return turn_context(memory, text, cfg=cfg, embedder=EMBEDDER)


def known(ctx) -> str:
    system = ctx.prompt.messages[0]["content"]
    return system.split("Known about the user (id, since when):\n", 1)[1].split("\n\n")[0] \
        if "Known about the user" in system else ""


def test_every_fact_is_in_the_profile_whatever_the_question_shares_with_it(memory):
    for text, category in (("Lives in Porto", "location"), ("Has a grey cat named Mochi", "pets"),
                           ("Is allergic to penicillin", "health")):
        memory.facts.add(text, category=category, importance=0.7)
    memory.facts.add("Always answer briefly", category="instruction")
    embed_pending(memory, EMBEDDER)
    ctx = context(memory, "What's the weather like today?")
    assert all(text in known(ctx) for text in ("Lives in Porto", "Has a grey cat named Mochi",
                                               "Is allergic to penicillin"))
    assert "Always answer briefly" not in known(ctx)  # instructions keep their own section
    assert "Standing instructions from the user" in ctx.prompt.messages[0]["content"]
    assert {r.reason for r in ctx.prompt.recalled} == {"profile"}


def test_with_more_facts_than_fit_the_profile_keeps_what_describes_the_person(memory):
    now = time.time()
    core = [memory.facts.add(text, category=category, importance=importance).fact_id for text, category, importance
            in (("Lives in Porto", "location", 0.7), ("Works as a UX designer", "work", 0.7),
                ("Is allergic to penicillin", "health", 0.9), ("Is vegetarian", "diet", 0.7))]
    for i in range(300):
        memory.facts.add(f"Watched documentary number {i} about volcanoes", category="media", importance=0.3)
    ctx = context(memory, "hello", **{"memory.context_budget": 8000})
    shown = {r.item.item_id for r in ctx.prompt.recalled}
    assert set(core) <= shown
    assert ctx.prompt.tokens["memory"] <= ctx.prompt.tokens["memory_budget"]
    profile_tokens = sum(len(line) // 4 for line in known(ctx).splitlines())
    assert profile_tokens <= 0.5 * ctx.prompt.tokens["memory_budget"] + 20  # within its share
    assert len(ctx.prompt.left_out) > 0  # the rest did not fit, and say so
    ranked, candidates = profile.best(memory, {}, now)
    assert candidates == 304
    assert ranked[0].item.item_id == core[2]  # the most important first
    assert {r.item.item_id for r in ranked[:4]} == set(core)


def test_profile_score_weighs_importance_category_relevance_use_and_recency(memory):
    now = time.time()
    base = memory.facts.add("Likes jazz", category="hobbies", importance=0.5)
    item = memory.get("fact", base.fact_id)
    plain = profile.score(item, 0.0, now)
    assert profile.score(item, 0.5, now) > plain  # relevance to the turn
    from dataclasses import replace

    assert profile.score(replace(item, importance=0.9), 0.0, now) > plain
    assert profile.score(replace(item, category="health"), 0.0, now) > plain
    assert profile.score(replace(item, last_recalled_at=now), 0.0, now) > plain
    assert profile.score(replace(item, updated_at=now - 400 * 86400), 0.0, now) < plain
    assert profile.score(replace(item, key="music"), 0.0, now) > plain  # a slot of the person's
    assert profile.score(replace(item, text="Went to a jazz night last weekend"), 0.0, now) < plain  # an episode
    assert profile.is_event("Visited a seaside pier last weekend") and profile.is_event("Got a recipe from Ana")
    assert not profile.is_event("Drives a 2012 Renault Clio") and not profile.is_event("Married to Ana")
    assert not profile.is_event("Has been meaning to fix the gutter") and not profile.is_event("Trained as a nurse")


def test_every_fact_counts_its_relevance_among_more_facts_than_the_index_returns(memory):
    """Relevance breaks ties among every profile candidate, not only the few nearest: a fact the turn needs, a
    little less near than many small facts but more important, still outranks them."""
    question = "What does it cost to service it?"
    needed = memory.facts.add("Drives an old hatchback", category="possessions", key="car", importance=0.5).fact_id
    small = [memory.facts.add(f"Small thing number {i}", category="possessions", key=f"thing_{i}",
                              importance=0.3).fact_id for i in range(3 * profile.NEAREST // 2)]
    table = {question: [1, 0, 0, 0], "Drives an old hatchback": [0.3, (1 - 0.09) ** 0.5, 0, 0]}
    table |= {f"Small thing number {i}": [0.35, 0, (1 - 0.35 ** 2) ** 0.5, 0] for i in range(len(small))}
    embedder = TableEmbedder(table)
    embed_pending(memory, embedder)
    cosines = profile.nearest(memory, embedder, embedder.embed_query(question))
    assert set(cosines) == {needed, *small}  # every fact's cosine, though more than NEAREST
    assert cosines[needed] == pytest.approx(0.3, abs=1e-3)
    ranked, _ = profile.best(memory, cosines, time.time())
    assert ranked[0].item.item_id == needed


def test_a_fact_near_the_turn_is_recalled_by_relevance_at_the_facts_floor(memory, real_embedder):
    near = memory.facts.add("Is allergic to penicillin", category="health", importance=0.3).fact_id
    for i in range(200):
        memory.facts.add(f"Watched documentary number {i} about volcanoes", category="media", importance=0.5)
    embed_pending(memory, real_embedder)
    cfg = Config().memory
    ctx = turn_context(memory, "Can I take penicillin for my infection?", cfg=cfg, embedder=real_embedder)
    [entry] = [r for r in ctx.prompt.recalled if r.item.item_id == near]
    assert entry.reason == "relevance" and entry.score >= profile_of(real_embedder).fact_floor
    assert known(ctx).splitlines()[0].startswith(f"- f{near} ")  # before the profile


def test_superseded_values_are_never_current_and_former_values_come_when_asked(memory):
    old = memory.facts.add("Lives in Lisbon", category="location", key="home_city").fact_id
    new = memory.facts.add("Lives in Porto", category="location", key="home_city").fact_id
    embed_pending(memory, EMBEDDER)
    for question in ("Any good restaurants near me?", "Where do I live?"):
        ctx = context(memory, question)
        assert "Lives in Lisbon" not in ctx.prompt.messages[0]["content"]
    assert profile.asks_about_past("Where did I live before?") and profile.asks_about_past("my job in 2022")
    assert not profile.asks_about_past("Where do I live?")
    ctx = context(memory, "Where did I live before?")
    [former] = [r for r in ctx.prompt.recalled if r.reason == "history"]
    assert former.item.item_id == old and f"now f{new}" in former.note and "former" in former.note


def test_a_dependent_fact_is_marked_until_it_is_said_again(memory):
    commute = memory.facts.add("Takes the tram to the Lisbon office", category="work").fact_id
    unrelated = memory.facts.add("Has a grey cat named Mochi", category="pets").fact_id
    memory.facts.add("Lives in Lisbon", category="location", key="home_city")
    time.sleep(0.01)
    memory.facts.add("Lives in Porto", category="location", key="home_city")
    marks = profile.out_of_date(memory, memory.facts.active())
    assert set(marks) == {commute} and unrelated not in marks
    memory.facts.bump(commute, reason="said again")
    assert profile.out_of_date(memory, memory.facts.active()) == {}


def test_continuity_needs_a_turn_that_follows_on_or_a_short_clean_block(memory):
    from coop.memory.retrieval.context import Recalled
    from coop.memory.retrieval.recall import continuing

    session = memory.sessions.start()
    short = [Recalled(memory.get("message", memory.messages.add(session, "user", "Kyoto ryokans?")), "continuity")]
    cut = [Recalled(memory.get("message", memory.messages.add(session, "assistant", "Well, the [interrupted]")),
                    "continuity")]
    long = [Recalled(memory.get("message", memory.messages.add(session, "user", "ryokan garden " * 200)),
                     "continuity")]
    embed_pending(memory, EMBEDDER)
    query = EMBEDDER.embed_query("How do I reverse a list in Python?")
    assert continuing(memory, short, "How do I reverse a list in Python?", EMBEDDER, query, FLOOR) == short
    assert continuing(memory, cut, "How do I reverse a list in Python?", EMBEDDER, query, FLOOR) == []
    assert continuing(memory, long, "How do I reverse a list in Python?", EMBEDDER, query, FLOOR) == []
    on_topic = EMBEDDER.embed_query("ryokan garden")
    assert continuing(memory, long, "ryokan garden", EMBEDDER, on_topic, FLOOR) == long


def test_coop_memory_recall_shows_what_a_prompt_would_hold_and_why(memory, run_cli):
    memory.facts.add("Lives in Porto", category="location", key="home_city", importance=0.7)
    memory.facts.add("Always answer briefly", category="instruction")
    result = run_cli("memory", "recall", "What should I wear today?", "--user", "ana", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    [item] = data["items"]
    assert item["text"] == "Lives in Porto" and item["section"] == "profile"
    assert item["why"] == "profile: location, importance 0.70"
    assert "Standing instructions from the user" in data["memory"] and "Lives in Porto" in data["memory"]
    table = run_cli("memory", "recall", "What should I wear today?", "--user", "ana")
    assert table.exit_code == 0 and "Lives in Porto" in table.stdout and "profile" in table.stdout
    empty = run_cli("memory", "recall", "  ", "--user", "ana")
    assert empty.exit_code == 2 and "empty" in empty.stderr


@pytest.mark.parametrize("question", ["What should I wear today?"])
def test_mcp_memory_context_returns_the_same_recall(memory, question, run_cli):
    from tests.mcp.test_mcp import call, make_server, text

    memory.facts.add("Lives in Porto", category="location", key="home_city", importance=0.7)
    server, _ = make_server(memory)
    data = json.loads(text(call(server, "memory_context", {"question": question})))
    cli = run_cli("memory", "recall", question, "--user", "ana", "--json").json()
    assert data["items"] == cli["items"] and data["memory"] == cli["memory"]
    bad = call(server, "memory_context", {"question": " "})
    assert bad.is_error and "question" in text(bad)


def test_past_found_by_words_alone_is_for_a_turn_about_the_users_life(memory):
    from coop.memory.retrieval.recall import is_personal

    month_ago = time.time() - 86400 * 30
    session = memory.sessions.start(started_at=month_ago, last_activity_at=month_ago)
    memory.messages.add(session, "user", "We've got a pup and a kitty, and here's our cat sleeping on the sofa!",
                       created_at=month_ago)
    floors = {"memory.prompt_word_similarity_floor": -1.0, "memory.word_similarity_floor": -1.0}
    impersonal = context(memory, "Why do cats purr when they are sleeping?", **floors)
    assert not [r for r in impersonal.prompt.recalled if r.item.kind == "message"]
    personal = context(memory, "Is my cat still sleeping on the sofa all day?", **floors)
    assert [r.item.kind for r in personal.prompt.recalled if r.reason == "relevance"] == ["message"]
    assert is_personal("What did Caroline research?") and is_personal("a gift to Caroline")
    assert is_personal("Where did I go last summer?") and is_personal("What is Melanie's favourite book?")
    assert not is_personal("How do I make a paper airplane?") and not is_personal("What is the tallest mountain in "
                                                                                  "Africa?")
    assert not is_personal("Summarise the plot of Hamlet") and not is_personal("What is a SQL JOIN?")
    # "do I" asks about the user's own life ("how many plants do I own", "where do I work"), except in a how-to
    # ("how do I", "what do I need") or a why of the world ("why do I get hiccups")
    for own in ("How many plants do I own?", "Where do I work now?", "Do I have any pets?",
                "How often do I swim each week?"):
        assert is_personal(own), own
    for how_to in ("How do I reverse a list?", "What do I need for a visa?", "Why do I yawn?",
                   "Can I freeze cooked rice?"):
        assert not is_personal(how_to), how_to


def test_an_impersonal_question_that_names_a_past_subject_recalls_it(memory):
    from coop.memory.retrieval.recall import names_its_subject

    month_ago = time.time() - 86400 * 30
    session = memory.sessions.start(started_at=month_ago, last_activity_at=month_ago)
    memory.messages.add(session, "user", "That charity race was great: we ran to raise awareness for mental health.",
                       created_at=month_ago)
    floors = {"memory.prompt_word_similarity_floor": -1.0, "memory.word_similarity_floor": -1.0,
              "memory.similarity_floor": 1.0}  # found by its words alone
    named = context(memory, "What did the charity race raise awareness for?", **floors)
    assert [r.item.text for r in named.prompt.recalled if r.item.kind == "message"] == [
        "That charity race was great: we ran to raise awareness for mental health."]
    apart = context(memory, "Which race is the longest in the world, and why?", **floors)
    assert not [r for r in apart.prompt.recalled if r.item.kind == "message"]
    said = memory.get("message", named.prompt.recalled[0].item.item_id)
    assert names_its_subject("Tips for a grand opening of a shop?", said) is False  # nothing in common
    assert names_its_subject("How long is a charity race usually?", said) is True  # a phrase in common
    assert names_its_subject("Why do people raise awareness for health?", said) is True  # three words in common
    assert names_its_subject("Why do cats purr when they are sleeping?",
                             memory.get("message", memory.messages.add(session, "user", "Here's our cat sleeping on "
                                                                      "the sofa!", created_at=month_ago))) is False


def test_review_lists_a_fact_out_of_date_whatever_its_source_and_keep_settles_it(memory, run_cli, monkeypatch):
    commute = memory.facts.add("Takes the tram to the Lisbon office", category="work", source="user").fact_id
    memory.facts.add("Lives in Lisbon", category="location", key="home_city", source="user")
    time.sleep(0.01)
    memory.facts.add("Lives in Porto", category="location", key="home_city", source="user")
    memory.sources.mark_reviewed(time.time() + 1)  # nothing new to review, and still the stale fact is listed
    [listed] = json.loads(run_cli("memory", "review", "--user", "ana", "--json").stdout)
    assert listed["id"] == f"f{commute}" and "out_of_date" in listed["flags"]
    monkeypatch.setattr("coop.cli.memory_review.on_terminal", lambda: True)
    kept = run_cli("memory", "review", "--user", "ana", input="k\n", env={"COLUMNS": "200"})
    assert kept.exit_code == 0, kept.stderr
    assert f"f{commute} confirmed: no longer marked out of date" in kept.stdout
    assert json.loads(run_cli("memory", "review", "--user", "ana", "--json").stdout) == []
    assert profile.out_of_date(memory, memory.facts.active()) == {}


def test_a_past_item_with_code_keeps_its_lines_and_a_cut_block_is_closed(memory):
    from dataclasses import replace

    from coop.memory.retrieval.context import PAST_ITEM_MAX_CHARS, Recalled, past_line

    session = memory.sessions.start()
    code = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```"
    item = memory.get("message", memory.messages.add(session, "assistant", code))
    line = past_line(Recalled(item, "continuity"))
    assert "```python\ndef add(a, b):\n    return a + b\n```" in line  # code stays code, not one flattened line
    long = replace(item, text="```\n" + "x = 1\n" * PAST_ITEM_MAX_CHARS)
    cut = past_line(Recalled(long, "continuity"))
    assert cut.count("```") == 2 and cut.endswith("```")
    plain = replace(item, text="one\ntwo   three")
    assert past_line(Recalled(plain, "continuity")).endswith("one two three")
