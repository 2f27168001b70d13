"""What a turn recalls: each piece of knowledge once, newer first when two items disagree, plumbing never
recalled, facts shown with id and date, and forgetting a fact takes what said it along."""

from __future__ import annotations

import json
import time

import numpy as np
from typer.testing import CliRunner

from coop.cli.app import app
from coop.memory.growth.forgetting import forget_with_traces, traces
from coop.memory.retrieval.context import Recalled, build_prompt, fact_line
from coop.memory.retrieval.recall import is_conversation, newer_first, without_repeats
from coop.memory.words import adds_to, states
from tests.notes import note, notes


class FixedEmbedder:
    """Vectors chosen by the test, so "close in meaning" is exact."""

    id = "test/fixed/3"
    dims = 3


def put_vector(memory, kind, item_id, values):
    vector = np.asarray(values, dtype=np.float32)
    memory.vectors.store(kind, [item_id], FixedEmbedder.id, (vector / np.linalg.norm(vector)).reshape(1, -1))


def recalled(memory, kind, item_id, score=1.0, reason="relevance"):
    return Recalled(memory.get(kind, item_id), reason, score)


def test_states_needs_the_facts_words_with_every_name_and_adds_to_tells_more_from_a_restatement():
    fact = "Sister Ana works as a dentist"
    assert states("my sister Ana is a dentist", fact)
    assert not states("my sister Maria is a dentist", fact)  # another name is another fact
    assert not states("Ana is coming on Tuesday", fact)
    assert not adds_to("my sister Ana works as a dentist", [fact])
    assert adds_to("Talked about Ana's dentist practice in Porto", [fact])  # a new name: more knowledge


def test_a_facts_source_message_and_a_bare_restatement_are_left_out_but_a_summary_that_tells_more_stays(memory):
    session = memory.sessions.start()
    source = memory.messages.add(session, "user", "btw my sister Ana works as a dentist")
    echo = memory.messages.add(session, "assistant", "Your sister Ana works as a dentist, noted.")
    other = memory.messages.add(session, "user", "we should visit Ana soon")
    fact = memory.facts.add("Sister Ana works as a dentist", category="family").fact_id
    memory.sources.link(fact, [source])
    richer = memory.summaries.add("Ana, the user's sister, works as a dentist and moved to Porto in 2024.",
                                session_id=session)
    copy = memory.messages.add(session, "user", "we should visit Ana soon")
    past = [recalled(memory, "message", i, score) for i, score in ((source, 0.9), (echo, 0.8), (other, 0.7),
                                                                    (copy, 0.6))]
    past.append(recalled(memory, "summary", richer, 0.5))
    kept = without_repeats(memory, [recalled(memory, "fact", fact)], past)
    assert [r.item.ref for r in kept] == [f"m{other}", f"s{richer}"]  # the copy of `other` counts once


def test_tool_results_tool_call_stubs_and_empty_replies_are_not_conversation(memory):
    session = memory.sessions.start()
    tool = memory.messages.add(session, "tool", json.dumps({"results": [{"text": "Lives in Lyon"}]}),
                              tool_name="memory_search", tool_call_id="c1")
    stub = memory.messages.add(session, "assistant", "", tool_calls=json.dumps([{"id": "c1"}]))
    said = memory.messages.add(session, "user", "I live in Lyon")
    assert [is_conversation(memory.get("message", i)) for i in (tool, stub, said)] == [False, False, True]


def test_of_two_facts_about_one_thing_the_newer_comes_first_marked_as_newer(memory):
    old = memory.facts.add("Lives in Lyon", category="location", key="home_city").fact_id
    time.sleep(0.01)
    new = memory.facts.add("Moved to Berlin", category="location", key="city").fact_id
    tea = memory.facts.add("Likes green tea", category="preference").fact_id
    put_vector(memory, "fact", old, [1, 0.2, 0])
    put_vector(memory, "fact", new, [1, 0.4, 0])  # close to the old one: about the same thing
    put_vector(memory, "fact", tea, [0, 0, 1])
    entries = [recalled(memory, "fact", i) for i in (old, tea, new)]
    ordered = newer_first(memory, FixedEmbedder(), entries, 0.45, same_category=True)
    assert [r.item.item_id for r in ordered] == [new, old, tea]
    assert ordered[0].note == f"newer than f{old}" and ordered[1].note == "" and ordered[2].note == ""
    line = fact_line(ordered[0])
    assert line.startswith(f"- f{new} (since ") and line.endswith(f", newer than f{old}): Moved to Berlin")


def test_facts_carry_id_and_date_and_a_first_person_pin_is_quoted_as_the_users(memory):
    pinned = memory.facts.add("I am allergic to peanuts", importance=0.9).fact_id
    item = memory.get("fact", pinned)
    day = time.strftime("%Y-%m-%d", time.localtime(item.created_at))
    prompt = build_prompt(preamble="P", facts=[Recalled(item, "salience")], new_message="hi", context_budget=4000,
                          memory_fraction=0.25)
    assert f"- f{pinned} (since {day}): the user said “I am allergic to peanuts”" in prompt.messages[0]["content"]


def test_a_past_message_already_in_the_history_is_not_recalled_again(memory):
    from coop.memory.retrieval.context import HistoryMessage

    session = memory.sessions.start()
    said = memory.messages.add(session, "user", "I adopted a cat named Miso")
    history = [HistoryMessage("user", "I adopted a cat named Miso", said), HistoryMessage("assistant", "Lovely!")]
    prompt = build_prompt(preamble="P", past=[recalled(memory, "message", said)], history=history,
                          new_message="what is my cat called?", context_budget=4000, memory_fraction=0.25)
    assert prompt.recalled == [] and prompt.messages[0]["content"].count("Miso") == 0
    assert [m["content"] for m in prompt.messages[1:]] == ["I adopted a cat named Miso", "Lovely!",
                                                           "what is my cat called?"]


def seeded_forget(memory):
    session = memory.sessions.start()
    source = memory.messages.add(session, "user", "my sister Ana works as a dentist")
    echo = memory.messages.add(session, "assistant", "A dentist, like your sister Ana? Noted.")
    kept = memory.messages.add(session, "user", "and my brother plays the cello")
    memory.messages.add(session, "assistant", "Nice!")
    summary = memory.summaries.add("The user's sister Ana works as a dentist.", session_id=session,
                                 span=(source, kept + 1))
    memory.messages.mark_consolidated([source, echo, kept, kept + 1])
    fact = memory.facts.add("Sister Ana works as a dentist", category="family").fact_id
    memory.sources.link(fact, [source])
    return fact, source, echo, kept, summary


def test_forgetting_a_fact_forgets_its_source_and_what_states_it_and_resummarises_the_rest(memory):
    fact, source, echo, kept, summary = seeded_forget(memory)
    assert {t.ref for t in traces(memory, memory.get("fact", fact))} == {f"m{source}", f"m{echo}", f"s{summary}"}
    gone = forget_with_traces(memory, "fact", fact, reason="test")
    assert gone.describe() == f"forgot f{fact} and 3 items that said it: m{source}, m{echo}, s{summary}"
    assert [m.item_id for m in memory.list_items("message")] == [kept + 1, kept]
    assert memory.list_items("summary") == [] and memory.list_items("fact") == []
    # what is left of the span is summarised again, without the forgotten lines
    assert memory.db.scalar("select count(*) from messages where consolidated_at is null") == 2
    rows = memory.db.execute("select content from messages union all select text from summaries").fetchall()
    assert not any("dentist" in row[0] for row in rows)


def test_coop_memory_forget_shows_and_removes_the_traces_and_only_keeps_them(memory, db):
    fact, source, echo, kept, summary = seeded_forget(memory)
    runner = CliRunner()
    result = runner.invoke(app, ["memory", "forget", f"f{fact}", "--only", "--yes", "--user", "ana"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == f"forgot f{fact}" and lines[1] == "cleaned: facts 1"  # the receipt (issue 27)
    assert len(memory.list_items("message")) == 4 and len(memory.list_items("summary")) == 1

    again = memory.facts.add("Sister Ana works as a dentist", category="family", source="user").fact_id
    result = runner.invoke(app, ["memory", "forget", f"f{again}", "--yes", "--user", "ana"])
    assert result.exit_code == 0, result.output
    assert f"forgot f{again} and 3 items that said it" in result.output
    assert len(memory.list_items("message")) == 2 and memory.list_items("summary") == []


def test_an_extracted_fact_is_linked_to_its_message_and_shown_once_in_a_later_prompt(memory, scripted):
    from coop.config.loading import apply_overrides, load_config
    from coop.memory.growth.embedders import HashEmbedder

    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.timeout_seconds": 5.0})
    embedder = HashEmbedder(64)
    scripted.background_replies = [notes(note("Has a cat named Miso", "I have a cat named Miso", topic="pet"))]
    first = scripted.session(memory, config, embedder=lambda: embedder)
    result = first.turn("I have a cat named Miso")
    [fact] = memory.list_items("fact")
    assert memory.sources.of_facts([fact.item_id]) == {fact.item_id: {result.user_message_id}}
    assert memory.jobs.pending() == []  # the recorded extraction finished and left no row
    first.end()
    second = scripted.session(memory, config, embedder=lambda: embedder)
    second.turn("what is my cat Miso like?")
    system = scripted.system_prompt(-1)
    assert f"- f{fact.item_id} (since " in system and system.count("Miso") == 1  # the fact, not its source too


def test_past_items_are_chosen_by_score_and_a_newer_one_is_shown_before_the_older_it_disagrees_with(memory):
    old_session, new_session = memory.sessions.start(), memory.sessions.start()
    old = memory.messages.add(old_session, "user", "I work at Google on search", created_at=time.time() - 86400 * 90)
    new = memory.messages.add(new_session, "user", "I started at Microsoft on Azure last week")
    put_vector(memory, "message", old, [1, 0.1, 0])
    put_vector(memory, "message", new, [1, 0.3, 0])
    entries = [recalled(memory, "message", old, 0.9), recalled(memory, "message", new, 0.5)]
    marked = newer_first(memory, FixedEmbedder(), entries, 0.75, same_category=False, move=False)
    assert [r.item.item_id for r in marked] == [old, new] and marked[1].note == f"newer than m{old}"
    system = build_prompt(preamble="P", past=marked, new_message="where do I work?", context_budget=4000,
                          memory_fraction=0.25).messages[0]["content"]
    assert system.index("Microsoft") < system.index("Google")
    assert f"user (newer than m{old}): I started at Microsoft" in system


def test_the_past_lines_chosen_by_score_are_shown_newest_first_whatever_their_words(memory):
    """A value and the one that replaced it need share no word (a knowledge update): shown newest first, the model
    reads what holds now before what it replaced; what is chosen is still the budget's pick by score."""
    session = memory.sessions.start()
    now = time.time()
    said = {days: memory.messages.add(session, "user", text, created_at=now - 86400 * days)
            for days, text in ((300, "my commute is a forty minute bus ride"), (2, "these days I cycle to the office"),
                               (40, "we adopted a beagle puppy"), (150, "I repainted the kitchen green"))}
    past = [recalled(memory, "message", said[days], score) for days, score in ((300, 0.9), (150, 0.8), (2, 0.7),
                                                                                (40, 0.6))]
    system = build_prompt(preamble="P", past=past, new_message="how do I get to work?", context_budget=4000,
                          memory_fraction=0.25).messages[0]["content"]
    shown = [days for days in sorted(said, key=lambda d: system.index(memory.get("message", said[d]).text))]
    assert shown == [2, 40, 150, 300]
    tight = build_prompt(preamble="P", past=past, new_message="how do I get to work?", context_budget=200,
                         memory_fraction=0.2).messages[0]["content"]
    assert "forty minute bus" in tight and "beagle" not in tight  # the best score is chosen first, as before
