"""Tool calls from models without native tool calling (issue 31): a call written in the reply's text (Hermes/Qwen
`<tool_call>`, `<tools>`, a JSON fence with name and arguments) is run as a call and never shown as the answer;
how a model calls tools is remembered per model, and a model that refuses tools is not offered them again. The
chat model is the scripted OpenAI-compatible server; assertions are on what coop sends and what the user sees."""

from __future__ import annotations

import json

import pytest

from coop.chat.session import ChatSession
from coop.chat.textcalls import TOOLS_FILE, TextGate, parse_calls
from coop.chat.tools import TOOL_NAMES
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from tests.notes import note, notes
from tests.scripted_model import session_on

EMBEDDER = HashEmbedder(64)
SEARCH = {"name": "memory_search", "arguments": {"query": "Porto"}}


def make_session(memory, server):
    config = apply_overrides(load_config(), {"model.name": "openai/small-local", "model.api_base": server.api_base,
                                             "model.timeout_seconds": 5.0, "memory.extraction.enabled": False})
    return session_on(server, memory, config, embedder=lambda: EMBEDDER)


@pytest.mark.parametrize("written", [
    "<tool_call>\n" + json.dumps(SEARCH) + "\n</tool_call>",
    "<tools>" + json.dumps(SEARCH) + "</tools>",
    "Let me look that up.\n```json\n" + json.dumps(SEARCH) + "\n```",
    json.dumps({"name": "memory_search", "parameters": {"query": "Porto"}}),
    # Qwen2.5-Coder-1.5B on llama-cpp-python: arguments as a string, the closing brace left off
    '{"name": "memory_search", "arguments": "{\\"query\\": \\"Porto\\", \\"limit\\": 1}}"',
])
def test_a_tool_call_written_as_text_is_run_and_never_shown(memory, openai_server, coop_home, written):
    memory.facts.add("Lives in Porto", category="location", key="home_city")
    openai_server.replies = [written, "You live in Porto."]
    shown: list[str] = []
    result = make_session(memory, openai_server).turn("where do I live?", on_text=shown.append)
    assert "tool_call" not in "".join(shown) and '"arguments"' not in "".join(shown)
    assert "".join(shown).endswith("You live in Porto.") and result.reply == "You live in Porto."
    assert [c["name"] for c in result.tool_calls] == ["memory_search"]
    second = [r["body"] for r in openai_server.requests if r["body"]][1]
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and "Lives in Porto" in tool_message["content"]
    assert json.loads((coop_home / TOOLS_FILE).read_text()) == {"openai/small-local": "text"}


def test_a_call_of_a_tool_coop_does_not_have_is_not_shown_raw(memory, scripted):
    scripted.replies = ['<tool_call>{"name": "web_search", "arguments": {"q": "x"}}</tool_call>Hello!']
    shown: list[str] = []
    result = make_session(memory, scripted).turn("hi", on_text=shown.append)
    assert "".join(shown) == "Hello!" and result.tool_calls == []


def test_prose_and_code_stream_as_they_come(memory, scripted):
    reply = "Use this:\n```python\nprint({'a': 1})\n```\nDone."
    scripted.replies = [reply]
    shown: list[str] = []
    make_session(memory, scripted).turn("how do I print a dict?", on_text=shown.append)
    assert "".join(shown) == reply and len(shown) > 3  # streamed in pieces, not held to the end


def test_native_calls_are_remembered_as_native(memory, openai_server, coop_home):
    openai_server.replies = [{"tool_calls": [{"name": "memory_search", "arguments": '{"query": "x"}'}]}, "done"]
    make_session(memory, openai_server).turn("search x")
    assert json.loads((coop_home / TOOLS_FILE).read_text()) == {"openai/small-local": "native"}


def test_a_model_that_refuses_tools_is_remembered_and_not_offered_them_again(memory, openai_server, coop_home):
    openai_server.replies = [{"status": 400, "message": "this model does not support tools"}, "hello", "again"]
    make_session(memory, openai_server).turn("hi")
    assert json.loads((coop_home / TOOLS_FILE).read_text()) == {"openai/small-local": "none"}
    make_session(memory, openai_server).turn("hi again")  # a new process: no tools sent at all
    bodies = [r["body"] for r in openai_server.requests if r["body"]]
    assert "tools" in bodies[0] and "tools" not in bodies[1] and "tools" not in bodies[2]


def test_parse_calls_leaves_other_json_alone():
    text = 'Here is the config:\n```json\n{"name": "coop", "version": 1}\n```'
    assert parse_calls(text, TOOL_NAMES) == (text, [])
    rest, [call] = parse_calls('{"type": "function", "function": {"name": "memory_get", "arguments": "{\\"id\\": '
                               '\\"f1\\"}"}}', TOOL_NAMES)
    assert rest == "" and (call.name, json.loads(call.arguments)) == ("memory_get", {"id": "f1"})


def test_the_gate_holds_only_what_may_be_a_call():
    shown: list[str] = []
    gate = TextGate(shown.append)
    for piece in ("Sure. <to", "ol_call>{}", "</tool_call>"):
        gate.feed(piece)
    assert "".join(shown) == "Sure. " and gate.held.startswith("<tool_call>")


def test_a_turn_with_a_llama_cpp_like_server_learns_and_answers_cleanly(memory, openai_server, coop_home):
    """The server of issue 31: json_schema refused with a 500, a streamed request with tools answered with nothing
    (asked again whole, it writes the call as text). The fact is learned (the next mode asked at once, json_schema
    never again), the call is run, and the user sees only the answer."""
    openai_server.refuses_json_schema = True
    openai_server.streams_nothing_with_tools = True  # measured: role delta, [DONE]; whole, the reply
    openai_server.replies = ["<tool_call>" + json.dumps(SEARCH) + "</tool_call>", "Noted: vegetarian."]
    openai_server.background_default = notes(note("Is vegetarian", "I am vegetarian", topic="diet"))
    config = apply_overrides(load_config(), {"model.name": "openai/small-local", "model.api_base":
                                             openai_server.api_base, "model.timeout_seconds": 5.0})
    session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
    shown: list[str] = []
    session.turn("I am vegetarian", on_text=shown.append)
    session.turn("what do I eat?")
    assert "".join(shown) == "Noted: vegetarian."
    chat = [r["body"] for r in openai_server.requests if r["body"] and "tools" in r["body"]]
    assert [b.get("stream", False) for b in chat] == [True, False, False, False]  # streamed once, then whole
    assert chat[2]["messages"][-1]["role"] == "tool"  # the call written as text was run
    assert [f.text for f in memory.list_items("fact")] == ["Is vegetarian"]
    formats = [(r["body"].get("response_format") or {}).get("type") for r in openai_server.requests
               if r["body"] and "response_format" in r["body"]]
    assert formats[0] == "json_schema" and "json_schema" not in formats[1:]  # refused once, remembered
    assert sum(1 for r in openai_server.requests if r["body"] and (r["body"].get("response_format") or {})
               .get("type") == "json_schema") == 1  # never retried as a server error


def test_a_reply_opening_with_a_markdown_link_streams_at_once():
    shown: list[str] = []
    gate = TextGate(shown.append)
    for piece in ("[the", " docs](https://example.org)", " say so"):
        gate.feed(piece)
    assert "".join(shown) == "[the docs](https://example.org) say so" and gate.held == ""


def test_a_call_of_a_known_tool_that_cannot_be_read_is_named_not_shown(memory, scripted):
    scripted.replies = ['{"name": "memory_search", "arguments": {"query": "Porto" "limit": 1}}']
    shown: list[str] = []
    result = make_session(memory, scripted).turn("where do I live?", on_text=shown.append)
    assert "".join(shown).startswith("(the model asked for memory_search in a form coop could not read")
    assert '"arguments"' not in result.reply and result.tool_calls == []


def test_a_tool_result_echoed_back_as_the_answer_is_not_shown(memory, scripted):
    """Qwen2.5-Coder-1.5B's second reply in the recipe run: the tool's result in <tool_response> tags."""
    scripted.replies = ['<tool_response>\n{"error": "refused"}\n</tool_response>']
    shown: list[str] = []
    result = make_session(memory, scripted).turn("hello", on_text=shown.append)
    assert "".join(shown) == result.reply == "(the model answered with a tool's output only; ask again, or use " \
                                             "--no-tools)"
