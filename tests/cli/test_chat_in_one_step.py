"""Chat in one step (issue 45): `coop chat --model --api-base` with no config file, `coop init --model --api-base`
writing them into the file, and, with no model configured, a model server on this machine found and used (chat) or
named with the command that keeps it (check). The servers are scripted ones on 127.0.0.1, given to the discovery
in place of the usual ports (`discover.LOCAL_SERVERS`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from coop.model import discover


@pytest.fixture
def ollama_like() -> Iterator[int]:
    """A server that lists its models as Ollama does (GET /api/tags); its port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"models": [{"name": "llama3.1:8b"}, {"name": "qwen2.5:0.5b"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _port(openai_server) -> int:
    return int(urlsplit(openai_server.url).port or 0)


def test_a_dead_port_is_passed_over_and_each_kind_of_server_is_read_as_itself(ollama_like, openai_server):
    dead = ("llama.cpp", 9, "/v1/models", "openai")  # the discard port: nothing listens
    found = discover.find_local_server((dead, ("Ollama", ollama_like, "/api/tags", "ollama_chat")))
    assert found == discover.LocalServer("Ollama", "ollama_chat/llama3.1:8b", f"http://127.0.0.1:{ollama_like}")
    found = discover.find_local_server((dead, ("LM Studio", _port(openai_server), "/v1/models", "openai")))
    assert found == discover.LocalServer("LM Studio", "openai/test-model", openai_server.api_base)
    assert discover.find_local_server((dead,)) is None


def test_with_no_model_configured_chat_uses_the_server_it_finds_and_says_so(openai_server, run_cli, monkeypatch):
    monkeypatch.setattr(discover, "LOCAL_SERVERS", (("LM Studio", _port(openai_server), "/v1/models", "openai"),))
    openai_server.replies = ["Hello from the local model."]
    result = run_cli("chat", "--user", "ana", input="hi\n", env={"COOP_MEMORY_EXTRACTION_ENABLED": "false"})
    assert result.exit_code == 0, result.stderr
    assert "Hello from the local model." in result.stdout
    assert f"using LM Studio at {openai_server.api_base}, openai/test-model" in result.stderr
    assert "coop config set model.name openai/test-model" in result.stderr
    assert openai_server.chat_requests()[0]["model"] == "test-model"
    checked = run_cli("check")
    assert "LM Studio answers at" in checked.stdout + checked.stderr


def test_with_no_model_and_no_server_the_error_says_both(run_cli):
    result = run_cli("chat", "--user", "ana", input="hi\n")
    assert result.exit_code == 4  # a model problem, as a missing key is
    assert "no chat model configured, and no Ollama, LM Studio or llama.cpp server answers" in result.stderr


def test_chat_model_and_api_base_flags_need_no_config_file(openai_server, run_cli, coop_home):
    openai_server.replies = ["Flags are enough."]
    result = run_cli("chat", "--model", "openai/test-model", "--api-base", openai_server.api_base, "--user", "ana",
                     input="hi\n", env={"COOP_MEMORY_EXTRACTION_ENABLED": "false"})
    assert result.exit_code == 0, result.stderr
    assert "Flags are enough." in result.stdout
    assert not (coop_home / "config.toml").exists()


def test_init_writes_the_model_and_its_server_into_the_file(openai_server, run_cli, coop_home):
    made = run_cli("init", "--model", "openai/test-model", "--api-base", openai_server.api_base)
    assert made.exit_code == 0, made.stderr
    text = (coop_home / "config.toml").read_text()
    assert 'name = "openai/test-model"' in text and f'api_base = "{openai_server.api_base}"' in text
    openai_server.replies = ["From the file."]
    result = run_cli("chat", "--user", "ana", input="hi\n", env={"COOP_MEMORY_EXTRACTION_ENABLED": "false"})
    assert result.exit_code == 0 and "From the file." in result.stdout, result.stderr
    assert run_cli("init", "--force", "--model", " ").exit_code == 2


def test_config_set_makes_the_file_when_there_is_none_and_keeps_every_comment(run_cli, coop_home):
    from coop.config.loading import load_config

    assert run_cli("config", "set", "model.name", "ollama_chat/llama3.1").exit_code == 0
    first = (coop_home / "config.toml").read_text()
    assert first.startswith("# coop configuration.") and 'name = "ollama_chat/llama3.1"' in first
    for key, raw, expected in (("model.api_base", "http://127.0.0.1:11434", "http://127.0.0.1:11434"),
                               ("memory.extraction.enabled", "false", False),
                               ("model.timeout_seconds", "45", 45.0)):
        done = run_cli("config", "set", key, raw)
        assert done.exit_code == 0, done.stderr
        section, _, name = key.rpartition(".")
        value = load_config()
        for part in section.split("."):
            value = getattr(value, part)
        assert getattr(value, name) == expected
    after = (coop_home / "config.toml").read_text()
    comments = [line for line in first.splitlines() if line.startswith("#")]
    assert comments == [line for line in after.splitlines() if line.startswith("#")]


def test_config_set_refuses_a_bad_value_or_key_and_changes_nothing(run_cli, coop_home):
    path = coop_home / "config.toml"
    coop_home.mkdir(parents=True, exist_ok=True)
    path.write_text('# mine\n[model]\nname = "openai/gpt-4o-mini"  # the one I pay for\n')
    before = path.read_text()
    for args, words in ((("memory.extraction.enabled", "maybe"), "true or false"),
                        (("model.nmae", "x"), "did you mean 'model.name'"),
                        (("model.timeout_seconds", "0"), "model.timeout_seconds")):
        refused = run_cli("config", "set", *args)
        assert refused.exit_code == 2 and words in refused.stderr, refused.stderr
        assert path.read_text() == before
    assert run_cli("config", "set", "model.name", "openai/gpt-4o").exit_code == 0
    assert path.read_text() == before.replace("gpt-4o-mini", "gpt-4o")  # the comment on the line stays
