"""`coop check` says what the models support (issue 31): litellm's data and what coop learned, always; with
`--probe`, one timed JSON request and one tool request, the JSON mode that worked and how tools were called, and
a warning for a model slower than its timeout. The models are the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

from tests.model.test_local_models import GOOD, LLAMA_CPP_REFUSAL


def env(server, **extra):
    return {"COOP_MODEL_NAME": "openai/small-local", "COOP_MODEL_API_BASE": server.api_base, **extra}


def checks(result):
    return {c["name"]: c for c in result.json()["checks"]}


def test_check_reports_what_is_known_without_sending_anything(openai_server, run_cli):
    found = checks(run_cli("check", "--json", env=env(openai_server)))
    assert "does not list it (a local model)" in found["model support"]["message"]
    assert "no request yet" in found["fast model JSON"]["message"]
    assert all(r["body"] is None for r in openai_server.requests)  # only the model list was read


def test_check_probe_finds_the_json_mode_and_tool_calls_written_as_text(openai_server, run_cli):
    openai_server.background_replies = [LLAMA_CPP_REFUSAL, GOOD]
    openai_server.replies = ['<tool_call>{"name": "memory_search", "arguments": {"query": "city"}}</tool_call>']
    result = run_cli("check", "--probe", "--json", env=env(openai_server))
    found = checks(result)
    assert "usable JSON in json_object_schema mode" in found["JSON probe"]["message"]
    assert "called the tool in its text" in found["tool probe"]["message"]
    again = checks(run_cli("check", "--json", env=env(openai_server)))  # remembered, as a chat would
    assert "json_object_schema mode worked" in again["fast model JSON"]["message"]
    assert "it called them text" in again["model support"]["message"]
    bodies = [r["body"] for r in openai_server.requests if r["body"]]
    assert [b.get("temperature") for b in bodies[:2]] == [0, 0] and "tools" in bodies[-1]


def test_a_probe_slower_than_the_timeout_is_a_warning_that_names_the_setting(openai_server, run_cli):
    openai_server.background_default = {"content": GOOD, "sleep": 1.5}
    openai_server.default_reply = {"content": "hello", "sleep": 1.5}
    result = run_cli("check", "--probe", "--json", env=env(openai_server, COOP_MODEL_TIMEOUT_SECONDS="1",
                                                           COOP_MODEL_FAST_TIMEOUT_SECONDS="1"))
    found = checks(result)
    assert found["JSON probe"]["severity"] == "warning" and "model.fast_timeout_seconds" in found["JSON probe"]["hint"]
    assert found["tool probe"]["severity"] == "warning" and "model.timeout_seconds" in found["tool probe"]["hint"]
    assert json.loads(result.stdout)["errors"] == 0


def test_a_server_too_busy_to_list_its_models_is_a_warning_not_an_error(run_cli):
    """llama-cpp-python answers one request at a time: while it generates, the model list waits."""
    import socket

    with socket.socket() as listener:  # accepts connections (the kernel's backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        result = run_cli("check", "--json", env={"COOP_MODEL_NAME": "openai/local",
                                                 "COOP_MODEL_API_BASE": f"http://127.0.0.1:{port}/v1"})
    server = checks(result)["server"]
    assert server["severity"] == "warning" and "did not list its models within 2 s" in server["message"]
