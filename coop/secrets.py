"""API keys never leave coop's hands: `mask(text)` replaces every secret in a text with `[secret]`.

Two kinds of secret are masked:

- **Known values**: the keys coop is given. `register(...)` adds values to a process-wide registry; coop fills it
  from the environment at start (`register_environment`: every variable whose name ends in `_API_KEY`, plus the
  variables named by `model.api_key_env` and `memory.embedder.api_key_env` once the config is read), and with
  every key it reads before a request. Values shorter than `MIN_KNOWN_CHARS` are not registered: masking a short
  value ("test") would eat ordinary words.
- **Shapes**: strings shaped like a provider's key, wherever they come from (a key typed into the REPL, pasted
  into the wrong config setting, echoed by a provider): OpenAI and Anthropic `sk-...` (`sk-proj-`, `sk-ant-`),
  Stripe `sk_live_`/`sk_test_...`, Google `AIza...`, Slack `xoxb-`/`xoxp-...`, GitHub `ghp_...` and
  `github_pat_...`, AWS `AKIA...`/`ASIA...`, Hugging Face `hf_...`, Groq `gsk_...`, xAI `xai-...`, and the token
  of `Bearer <token>` (which keeps its `Bearer`). Each shape needs a realistic length and charset and, where keys
  are random, a digit, so words ("sketch", "ask-me", "Bearer of bad news", "sk-learn") are left alone.

The marker is always `[secret]`: nothing of the key is kept (not even a prefix), it cannot itself match a shape,
so masking twice changes nothing, and it contains no quote or backslash, so a masked JSON string is still JSON.

Fast enough for every stored message: known values are found by `str.replace`, and the shapes by a few regexes
that each begin with a literal (`sk`, `A`, `x`, `gh`, `earer`, ...), which the regex engine scans for like a
substring search: a 2 MB message takes about 20 ms, a chat message microseconds. This module imports nothing of
coop: anything may use it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

MARKER = "[secret]"
MIN_KNOWN_CHARS = 8
MIN_EXTRA_CHARS = 4
KEY_VARIABLE_SUFFIX = "_API_KEY"

# One pattern per fixed beginning: each starts with a literal, so the regex engine scans for it as fast as a
# substring search, and a text is scanned once per pattern. "No key character just before" is a lookbehind
# placed after the literal (a lookbehind first would cost the fast scan).
_KEY = "[A-Za-z0-9_-]"
# a bearer token: 16+ characters of a token (a sentence's full stop after it is not one of them) with a digit
_TOKEN = r"(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{15,}[A-Za-z0-9_~+/-]=*"
_SHAPES: tuple[str, ...] = (
    # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-api03-...), OpenRouter (sk-or-v1-...), DeepSeek: 20+ key
    # characters with a digit; Stripe secret keys (sk_live_..., sk_test_...)
    rf"sk(?<!{_KEY}sk)(?:-(?={_KEY}*[0-9]){_KEY}{{20,}}|_(?:live|test)_[A-Za-z0-9]{{16,}})",
    # Google (AIza and 35 more), AWS access key ids (AKIA..., ASIA...: 16 more capitals and digits)
    r"A(?<![A-Za-z0-9_-]A)(?:Iza[A-Za-z0-9_-]{30,}|[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9]))",
    # Slack tokens (xoxb-, xoxp-, xoxa-, xoxe-, xoxr-, xoxs-, xoxo-) with a digit; xAI keys
    r"x(?<![A-Za-z0-9_-]x)(?:ox[abeoprs]-(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9-]{10,}|ai-[A-Za-z0-9]{40,})",
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained tokens
    r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{30,}",
    r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{30,}",
    # Hugging Face (with a digit), Groq
    r"hf_(?<![A-Za-z0-9_]hf_)(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{30,}",
    r"gsk_(?<![A-Za-z0-9_]gsk_)[A-Za-z0-9]{40,}",
    # Authorization headers: the token after Bearer; the word and the space are kept ("Bearer [secret]"). The B
    # is before the match, so it is checked by a lookbehind.
    rf"(?P<keep>earer(?<=[Bb]earer)(?<![A-Za-z0-9][Bb]earer)\s+){_TOKEN}",
    rf"(?P<keep>EARER(?<=BEARER)(?<![A-Za-z0-9]BEARER)\s+){_TOKEN}",
)

_lock = threading.Lock()
_known: tuple[str, ...] = ()  # longest first, so a key that contains another is masked whole
_compiled = tuple(re.compile(pattern) for pattern in _SHAPES)


def register(*values: str | None) -> None:
    """Add secret values (API keys) that `mask` replaces wherever they appear. Blank, short and already known
    values are ignored."""
    global _known
    fresh = {v.strip() for v in values if v and len(v.strip()) >= MIN_KNOWN_CHARS} - set(_known)
    if not fresh:
        return
    with _lock:
        _known = tuple(sorted(set(_known) | fresh, key=len, reverse=True))


def register_environment(env: Mapping[str, str] | None = None, names: Iterable[str | None] = ()) -> None:
    """Register the values of every `*_API_KEY` variable, and of the variables `names` (the configured
    `api_key_env`s), from `env` (default: the process environment)."""
    env = os.environ if env is None else env
    wanted = {n for n in names if n}
    register(*(value for name, value in env.items()
               if name in wanted or name.upper().endswith(KEY_VARIABLE_SUFFIX)))


def known() -> tuple[str, ...]:
    """The registered values (for tests and diagnostics; never print them)."""
    return _known


def _replace(match: re.Match[str]) -> str:
    return (match.groupdict().get("keep") or "") + MARKER


def mask(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every known secret and every key-shaped string replaced by `[secret]`; anything else is left
    exactly as it was. `extra`: values to mask in this text only (the key of the request that failed), from
    `MIN_EXTRA_CHARS` characters, shorter than the registry takes."""
    if not text:
        return text
    for value in extra:
        if value and len(value) >= MIN_EXTRA_CHARS and value in text:
            text = text.replace(value, MARKER)
    for value in _known:
        if value in text:
            text = text.replace(value, MARKER)
    for pattern in _compiled:
        text = pattern.sub(_replace, text)
    return text


def mask_optional(text: str | None) -> str | None:
    """`mask` for a value that may be None (a nullable column)."""
    return None if text is None else mask(text)


def mask_data(data: Any) -> Any:
    """Every string inside JSON-like data (dicts, lists, tuples) masked; keys, numbers, booleans and None are kept
    as they are."""
    if isinstance(data, str):
        return mask(data)
    if isinstance(data, dict):
        return {key: mask_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [mask_data(value) for value in data]
    return data


def contains_secret(text: str) -> bool:
    """True when `mask` would change `text`."""
    return mask(text) != text


class StreamMasker:
    """Masks text that arrives in pieces (a streamed reply): `feed` returns what can be shown now, masked, and
    holds back the last unfinished word (a key may still be arriving); `flush` returns the rest. A secret never
    contains whitespace, except Bearer's space, so a held-back `Bearer` waits for its token."""

    _BEARER_END = re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s*\Z")

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, piece: str) -> str:
        # what was held back has no whitespace (but a Bearer's), so the cut is the last whitespace of the piece
        last = max(piece.rfind(space) for space in " \n\t\r")
        self.pending += piece
        if last < 0:
            return ""
        cut = len(self.pending) - len(piece) + last + 1
        start = max(0, cut - 64)
        bearer = self._BEARER_END.search(self.pending[start:cut])
        if bearer is not None:
            cut = start + bearer.start()
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        return mask(ready)

    def flush(self) -> str:
        ready, self.pending = self.pending, ""
        return mask(ready)
