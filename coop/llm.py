"""The one place that imports litellm: it is imported lazily, because the import alone costs seconds.

Before the import, `LITELLM_LOCAL_MODEL_COST_MAP=True` stops litellm fetching its price list from the network
(nothing leaves the machine except requests to the configured model), and its debug notices are silenced.
Every litellm exception is mapped to a `ModelError` whose message never contains the API key.
"""

from __future__ import annotations

import os
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

from coop.errors import ModelError

_lock = threading.Lock()
_litellm: Any = None


def get_litellm() -> Any:
    """Import and configure litellm once (thread-safe)."""
    global _litellm
    with _lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            with warnings.catch_warnings():  # pydantic notices from litellm's import would land in the REPL
                warnings.simplefilter("ignore")
                import litellm

            # pydantic notices that litellm's types raise on first use, long after the import, would land on
            # the user's stderr; they are about litellm's code, not the user's
            warnings.filterwarnings("ignore", category=UserWarning, module=r"pydantic\..*")
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


def _clean_detail(text: str) -> str:
    """litellm repeats class names ("litellm.InternalServerError: InternalServerError: OpenAIException - x");
    keep the part a person can read."""
    first = text.splitlines()[0] if text else ""
    while True:
        stripped = re.sub(r"^\s*(litellm\.)?[A-Za-z]*(Error|Exception)\s*[:-]\s*", "", first)
        if stripped == first:
            return first.strip()
        first = stripped


def map_error(exc: Exception, model: str, api_key: str | None = None, api_base: str | None = None) -> ModelError:
    """A friendly `ModelError` for any provider exception: what failed, and what to do about it."""
    name = type(exc).__name__
    detail = redact(_clean_detail(str(exc)) or name, [api_key])[:300]
    lowered = str(exc).lower()
    if name == "APIConnectionError" or "connection error" in lowered or "connection refused" in lowered:
        where = api_base or "the provider"
        return ModelError(f"{model}: APIConnectionError: cannot reach {where}",
                          hint="is the server running? check model.api_base and your network")
    if name == "Timeout" or "timed out" in lowered:
        return ModelError(f"{model}: Timeout: no answer in time ({detail})",
                          hint="retry, or raise model.timeout_seconds")
    hints = {
        "AuthenticationError": "check the API key in the variable named by model.api_key_env",
        "PermissionDeniedError": "the key is not allowed to use this model",
        "NotFoundError": "check the model name (litellm form, e.g. 'openai/gpt-4o-mini')",
        "RateLimitError": "the provider is rate limiting: wait a moment and retry",
        "BadRequestError": "the provider refused the request: check the model name and its options",
        "ContextWindowExceededError": "the prompt is too long for this model: lower memory.context_budget",
        "ServiceUnavailableError": "the provider is unavailable: retry later",
        "InternalServerError": "the provider failed: retry later",
    }
    return ModelError(f"{model}: {name}: {detail}", hint=hints.get(name, "run `coop check`, or retry"))


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
        raise map_error(exc, model, api_key, api_base) from None
    data = sorted(response.data, key=lambda item: item["index"] if isinstance(item, dict) else item.index)
    return [item["embedding"] if isinstance(item, dict) else item.embedding for item in data]


# --- chat ----------------------------------------------------------------------------------------------------

RETRYABLE = {"RateLimitError", "APIConnectionError", "Timeout", "InternalServerError", "ServiceUnavailableError",
             "APIError"}


@dataclass(frozen=True)
class ModelSettings:
    """Where and how to reach one model; the key is read from the environment when the request is made."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 2
    backoff_seconds: float = 0.5

    def api_key(self) -> str | None:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return local_server_key(self.model, self.api_base, key)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class Delta:
    """One piece of a streamed reply: text, or (at the end) the complete tool calls the model asked for."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None


def _retryable(exc: Exception) -> bool:
    """Rate limits, server errors, timeouts and dropped connections are worth another try; 4xx are not."""
    return type(exc).__name__ in RETRYABLE or isinstance(exc, (ConnectionError, TimeoutError))


def _call(settings: ModelSettings, **kwargs: Any) -> Any:
    """One litellm.completion call with retries for retryable errors and backoff between them."""
    litellm = get_litellm()
    api_key = settings.api_key()
    attempt = 0
    while True:
        try:
            return litellm.completion(model=settings.model, api_base=settings.api_base, api_key=api_key,
                                      timeout=settings.timeout, num_retries=0, **kwargs)
        except Exception as exc:
            if _retryable(exc) and attempt < settings.retries:
                attempt += 1
                time.sleep(settings.backoff_seconds * (2 ** (attempt - 1)))
                continue
            raise map_error(exc, settings.model, api_key, settings.api_base) from None


def stream_chat(settings: ModelSettings, messages: list[dict[str, Any]], *,
                tools: list[dict[str, Any]] | None = None) -> Iterator[Delta]:
    """Stream a reply: text deltas as they come, then one Delta with the tool calls (if any) and the finish reason.

    Retries happen only before the first token; after it, a failure is raised so the caller keeps the partial
    text. An empty stream (no text, no tool call) is a ModelError.
    """
    kwargs: dict[str, Any] = {"messages": messages, "stream": True}
    if tools:
        kwargs["tools"] = tools
    response = _call(settings, **kwargs)
    calls: dict[int, ToolCall] = {}
    finish = None
    produced = False
    api_key = settings.api_key()
    try:
        for chunk in response:
            choices = getattr(chunk, "choices", None) or []
            if not choices:
                continue
            choice = choices[0]
            finish = getattr(choice, "finish_reason", None) or finish
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            for call in getattr(delta, "tool_calls", None) or []:
                index = getattr(call, "index", None) or 0
                current = calls.setdefault(index, ToolCall(id="", name="", arguments=""))
                current.id = getattr(call, "id", None) or current.id
                function = getattr(call, "function", None)
                if function is not None:
                    current.name += getattr(function, "name", None) or ""
                    current.arguments += getattr(function, "arguments", None) or ""
                produced = True
            text = getattr(delta, "content", None)
            if text:
                produced = True
                yield Delta(text=text)
    except Exception as exc:
        raise map_error(exc, settings.model, api_key, settings.api_base) from None
    if not produced:
        raise ModelError(f"{settings.model} returned an empty reply", hint="retry, or try another model")
    yield Delta(tool_calls=[c for _, c in sorted(calls.items()) if c.name], finish_reason=finish)


def complete(settings: ModelSettings, messages: list[dict[str, Any]], *, json_mode: bool = False) -> str:
    """A whole (non-streamed) reply's text: for the fast model's background jobs (extraction, summaries)."""
    kwargs: dict[str, Any] = {"messages": messages}
    if json_mode:
        kwargs["response_format"] = {"type": "json_object"}
    response = _call(settings, **kwargs)
    try:
        return response.choices[0].message.content or ""
    except (AttributeError, IndexError) as exc:
        raise ModelError(f"{settings.model} returned a malformed reply", hint="retry, or try another model") from exc
