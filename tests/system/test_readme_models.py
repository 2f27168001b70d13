"""The README's "Chat with a model" snippets are real: each parses as a valid config, names a provider litellm
knows, needs the key the README says, and the OpenAI-compatible local servers answer a turn through the scripted
server with exactly that config (only `api_base` pointed at it)."""

from __future__ import annotations

import itertools
import json
import re
import tomllib

import pytest

from coop.config.loading import build_config
from coop.model.credentials import key_variable
from tests import REPO

README = REPO / "README.md"


def snippets() -> dict[str, dict]:
    """Each ```toml block of the section, by the first words of the paragraph before it."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Chat with a model", 1)[1].split("\n## ", 1)[0]
    found = {}
    pieces = section.split("```toml\n")
    for before, piece in itertools.pairwise(pieces):
        label = before.rsplit("```", 1)[-1].strip().rsplit("\n\n", 1)[-1]
        found[label.split("(")[0].strip().rstrip(":")] = tomllib.loads(piece.split("```", 1)[0])
    return found


EXPECTED = {  # label: (litellm provider, the key's variable, OpenAI-compatible server)
    "OpenAI": ("openai", "OPENAI_API_KEY", False),
    "Anthropic": ("anthropic", "ANTHROPIC_API_KEY", False),
    "Ollama, on this machine": ("ollama_chat", None, False),
    "LM Studio's local server": ("openai", None, True),
    "A llama.cpp server": ("openai", None, True),
    "With Ollama, a larger chat model and a small one for the background work": ("ollama_chat", None, False),
    "With a llama.cpp server on a laptop CPU": ("openai", None, True),  # "Fully local": one small model for both
}


def test_the_section_has_a_snippet_for_each_kind_of_model():
    assert set(snippets()) == set(EXPECTED)


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_each_snippet_is_a_valid_config_for_a_provider_litellm_knows(label):
    from coop.model.llm import get_litellm

    data = snippets()[label]
    config = build_config(data, origin="README")
    provider, variable, _ = EXPECTED[label]
    assert get_litellm().get_llm_provider(config.model.name)[1] == provider
    assert key_variable(config.model.name, config.model.api_key_env, config.model.api_base) == variable


@pytest.mark.parametrize("label", [label for label, (_, _, compatible) in EXPECTED.items() if compatible])
def test_the_local_server_snippets_chat_and_pass_the_check(label, run_cli, openai_server, tmp_path):
    data = snippets()[label]
    model_id = data["model"]["name"].split("/", 1)[1]
    openai_server.models = [model_id]
    if "llama.cpp" in label:  # llama-server lists the file it loaded, whatever name the config gives
        openai_server.models, openai_server.owned_by = ["model.gguf"], "llamacpp"
    data["model"]["api_base"] = openai_server.api_base  # the scripted server stands in for LM Studio / llama.cpp
    config = tmp_path / "coop.toml"
    config.write_text("[model]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in data["model"].items()),
                      encoding="utf-8")
    check = run_cli("--config", str(config), "check", "--json").json()
    server = {c["name"]: c for c in check["checks"]}["server"]
    assert server["severity"] == "ok" and openai_server.models[0] in server["message"], server
    openai_server.replies = ["Hello from the local server."]
    result = run_cli("--config", str(config), "chat", input="hello\n")
    assert result.exit_code == 0 and "Hello from the local server." in result.stdout
    assert openai_server.chat_requests()[0]["model"] == model_id


def test_the_missing_key_error_the_readme_quotes_is_what_coop_prints(run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    quoted = re.search(r"`(error: OPENAI_API_KEY is not set; [^`]+)`", README.read_text(encoding="utf-8"))
    assert quoted is not None
    result = run_cli("chat", "--model", "openai/gpt-4o-mini", input="hi\n")
    assert result.stderr.splitlines()[0] == quoted.group(1)
