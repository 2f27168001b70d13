"""Pipe mode and a slow local fast model (issue 31): `coop chat` fed by a script waits for the last exchange's
extraction (at most `model.fast_timeout_seconds`), shows what it learned or why not on stderr, and says so when
it left the extraction for the next start. The fast model is the scripted server, slowed down."""

from __future__ import annotations

import pytest

from tests.chat.test_chat_pipe import chat_env, run_chat  # noqa: F401  (a fixture)
from tests.notes import note, notes

FACT = notes(note("Is vegetarian", "I am vegetarian", topic="diet"))


def slowly(seconds: float):
    """The notes of "I am vegetarian", given after `seconds`."""
    return lambda body: {"content": FACT(body), "sleep": seconds}


@pytest.mark.slow  # runs `coop chat` as a process
def test_pipe_mode_waits_for_the_last_extraction_and_shows_it(openai_server, chat_env, run_cli):  # noqa: F811
    openai_server.replies = ["Noted."]
    openai_server.background_replies = [slowly(3.0)]  # longer than the old 2 s at exit
    result = run_chat(["--user", "sam"], "I am vegetarian\n", {**chat_env, "COOP_MEMORY_CONSOLIDATION_ENABLED": "0"})
    assert result.returncode == 0, result.stderr.decode()
    assert "“Is vegetarian”" in result.stderr.decode()  # the change, with its undo, on stderr
    assert [f["text"] for f in run_cli("memory", "list", "--kind", "fact", "--json", "--user", "sam").json()] == \
        ["Is vegetarian"]
    sent = [r for r in openai_server.background_requests()][0]
    assert sent["temperature"] == 0 and sent["max_tokens"] > 0


@pytest.mark.slow
def test_pipe_mode_says_when_the_extraction_was_left_for_the_next_start(openai_server, chat_env):  # noqa: F811
    openai_server.replies = ["Noted."]
    openai_server.background_replies = [slowly(6.0)]
    env = {**chat_env, "COOP_MODEL_FAST_TIMEOUT_SECONDS": "2", "COOP_MEMORY_CONSOLIDATION_ENABLED": "0"}
    result = run_chat(["--user", "sam"], "I am vegetarian\n", env)
    err = result.stderr.decode()
    assert "memory: the last exchange's extraction did not finish in 2 s; it was left for the next start" in err


@pytest.mark.slow
def test_pipe_mode_does_not_wait_for_the_extraction_of_a_turn_that_got_no_reply(openai_server, chat_env):  # noqa: F811
    """A chat model that fails: the turn's extraction (slow here) is left for the next start, and the pipe ends
    with the model's error, not after the fast model's timeout."""
    openai_server.replies = [{"status": 400, "message": "this model is down"}]
    openai_server.background_replies = [slowly(20.0)]
    env = {**chat_env, "COOP_MODEL_FAST_TIMEOUT_SECONDS": "20", "COOP_MEMORY_CONSOLIDATION_ENABLED": "0"}
    result = run_chat(["--user", "sam"], "I am vegetarian\n", env)
    err = result.stderr.decode()
    assert result.returncode == 4, err
    assert "did not finish" not in err and "Is vegetarian" not in err
