"""Provider failures as coop's `ModelError`: what failed, what kind of failure (`ErrorKind`, as data), what to do.

litellm raises its own exception classes; coop/model/lean.py raises classes with the same names. Both are read
here by name, so a failure means the same thing whichever path sent the request. Every message is masked
(`privacy.secrets.mask`, with the key that was used) before it is cut, so no key is cut in half and left
recognisable.
"""

from __future__ import annotations

import re

from coop.errors import ErrorKind, ModelError
from coop.privacy import secrets

__all__ = ["RETRYABLE_KINDS", "map_error"]


def _clean_detail(text: str) -> str:
    """litellm repeats class names ("litellm.InternalServerError: InternalServerError: OpenAIException - x");
    keep the part a person can read (the class names are litellm's internals, never shown)."""
    first = text.splitlines()[0] if text else ""
    while True:
        stripped = re.sub(r"^\s*(litellm\.)?[A-Za-z]*(Error|Exception)\s*[:-]\s*", "", first)
        if stripped == first:
            return first.strip()
        first = stripped


# litellm's exception class names, each with what kind of failure it is, what it means in words (the class name is
# litellm's, not the person's), and what to do about it.
_KINDS: dict[str, tuple[ErrorKind, str, str]] = {
    "AuthenticationError": (ErrorKind.AUTH, "the key was refused",
                            "check the API key in the variable named by model.api_key_env"),
    "PermissionDeniedError": (ErrorKind.AUTH, "the key may not use this model",
                              "the key is not allowed to use this model"),
    "NotFoundError": (ErrorKind.NOT_FOUND, "no such model here",
                      "check the model name (litellm form, e.g. 'openai/gpt-4o-mini')"),
    "RateLimitError": (ErrorKind.RATE_LIMIT, "too many requests",
                       "the provider is rate limiting: wait a moment and retry"),
    "BadRequestError": (ErrorKind.BAD_REQUEST, "the request was refused",
                        "the provider refused the request: check the model name and its options"),
    "ContextWindowExceededError": (ErrorKind.CONTEXT_WINDOW, "the prompt is too long for this model",
                                   "the prompt is too long for this model: lower memory.context_budget"),
    "ServiceUnavailableError": (ErrorKind.SERVER, "the provider is unavailable",
                                "the provider is unavailable: retry later"),
    "InternalServerError": (ErrorKind.SERVER, "the server failed", "the provider failed: retry later"),
    "APIError": (ErrorKind.SERVER, "the provider failed", "the provider failed: retry later"),
}
RETRYABLE_KINDS = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.CONNECTION, ErrorKind.TIMEOUT, ErrorKind.SERVER})


def map_error(exc: Exception, model: str, api_key: str | None = None, api_base: str | None = None) -> ModelError:
    """A friendly `ModelError` for any provider exception: what failed, what kind of failure, what to do."""
    name = type(exc).__name__
    # the key that was used, however short, and every registered or key-shaped secret; masked before it is cut,
    # so no key is cut in half and left recognisable
    detail = secrets.mask(_clean_detail(str(exc)), extra=(api_key,))[:300]
    if re.fullmatch(r"(litellm\.)?[A-Za-z]*(Error|Exception)|" + re.escape(name), detail):
        detail = ""  # an exception with no message of its own: its class name is litellm's, not the person's
    lowered = str(exc).lower()
    if name == "APIConnectionError" or isinstance(exc, ConnectionError) or "connection error" in lowered \
            or "connection refused" in lowered:
        where = api_base or "the provider"
        return ModelError(f"{model}: cannot reach {where}",
                          hint="is the server running? check model.api_base and your network",
                          kind=ErrorKind.CONNECTION)
    if name == "Timeout" or isinstance(exc, TimeoutError) or "timed out" in lowered:
        return ModelError(f"{model}: no answer in time" + (f" ({detail})" if detail else ""),
                          hint="retry, or raise model.timeout_seconds", kind=ErrorKind.TIMEOUT)
    kind, words, hint = _KINDS.get(name, (ErrorKind.OTHER, "the request failed", "run `coop check`, or retry"))
    if kind is ErrorKind.BAD_REQUEST and "tool" in lowered:
        kind = ErrorKind.TOOLS_UNSUPPORTED
    return ModelError(f"{model}: {words}" + (f": {detail}" if detail else ""), hint=hint, kind=kind)
