"""The one place that imports litellm, and the seam between coop and any chat model.

`ChatModel` is what the chat turn and the memory jobs need of a model: `stream` a reply (text, then tool calls),
and `complete` a whole reply (the fast model's JSON). `LiteLLMModel` is the real one; tests pass a scripted
model that implements the same protocol. A failure is a `ModelError` whose `kind` says what went wrong as
data (`ErrorKind`), so callers decide on it without matching message strings.

litellm is imported lazily, because the import alone costs seconds; until it is loaded, a request to an
OpenAI-compatible server goes out through coop/model/lean.py (httpx), so a chat's first message does not wait.

Before the import, `LITELLM_LOCAL_MODEL_COST_MAP=True` stops litellm fetching its price list from the network
(nothing leaves the machine except requests to the configured model), and its debug notices are silenced.
Every litellm exception is mapped to a `ModelError` whose message never contains the API key: each key coop reads
is registered with `coop.privacy.secrets`, and every error text is masked.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from coop.errors import ErrorKind, ModelError
from coop.model import credentials, lean, model_map, reply_limit
from coop.model.errors import RETRYABLE_KINDS, map_error
from coop.model.json_modes import refuses_mode
from coop.model.ollama import OLLAMA_PROVIDERS, ollama_context
from coop.privacy import secrets

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.model.json_modes import StructuredCompleter

log = logging.getLogger(__name__)
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


def loaded() -> bool:
    """Whether litellm is imported and configured (requests go through it from then on)."""
    return _litellm is not None


def warm_lean() -> None:
    """What a request sent before litellm is loaded needs (http.client, litellm's model map read as text): loaded
    first by the chat's warm-up, so a message typed at once finds it ready."""
    import http.client  # noqa: F401

    model_map.map_text()


def warm_up(model: str) -> None:
    """Everything the first request would otherwise import on the spot, so a chat's first turn costs what a
    later one does: litellm itself (about two seconds), a streamed completion with a tool and litellm's
    `mock_response` (its own lazy imports; nothing is sent anywhere), and the OpenAI client's resources and
    HTTP transport, which litellm's OpenAI-compatible handlers import on their first request (half a second).
    Run from a background thread while the user types; a failure only means no warm-up."""
    litellm = get_litellm()
    tool = {"type": "function", "function": {"name": "warm_up", "description": "unused",
                                             "parameters": {"type": "object", "properties": {}}}}
    try:  # with a tool: litellm imports its MCP handling (half a second) for any request that offers tools
        for _ in litellm.completion(model=model, messages=[{"role": "user", "content": "warm-up"}],
                                    tools=[tool], mock_response="ok", stream=True):
            pass
        import httpcore._sync  # noqa: F401
        import openai.resources  # noqa: F401
    except Exception as exc:  # nothing depends on it
        log.debug("model client warm-up failed: %s", exc)


def supports_tools(model: str) -> bool | None:
    """litellm's capability data: whether `model` calls tools natively; None when litellm does not know it.
    Before litellm is loaded, an OpenAI-compatible model is looked up in its map directly (coop/model/model_map.py)."""
    if _litellm is None and model.split("/", 1)[0] in lean.LEAN_PROVIDERS:
        return model_map.supports_function_calling(model)
    try:
        known = get_litellm().get_model_info(model=model).get("supports_function_calling")
    except Exception:  # not in litellm's model map (any local model name): unknown
        return None
    return None if known is None else bool(known)


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
    secrets.register(api_key)
    api_key = local_server_key(model, api_base, api_key)
    try:
        response = litellm.embedding(model=model, input=texts, api_base=api_base, api_key=api_key, timeout=timeout)
    except Exception as exc:
        raise map_error(exc, model, api_key, api_base) from None
    data = sorted(response.data, key=lambda item: item["index"] if isinstance(item, dict) else item.index)
    return [item["embedding"] if isinstance(item, dict) else item.embedding for item in data]


# --- chat ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSettings:
    """Where and how to reach one model; the key is read from the environment when the request is made."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    num_ctx: int = 0  # Ollama: the largest context window to ask for (see `ollama_context`); 0: not set
    retries: int = 2
    backoff_seconds: float = 0.5
    max_reply_chars: int = 200_000  # past it the stream stops (coop/model/reply_limit.py)

    def api_key(self) -> str | None:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        secrets.register(key)  # masked wherever it shows up from now on (a provider may echo it)
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


class ChatModel(Protocol):
    """A chat model as the turn and the memory jobs use it."""

    name: str

    def stream(self, messages: list[dict[str, Any]], *,
               tools: list[dict[str, Any]] | None = None) -> Iterator[Delta]:
        """Text deltas as they come, then one Delta with the tool calls (if any) and the finish reason. Raises
        `ModelError`; after the first delta a failure is raised too, so the caller keeps the partial text."""
        ...

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> str:
        """A whole (non-streamed) reply's text: for the fast model's background jobs (extraction, summaries)."""
        ...


def stopped_short(finish: str | None) -> str | None:
    """Why a reply that ended with `finish` is not whole, or None when it is: a stream that ends without a finish
    reason was cut off (a server restarted, a proxy timed out); "length" is the model's output limit."""
    return {None: "the stream ended before the reply was finished", "length": "the reply reached the model's length "
            "limit", reply_limit.TRUNCATED: reply_limit.TRUNCATED_REASON}.get(finish)


def check_credentials(settings: ModelSettings) -> None:
    """A ModelError naming the variable when the model's API key is not in the environment."""
    missing = credentials.missing_key(settings.model, settings.api_key_env, settings.api_base)
    if missing:
        raise ModelError(f"{missing} is not set; {settings.model} needs it",
                         hint=credentials.missing_key_hint(missing), kind=ErrorKind.AUTH)


MIN_ATTEMPT_SECONDS = 1.0  # a retry is made only when at least this much of the user's timeout is left for it


def _retryable(error: ModelError) -> bool:
    """Rate limits, server errors, timeouts and dropped connections are worth another try; 4xx are not."""
    return error.kind in RETRYABLE_KINDS


class LiteLLMModel:
    """A `ChatModel` through litellm, with retries (before the first token only) and backoff between them.
    `sleep` is injectable so tests never wait out a real backoff."""

    def __init__(self, settings: ModelSettings, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.name = settings.model
        self.sleep = sleep
        self.clock = clock
        self.whole_with_tools = False  # set when a streamed request with tools came back empty (llama-cpp-python)

    def _call(self, **kwargs: Any) -> Any:
        settings = self.settings
        check_credentials(settings)  # before any request: the provider's answer would puzzle, after retries
        if settings.num_ctx and settings.model.split("/", 1)[0] in OLLAMA_PROVIDERS:
            kwargs = ollama_context(kwargs, settings.num_ctx, settings.model)
        api_key = settings.api_key()
        attempt = 0
        deadline = self.clock() + settings.timeout  # the user's timeout bounds every attempt together
        while True:
            timeout = max(deadline - self.clock(), MIN_ATTEMPT_SECONDS)
            try:
                if _litellm is None and settings.api_base and lean.eligible(settings.model, settings.api_base, kwargs):
                    return lean.request(settings.model, settings.api_base, api_key, timeout, kwargs)
                return get_litellm().completion(model=settings.model, api_base=settings.api_base, api_key=api_key,
                                                timeout=timeout, num_retries=0, **kwargs)
            except Exception as exc:
                error = map_error(exc, settings.model, api_key, settings.api_base)
                if refuses_mode(error, kwargs.get("response_format")):
                    raise ModelError(error.message, hint="coop asks the next JSON mode",
                                     kind=ErrorKind.MODE_REFUSED) from None
                backoff = settings.backoff_seconds * (2 ** attempt)
                if _retryable(error) and attempt < settings.retries \
                        and deadline - self.clock() >= backoff + MIN_ATTEMPT_SECONDS:
                    attempt += 1
                    self.sleep(backoff)
                    continue
                raise error from None

    def stream(self, messages: list[dict[str, Any]], *,
               tools: list[dict[str, Any]] | None = None) -> Iterator[Delta]:
        """Stream a reply. An empty stream (no text, no tool call) is a ModelError."""
        if tools and self.whole_with_tools:  # it streamed nothing with tools before: ask whole at once
            yield from self._whole(messages, tools)
            return
        kwargs: dict[str, Any] = {"messages": messages, "stream": True}
        if tools:
            kwargs["tools"] = tools
        response = self._call(**kwargs)
        calls: dict[int, ToolCall] = {}
        finish = None
        produced = False
        settings = self.settings
        try:
            for chunk in (limited := reply_limit.Limited(response, settings.max_reply_chars)):
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
            raise map_error(exc, settings.model, settings.api_key(), settings.api_base) from None
        # litellm closes a stream the server cut off with a made-up "stop"; what the server really said is kept
        # on the stream object, and None there means the reply never finished.
        finish = limited.finish(getattr(response, "received_finish_reason", finish) if finish == "stop" else finish)
        if not produced and tools:  # llama-cpp-python streams nothing for a request with tools; whole, it answers
            log.info("%s streamed an empty reply to a request with tools; asked again without streaming", self.name)
            self.whole_with_tools = True
            yield from self._whole(messages, tools)
            return
        if not produced:
            raise ModelError(f"{settings.model} returned an empty reply", hint="retry, or try another model",
                             kind=ErrorKind.EMPTY)
        yield Delta(tool_calls=[c for _, c in sorted(calls.items()) if c.name and not limited.truncated],
                    finish_reason=finish)

    def _whole(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Iterator[Delta]:
        """One reply asked for whole (not streamed), as the deltas `stream` yields."""
        message = self._call(messages=messages, tools=tools).choices[0].message
        calls = [ToolCall(c.id or "", c.function.name or "", c.function.arguments or "")
                 for c in getattr(message, "tool_calls", None) or []]
        if not (message.content or calls):
            raise ModelError(f"{self.name} returned an empty reply", hint="retry, or try another model",
                             kind=ErrorKind.EMPTY)
        yield Delta(text=message.content or "")
        yield Delta(tool_calls=calls, finish_reason="tool_calls" if calls else "stop")

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = False,
                 response_format: dict[str, Any] | None = None, temperature: float | None = None,
                 max_tokens: int | None = None) -> str:
        kwargs: dict[str, Any] = {"messages": messages}
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        response = self._call(**kwargs)
        try:
            return response.choices[0].message.content or ""
        except (AttributeError, IndexError) as exc:
            raise ModelError(f"{self.settings.model} returned a malformed reply", hint="retry, or try another model",
                             kind=ErrorKind.MALFORMED) from exc


# --- from the config ---------------------------------------------------------------------------------------

NO_MODEL_HINT = ("set [model] name in the config (`coop init` writes one), e.g. 'openai/gpt-4o-mini' with "
                 "api_key_env = \"OPENAI_API_KEY\", or a local OpenAI-compatible server such as Ollama "
                 "('ollama/llama3.1') or LM Studio through model.api_base; or pass --model")


def model_settings(config: "Config", name: str | None = None) -> ModelSettings:
    """How to reach the model `name` (default: the configured chat model) with `[model]`'s server and key."""
    model = config.model
    name = name or model.name
    # With no api_key_env, a known provider's own variable (OPENAI_API_KEY, ...) is the one the key is read from
    # and the one named when it is missing.
    key_env = model.api_key_env or credentials.key_variable(name, None, model.api_base or None) or None
    return ModelSettings(name, model.api_base or None, key_env, timeout=model.timeout_seconds, num_ctx=model.num_ctx,
                         max_reply_chars=model.max_reply_chars)


def chat_model(config: "Config", name: str | None = None) -> ChatModel:
    """The chat model, or a ModelError that says how to configure one."""
    if not (name or config.model.name):
        raise ModelError("no chat model configured", hint=NO_MODEL_HINT, kind=ErrorKind.NOT_FOUND)
    return LiteLLMModel(model_settings(config, name))


def fast_complete(config: "Config") -> "StructuredCompleter | None":
    """The fast model (extraction, reconciliation, summaries) as the `complete(messages, schema=...) -> text`
    callable the memory engine takes, asking for JSON the best way the model allows (coop/model/json_modes.py), or None
    when no model is configured."""
    from coop.config.loading import coop_home
    from coop.model.json_modes import MODES_FILE, ModeMemory, StructuredCompleter

    name = config.model.fast or config.model.name
    if not name:
        return None
    settings = replace(model_settings(config, name), timeout=config.model.fast_timeout_seconds)  # background work
    return StructuredCompleter(LiteLLMModel(settings), name, ModeMemory(coop_home() / MODES_FILE))
