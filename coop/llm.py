"""The one place that imports litellm: it is imported lazily, because the import alone costs seconds.

Before the import, `LITELLM_LOCAL_MODEL_COST_MAP=True` stops litellm fetching its price list from the network
(nothing leaves the machine except requests to the configured model), and its debug notices are silenced.
Every litellm exception is mapped to a `ModelError` whose message never contains the API key.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from coop.errors import ModelError

_lock = threading.Lock()
_litellm: Any = None


def get_litellm() -> Any:
    """Import and configure litellm once (thread-safe)."""
    global _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            _litellm = litellm
    return _litellm


def redact(text: str, secrets: list[str | None]) -> str:
    """Remove every secret (API keys) from a message before it is shown, logged or traced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def map_error(exc: Exception, model: str, api_key: str | None = None) -> ModelError:
    """A friendly `ModelError` for any provider exception: what failed, and what to do about it."""
    name = type(exc).__name__
    detail = redact(str(exc).splitlines()[0] if str(exc) else name, [api_key])[:300]
    hints = {
        "AuthenticationError": "check the API key variable named by model.api_key_env",
        "NotFoundError": "check the model name (litellm form, e.g. 'openai/gpt-4o-mini')",
        "RateLimitError": "the provider is rate limiting: wait a moment and retry",
        "APIConnectionError": "is the server running? check model.api_base",
        "Timeout": "the provider did not answer in time: retry, or raise model.timeout_seconds",
        "BadRequestError": "the provider refused the request: check the model name and its options",
        "ContextWindowExceededError": "the prompt is too long for this model: lower memory.context_budget",
        "ServiceUnavailableError": "the provider is unavailable: retry later",
        "InternalServerError": "the provider failed: retry later",
    }
    return ModelError(f"{model}: {name}: {detail}", hint=hints.get(name, "run `coop check`"))


def local_server_key(model: str, api_base: str | None, api_key: str | None) -> str | None:
    """A placeholder key for a keyless OpenAI-compatible server (LM Studio, Ollama, llama.cpp): the OpenAI client
    refuses to send a request without some key, and such servers ignore it. A real key always wins."""
    if api_key or not api_base or not model.startswith("openai/") or os.environ.get("OPENAI_API_KEY"):
        return api_key
    return "no-key-needed"


def embed(model: str, texts: list[str], *, api_base: str | None = None, api_key: str | None = None,
          timeout: float = 60.0) -> list[list[float]]:
    """Embeddings for `texts` from a litellm embedding model, in input order."""
    litellm = get_litellm()
    api_key = local_server_key(model, api_base, api_key)
    try:
        response = litellm.embedding(model=model, input=texts, api_base=api_base, api_key=api_key, timeout=timeout)
    except Exception as exc:
        raise map_error(exc, model, api_key) from None
    data = sorted(response.data, key=lambda item: item["index"] if isinstance(item, dict) else item.index)
    return [item["embedding"] if isinstance(item, dict) else item.embedding for item in data]
