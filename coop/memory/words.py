"""The words that carry a text's meaning, as memory compares texts: what a fact is about, what a quote holds,
whether one text states another. Plain text rules (no model, no database), shared by the write path (evidence,
mood, reconciliation) and recall (a past message that only repeats a recalled fact)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from coop.memory.text import STOP_WORDS, normalise_text

SHARED_START = 5  # letters two words must share to count as one ("allerg-y", "allerg-ic")
# Words a third-person fact is phrased with that say nothing of their own: the quote need not hold them.
FRAME_WORDS = frozenset("""has have having had own owns owned is are was be being user users person someone named called
currently current now also still really get gets got do does done make makes made keep keeps kept feel feels
based""".split())
# The verbs facts are phrased with, and the words a person says them with: "I moved to Berlin" states "Lives in
# Berlin", "I'm going to Kyoto" states "Plans a trip to Kyoto"; "my trip to Berlin" does not state "Lives in
# Berlin". A general vocabulary of how people talk about their lives, not a list fitted to any data.
SAYING_GROUPS = (
    "live lives living lived move moves moved moving home house flat apartment reside resides relocated stay "
    "staying settled",
    "work works working worked job jobs employed employer office company hired joined career profession",
    "plan plans planning planned going gonna intend intends intending will want wants hope hoping booked "
    "trip travel travelling traveling visit visiting fly flying journey vacation holiday",
    "like likes liked love loves loved enjoy enjoys enjoyed fan favourite favorite prefer prefers preferred adore "
    "into",
    "hate hates hated dislike dislikes disliked stand",
    "bought buy got purchased",
    "study studies studying studied student school university college degree learn learning",
    "married marry wife husband spouse partner wedding",
    "born birthday birth",
    "speak speaks speaking language fluent",
    "allergic allergy allergies intolerant intolerance",
    "vegetarian vegan meat",
)
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


def sentences(text: str) -> list[str]:
    """A text's sentences: split after ".", "!" or "?" and at line breaks."""
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def _words(text: str) -> list[str]:
    return [_NUMBER_WORDS.get(w, w) for w in _WORD.findall(_flat(text))]


@lru_cache(maxsize=4096)  # pure, and asked of the same facts and past items many times a turn
def content_words(text: str) -> frozenset[str]:
    """The words that carry a text's meaning: no function words, light stemming, number words as digits.
    Names and numbers survive, which is what makes two similar-sounding facts different."""
    return frozenset(content_sequence(text))


def content_sequence(text: str) -> list[str]:
    """The content words of a text in their order (stems, as `content_words`): for the phrases two texts share."""
    return [_stem(w) for w in _words(normalise_text(text)) if w not in STOP_WORDS]


def negations(text: str) -> frozenset[str]:
    return frozenset(w for w in _words(text) if w in NEGATIONS)


_FRAME_STEMS = frozenset(_stem(w) for w in FRAME_WORDS)  # content words are stems: "called" is "call"
_GROUPS_OF: dict[str, set[int]] = {}
for _number, _group in enumerate(SAYING_GROUPS):
    for _word in _group.split():
        _GROUPS_OF.setdefault(_word, set()).add(_number)
        _GROUPS_OF.setdefault(_stem(_word), set()).add(_number)


def same_word(a: str, b: str) -> bool:
    """One content word for the evidence check: equal stems, a shared start of `SHARED_START` letters, or two
    ways of saying one thing (`SAYING_GROUPS`)."""
    if a == b:
        return True
    if len(a) >= SHARED_START and len(b) >= SHARED_START and a[:SHARED_START] == b[:SHARED_START]:
        return True
    short, long = sorted((a, b), key=len)
    if len(short) >= 4 and long.startswith(short):  # a stem cut shorter than its word ("smok", "smoke")
        return True
    if _verb_base(a) is not None and _verb_base(a) == _verb_base(b):  # "eats", "eating"; "runs", "running"
        return True
    return bool(_GROUPS_OF.get(a, set()) & _GROUPS_OF.get(b, set()))


def _verb_base(word: str) -> str | None:
    """A short word's base, which `_stem` leaves whole to keep short words apart, and a stem's doubled end undone:
    "eats" and "eating" are "eat", "running" (stemmed "runn") and "runs" are "run"; None under three letters."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word if len(word) >= 3 else None


def held(wanted: Iterable[str], have: frozenset[str]) -> set[str]:
    return {w for w in wanted if any(same_word(w, h) for h in have)}


def subject_words(fact: str) -> frozenset[str]:
    """A fact's content words less the frame it is phrased with: what it is about."""
    return frozenset(w for w in content_words(fact) if w not in FRAME_WORDS and w not in _FRAME_STEMS)


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


@lru_cache(maxsize=4096)
def names_and_numbers(text: str) -> frozenset[str]:
    """The capitalised words (not the first of a sentence) and numbers of a text, as content words."""
    named = re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]+", text)
    return frozenset({_stem(w) for w in _words(text) if w.isdigit()} | {  # "Tex-Mex": "tex" and "mex", as quoted
        _stem(part) for w in named for part in _words(w) if part.isdigit() or len(part) > 1})


def adds_to(text: str, facts: Iterable[str], *, allowance: int = 2) -> bool:
    """True when `text` says something beyond `facts`: a name or number they lack, or more than `allowance`
    other content words ("Talked about a trip to Kyoto with Mia" adds Mia to "Plans a trip to Kyoto")."""
    known: set[str] = set()
    for fact in facts:
        known |= content_words(fact)
    extra = content_words(text) - known
    return bool(names_and_numbers(text) & extra) or len(extra) > allowance
