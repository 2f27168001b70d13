"""Facts come only from the user's own words, and the engine checks that they do.

A machine proposal (extraction after a turn, consolidation of a span, an exchange an MCP host recorded) must
quote its evidence. The assistant's replies and recalled memory are shown to the model as context, never accepted
as a source, so a model cannot put words in the user's mouth, and text in memory or in a reply ("the user is not
allergic to penicillin") cannot rewrite what the user said.

- `proves`: the quote is a verbatim, word-bounded passage of one of the user's messages (case, spacing, curly
  quotes and a "USER:" prefix aside: never a fragment of a word, so "ill" is not found in "will"), long enough to
  state something (two words or more with a content word, or the user's whole message), and it holds the fact's
  own words: every name and number of the fact, and at least half of its other content words (the words that
  say what it is about, not the verbs a third-person fact is phrased with: "lives", "has", "likes"). For a quote
  that leans on what came before ("yes", "she is", "that one"), the earlier turns the extractor was shown count
  too. A word matches another with the same stem or a shared start of five letters ("allergy", "allergic").
- `supports_change`: a change to an existing fact (UPDATE, SUPERSEDE) must be carried by the quote: every word
  the new value adds over the old one, negations included ("not", "no longer"), is in the quote. "I'm not
  allergic to penicillin" can turn "Allergic to penicillin" around; "what is penicillin?" cannot.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from coop.memory.text import STOP_WORDS, normalise_text

MIN_QUOTE_CHARS = 3
MIN_QUOTE_WORDS = 2
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
ANAPHORA = frozenset("""yes yeah yep yup sure correct right exactly indeed definitely absolutely true that this it
its she he they her him them his hers their there those these one ones same""".split())
_ROLE_PREFIX = re.compile(r"^\s*(?:user|me|the user|human)\s*:\s*", re.IGNORECASE)
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


_GROUPS_OF: dict[str, set[int]] = {}
for _number, _group in enumerate(SAYING_GROUPS):
    for _word in _group.split():
        _GROUPS_OF.setdefault(_word, set()).add(_number)
        _GROUPS_OF.setdefault(_stem(_word), set()).add(_number)


def quote_words(quote: str) -> list[str]:
    """The words of a quote as the check compares them: a role prefix ("USER: ") dropped."""
    return _words(_ROLE_PREFIX.sub("", quote))


def find_quote(quote: str | None, sources: Sequence[str]) -> tuple[int, int, int] | None:
    """Where `quote` stands in `sources`, word-bounded: (source index, first word, end word), or None."""
    if not isinstance(quote, str):
        return None
    needle = quote_words(quote)
    if not needle or len("".join(needle)) < MIN_QUOTE_CHARS:
        return None
    for index, source in enumerate(sources):
        words = _words(source)
        for start in range(len(words) - len(needle) + 1):
            if words[start:start + len(needle)] == needle:
                return index, start, start + len(needle)
    return None


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
    return bool(_GROUPS_OF.get(a, set()) & _GROUPS_OF.get(b, set()))


def held(wanted: Iterable[str], have: frozenset[str]) -> set[str]:
    return {w for w in wanted if any(same_word(w, h) for h in have)}


def subject_words(fact: str) -> frozenset[str]:
    """A fact's content words less the frame it is phrased with: what it is about."""
    return frozenset(w for w in content_words(fact) if w not in FRAME_WORDS)


def proves(quote: str | None, sources: Sequence[str], fact: str, context: Sequence[str] = ()) -> str | None:
    """None when `quote` is evidence of `fact` in the user's `sources`; otherwise why not, in a few words.
    `context`: the earlier turns the extractor was shown, which a leaning quote ("yes", "she does") may use."""
    found = find_quote(quote, sources)
    if found is None:
        return "the quote is not a word-bounded passage of the user's own words"
    assert isinstance(quote, str)
    words = quote_words(quote)
    whole = _words(sources[found[0]])
    if words != whole and (len(words) < MIN_QUOTE_WORDS or not content_words(quote)):
        return "the quote is too short to state anything"
    have = content_words(" ".join(words))
    if ANAPHORA & set(words):  # "yes", "she does": what it leans on counts too (the user's message, earlier turns)
        for text in (*sources, *context):
            have |= content_words(text)
    names = names_and_numbers(fact)
    subject = subject_words(fact) - names
    if TIME_WORDS & set(words):  # "next Friday" states the date the extractor wrote out ("2026-11-27")
        names -= _date_numbers(fact)
    if len(held(names, have)) < len(names):
        return "the quote lacks a name or number of the fact"
    if not subject and not names:
        return "the fact says nothing the quote could hold"
    if subject and len(held(subject, have)) * 2 < len(subject):
        return "the quote lacks the words of the fact"
    return None


TIME_WORDS = frozenset("""today tonight tomorrow yesterday next last this coming weekend week weeks month months year
years ago soon later monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december""".split())
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b(?:19|20)\d{2}\b")


def _date_numbers(text: str) -> frozenset[str]:
    """The numbers of the dates in a text (an ISO date's year, month and day; a year)."""
    return frozenset(n for m in _DATE.finditer(text) for n in re.findall(r"\d+", m.group()))


def quoted_in(quote: str | None, sources: Sequence[str], fact: str, context: Sequence[str] = ()) -> bool:
    """True when `quote` is evidence of `fact` in `sources` (see `proves`)."""
    return proves(quote, sources, fact, context) is None


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
