"""A local model server on this machine, for a newcomer with no model configured: Ollama, LM Studio or llama.cpp's
server on its usual port of 127.0.0.1, asked for its models with a short timeout. Nothing leaves the machine:
only localhost is asked, and only when no model is configured (`coop chat`, `coop check`)."""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

# (name, port, the path that lists its models, the litellm provider its models are reached through)
LOCAL_SERVERS: tuple[tuple[str, int, str, str], ...] = (
    ("Ollama", 11434, "/api/tags", "ollama_chat"),
    ("LM Studio", 1234, "/v1/models", "openai"),
    ("llama.cpp", 8080, "/v1/models", "openai"),
)
ASK_SECONDS = 0.3  # each port; a port with nothing on it answers at once


@dataclass(frozen=True)
class LocalServer:
    name: str
    model: str  # the litellm model string
    api_base: str

    def command(self) -> str:
        """The command that makes this the configured model for good."""
        return (f"coop config set model.name {self.model} && coop config set model.api_base {self.api_base}")


def find_local_server(servers: tuple[tuple[str, int, str, str], ...] | None = None,
                      timeout: float = ASK_SECONDS) -> LocalServer | None:
    """The first server of `servers` (by default `LOCAL_SERVERS`) that answers with at least one model."""
    for name, port, path, provider in servers if servers is not None else LOCAL_SERVERS:
        base = f"http://127.0.0.1:{port}"
        try:
            with urllib.request.urlopen(base + path, timeout=timeout) as response:  # localhost only
                listed = json.loads(response.read(1_000_000) or b"{}")
        except (OSError, ValueError):
            continue
        if not isinstance(listed, dict):
            continue
        models = [m.get("name") or m.get("model") for m in listed.get("models", []) if isinstance(m, dict)] \
            if provider.startswith("ollama") else [m.get("id") for m in listed.get("data", []) if isinstance(m, dict)]
        models = [m for m in models if isinstance(m, str) and m.strip()]
        if models:
            return LocalServer(name, f"{provider}/{models[0]}", base if provider.startswith("ollama") else base + "/v1")
    return None
