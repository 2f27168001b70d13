"""Which models a server says it has, so `/model NAME` can tell a typo before the next turn fails on it.

An OpenAI-compatible server lists its models at GET {api_base}/models (LM Studio, llama.cpp, vLLM, OpenAI itself);
Ollama at GET {api_base}/api/tags. Asked with the standard library (no litellm import), a short timeout, and the
key the chat would send. When the list cannot be had (another provider, the server down, an answer in another
shape) the answer is None and the caller accepts the name with a note: a list coop failed to read is never a
reason to refuse.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from coop.privacy import secrets

log = logging.getLogger(__name__)

OLLAMA_PROVIDERS = ("ollama", "ollama_chat")
OPENAI_PROVIDERS = ("openai", "hosted_vllm", "lm_studio")
OLLAMA_BASE = "http://localhost:11434"
OPENAI_BASE = "https://api.openai.com/v1"
LIST_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class Listing:
    """What the server said of a model name: `listed` when it has it; otherwise `models` it does have and the
    closest of them (`suggestion`), or `unknown` (with `why`) when its list could not be read."""

    listed: bool
    models: tuple[str, ...] = ()
    suggestion: str | None = None
    unknown: bool = False
    why: str = ""
    where: str = ""


def _get(url: str, api_key: str | None, timeout: float) -> Any:
    import http.client

    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", parts.port, timeout=timeout)
    headers = {"Accept": "application/json", "User-Agent": "coop"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise OSError(f"HTTP {response.status}")
        return json.loads(body)
    finally:
        connection.close()


def server_models(model: str, api_base: str | None, api_key: str | None,
                  timeout: float = LIST_TIMEOUT_SECONDS) -> tuple[list[str] | None, str, str]:
    """(the model names the server lists, or None; where it was asked; why not, when None)."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    read: Callable[[Any], list[Any]]
    if provider in OLLAMA_PROVIDERS:
        base = (api_base or OLLAMA_BASE).rstrip("/")
        url, read = base + "/api/tags", lambda data: [m.get("name") or m.get("model") for m in data["models"]]
    elif provider in OPENAI_PROVIDERS and (api_base or provider == "openai"):
        base = (api_base or OPENAI_BASE).rstrip("/")
        url, read = base + "/models", lambda data: [m["id"] for m in data["data"]]
    else:
        return None, "", f"coop cannot list {provider or 'this provider'}'s models"
    try:
        names = [str(name) for name in read(_get(url, api_key, timeout)) if name]
    except Exception as exc:  # down, refused, another shape: not known, never a refusal
        why = secrets.mask(f"{type(exc).__name__}: {exc}", extra=(api_key,))[:200]
        log.info("listing the models at %s failed: %s", url, why)
        return None, base, f"the server's model list could not be read ({why})"
    return names, base, ""


def _forms(provider: str, name: str) -> set[str]:
    """The names a server may list for `name`: Ollama adds ':latest' to a name without a tag."""
    if provider in OLLAMA_PROVIDERS and ":" not in name:
        return {name, name + ":latest"}
    return {name}


def check(model: str, api_base: str | None, api_key: str | None,
          timeout: float = LIST_TIMEOUT_SECONDS) -> Listing:
    """Whether the server lists `model` (the litellm form, `provider/name`)."""
    provider, _, name = model.partition("/")
    names, where, why = server_models(model, api_base, api_key, timeout)
    if names is None:
        return Listing(listed=False, unknown=True, why=why, where=where)
    if _forms(provider, name) & set(names):
        return Listing(listed=True, models=tuple(names), where=where)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return Listing(listed=False, models=tuple(names), suggestion=f"{provider}/{close[0]}" if close else None,
                   where=where)
