"""A reply the server cuts off (no finish reason), that hits the length limit, or that fails mid-way is kept
marked `[incomplete]`, with one line saying so; a whole reply is not marked."""

from __future__ import annotations

import json

import pytest

from coop.chat.session import INCOMPLETE_MARK


def chat(run_cli, openai_server, *args: str, lines: str = "tell me a list\n"):
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
           "COOP_MEMORY_EXTRACTION_ENABLED": "false"}
    return run_cli("chat", "--user", "ana", *args, input=lines, env=env)


def stored_replies(run_cli) -> list[str]:
    listed = run_cli("memory", "list", "--kind", "message", "--user", "ana", "--json").json()
    return [m["text"] for m in listed if m["role"] == "assistant"]


@pytest.mark.parametrize(("reply", "why"), [
    ({"content": "Here is a long list:\n- one\n- two", "cut": True}, "the stream ended before the reply was finished"),
    ({"content": "Here is a long list:\n- one\n- two", "finish": "length"}, "the reply reached the model's length limit"),
])
def test_a_reply_that_stops_short_is_marked_and_said_once(run_cli, openai_server, reply, why):
    openai_server.replies = [reply]
    result = chat(run_cli, openai_server)
    assert result.exit_code == 0
    assert result.stdout.startswith("Here is a long list:")
    notes = [line for line in result.stderr.splitlines() if "incomplete" in line]
    assert notes == [f"note: {why}; it is kept, marked [incomplete]"]
    assert stored_replies(run_cli) == ["Here is a long list:\n- one\n- two" + INCOMPLETE_MARK]


def test_an_error_mid_reply_keeps_the_text_marked(run_cli, openai_server):
    openai_server.replies = [{"content": "Some text before", "error_midway": True}]
    result = chat(run_cli, openai_server)
    assert result.exit_code == 4 and "error:" in result.stderr
    assert stored_replies(run_cli) == ["Some text before" + INCOMPLETE_MARK]


def test_a_whole_reply_is_not_marked_and_json_says_so(run_cli, openai_server):
    openai_server.replies = ["All done.", {"content": "Half a sent", "cut": True}]
    result = chat(run_cli, openai_server, "--json", lines="first\nsecond\n")
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["incomplete"] for t in turns] == [None, "the stream ended before the reply was finished"]
    assert stored_replies(run_cli) == ["Half a sent" + INCOMPLETE_MARK, "All done."]
    assert "incomplete" not in result.stderr


def test_the_next_turn_shows_the_model_its_cut_reply_as_cut(run_cli, openai_server):
    openai_server.replies = [{"content": "Step one, then", "cut": True}, "Go on."]
    chat(run_cli, openai_server, lines="how do I do it\ncontinue please\n")
    history = openai_server.chat_requests()[1]["messages"]
    assert {"role": "assistant", "content": "Step one, then" + INCOMPLETE_MARK} in history
