"""The lean request path (coop/model/lean.py) against litellm's: the same scripted OpenAI-compatible server, the
same replies, errors of the same kind with the same message and hint, and no litellm import on the way."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from coop.errors import ErrorKind, ModelError
from coop.model import lean, llm


def _model(server: Any, **overrides: Any) -> llm.LiteLLMModel:
    settings = llm.ModelSettings("openai/test-model", server.api_base, "COOP_TEST_LEAN_KEY", timeout=5.0, retries=0)
    for name, value in overrides.items():
        settings = llm.replace(settings, **{name: value})
    return llm.LiteLLMModel(settings, sleep=lambda _: None)


def _outcome(model: llm.LiteLLMModel, whole: bool = False, **kwargs: Any) -> Any:
    """What a caller sees: the deltas (text, tool calls, finish) or the error's kind, message and hint."""
    messages = [{"role": "system", "content": "You are coop, a test"}, {"role": "user", "content": "hi"}]
    text: list[str] = []
    try:
        if whole:
            return ("whole", model.complete(messages, **kwargs))
        calls, finish = [], None
        for delta in model.stream(messages, **kwargs):
            text.append(delta.text)
            calls += [(c.name, c.arguments) for c in delta.tool_calls]
            finish = delta.finish_reason or finish
        return ("".join(text), calls, finish)
    except ModelError as exc:
        return ("error", "".join(text), exc.kind, exc.message, exc.hint)


def _both(server: Any, monkeypatch: pytest.MonkeyPatch, replies: list[Any], **kwargs: Any) -> tuple[Any, Any]:
    """The same scripted replies through the lean path (litellm not loaded) and through litellm."""
    used: list[str] = []
    real_request = lean.request
    monkeypatch.setattr(lean, "request", lambda *a, **k: (used.append("lean"), real_request(*a, **k))[1])
    overrides = kwargs.pop("settings", {})
    monkeypatch.setattr(llm, "_litellm", None)
    server.replies[:] = list(replies)
    lean_outcome = _outcome(_model(server, **overrides), **kwargs)
    assert used, "the lean path was not taken"
    llm.get_litellm()  # loaded: requests go through litellm from now on
    used.clear()
    server.replies[:] = list(replies)
    litellm_outcome = _outcome(_model(server, **overrides), **kwargs)
    assert not used
    return lean_outcome, litellm_outcome


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COOP_TEST_LEAN_KEY", "sk-lean-test-key-0123456789abcdef")


TOOLS = [{"type": "function", "function": {"name": "search_memory", "description": "d",
                                           "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize("reply", [
    "Hello there, a streamed reply in several chunks.",
    {"content": "calling", "tool_calls": [{"name": "search_memory", "arguments": '{"query": "lentils"}'}]},
    {"content": "cut off here", "cut": True},  # no finish reason: the reply is not whole
    {"content": "length", "finish": "length"},
])
def test_a_streamed_reply_is_the_same_through_both_paths(openai_server, monkeypatch, reply):
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, [reply], tools=TOOLS)
    assert lean_outcome == litellm_outcome
    assert lean_outcome[0] != "error"


def test_the_request_sent_is_the_same(openai_server, monkeypatch):
    _both(openai_server, monkeypatch, ["ok"], tools=TOOLS)
    lean_request, litellm_request = [r for r in openai_server.requests if r["path"].endswith("/chat/completions")]
    assert lean_request["path"] == litellm_request["path"] == "/v1/chat/completions"
    assert lean_request["authorization"] == litellm_request["authorization"] == \
        "Bearer sk-lean-test-key-0123456789abcdef"
    for field in ("model", "messages", "tools", "stream"):
        assert lean_request["body"][field] == litellm_request["body"][field], field


@pytest.mark.parametrize("reply, kind", [
    ({"status": 401, "message": "bad key"}, ErrorKind.AUTH),
    ({"status": 404, "message": "no such model"}, ErrorKind.NOT_FOUND),
    ({"status": 429, "message": "slow down"}, ErrorKind.RATE_LIMIT),
    ({"status": 500, "message": "boom"}, ErrorKind.SERVER),
    ({"status": 400, "message": "this model does not support tools"}, ErrorKind.TOOLS_UNSUPPORTED),
    ({"status": 400, "message": "This model's maximum context length is 4096 tokens"}, ErrorKind.CONTEXT_WINDOW),
    ({"status": 400, "message": "echoing sk-lean-test-key-0123456789abcdef back"}, ErrorKind.BAD_REQUEST),
])
def test_an_error_is_the_same_kind_message_and_hint(openai_server, monkeypatch, reply, kind):
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, [reply], tools=TOOLS)
    assert lean_outcome[0] == "error" and lean_outcome[2] is kind
    assert lean_outcome == litellm_outcome
    assert "sk-lean-test-key" not in lean_outcome[3]  # the key is masked


@pytest.mark.parametrize("reply", [{"content": "partial", "error_midway": True}, {"malformed": True}])
def test_a_stream_that_goes_wrong_is_the_same_kind(openai_server, monkeypatch, reply):
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, [reply])
    assert lean_outcome[0] == "error" and lean_outcome[1] == reply.get("content", "")
    assert (lean_outcome[2], lean_outcome[4]) == (litellm_outcome[2], litellm_outcome[4])


def test_retries_apply_to_the_lean_path(openai_server, monkeypatch):
    monkeypatch.setattr(llm, "_litellm", None)
    openai_server.replies[:] = [{"status": 503, "message": "busy"}, {"status": 429, "message": "wait"}, "third time"]
    assert _outcome(_model(openai_server, retries=2)) == ("third time", [], "stop")
    assert len(openai_server.chat_requests()) + len(openai_server.background_requests()) == 3


def test_a_timeout_and_a_refused_connection(openai_server, monkeypatch):
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, [{"sleep": 2, "content": "late"}],
                                          settings={"timeout": 0.5})
    assert lean_outcome[2] is litellm_outcome[2] is ErrorKind.TIMEOUT
    settings = {"api_base": "http://127.0.0.1:9/v1"}
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, [], settings=settings)
    assert lean_outcome == litellm_outcome and lean_outcome[2] is ErrorKind.CONNECTION


def test_a_whole_reply_and_json_mode(openai_server, monkeypatch):
    lean_outcome, litellm_outcome = _both(openai_server, monkeypatch, ['{"notes": []}'], whole=True, json_mode=True)
    assert lean_outcome == litellm_outcome == ("whole", '{"notes": []}')
    lean_body, litellm_body = [r["body"] for r in openai_server.requests]
    assert lean_body["response_format"] == litellm_body["response_format"] == {"type": "json_object"}


def test_only_openai_compatible_requests_at_a_given_server_go_lean():
    assert lean.eligible("openai/x", "http://localhost:1234/v1", {"messages": [], "stream": True})
    assert not lean.eligible("openai/x", None, {"messages": []})  # api.openai.com: litellm's own handling
    assert not lean.eligible("ollama_chat/llama3.1", "http://localhost:11434", {"messages": []})
    assert not lean.eligible("openai/x", "http://h/v1", {"messages": [], "num_ctx": 4096})
    assert not lean.eligible("openai/x", "http://h/v1", {"messages": [], "stream_options": {}})


def test_the_first_request_does_not_import_litellm(openai_server):
    """The point of the lean path: a chat's first turn (tool support looked up, the reply streamed) needs no
    litellm import."""
    code = ("import sys; from coop.model import llm; "
            f"m = llm.LiteLLMModel(llm.ModelSettings('openai/test-model', {openai_server.api_base!r})); "
            "tools = llm.supports_tools('openai/test-model'); "
            "text = ''.join(d.text for d in m.stream([{'role': 'system', 'content': 'You are coop'}, "
            "{'role': 'user', 'content': 'hi'}])); "
            "print(text, tools, 'litellm' in sys.modules, llm.supports_tools('openai/gpt-4o-mini'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["ok", "None", "False", "True"], out.stderr[-500:]


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/gpt-4", "openai/o1-mini", "openai/local-model",
                                   "openai/gpt-3.5-turbo-instruct", "openai/text-embedding-3-small"])
def test_tool_support_before_litellm_loads_is_litellms_answer(model, monkeypatch):
    monkeypatch.setattr(llm, "_litellm", None)
    early = llm.supports_tools(model)
    llm.get_litellm()
    assert early == llm.supports_tools(model)


def test_https_a_proxy_or_another_option_waits_for_litellm(monkeypatch):
    assert not lean.eligible("openai/x", "https://api.example.com/v1", {"messages": []})
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not lean.eligible("openai/x", "http://localhost:1234/v1", {"messages": []})
