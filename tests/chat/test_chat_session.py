"""The turn, asserted on what coop sends the (scripted) model: memory in the prompt, order, budget, floor,
sessions, incognito, tools, interruption, and every way the model can fail."""

from __future__ import annotations

import json
import re

import pytest

from coop.chat.session import ChatSession
from coop.config.loading import apply_overrides, load_config
from coop.errors import ErrorKind, ModelError
from coop.files.trace import Tracer
from coop.memory.growth.embedders import HashEmbedder
from tests.scripted_model import ScriptedModel

EMBEDDER = HashEmbedder(64)


def make_config(server, **overrides):
    values = {"model.name": "openai/test-model", "model.api_base": server.api_base, "model.timeout_seconds": 5.0}
    values.update(overrides)
    return apply_overrides(load_config(), values)


def make_session(memory, model, **kwargs):
    """A session on the in-process scripted model (`scripted`), or through litellm on the scripted server."""
    overrides = kwargs.pop("overrides", {})
    config = make_config(model, **overrides)
    if isinstance(model, ScriptedModel):
        return model.session(memory, config, embedder=lambda: EMBEDDER, **kwargs)
    return ChatSession(memory, config, embedder=lambda: EMBEDDER, **kwargs)


def sections(system: str) -> list[str]:
    return [block.split("\n", 1)[0] for block in system.split("\n\n")]


def test_a_fact_from_session_1_is_in_session_2s_known_facts(memory, scripted):
    first = make_session(memory, scripted)
    first.remember("I am allergic to peanuts")
    scripted.replies = ["Noted.", "Avoid peanuts."]
    first.turn("I am planning a dinner party")
    first.end()
    second = make_session(memory, scripted)
    assert second.session_id != first.session_id
    second.turn("what snacks should I buy?")
    system = scripted.system_prompt(-1)
    assert "): the user said “I am allergic to peanuts”" in system
    messages = scripted.chat_requests()[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]  # session 1's conversation is not history here


def test_relevant_past_from_another_session_is_dated_and_an_unrelated_one_is_not_injected(memory, scripted):
    # The unrelated memory sits in a session of its own: a message's index entry carries its neighbouring turns
    # as context (for retrieval quality), so a turn right after the cello one would rightly come along with it.
    other = make_session(memory, scripted)
    scripted.replies = ["ok", "ok"]
    other.turn("the volcano documentary was about basalt columns")
    other.end()
    old = make_session(memory, scripted)
    old.turn("my sister Ines plays the cello in an orchestra")
    old.end()
    new = make_session(memory, scripted, overrides={"memory.similarity_floor": 0.6})
    new.turn("does Ines still play the cello?")
    system = scripted.system_prompt(-1)
    assert "Relevant past conversation" in system
    assert f"session {old.session_id}] user: my sister Ines plays the cello" in system
    assert "basalt" not in system and "volcano" not in system


def test_prompt_order_preamble_facts_past_history_new_message(memory, scripted):
    memory.facts.add("prefers metric units", importance=0.9)
    earlier = make_session(memory, scripted)
    scripted.default_reply = "fine"
    earlier.turn("I cycled 40 km to the lake last summer")
    session = make_session(memory, scripted)
    session.turn("hello")
    session.turn("how far was my ride to the lake?")
    messages = scripted.chat_requests()[-1]["messages"]
    system = messages[0]["content"]
    assert system.startswith("You are coop")
    heads = sections(system)
    assert heads.index("Known about the user (id, since when):") < heads.index(
        "Relevant past conversation (from memory, dated; it may be out of date):")
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "hello"), ("assistant", "fine"), ("user", "how far was my ride to the lake?")]


def test_memory_budget_holds(memory, scripted):
    for i in range(200):
        memory.facts.add(f"important fact number {i} about the user's many hobbies and habits", importance=0.95)
    session = make_session(memory, scripted, overrides={"memory.context_budget": 2000,
                                                             "memory.memory_budget_fraction": 0.1,
                                                             "memory.first_turn_memory_fraction": 0.1})
    result = session.turn("hi")
    tokens = result.prompt.tokens
    assert tokens["memory"] <= 200 and tokens["memory_budget"] == 200
    facts_block = scripted.system_prompt().split("Known about the user (id, since when):\n", 1)[1]
    assert 0 < facts_block.count("\n- ") + 1 < 200
    assert len(result.prompt.left_out) > 0
    assert len(scripted.system_prompt()) // 4 <= 200 + 150  # preamble plus the memory budget


def test_history_budget_keeps_the_newest_messages_and_the_anchor(memory, scripted):
    session = make_session(memory, scripted, overrides={"memory.context_budget": 600,
                                                             "memory.recency_messages": 50})
    scripted.default_reply = "ok"
    session.turn("ANCHOR: let's plan the trip")
    for i in range(30):
        session.turn(f"message {i} " + "filler " * 20)
    messages = scripted.chat_requests()[-1]["messages"]
    contents = [m["content"] for m in messages]
    assert contents[1] == "ANCHOR: let's plan the trip"
    assert contents[-1].startswith("message 29")
    assert sum(len(c) for c in contents[1:]) // 4 <= 600
    assert not any(c.startswith("message 0 ") for c in contents)


def test_history_fills_the_budget_not_a_fixed_count(memory, scripted):
    """With room, the whole session is history (beyond `recency_messages`); with little room, the newest
    messages that fit, whole."""
    roomy = make_session(memory, scripted, overrides={"memory.recency_messages": 4})
    scripted.default_reply = "ok"
    for i in range(8):
        roomy.turn(f"turn {i}")
    history = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert history == [x for i in range(7) for x in (f"turn {i}", "ok")] + ["turn 7"]

    tight = make_session(memory, scripted, overrides={"memory.context_budget": 600,
                                                           "memory.memory_budget_fraction": 0.1})
    for i in range(8):
        tight.turn(f"turn {i} " + "word " * 60)
    request = scripted.chat_requests()[-1]
    history = [m["content"] for m in request["messages"][1:-1]]
    said = [x for i in range(7) for x in (f"turn {i} " + "word " * 60, "ok")]
    # the session's opening (the anchor) keeps its room, then the newest that fit, whole
    assert 4 <= len(history) < len(said) and history[0] == said[0] and history[1:] == said[-(len(history) - 1):]
    assert sum(len(m["content"]) // 4 + 4 for m in request["messages"]) <= 600 + 60


def test_user_message_is_committed_before_the_model_is_called(memory, scripted):
    scripted.replies = [ModelError("scripted: server error", kind=ErrorKind.SERVER)]
    session = make_session(memory, scripted)
    result = session.turn("please keep this even if the model fails")
    assert result.error is not None and result.error.exit_code == 4
    texts = [m.text for m in memory.list_items("message")]
    assert texts == ["please keep this even if the model fails"]


@pytest.mark.parametrize("reply, fragment", [
    ({"status": 401, "message": "bad key"}, "the key was refused"),
    ({"status": 404, "message": "no such model"}, "no such model here"),
    ({"status": 400, "message": "bad request"}, "the request was refused"),
    ({"malformed": True}, ""),
    ({"empty": True}, "empty reply"),
])
def test_model_failures_are_errors_with_hints_and_the_session_goes_on(memory, openai_server, reply, fragment):
    session = make_session(memory, openai_server)
    # an empty stream to a request with tools is asked again whole (llama-cpp-python streams nothing then): empty too
    openai_server.replies = [reply, *([{"content": ""}] if reply.get("empty") else []), "recovered"]
    failed = session.turn("first")
    assert failed.error is not None and failed.error.hint and fragment in failed.error.message
    # said in words: no litellm class name where coop says what failed (the provider's own text may follow)
    assert not re.match(r"[^:]+: (litellm\.)?[A-Za-z]*(Error|Exception)\b", failed.error.message), failed.error.message
    ok = session.turn("second")
    assert ok.error is None and ok.reply == "recovered"


def test_retryable_errors_are_retried_with_backoff(memory, openai_server, retry_backoff):
    retry_backoff(0.1)  # short, so the test is quick, but long enough to measure against request latency
    openai_server.replies = [{"status": 429, "message": "slow down"}, {"status": 500}, "finally"]
    session = make_session(memory, openai_server)
    result = session.turn("hello")
    assert result.reply == "finally" and result.error is None
    assert len(openai_server.chat_requests()) == 3
    first, second, third = openai_server.chat_request_times()
    assert second - first >= 0.1 and third - second >= 0.2  # a backoff before each retry, doubling


def test_a_server_that_is_down_is_an_error_naming_api_base(memory, openai_server):
    session = make_session(memory, openai_server, overrides={"model.api_base": "http://127.0.0.1:9/v1"})
    down = session.turn("anyone there?")
    assert down.error is not None and "api_base" in (down.error.hint or "") + down.error.message
    assert "test-model: cannot reach http://127.0.0.1:9/v1" in down.error.message


@pytest.mark.slow  # waits out three real 1 s timeouts (the config's shortest)
def test_a_model_slower_than_the_timeout_is_a_timeout_error(memory, openai_server):
    slow = make_session(memory, openai_server, overrides={"model.timeout_seconds": 1.0})
    openai_server.replies = [{"sleep": 1.5, "content": "late"}] * 3  # any attempt would outlast 1 s
    timed_out = slow.turn("hurry")
    assert timed_out.error is not None and timed_out.reply != "late"
    assert "no answer in time" in timed_out.error.message, timed_out.error.message
    assert "cannot reach" not in timed_out.error.message
    assert "model.timeout_seconds" in (timed_out.error.hint or "")
    assert len(openai_server.chat_requests()) == 1  # it spent the whole timeout: no retry goes past it


def test_interrupt_keeps_the_partial_reply_marked(memory, openai_server):
    session = make_session(memory, openai_server)
    openai_server.replies = [{"content": "This is a long answer that the user stops.", "chunk_delay": 0.05}]
    seen = []

    def on_text(delta):
        seen.append(delta)
        if len(seen) == 2:
            raise KeyboardInterrupt

    result = session.turn("tell me a story", on_text)
    assert result.interrupted
    assert result.reply == "".join(seen) + " [interrupted]"
    stored = memory.get("message", result.reply_message_id)
    assert stored.role == "assistant" and stored.text.endswith("[interrupted]")


def test_a_100k_paste_is_sent_and_stored(memory, scripted):
    session = make_session(memory, scripted)
    paste = "word " * 20_000
    result = session.turn(paste)
    assert result.error is None
    assert scripted.chat_requests()[-1]["messages"][-1]["content"] == paste
    assert memory.get("message", result.user_message_id).text == paste


def test_resume_a_session_brings_its_messages_back(memory, scripted):
    scripted.default_reply = "sure"
    first = make_session(memory, scripted)
    first.turn("we were talking about sourdough")
    again = make_session(memory, scripted, session_id=first.session_id)
    again.turn("continue")
    contents = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert contents == ["we were talking about sourdough", "sure", "continue"]
    assert memory.sessions.recent()[0]["messages"] == 4


def test_users_do_not_see_each_others_memory(store, scripted):
    store.user("bob").facts.add("bob's secret recipe uses saffron", importance=0.95)
    session = make_session(store.user("ana"), scripted)
    session.turn("what is in the secret recipe with saffron?")
    assert "saffron" not in scripted.system_prompt()


def test_incognito_reads_memory_and_writes_nothing(memory, scripted):
    memory.facts.add("my cat is called Miso", importance=0.9)
    before = memory.stats()
    session = make_session(memory, scripted, incognito=True)
    session.turn("what is my cat called?")
    assert "my cat is called Miso" in scripted.system_prompt()
    after = memory.stats()
    assert after == before


def test_memory_tools_search_get_timeline_write(memory, scripted):
    memory.facts.add("favourite tea is genmaicha")
    scripted.replies = [
        {"tool_calls": [{"name": "memory_search", "arguments": json.dumps({"query": "tea", "limit": 500})},
                        {"name": "memory_write", "arguments": json.dumps({"text": "drinks tea every morning"})}]},
        "You like genmaicha.",
    ]
    session = make_session(memory, scripted)
    asked: list[str] = []
    session.tools.confirm = lambda question: asked.append(question) or True  # the user says yes
    result = session.turn("what tea do I like?")
    assert result.reply == "You like genmaicha."
    assert asked == ['remember "drinks tea every morning"']
    second_call = scripted.chat_requests()[1]["messages"]
    tool_messages = [m for m in second_call if m["role"] == "tool"]
    assert len(tool_messages) == 2
    found = json.loads(tool_messages[0]["content"])["results"]
    assert any(r["text"] == "favourite tea is genmaicha" for r in found) and len(found) <= 20
    written = json.loads(tool_messages[1]["content"])
    assert memory.get("fact", int(written["id"][1:])).source == "model"
    assert scripted.chat_requests()[0]["tools"][0]["function"]["name"] == "memory_search"
    stored_roles = [m.role for m in memory.list_items("message", limit=10)]
    assert stored_roles.count("tool") == 2  # tool calls and results are kept as tool messages
    ids = {r["id"] for r in found}
    message_id = next(r["id"] for r in found if r["kind"] == "message") if any(
        r["kind"] == "message" for r in found) else f"m{result.user_message_id}"
    timeline = json.loads(session.tools.run("memory_timeline", json.dumps({"id": message_id, "before": 99})))
    assert any(r["id"] == message_id for r in timeline["results"])
    got = json.loads(session.tools.run("memory_get", json.dumps({"id": "f1"})))
    assert got["text"] == "favourite tea is genmaicha" and ids


@pytest.mark.parametrize("name, arguments, fragment", [
    ("memory_search", '{"query": "x", "evil": 1}', "unknown argument"),
    ("memory_search", '{"limit": 3}', "missing argument"),
    ("memory_search", '{"query": 5}', "must be a string"),
    ("memory_get", "not json", "not valid JSON"),
    ("memory_get", '{"id": "f999"}', "no fact"),
    ("memory_timeline", '{"id": "f1"}', "message id"),
    ("memory_write", '["a list"]', "JSON object"),
    ("memory_delete_everything", "{}", "unknown tool"),
    ("memory_write", json.dumps({"text": "x" * 5000}), "longer than"),
])
def test_tool_arguments_are_validated(memory, scripted, name, arguments, fragment):
    session = make_session(memory, scripted)
    output = json.loads(session.tools.run(name, arguments))
    assert fragment in output["error"]
    assert memory.list_items("fact") == []


def test_tool_results_are_bounded(memory, scripted):
    for i in range(40):
        memory.facts.add(f"tea note {i} " + "long words " * 80)
    session = make_session(memory, scripted)
    output = session.tools.run("memory_search", json.dumps({"query": "tea note", "limit": 20}))
    assert len(output) <= 6000


def test_trace_file_has_events_and_no_secrets(memory, openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_MODEL_KEY", "sk-trace-secret-98765")
    trace = tmp_path / "trace.jsonl"
    memory.facts.add("likes hiking in the Alps", importance=0.9)
    session = ChatSession(memory, make_config(openai_server, **{"model.api_key_env": "TEST_MODEL_KEY"}),
                          embedder=lambda: EMBEDDER, tracer=Tracer(str(trace)))
    session.turn("any hiking ideas?")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds == ["retrieval", "prompt", "model"]
    retrieval = events[0]
    assert set(retrieval["legs"]) == {"vector", "fts"} and "fts" in retrieval["timings_ms"]
    assert events[1]["tokens"]["total"] > 0 and events[2]["latency_ms"] > 0
    assert "sk-trace-secret-98765" not in trace.read_text()
    assert openai_server.requests[-1]["authorization"] == "Bearer sk-trace-secret-98765"
    assert oct(trace.stat().st_mode & 0o777) == "0o600"


def test_a_model_without_tool_support_is_asked_again_without_tools(memory, openai_server):
    openai_server.replies = [{"status": 400, "message": "this model does not support tools"}, "plain answer",
                             "second"]
    session = make_session(memory, openai_server)
    assert session.turn("hi").reply == "plain answer"
    session.turn("again")
    bodies = openai_server.chat_requests()
    assert "tools" in bodies[0] and "tools" not in bodies[1] and "tools" not in bodies[2]


def test_tools_can_be_switched_off(memory, scripted):
    session = make_session(memory, scripted, overrides={"chat.tools": False})
    session.turn("hi")
    assert not scripted.chat_requests()[0].get("tools")  # none offered


def test_end_marks_the_session_ended(memory, scripted):
    session = make_session(memory, scripted)
    session.turn("hello")
    session.end()
    assert memory.sessions.recent()[0]["ended_at"] is not None
