"""The commonest mistake, a missing API key, is named at once (before any request) by the chat and by `coop
check`; `coop check` also reaches a configured `api_base` and says what the server offers."""

from __future__ import annotations

import socket
import time

import pytest

from coop.errors import ErrorKind, ExitCode, ModelError
from coop.model import llm
from coop.model.credentials import key_variable


def check(run_cli, env: dict[str, str]) -> tuple[int, dict[str, dict]]:
    result = run_cli("check", "--json", env=env)
    return result.exit_code, {c["name"]: c for c in result.json()["checks"]}


@pytest.mark.parametrize(("model", "api_key_env", "api_base", "variable"), [
    ("openai/gpt-4o-mini", "", "", "OPENAI_API_KEY"),
    ("anthropic/claude-sonnet-4-5", "", "", "ANTHROPIC_API_KEY"),
    ("openai/gpt-4o-mini", "MY_KEY", "", "MY_KEY"),
    ("openai/qwen2.5-7b-instruct", "", "http://localhost:1234/v1", None),  # LM Studio, llama.cpp: no key
    ("ollama/llama3.1", "", "", None),
    ("mystery/model", "", "", ""),  # coop cannot tell
])
def test_which_variable_holds_the_key(model, api_key_env, api_base, variable):
    assert key_variable(model, api_key_env, api_base) == variable


def test_a_key_under_another_name_litellm_reads_is_not_missing(monkeypatch):
    from coop.model.credentials import missing_key

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert missing_key("gemini/gemini-2.5-flash", None, None) == "GEMINI_API_KEY"
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert missing_key("gemini/gemini-2.5-flash", None, None) is None


def test_chat_without_the_key_says_which_variable_at_once(run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = time.monotonic()
    result = run_cli("chat", "--model", "openai/gpt-4o-mini", input="hello\n")
    assert time.monotonic() - started < 10
    assert result.exit_code == ExitCode.MODEL
    lines = result.stderr.splitlines()
    assert lines[0] == "error: OPENAI_API_KEY is not set; openai/gpt-4o-mini needs it"
    assert lines[1].startswith("hint: export OPENAI_API_KEY=")
    assert "retry later" not in result.stderr and "InternalServerError" not in result.stderr


def test_a_model_switched_to_mid_chat_without_its_key_fails_before_any_request(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(llm, "get_litellm", lambda: pytest.fail("litellm must not be asked"))
    model = llm.LiteLLMModel(llm.ModelSettings("anthropic/claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY"))
    with pytest.raises(ModelError) as caught:
        list(model.stream([{"role": "user", "content": "hi"}]))
    assert caught.value.kind is ErrorKind.AUTH and caught.value.message.startswith("ANTHROPIC_API_KEY is not set")


def test_the_providers_own_variable_is_read_when_no_api_key_env_is_set(monkeypatch):
    from coop.config.loading import Config, apply_overrides

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-1234567890")
    settings = llm.model_settings(apply_overrides(Config(), {"model.name": "openai/gpt-4o-mini"}))
    assert settings.api_key_env == "OPENAI_API_KEY" and settings.api_key() == "sk-from-the-environment-1234567890"


def test_check_lists_the_models_a_local_server_offers(run_cli, openai_server):
    openai_server.models = ["qwen2.5-7b-instruct", "llama-3.2-3b"]
    code, checks = check(run_cli, {"COOP_MODEL_NAME": "openai/qwen2.5-7b-instruct",
                                   "COOP_MODEL_API_BASE": openai_server.api_base})
    assert code == 0 and checks["server"]["severity"] == "ok"
    assert "qwen2.5-7b-instruct, llama-3.2-3b" in checks["server"]["message"]
    assert [r["path"] for r in openai_server.requests] == ["/v1/models"]  # one GET, nothing else


def test_check_warns_when_the_server_does_not_offer_the_model(run_cli, openai_server):
    openai_server.models = ["llama-3.2-3b"]
    code, checks = check(run_cli, {"COOP_MODEL_NAME": "openai/qwen2.5-7b-instruct",
                                   "COOP_MODEL_API_BASE": openai_server.api_base})
    assert code == 0 and checks["server"]["severity"] == "warning"
    assert "does not list qwen2.5-7b-instruct" in checks["server"]["message"] and "llama-3.2-3b" in \
        checks["server"]["message"]


def test_check_fails_when_nothing_listens_at_the_api_base(run_cli):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    code, checks = check(run_cli, {"COOP_MODEL_NAME": "openai/local", "COOP_MODEL_API_BASE":
                                   f"http://127.0.0.1:{port}/v1"})
    assert time.monotonic() - started < 10
    assert code == ExitCode.ERROR and checks["server"]["severity"] == "error"
    assert checks["server"]["message"].startswith(f"nothing answers at http://127.0.0.1:{port}/v1")
    assert "start the server" in checks["server"]["hint"]
