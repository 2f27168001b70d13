"""Facts come only from the user's own words, and the engine checks that they do.

A machine proposal (extraction after a turn, consolidation of a span) must quote its evidence: an exact passage
of something the *user* wrote. The assistant's replies and recalled memory are shown to the model as context,
never accepted as a source, so a model cannot put words in the user's mouth, and text in memory or in a reply
("the user is not allergic to penicillin") cannot rewrite what the user said.

- `quoted_in`: the quote is really there, in the user's messages (case, spacing, curly quotes aside), is long
  enough to mean something, and shares a content word with the fact it supports.
- `supports_change`: a change to an existing fact (UPDATE, SUPERSEDE) must be carried by the quote: every word
  the new value adds over the old one, negations included ("not", "no longer"), is in the quote. "I'm not
  allergic to penicillin" can turn "Allergic to penicillin" around; "what is penicillin?" cannot.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from coop.memory.text import STOP_WORDS, normalise_text

MIN_QUOTE_CHARS = 3
NEGATIONS = frozenset({"not", "no", "never", "nor", "none", "nothing", "nobody", "nowhere", "neither", "without",
                       "stopped", "quit", "longer", "anymore"})
_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
                 "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
                 "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100"}
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _flat(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return " ".join(re.sub(r"n't\b", " not", text).split())


def _words(text: str) -> list[str]:
    return [_NUMBER_WORDS.get(w, w) for w in _WORD.findall(_flat(text))]


def content_words(text: str) -> frozenset[str]:
    """The words that carry a text's meaning: no function words, light stemming, number words as digits.
    Names and numbers survive, which is what makes two similar-sounding facts different."""
    return frozenset(_stem(w) for w in _words(normalise_text(text)) if w not in STOP_WORDS)


def negations(text: str) -> frozenset[str]:
    return frozenset(w for w in _words(text) if w in NEGATIONS)


def quoted_in(quote: str | None, sources: Iterable[str], fact: str) -> bool:
    """True when `quote` is a passage of one of `sources` (the user's messages) that bears on `fact`."""
    if not isinstance(quote, str):
        return False
    needle = _flat(quote).strip(" .,;:!?\"'`")
    if len(needle.replace(" ", "")) < MIN_QUOTE_CHARS:
        return False
    if not any(needle in _flat(source) for source in sources):
        return False
    return bool(content_words(quote) & content_words(fact))


def added_words(old: str, new: str) -> frozenset[str]:
    """What `new` says that `old` did not: its content words and negations that `old` lacks."""
    return (content_words(new) - content_words(old)) | (negations(new) - negations(old))


def supports_change(quote: str | None, old: str, new: str) -> bool:
    """True when the user's quote carries every word the change adds. A change that adds nothing (a rewording,
    or information dropped) is not supported: memory keeps what the user said."""
    if not isinstance(quote, str):
        return False
    needed = added_words(old, new)
    return bool(needed) and needed <= (content_words(quote) | negations(quote))


STATES_COVERAGE = 0.75  # the share of a fact's content words a text must hold to state it


def states(text: str, fact: str) -> bool:
    """True when `text` says what `fact` says: it holds at least three quarters of the fact's content words, and
    every name and number among them ("Sister Ana works as a dentist" is stated by "my sister Ana is a dentist",
    not by "Ana is coming on Tuesday"). Facts of one content word are stated only by a text that has it and
    little else to say (a source message, a short reply)."""
    wanted = content_words(fact)
    if not wanted:
        return False
    have = content_words(text)
    if not (names_and_numbers(fact) & wanted) <= have:
        return False
    if len(wanted) == 1:
        return wanted <= have and len(have) <= 4
    return len(wanted & have) / len(wanted) >= STATES_COVERAGE


def names_and_numbers(text: str) -> frozenset[str]:
    """The capitalised words (not the first of a sentence) and numbers of a text, as content words."""
    return frozenset({_stem(w) for w in _words(text) if w.isdigit()} | {
        _stem(w.casefold()) for w in re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]+", text)})


def adds_to(text: str, facts: Iterable[str], *, allowance: int = 2) -> bool:
    """True when `text` says something beyond `facts`: a name or number they lack, or more than `allowance`
    other content words ("Talked about a trip to Kyoto with Mia" adds Mia to "Plans a trip to Kyoto")."""
    known: set[str] = set()
    for fact in facts:
        known |= content_words(fact)
    extra = content_words(text) - known
    return bool(names_and_numbers(text) & extra) or len(extra) > allowance
