"""The first requests to a local OpenAI-compatible server, sent with the standard library while litellm loads.

`import litellm` costs 3.5 s on an idle machine (5 s and more on a busy one), and `coop chat` shows its prompt
long before that; a message typed at once waited for the import. For a model litellm would reach through the
OpenAI-compatible protocol anyway (`openai/NAME` with an `http://` `model.api_base`: LM Studio, llama.cpp, vLLM,
Ollama's /v1), the request is plain JSON over HTTP, which `http.client` sends as well, at no import cost (httpx,
which litellm uses, takes 0.3 s to import). So until litellm is loaded, `coop.model.llm` sends such requests
here; from then on, through litellm. An `https://` server, a proxy in the environment, or an option this module
does not send (Ollama's `num_ctx`, ...) waits for litellm, which knows their ways.

What the rest of coop relies on is kept: a streamed reply comes as chunks shaped like litellm's (`choices[0].delta`
with `content` and `tool_calls`, `finish_reason`), a whole one as `choices[0].message`; `received_finish_reason` is
what the server really said (None when the stream was cut off); failures raise exceptions named as litellm's are
(`AuthenticationError`, `RateLimitError`, `APIConnectionError`, `Timeout`, ...), so `coop.model.errors.map_error`
gives them the same `ErrorKind`, message and hint, masked the same way; the timeout applies to each network
operation, as the OpenAI client's does; the retries are `llm`'s own loop around either path (tests/model/test_lean.py
runs the same scripted replies through both).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

# What the lean path sends; a request with anything else waits for litellm.
SENT_OPTIONS = frozenset({"messages", "stream", "tools", "temperature", "max_tokens", "response_format"})
LEAN_PROVIDERS = ("openai",)  # litellm sends these to api_base as OpenAI chat completions, unchanged
_PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


class LeanError(Exception):
    """A failure of a lean request; subclasses carry litellm's exception names, which `map_error` reads."""


class AuthenticationError(LeanError): ...
class PermissionDeniedError(LeanError): ...
class NotFoundError(LeanError): ...
class RateLimitError(LeanError): ...
class BadRequestError(LeanError): ...
class ContextWindowExceededError(LeanError): ...
class ServiceUnavailableError(LeanError): ...
class InternalServerError(LeanError): ...
class APIError(LeanError): ...
class APIConnectionError(LeanError): ...
class MidStreamFallbackError(LeanError): ...  # a stream gone wrong (an error event, a broken chunk): litellm's name
class Timeout(LeanError): ...  # litellm's name, which map_error reads


_BY_STATUS: dict[int, type[LeanError]] = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
                                          404: NotFoundError, 408: Timeout, 422: BadRequestError,
                                          429: RateLimitError, 500: InternalServerError, 503: ServiceUnavailableError}
# How servers say a prompt is over the context window (litellm turns these 400s into ContextWindowExceededError).
_CONTEXT_WORDS = ("context length", "context window", "maximum context", "too many tokens", "context_length_exceeded",
                  "exceeds the context", "prompt is too long")


def eligible(model: str, api_base: str | None, kwargs: dict[str, Any]) -> bool:
    """Whether this request can go out before litellm is loaded: an OpenAI-compatible provider at an explicit
    plain-HTTP server reached without a proxy, with only the options sent here."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    if not api_base or provider not in LEAN_PROVIDERS or not set(kwargs) <= SENT_OPTIONS:
        return False
    if not api_base.lower().startswith("http://") or not urlsplit(api_base).hostname:
        return False
    return not any(os.environ.get(name) for name in _PROXY_VARIABLES)


def _namespace(value: Any) -> Any:
    """JSON as attribute access (`chunk.choices[0].delta.content`), the shape litellm's objects have."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(k): _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


def _error_text(body: bytes) -> str:
    """The server's own words: `error.message` of an OpenAI-style error body, else the body's start."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if isinstance(error, str):
        return error
    return (str(data.get("message") or data.get("detail") or text) if isinstance(data, dict) else text)[:500]


def _status_error(status: int, body: bytes) -> LeanError:
    message = _error_text(body)
    kind = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else BadRequestError)
    if kind is BadRequestError and any(word in message.lower() for word in _CONTEXT_WORDS):
        kind = ContextWindowExceededError
    return kind(f"OpenAIException - {message or f'HTTP {status}'}")


def _transport_error(exc: Exception) -> LeanError:
    if isinstance(exc, TimeoutError):
        return Timeout("Request timed out.")
    return APIConnectionError(f"Connection error. ({type(exc).__name__}: {exc})")


def request(model: str, api_base: str, api_key: str | None, timeout: float, kwargs: dict[str, Any]) -> Any:
    """One chat completion: a `LeanStream` when `kwargs["stream"]`, else the whole reply as litellm's shape.
    A failure before the reply starts raises here (so `llm`'s retries apply to it), as a `LeanError`."""
    import http.client

    errors = (OSError, http.client.HTTPException)
    url = urlsplit(api_base.rstrip("/") + "/chat/completions")
    body = json.dumps({"model": model.split("/", 1)[1], **{k: v for k, v in kwargs.items() if v is not None}})
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if kwargs.get("stream")
               else "application/json", "User-Agent": "coop"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
    try:
        connection.request("POST", url.path + (f"?{url.query}" if url.query else ""), body=body.encode(),
                           headers=headers)
        response = connection.getresponse()
        if response.status >= 400:
            raise _status_error(response.status, response.read())
        if kwargs.get("stream"):
            return LeanStream(connection, response, errors)
        data = json.loads(response.read())
    except errors as exc:
        connection.close()
        raise _transport_error(exc) from None
    except ValueError as exc:
        connection.close()
        raise APIError(f"OpenAIException - the server's reply is not JSON ({exc})") from None
    except BaseException:
        connection.close()
        raise
    connection.close()
    if isinstance(data, dict) and data.get("error"):
        raise APIError(f"OpenAIException - {_error_text(json.dumps(data).encode())}")
    return _namespace(data)


class LeanStream:
    """A server-sent-events stream of chat chunks. `received_finish_reason` is the last finish reason the server
    sent (None if it never sent one: the stream was cut off); `close()` stops reading."""

    def __init__(self, connection: Any, response: Any, errors: tuple[type[Exception], ...]) -> None:
        self.connection, self.response, self.errors = connection, response, errors
        self.received_finish_reason: str | None = None
        self.completion_stream = self  # where reply_limit.Limited looks for close()

    def __iter__(self) -> Iterator[Any]:
        try:
            while raw := self.response.readline():
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue  # blank lines, comments, event names, keep-alives
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                if not data:
                    continue
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise MidStreamFallbackError(f"OpenAIException - a stream chunk is not JSON: {data[:200]}") \
                        from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise MidStreamFallbackError(f"OpenAIException - {_error_text(data.encode())}")
                for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
                    if isinstance(choice, dict) and choice.get("finish_reason"):
                        self.received_finish_reason = choice["finish_reason"]
                yield _namespace(chunk)
        except self.errors as exc:
            raise _transport_error(exc) from None
        finally:
            self.close()

    def close(self) -> None:
        self.connection.close()
