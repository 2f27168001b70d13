"""API keys never leave coop's hands: `mask(text)` replaces every secret in a text with `[secret]`.

Two kinds of secret are masked:

- **Known values**: the keys coop is given. `register(...)` adds values to a process-wide registry; coop fills it
  from the environment at start (`register_environment`: every variable whose name ends in `_API_KEY`, plus the
  variables named by `model.api_key_env` and `memory.embedder.api_key_env` once the config is read), and with
  every key it reads before a request. Values shorter than `MIN_KNOWN_CHARS` are not registered: masking a short
  value ("test") would eat ordinary words.
- **Shapes** (`coop.privacy.secret_shapes`): strings shaped like a secret, wherever they come from (a key typed into the
  REPL, pasted into the wrong config setting, echoed by a provider, said in a conversation): detect-secrets'
  detector patterns, coop's own for providers it lacks (`sk-`, `AIza`, `hf_`, `gsk_`, `pplx-`, `r8_`, ...), whole
  JWTs, private key blocks, passwords in URLs and connection strings, key-named URL parameters, the token after
  `Bearer` (which keeps its word), and a random-looking token just after a key word ("my Mistral key is ...").
  Each shape needs a realistic length and charset and, where keys are random, a digit, so words ("sketch",
  "ask-me", "Bearer of bad news", "sk-learn") are left alone. A key that runs to the end of its line goes on over
  the next lines when they look like the rest of it (`_wrapped`: a key wrapped at a column).
- **Numbers with a check digit** (`secret_shapes.number_spans`): card numbers and IBANs, only when their check
  digits are right, so a phone number or an order id is kept.

The marker is always `[secret]`: nothing of the key is kept (not even a prefix), it cannot itself match a shape,
so masking twice changes nothing, and it contains no quote or backslash, so a masked JSON string is still JSON.

Fast enough for every stored message: known values are found by `str.replace`, and the shapes by regexes that
mostly begin with a literal, which the regex engine scans for like a substring search. This module imports nothing
of coop but `secret_shapes`: anything may use it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from coop.privacy.secret_shapes import OWN_SHAPES, detector_shapes, keyword_spans, number_spans

MARKER = "[secret]"
MIN_KNOWN_CHARS = 8
MIN_EXTRA_CHARS = 4
KEY_VARIABLE_SUFFIX = "_API_KEY"

_lock = threading.Lock()
_known: tuple[str, ...] = ()  # longest first, so a key that contains another is masked whole


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


# Every secret but those marked `whole_text` (and numbers, found in the whole text) holds a run of this many
# characters without a space: a long text is scanned line by line, only the lines that have such a run (most prose
# has none), so 2 MB take milliseconds.
LONG_RUN = 12
_LONG_RUN = re.compile(rf"\S{{{LONG_RUN},}}")
_WINDOWED_FROM = 4096


def _windows(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of each line of `text` with a long run; a short text is one window."""
    if len(text) <= _WINDOWED_FROM:
        yield 0, text
        return
    end = -1
    for run in _LONG_RUN.finditer(text):
        if run.start() < end:
            continue
        start = text.rfind("\n", 0, run.start()) + 1
        end = text.find("\n", run.end())
        end = len(text) if end < 0 else end
        yield start, text[start:end]


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """Every shape's matches in `text`, merged where they touch or overlap."""
    lowered = text.lower()
    shapes = (*OWN_SHAPES, *detector_shapes())
    spans = [span for shape in shapes if shape.whole_text for span in shape.spans(text, lowered)]
    spans += keyword_spans(text, lowered)
    for offset, window in _windows(text):
        window_lowered = lowered[offset:offset + len(window)]
        spans += [(offset + start, offset + end) for shape in shapes if not shape.whole_text
                  for start, end in shape.spans(window, window_lowered)]
    starts = {start for start, _ in spans}
    spans = [(start, _wrapped(text, end, starts)) for start, end in spans]
    spans += number_spans(text)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


_NEXT_ROW = re.compile(r"[ \t]*\r?\n([A-Za-z0-9+/_-]+={0,2})[ \t]*(?=\r?\n|\Z)")


def _wrapped(text: str, end: int, starts: set[int]) -> int:
    """Where a secret that ends at `end` really ends: a key that runs to the end of its line may go on in the next
    lines (wrapped at a column, as a key copied from an email or a narrow window is). A next line goes on with it
    when it holds key characters only, is no longer than the line before, has a digit or is as long (a full row),
    and is not a secret of its own (`starts`: a key on each line is two keys): a word alone ("thanks") is kept."""
    while (row := _NEXT_ROW.match(text, end)) is not None:
        before = end - text.rfind("\n", 0, end) - 1
        piece = row.group(1)
        if row.start(1) in starts or len(piece) > before or not (
                len(piece) == before or any(ch.isdigit() for ch in piece)):
            break
        end = row.end(1)
    return end


def mask(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every known secret and every key-shaped string replaced by `[secret]`; anything else is left
    exactly as it was. `extra`: values to mask in this text only (the key of the request that failed), from
    `MIN_EXTRA_CHARS` characters, shorter than the registry takes."""
    if not text:
        return text
    text = _mask_known(text, extra)
    pieces, last = [], 0
    for start, end in _secret_spans(text):
        if text[start:end] != MARKER:
            pieces += [text[last:start], MARKER]
            last = end
    return "".join(pieces) + text[last:] if pieces else text


def _mask_known(text: str, extra: Iterable[str | None] = ()) -> str:
    for value in extra:
        if value and len(value) >= MIN_EXTRA_CHARS and value in text:
            text = text.replace(value, MARKER)
    for value in _known:
        if value in text:
            text = text.replace(value, MARKER)
    return text


class LineMasker:
    """Masks text that arrives a line at a time (a pipe) as if its lines were one text: a secret that runs over
    lines (a private key block, a key wrapped at a column) is masked whole, its marker on the line where it
    began, the lines wholly inside it coming back empty. `feed` never waits for a later line, so a script that
    writes a line and waits for the reply is answered: it reads each line with the lines before it that an
    unfinished secret began on (or the last line alone: "password:" may be followed by it on the next)."""

    MAX_BEFORE = 65536  # characters kept to read the next line by (a private key block is a few thousand)

    def __init__(self, on_masked: Callable[[], None] | None = None) -> None:
        self.before = ""
        self.on_masked = on_masked  # told each time a line comes back changed

    def feed(self, line: str) -> str:
        masked = self._feed(line)
        if masked != line and self.on_masked is not None:
            self.on_masked()
        return masked

    def _feed(self, line: str) -> str:
        if not line.strip():  # a blank line ends every secret
            self.before = ""
            return line
        offset = len(self.before) + 1 if self.before else 0
        text = f"{self.before}\n{line}" if self.before else line
        pieces, last, open_at = [], offset, None
        for start, end in _secret_spans(text):
            if end <= offset:
                continue
            if start < offset:  # a secret that began on an earlier line: its marker is there already
                last = max(last, end)
            elif text[start:end] != MARKER:
                pieces += [text[last:start], MARKER]
                last = end
            if end == len(text):
                open_at = start
        before = text[text.rfind("\n", 0, open_at) + 1:] if open_at is not None else line
        if len(before) > self.MAX_BEFORE:  # the line the secret began on, and this one
            head = before.split("\n", 1)[0]
            before = f"{head}\n{line}" if len(head) + len(line) < self.MAX_BEFORE else line
        self.before = before
        return _mask_known("".join(pieces) + text[last:])


_URL = re.compile(r"\b[a-z][a-z0-9+.-]{1,15}://[^\s\"'<>]+", re.IGNORECASE)
_QUERY_VALUE = re.compile(r"([?&;][^=&#\s]{1,64}=)[^&#\s]+")


def mask_urls(text: str) -> str:
    """Every URL's query values and password replaced by `[secret]` (`http://h/v1?api-version=[secret]`): for log
    lines, where a provider's error may echo the `api_base` with a key in any parameter."""
    def one(url: re.Match[str]) -> str:
        masked = _QUERY_VALUE.sub(lambda m: m.group(1) + MARKER, url.group(0))
        return re.sub(r"(://[^\s/:@]+:)[^\s/@]+@", lambda m: m.group(1) + MARKER + "@", masked)
    return _URL.sub(one, text) if "://" in text else text


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
    holds back the last unfinished word (a key may still be arriving); `flush` returns the rest. A key never
    contains whitespace, except Bearer's space, so a held-back `Bearer` waits for its token; the groups of a card
    number or an IBAN are held back together until something else follows them."""

    _BEARER_END = re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s*\Z")

    # the start of a card number or an IBAN, whose groups may still be arriving
    _NUMBER_END = re.compile(r"(?<![\w+])(?:[2-6][0-9]{3}[0-9 -]*|[A-Za-z]{2}[0-9]{2}[A-Za-z0-9 -]*)\Z")

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
        held = [m.start() for m in (self._BEARER_END.search(self.pending[start:cut]),
                                    self._NUMBER_END.search(self.pending[start:cut])) if m is not None]
        if held:
            cut = start + min(held)
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        return mask(ready)

    def flush(self) -> str:
        ready, self.pending = self.pending, ""
        return mask(ready)
