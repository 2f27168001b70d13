"""Multi-session stories against the scripted server, each asserting on the prompts the model receives: the
current value is there, the stale and the forgotten ones are not, and nothing appears twice.

The fast model is scripted by what it is asked: extraction answers from a table keyed by the user's message,
reconciliation replaces the fact the story says is replaced, consolidation writes the story's summary. Without
a worker (as here), a turn's memory jobs run inline, right after the reply.
"""

from __future__ import annotations

import datetime
import json
import re
import time

from typer.testing import CliRunner

from coop.chat.session import ChatSession
from coop.cli.app import app
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.pointing import MESSAGE_HEADING
from coop.memory.slots import topic_of
from tests.notes import note, notes
from tests.scripted_model import said_in, session_on

EMBEDDER = HashEmbedder(64)


def config_for(server, **overrides):
    """The scripted model, and no meaning floor for matches by words: the hash embedder's cosines mean nothing
    (the real model's floors are measured by the benchmarks)."""
    values = {"model.name": "openai/test-model", "model.api_base": server.api_base, "model.timeout_seconds": 5.0,
              "memory.word_similarity_floor": -1.0, "memory.prompt_word_similarity_floor": -1.0}
    return apply_overrides(load_config(), {**values, **overrides})


def fact(category, key, value, evidence, importance=0.7, about="user"):
    """A note the scripted extractor gives: the value, the user's words it rests on, the topic of its slot, and
    whom it is about."""
    kind = "instruction" if category == "instruction" else "fact"
    return note(value, evidence, kind=kind, topic=topic_of(category, key).name, about=about)


def fast_model(extract: dict[str, list[dict]], replaces: dict[str, str] | None = None, summary: str = ""):
    """The scripted fast model. `extract`: the user's message -> the notes of it; `replaces`: a new fact's text
    -> the text of the fact it replaces, named when the one question about changes offers it."""
    replaces = replaces or {}

    def reply(body: dict) -> str:
        system, asked = body["messages"][0]["content"], body["messages"][-1]["content"]
        said = said_in(asked)
        if said is not None:
            return notes(*extract.get(said, []))(body)
        if system.startswith("You consolidate"):
            return json.dumps({"summary": summary, "notes": []})
        if "NEW:" in asked and "KNOWN:" in asked:  # the one question about what a new fact changes
            new = dict(re.findall(r"^(n\d+): (.*)$", asked, re.MULTILINE))
            known = {text: label for label, text in re.findall(r"^(k\d+): (.*)$", asked, re.MULTILINE)}
            return json.dumps({"changes": [{"new": n, "replaces": known.get(replaces.get(text, ""))}
                                           for n, text in new.items()]})
        return "{}"

    return reply


def session(memory, server, *lines, end=True, consolidate=False, **overrides) -> ChatSession:
    """One session of `lines`; ended as /end or an idle end does (and then consolidated, as the worker would)."""
    chat = session_on(server, memory, config_for(server, **overrides), embedder=lambda: EMBEDDER)
    for line in lines:
        result = chat.turn(line)
        assert result.error is None, result.error
    if end:
        chat.end()
    if consolidate:
        chat.jobs.consolidation(memory.user_id, session_id=chat.session_id, ended=True)(memory.backend)
    return chat


def prompt_text(server, index=-1) -> str:
    """Everything the model was sent in one chat request: system prompt, history and the new message."""
    return "\n".join(str(m.get("content") or "") for m in server.chat_requests()[index]["messages"])


def facts_section(server, index=-1) -> str:
    system = server.system_prompt(index)
    return system.split("Known about the user (id, since when):\n", 1)[1].split("\n\n", 1)[0] \
        if "Known about the user" in system else ""


def replacement_story(memory, server, before, after, question, *, old_fact, new_fact, stale, current):
    server.background_default = fast_model({before: [old_fact], after: [new_fact]},
                                           replaces={new_fact["value"]: old_fact["value"]})
    server.default_reply = "ok"
    session(memory, server, before)
    session(memory, server, after)
    session(memory, server, question)
    seen = prompt_text(server)
    assert current in facts_section(server)
    assert stale not in seen, seen
    assert seen.count(current) == 1  # the fact, and not its source message beside it


def test_a_move_replaces_the_old_city_though_the_keys_differ(memory, scripted):
    replacement_story(memory, scripted, "I live in Lyon", "I moved to Berlin last month", "where do I live?",
                      old_fact=fact("location", "home_city", "Lives in Lyon", "I live in Lyon"),
                      new_fact=fact("location", "city", "Lives in Berlin", "I moved to Berlin"),
                      stale="Lyon", current="Lives in Berlin")
    [history] = [e for e in memory.facts.history(1) if e.action == "SUPERSEDE"]
    assert "location/home_city" in history.reason  # the table decided: one slot, a new value


def test_a_job_change_replaces_the_employer(memory, scripted):
    replacement_story(memory, scripted, "I work at Google as an engineer", "I joined Microsoft this week",
                      "where do I work these days?",
                      old_fact=fact("work", "employer", "Works at Google", "I work at Google"),
                      new_fact=fact("work", "employer", "Works at Microsoft", "I joined Microsoft"),
                      stale="Google", current="Works at Microsoft")


def test_a_diet_change_replaces_the_diet(memory, scripted):
    replacement_story(memory, scripted, "My diet is vegetarian", "I went fully vegan in October",
                      "what does my diet allow for dinner?",
                      old_fact=fact("diet", "diet", "Diet is vegetarian", "My diet is vegetarian"),
                      new_fact=fact("diet", "diet_type", "Diet is vegan", "I went fully vegan"),
                      stale="vegetarian", current="Diet is vegan")


def test_a_reversed_standing_instruction_replaces_the_old_one(memory, scripted):
    first, then = "Always answer in French please", "Answer in English from now on"
    scripted.background_default = fast_model(
        {first: [fact("instruction", "answer_language", "Always answer in French", first)],
         then: [fact("instruction", "answer_language", "Answer in English", "Answer in English from now on")]},
        replaces={"Answer in English": "Always answer in French"})
    scripted.default_reply = "ok"
    session(memory, scripted, first)
    session(memory, scripted, then)
    session(memory, scripted, "tell me a joke")
    system = scripted.system_prompt(-1)
    rules = system.split("Standing instructions from the user (always follow them):\n", 1)[1].split("\n\n")[0]
    assert rules == "- Answer in English"
    assert "French" not in prompt_text(scripted)


def test_a_forgotten_fact_reaches_no_later_prompt_by_any_road(memory, openai_server):
    said = "my sister Ana works as a dentist"
    openai_server.background_default = fast_model(
        {said: [fact("family", "sister_job", "Sister Ana works as a dentist", said, about="sister Ana")]},
        summary="The user's sister Ana works as a dentist.")
    openai_server.replies = ["A dentist, like your sister Ana? Noted."]
    session(memory, openai_server, said, consolidate=True)
    memory.messages.add(memory.sessions.start(), "tool", json.dumps({"results": [{"text": "Ana works as a dentist"}]}),
                       tool_name="memory_search", tool_call_id="c1")
    assert memory.list_items("summary"), "the ended session was summarised"
    [forgotten] = memory.list_items("fact")
    result = CliRunner().invoke(app, ["memory", "forget", forgotten.ref, "--yes", "--user", memory.user_id])
    assert result.exit_code == 0 and "items that said it" in result.output
    openai_server.default_reply = "ok"
    session(memory, openai_server, "What does my sister do?")
    assert "dentist" not in prompt_text(openai_server).lower()


def test_a_pronoun_is_resolved_from_the_earlier_turns(memory, scripted):
    scripted.background_default = fast_model(
        {"she just started at the hospital": [fact("family", "sister_job", "Sister Ana works at the hospital",
                                                   "she just started at the hospital", about="sister Ana")]})
    scripted.default_reply = "ok"
    session(memory, scripted, "My sister is Ana", "she just started at the hospital")
    extraction = [r for r in scripted.background_requests()
                  if said_in(r["messages"][-1]["content"])][-1]["messages"][-1]["content"]
    earlier = extraction.split(MESSAGE_HEADING)[0]
    assert "EARLIER TURNS" in earlier and "User: My sister is Ana" in earlier
    session(memory, scripted, "what does Ana do?")
    assert facts_section(scripted).count("Sister Ana works at the hospital") == 1


def test_a_relative_date_is_kept_as_said_and_shown_with_the_day_it_was_said(memory, scripted):
    """The extractor is told today's date; a value keeps the user's "next Friday" (a date the model worked out
    would be a number the user never said), and the prompt dates each fact, so "next Friday" reads against it."""
    today = datetime.date.today()
    said = "my dentist appointment is next Friday"
    scripted.background_default = fast_model(
        {said: [fact("health", None, "Dentist appointment next Friday", said)]})
    scripted.default_reply = "ok"
    session(memory, scripted, said)
    asked = [r["messages"][-1]["content"] for r in scripted.background_requests()
             if said_in(r["messages"][-1]["content"])][-1]
    assert f"TODAY: {today.strftime('%A %Y-%m-%d')}" in asked
    session(memory, scripted, "when is my dentist appointment?")
    [line] = [x for x in facts_section(scripted).splitlines() if "Dentist appointment next Friday" in x]
    assert today.isoformat() in line


def test_after_an_idle_end_the_next_first_prompt_picks_up_where_it_left_off(memory, openai_server):
    openai_server.background_default = fast_model({}, summary="Planning a trip to Kyoto: comparing ryokans.")
    openai_server.replies = ["Both are lovely.", "ok", "ok"]
    session(memory, openai_server, "Tawaraya or Hiiragiya for our Kyoto ryokan?", consolidate=True)
    nxt = session(memory, openai_server, "which one is quieter?", "thanks", end=False)
    first, second = openai_server.system_prompt(-2), openai_server.system_prompt(-1)
    carried = first.split("Where the previous conversation left off:\n", 1)[1].split("\n\n")[0]
    assert "summary: Planning a trip to Kyoto: comparing ryokans." in carried
    assert "assistant: Both are lovely." in carried and carried.count("Tawaraya") == 1
    assert "Where the previous conversation left off" not in second  # the first turn only
    assert nxt.session_id != memory.sessions.recent()[-1]["id"]


def test_an_extraction_left_by_an_exit_is_finished_at_the_next_start(memory, openai_server):
    said = "I keep bees on my balcony"
    openai_server.background_default = {"status": 500}  # the fast model is gone when the turn ends
    openai_server.default_reply = "ok"
    session(memory, openai_server, said)
    assert memory.list_items("fact") == [] and len(memory.jobs.pending()) == 1
    openai_server.background_default = fast_model({said: [fact("hobby", "hobby", "Keeps bees", said)]})
    later = ChatSession(memory, config_for(openai_server), embedder=lambda: EMBEDDER)
    later.catch_up()
    assert memory.jobs.pending() == []
    later.turn("any tips for my bees in winter?")
    assert "Keeps bees" in facts_section(openai_server)


def test_a_large_import_of_repeated_remember_lines_takes_one_line_of_the_prompt(memory, scripted, tmp_path):
    day = time.time() - 86400 * 30
    conversations = []
    for i in range(39):
        conversations.append({"id": f"c{i}", "title": f"chat {i}", "create_time": day + i * 600, "mapping": {
            "a": {"id": "a", "parent": None, "children": ["b"], "message": {
                "id": f"u{i}", "author": {"role": "user"}, "create_time": day + i * 600,
                "content": {"content_type": "text", "parts": ["Remember that I get motion sick on boats"]}}},
            "b": {"id": "b", "parent": "a", "children": [], "message": {
                "id": f"r{i}", "author": {"role": "assistant"}, "create_time": day + i * 600 + 5,
                "content": {"content_type": "text", "parts": ["Noted."]}}}}, "current_node": "b"})
    conversations.append({"id": "ferry", "title": "ferry", "create_time": day, "mapping": {
        "a": {"id": "a", "parent": None, "children": [], "message": {
            "id": "f1", "author": {"role": "user"}, "create_time": day + 99,
            "content": {"content_type": "text", "parts": ["The ferry to Sifnos leaves Piraeus at 7am"]}}}},
        "current_node": "a"})
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations))
    result = CliRunner().invoke(app, ["memory", "import", str(path), "--user", memory.user_id, "--no-embed"])
    assert result.exit_code == 0 and "imported 40 sessions, 79 messages" in result.output, result.output
    from coop.memory.growth.embedding import embed_pending

    embed_pending(memory, EMBEDDER)
    scripted.default_reply = "ok"
    session(memory, scripted, "taking the ferry to Sifnos from Piraeus, motion sick on boats?")
    system = scripted.system_prompt(-1)
    assert system.count("motion sick on boats") == 1
    assert "The ferry to Sifnos leaves Piraeus at 7am" in system


def test_a_fact_is_shown_once_beside_its_source_a_restatement_and_a_tool_result(memory, scripted):
    said = "I live in Berlin with my cat Miso"
    scripted.background_default = fast_model({said: [fact("location", "city", "Lives in Berlin", said)]})
    scripted.replies = ["Berlin with Miso, lovely.", "ok"]
    session(memory, scripted, said)
    s = memory.sessions.start()
    memory.messages.add(s, "assistant", "", tool_calls=json.dumps([{"id": "c9", "type": "function"}]))
    memory.messages.add(s, "tool", json.dumps({"results": [{"id": "f1", "text": "Lives in Berlin"}]}),
                       tool_name="memory_search", tool_call_id="c9")
    memory.summaries.add("The user lives in Berlin.", session_id=s)
    session(memory, scripted, "any Berlin tips for living here?")
    seen = prompt_text(scripted)
    assert seen.count("Lives in Berlin") == 1 and re.search(r"- f\d+ \(since \d{4}-\d\d-\d\d\): Lives in Berlin",
                                                             seen)
    assert "lives in Berlin" not in seen and '"results"' not in seen and "tool:" not in seen


def test_small_talk_recalls_nothing(memory, scripted):
    session_id = memory.sessions.start()
    for text in ("How's the weather in Lyon?", "It's going great with the new job", "Hello from the train!"):
        memory.messages.add(session_id, "user", text, created_at=time.time() - 86400 * 3)
    memory.sessions.end(session_id, at=time.time() - 86400 * 3)
    from coop.memory.growth.embedding import embed_pending

    embed_pending(memory, EMBEDDER)
    scripted.default_reply = "hi!"
    session(memory, scripted, "Hello!", "How's it going?")
    for index in (-2, -1):
        assert "Relevant past conversation" not in scripted.system_prompt(index)


# -- what coop knows about you reaches every turn that needs it ----------------------------------------------


def moved_to_porto(memory, server):
    """Lisbon, then Porto, each stated by the user and learned through extraction and reconciliation."""
    lisbon = fact("location", "home_city", "Lives in Lisbon", "I moved to Lisbon")
    commute = fact("work", "commute", "Commutes to the Lisbon office by tram", "take the tram to the Lisbon office")
    porto = fact("location", "home_city", "Lives in Porto", "I moved to Porto")
    server.background_default = fast_model(
        {"I moved to Lisbon last week and I take the tram to the Lisbon office": [lisbon, commute],
         "Actually I moved to Porto": [porto]}, replaces={"Lives in Porto": "Lives in Lisbon"})
    server.default_reply = "ok"
    session(memory, server, "I moved to Lisbon last week and I take the tram to the Lisbon office")
    session(memory, server, "Actually I moved to Porto")


def test_a_paraphrased_question_after_a_move_gets_the_current_city(memory, scripted):
    moved_to_porto(memory, scripted)
    session(memory, scripted, "Any good restaurants near where I live?")
    known = facts_section(scripted)
    assert "Lives in Porto" in known  # shares no word with the question: the profile brings it
    assert "Lives in Lisbon" not in prompt_text(scripted)  # never shown as current, nor as history here


def test_a_question_about_a_former_value_shows_it_dated_as_former(memory, scripted):
    moved_to_porto(memory, scripted)
    session(memory, scripted, "Where did I live before?")
    system = scripted.system_prompt()
    earlier = system.split("Earlier values (former: no longer true, for questions about the past):\n", 1)[1]
    porto = memory.facts.find_by_key("location", "home_city")
    assert re.search(rf"- f\d+ \(since [\d-]+, former, until [\d-]+; now f{porto.item_id}\): Lives in Lisbon", earlier)
    assert "Lives in Lisbon" not in facts_section(scripted) and "Lives in Porto" in facts_section(scripted)


def test_a_fact_that_depended_on_a_replaced_one_is_marked_until_settled(memory, scripted, run_cli):
    moved_to_porto(memory, scripted)
    session(memory, scripted, "How long will my commute take tomorrow?")
    line = next(x for x in facts_section(scripted).splitlines() if "Commutes to the Lisbon office" in x)
    lisbon = next(f for f in memory.list_items("fact", include_inactive=True) if f.text == "Lives in Lisbon")
    porto = memory.facts.find_by_key("location", "home_city")
    assert f"may be out of date: {lisbon.ref} was replaced by {porto.ref}" in line
    listed = run_cli("memory", "review", "--json", "--user", "ana").json()
    commute = next(f for f in listed if f["text"] == "Commutes to the Lisbon office by tram")
    assert "out_of_date" in commute["flags"]
    memory.facts.bump(int(commute["id"][1:]), reason="said again")  # the user (or an extraction) states it again
    session(memory, scripted, "How long will my commute take tomorrow?")
    assert "may be out of date" not in facts_section(scripted)
    listed = run_cli("memory", "review", "--json", "--user", "ana").json()
    assert all("out_of_date" not in f["flags"] for f in listed)


def test_a_correction_is_recalled_once_as_its_fact(memory, scripted):
    said = "Actually, I'm vegetarian now, remember that"
    scripted.background_default = fast_model({said: [fact("diet", "diet", "Is vegetarian", "I'm vegetarian")]})
    scripted.default_reply = "ok"
    session(memory, scripted, said)
    [message] = [m for m in memory.list_items("message") if m.text == said]
    assert (message.importance or 0) >= 0.85  # salient: a correction the user asked to keep
    session(memory, scripted, "What should I cook for dinner tonight?")
    seen = prompt_text(scripted)
    assert "Is vegetarian" in facts_section(scripted)
    assert said not in seen and seen.count("vegetarian") == 1


def test_the_previous_session_carries_over_only_when_the_new_turn_follows_on(memory, scripted):
    scripted.default_reply = "Here is a long answer about ryokans. " * 12
    session(memory, scripted, "Tawaraya or Hiiragiya for our Kyoto ryokan? " * 3,
            "And which one has the better garden for a quiet morning? " * 3)
    scripted.default_reply = "ok"
    session(memory, scripted, "How do I reverse a list in Python?", end=False)
    assert "Where the previous conversation left off" not in scripted.system_prompt()
    session(memory, scripted, "Tawaraya or Hiiragiya: which Kyoto ryokan garden is quieter?", end=False)
    assert "Where the previous conversation left off" in scripted.system_prompt()
