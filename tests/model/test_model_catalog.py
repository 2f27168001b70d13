"""`/model NAME` asks the server which models it has (coop/model/catalog.py): Ollama's /api/tags, the OpenAI list."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from coop.model import catalog


@pytest.fixture
def ollama():
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            body = json.dumps({"models": [{"name": "llama3.1:latest"}, {"name": "qwen2.5-coder:1.5b"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()


def test_ollama_names_match_with_or_without_the_latest_tag(ollama):
    base, seen = ollama
    assert catalog.check("ollama_chat/llama3.1", base, None).listed
    assert catalog.check("ollama/qwen2.5-coder:1.5b", base, None).listed
    missing = catalog.check("ollama_chat/lama3.1", base, None)
    assert not missing.listed and not missing.unknown and missing.suggestion == "ollama_chat/llama3.1:latest"
    assert seen == ["/api/tags"] * 3


def test_an_unreadable_list_is_unknown_never_a_refusal(ollama):
    base, _ = ollama
    down = catalog.check("openai/x", base + "/v1", "sk-secret-0123456789abcdefghij")  # /v1/models: 404
    assert down.unknown and not down.listed and "could not be read" in down.why and "sk-secret" not in down.why
    other = catalog.check("anthropic/claude-3-5-sonnet", None, None)
    assert other.unknown and "cannot list anthropic" in other.why
