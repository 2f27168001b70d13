"""Text rules every part of the engine shares: what counts as the same text, what a word is, how text is checked
before it is stored, and how long it is in tokens.

Kept below storage, retrieval and growth so that each uses one definition: a duplicate for the fact writer is
a duplicate for the importer too, and the words search ignores are the words dedup ignores.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import unicodedata
from datetime import UTC, datetime

from coop.errors import UsageError

# Han, Hiragana/Katakana, Hangul syllables, Thai and Lao: scripts whose words are not separated by spaces.
UNSPACED_CHARS = r"\u0e00-\u0eff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNSPACED = re.compile(f"([{UNSPACED_CHARS}])")

STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves ever did does
""".split())


def fts_text(text: str | None) -> str:
    """Text as the full-text index sees it: characters of unspaced scripts split into their own tokens, so a word
    inside a Chinese sentence is a phrase of one-character tokens and still matches. Registered as the SQL
    function `coop_fts` on every connection; deterministic, so triggers give the index back exactly the tokens
    it was given."""
    if not text:
        return ""
    return _UNSPACED.sub(r" \1 ", text)


def normalise_text(text: str) -> str:
    """The form two texts are compared in for exact duplicates: NFKC, case-folded, spaces and edge punctuation
    collapsed. "I live in Lyon." and "i live in  lyon" are the same fact."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" .!?;,:\"'`")


def content_hash(text: str) -> str:
    """Never raises: text that is not valid UTF-8 (lone surrogates) gets a hash too, so a duplicate or forgotten
    check on it answers "no" and the write itself reports the bad text as a `UsageError`. Text that is nothing
    but punctuation keeps its punctuation, so "?" and "!" are not one fact."""
    normal = normalise_text(text) or " ".join(text.split())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def _continues(text: str, index: int) -> bool:
    """Whether the character at `index` belongs to the character a reader sees before it (a grapheme cluster,
    approximately as UAX #29 says, without a table): a combining mark (the accent of an NFD "é", a Thai or
    Devanagari vowel sign), a variation selector ("⛰️"), an emoji skin tone or tag, either side of a zero-width
    joiner ("👩‍💻"), the second of a regional-indicator pair (a flag), a Hangul vowel or final jamo."""
    char, code = text[index], ord(text[index])
    if index == 0:
        return False
    if unicodedata.category(char) in ("Mn", "Mc", "Me") or char == "\u200d" or text[index - 1] == "\u200d":
        return True
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF \
            or 0xE0020 <= code <= 0xE007F or 0x1160 <= code <= 0x11FF or 0xD7B0 <= code <= 0xD7FF:
        return True
    if 0x1F1E6 <= code <= 0x1F1FF:  # a flag is two: the second of each pair continues the first
        run = index
        while run > 0 and 0x1F1E6 <= ord(text[run - 1]) <= 0x1F1FF:
            run -= 1
        return (index - run) % 2 == 1
    return False


def grapheme_start(text: str, index: int) -> int:
    """The nearest index at or before `index` where a character a reader sees starts: cutting `text` there never
    leaves an accent without its letter, half a flag or half an emoji sequence."""
    index = max(0, min(index, len(text)))
    while 0 < index < len(text) and _continues(text, index):
        index -= 1
    return index


def shorten(text: str, limit: int) -> str:
    """`text`, or when it is longer than `limit` characters its start and "…" (`limit` in all), cut between two
    characters a reader sees (`grapheme_start`), never inside one."""
    if len(text) <= limit:
        return text
    return text[:grapheme_start(text, max(limit - 1, 0))] + "…"


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters a token) for budgets; exact counts are not needed there."""
    return max(1, (len(text) + 3) // 4) if text else 0


def visible(text: str) -> str:
    """The text without spaces, control and format characters (zero-width spaces and joiners, direction marks):
    what a reader would see. Text that is nothing but those is empty."""
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c) not in ("Cc", "Cf", "Zs", "Zl",
                                                                                           "Zp"))


# Control characters (C0 but newline and tab, DEL, C1), which in stored text could move the cursor, recolour or
# retitle the user's terminal (ESC sequences from an imported file or a model's reply); and the bidirectional
# embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which on a terminal that lays out right-to-left
# text reorder the rest of the line they open on, ids, other columns and undo hints included ("Trojan Source").
# Arabic and Hebrew need none of them (the terminal orders their letters itself); the marks U+200E, U+200F and
# U+061C, which reorder nothing after them, are kept.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _code(char: str) -> str:
    return f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}"


def show_controls(text: str) -> str:
    """Text made safe for a terminal or a document someone will `cat`: each control character shown as its code
    (`\x1b`, `\u202e`), so nothing stored can drive the terminal or reorder what follows it. What people read
    (the CLI's output, the markdown export) passes through it; what a program reads (JSON) stays exact."""
    return _CONTROL.sub(lambda m: _code(m.group(0)), text.replace("\r\n", "\n"))


def check_text(text: object, what: str, limit: int) -> str:
    """Reject text that cannot be stored faithfully: empty, not UTF-8 (lone surrogates from bad bytes), too long."""
    if not isinstance(text, str) or not visible(text):
        raise UsageError(f"{what} is empty", hint=f"give the {what} some text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8", hint="convert the input to UTF-8 (e.g. with iconv)") from None
    if "\x00" in text:
        raise UsageError(f"{what} contains a NUL byte", hint="remove binary data from the input")
    if len(text) > limit:
        raise UsageError(f"{what} is too long ({len(text):,} characters; the limit is {limit:,})",
                         hint="shorten it, or store it as a conversation message")
    return text


def iso_time(ts: float | None) -> str | None:
    """A timestamp as ISO 8601 in UTC, the form every JSON output and tool result uses."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`1 fact`, `2 facts`, `1,204 messages`: the count with the noun in the right number."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_LABEL = re.compile(r"^([A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?): ")
MAX_PARTS = 8


def sentence_parts(text: str) -> list[str]:
    """The sentences of a text of two or more (each of three words or more), to embed one by one beside the
    whole: a long message's vector is an average of its subjects, and a question about one of them finds the
    sentence that says it where the whole is too diluted. A text of one sentence gets none (its whole is that
    sentence). More than MAX_PARTS sentences are grouped, consecutive ones together, into MAX_PARTS parts. A
    leading speaker label ("Ana: ...", as in a transcript) is kept on every part: it says who said it."""
    label = _LABEL.match(text)
    body = text[label.end():] if label else text
    sentences = [s for s in _SENTENCE_END.split(" ".join(body.split())) if len(s.split()) >= 3]
    if len(sentences) < 2:
        return []
    if len(sentences) > MAX_PARTS:
        cuts = [round(i * len(sentences) / MAX_PARTS) for i in range(MAX_PARTS + 1)]
        sentences = [" ".join(sentences[a:b]) for a, b in itertools.pairwise(cuts)]
    prefix = label.group(0) if label else ""
    return [prefix + s for s in sentences]


def sentence_part_count(text: str | None) -> int:
    """How many parts `sentence_parts` makes of a text (0 for one sentence). Registered as the SQL function
    `coop_sentence_parts` on every connection (migration m009 asks it which items to embed again)."""
    return len(sentence_parts(text)) if text else 0
