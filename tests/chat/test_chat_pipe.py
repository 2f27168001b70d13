"""`coop chat` as a program: stdin lines are turns, replies go to stdout, memory reaches the model's prompt."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from tests.notes import note, notes


def run_chat(args, stdin: bytes | str, env_extra: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", "coop", "chat", *args], input=data, capture_output=True,
                          env=env, timeout=timeout)


@pytest.fixture
def chat_env(openai_server, coop_home):
    return {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
            "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_echo_into_coop_chat_prints_the_reply_and_exits_0(openai_server, chat_env, run_cli):
    assert run_cli("memory", "add", "My name is Sam and I live in Lyon", "--user", "sam").exit_code == 0
    openai_server.replies = ["You are Sam, and you live in **Lyon**."]
    result = run_chat(["--user", "sam"], "what do you know about me?\n", chat_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "You are Sam, and you live in **Lyon**."
    [request] = openai_server.chat_requests()
    system = request["messages"][0]["content"]
    assert "): the user said “My name is Sam and I live in Lyon”" in system
    assert request["messages"][-1] == {"role": "user", "content": "what do you know about me?"}
    assert request["model"] == "test-model" and request["stream"] is True


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_json_mode_prints_one_object_per_turn(openai_server, chat_env):
    openai_server.replies = ["first answer", "second answer"]
    result = run_chat(["--json"], "hello\nand again\n", chat_env)
    assert result.returncode == 0, result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [line["reply"] for line in lines] == ["first answer", "second answer"]
    assert lines[0]["session_id"] == lines[1]["session_id"] and lines[0]["error"] is None
    assert lines[0]["user_message_id"].startswith("m")


def test_no_model_configured_says_how_and_exits_4_as_every_model_problem_does(coop_home):
    result = run_chat([], "hi\n", {"COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"})
    assert result.returncode == 4
    err = result.stderr.decode()
    assert "no chat model configured" in err and "hint:" in err and "api_base" in err


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_binary_lines_on_stdin_are_reported_and_skipped(openai_server, chat_env):
    openai_server.replies = ["hello back"]
    result = run_chat([], b"\xff\xfe\x80 not utf-8\nbin\x00ary\nhello\n", chat_env)
    assert result.returncode == 0
    err = result.stderr.decode()
    assert "input line 1 is not UTF-8" in err and "input line 2 contains binary data" in err
    assert result.stdout.decode().strip() == "hello back"
    assert [r["messages"][-1]["content"] for r in openai_server.chat_requests()] == ["hello"]


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_model_down_in_pipe_mode_reports_and_exits_4(chat_env):
    env = {**chat_env, "COOP_MODEL_API_BASE": "http://127.0.0.1:9/v1", "COOP_MODEL_TIMEOUT_SECONDS": "2"}
    result = run_chat([], "hello\n", env)
    assert result.returncode == 4
    assert "cannot reach http://127.0.0.1:9/v1" in result.stderr.decode()
    assert "hint:" in result.stderr.decode()


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_coop_trace_file_env(openai_server, chat_env, tmp_path):
    trace = tmp_path / "t.jsonl"
    run_chat([], "hello\n", {**chat_env, "COOP_TRACE_FILE": str(trace)})
    events = [json.loads(line)["event"] for line in trace.read_text().splitlines()]
    assert events == ["retrieval", "prompt", "model"]


def test_terminal_detection_honours_term_dumb():
    from coop.chat.terminal import interactive_terminal

    class Tty:
        def isatty(self):
            return True

    assert interactive_terminal(Tty(), Tty(), {"TERM": "xterm"})
    assert not interactive_terminal(Tty(), Tty(), {"TERM": "dumb"})
    assert not interactive_terminal(None, Tty(), {})
    assert not interactive_terminal(io.StringIO(), Tty(), {})


def test_an_empty_user_id_is_refused_before_anything_is_sent(openai_server, chat_env, coop_home):
    result = run_chat(["--user", ""], "hello\n", chat_env)
    assert result.returncode == 2
    assert "the user id is empty" in result.stderr.decode()
    assert openai_server.requests == []
    assert not (coop_home / "coop.db").exists()


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_a_reversed_instruction_and_each_change_are_shown_on_stderr_with_their_undo(openai_server, chat_env,
                                                                                    run_cli):
    added = run_cli("memory", "add", "Always answer in French", "--category", "instruction", "--key",
                    "answer_language", "--user", "sam", "--json")
    assert added.exit_code == 0, added.stderr
    # the language to answer in is one slot: the new instruction supersedes the old by the table, with no question
    openai_server.background_replies = [notes(
        note("Answer in English", "answer in English please", kind="instruction", topic="answer_language"),
        note("Has a cat named Mochi", "say hi to my cat Mochi", topic="pet"))]
    openai_server.replies = ["Sure."]
    result = run_chat(["--user", "sam"], "From now on, answer in English please, and say hi to my cat Mochi.\n",
                      chat_env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "Sure."  # stdout holds the replies only
    notices = result.stderr.decode()
    listed = run_cli("memory", "list", "--kind", "fact", "--user", "sam", "--json").json()
    english = next(f["id"] for f in listed if f["text"] == "Answer in English")
    cat = next(f["id"] for f in listed if f["text"] == "Has a cat named Mochi")
    assert (f"standing instruction changed: “Always answer in French” -> “Answer in English” ({english}; "
            f"undo: coop memory undo {english})") in notices
    assert f"{cat} added: “Has a cat named Mochi” (undo: coop memory undo {cat})" in notices
    assert notices.count("standing instruction changed") == 1  # each change once
