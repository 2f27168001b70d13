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
- `locate`: the quote is the extractor's pointer: when it does not prove the fact within one sentence, the user's
  sentence that holds every word of the fact is the evidence instead; either is narrowed to the clause it comes
  from, which `mood` then reads.
- `supports_change`: a change to an existing fact (UPDATE, SUPERSEDE) must be carried by the quote: every word
  the new value adds over the old one, negations included ("not", "no longer"), is in the quote. "I'm not
  allergic to penicillin" can turn "Allergic to penicillin" around; "what is penicillin?" cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from coop.memory.words import (
    _WORD,
    NEGATIONS,
    _words,
    adds_to,
    content_words,
    held,
    names_and_numbers,
    negations,
    same_word,
    sentences,
    states,
    subject_words,
)

__all__ = ["NEGATIONS", "adds_to", "content_words", "find_quote", "held", "holds_every_word", "locate",
           "names_and_numbers", "negations", "proves", "same_word", "states", "subject_words", "supports_change"]

MIN_QUOTE_CHARS = 3
MIN_QUOTE_WORDS = 2
ANAPHORA = frozenset("""yes yeah yep yup sure correct right exactly indeed definitely absolutely true that this it
its she he they her him them his hers their there those these one ones same""".split())
_ROLE_PREFIX = re.compile(r"^\s*[\"'\u201c]?\s*(?:user|me|the user|human)(?:\s+(?:wrote|said|says))?\s*:\s*",
                          re.IGNORECASE)
def quote_words(quote: str) -> list[str]:
    """The words of a quote as the check compares them: a role prefix ("USER: ") dropped."""
    return _words(_ROLE_PREFIX.sub("", quote))


def holding_sentence(quote: str | None, source: str) -> str | None:
    """The sentence of `source` that holds all of `quote`, or None (not there, or across sentences)."""
    return next((s for s in sentences(source) if find_quote(quote, [s]) is not None), None)


def leans(words: Sequence[str]) -> bool:
    """Whether a quote leans on what came before: it opens with "yes", "she", "that one" (or is three words at
    most and holds one). "I'm covering his shifts" does not lean: its "his" borrows no words."""
    return bool(words) and (words[0] in ANAPHORA or (len(words) <= 3 and bool(ANAPHORA & set(words))))


def _words_held(words: list[str], leaned_on: Sequence[str]) -> frozenset[str]:
    """The content words a quote holds, with those of `leaned_on` when it leans on them ("yes", "she does")."""
    have = content_words(" ".join(words))
    for text in leaned_on if leans(words) else ():
        have |= content_words(text)
    return have


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
    have = _words_held(words, (*sources, *context))  # a leaning "yes": the user's message, earlier turns too
    names = names_and_numbers(fact)
    subject = subject_words(fact) - names
    names -= said_as_a_day(words, fact)
    if len(held(names, have)) < len(names):
        return "the quote lacks a name or number of the fact"
    if not subject and not names:
        return "the fact says nothing the quote could hold"
    if subject and len(held(subject, have)) * 2 < len(subject):
        return "the quote lacks the words of the fact"
    return None


def locate(quote: str | None, sources: Sequence[str], fact: str, context: Sequence[str] = (), *,
           narrow: bool = True) -> str | None:
    """The user's words that prove `fact`: the extractor's quote when it proves it within one sentence; otherwise
    the one sentence of the user's `sources` that proves it (`proves`, holding every word of what the fact is
    about, not half: coop's own search must prove more than a quote the extractor pointed at) and shares the most
    words with the quote, the shortest on a tie; None when no sentence does. A sentence that leans ("Yes, I do.")
    may use the earlier turns, as a quoted "yes" does. Either is `narrowed` to the words that prove the fact,
    unless `narrow` is False (a standing instruction keeps its "from now on").

    The quote is the extractor's pointer, the proof is the user's sentence: a small model quotes loosely (the
    whole message, "The user wrote: '...'", a paraphrase, the instruction in its own words: "Answer in Spanish"
    for "please always answer me in Spanish"), and a quote over several sentences makes the mood check read the
    wrong one ("Hi! I'm Claire. Can you help me?" is not a question about Claire). `mood` then reads the
    sentence around the words found, so nothing the user did not assert gets in."""
    quoted = proves(quote, sources, fact, context) is None
    if quoted and any(holding_sentence(quote, source) is not None for source in sources):
        return _narrowed_within(str(quote), sources, fact, context) if narrow else quote
    wanted = content_words(quote) if isinstance(quote, str) else frozenset()
    proving = [s for source in sources for s in sentences(source)
               if proves(s, [s], fact, context) is None and _holds_every_word(s, fact, context)]
    if not proving:  # a fact the user stated over two sentences ("I have a cat. She's called Mochi.")
        return quote if quoted else None
    best = max(proving, key=lambda s: (len(held(wanted, content_words(s))), -len(s)))
    return _narrowed_within(best, sources, fact, context) if narrow else best


def _narrowed_within(passage: str, sources: Sequence[str], fact: str, context: Sequence[str]) -> str:
    """`narrowed`, kept only when it is still a passage of the user's words (else the passage itself)."""
    piece = narrowed(passage, fact, context)
    return piece if find_quote(piece, sources) is not None else passage


def _holds_every_word(sentence: str, fact: str, context: Sequence[str]) -> bool:
    """Whether `sentence` (with the earlier turns, if it leans on them) holds every word of what `fact` is about:
    a sentence coop finds must prove more than the half a quote the extractor pointed at must ("my cat" is no
    evidence of "Cares about cats")."""
    return holds_every_word(sentence, subject_words(fact), context)


def holds_every_word(sentence: str, words: Iterable[str], context: Sequence[str] = ()) -> bool:
    """Whether `sentence` (with the earlier turns, if it leans on them) holds each of `words` (of three letters or
    more), as itself or a form of it ("eats": "eating"; "asks": "ask")."""
    have = _words_held(quote_words(sentence), context)
    return all(held([word], have) or any(h.startswith(word.rstrip("s")) for h in have)
               for word in words if len(word.rstrip("s")) >= 3)


MAX_NARROWED_WORDS = 40  # a longer passage is kept whole: the search is quadratic in its words (70 ms at 40)


def narrowed(passage: str, fact: str, context: Sequence[str] = ()) -> str:
    """The shortest run of words in `passage` that proves `fact` and holds every word (and negation) of the
    fact the passage holds, as the user wrote it (with "I", "I'm" just before it): the mood check then reads the
    clause the fact comes from, not its neighbours ("I live in Lyon, but I might move" asserts "Lives in Lyon"),
    and a change keeps every word it adds."""
    spans = [m.span() for m in _WORD.finditer(passage)]
    if len(spans) != len(_words(passage)) or len(spans) > MAX_NARROWED_WORDS \
            or proves(passage, [passage], fact, context) is not None:
        return passage  # words that do not map back onto the text one to one ("can't" -> "can not"), or no proof
    wanted, denied = content_words(fact), negations(fact)
    whole = held(wanted, content_words(passage)), denied & negations(passage)
    for length in range(1, len(spans) + 1):
        for start in range(len(spans) - length + 1):
            begin, end = _word_start(passage, spans[start][0]), _word_end(passage, spans[start + length - 1][1])
            piece = passage[begin:end]
            if (held(wanted, content_words(piece)), denied & negations(piece)) == whole \
                    and proves(piece, [passage], fact, context) is None:
                subject = _SUBJECT.search(passage[:begin])  # "I am allergic to peanuts", not "allergic to peanuts"
                return passage[subject.start() if subject and not negations(subject.group()) else begin:end]
    return passage


# The user as the subject just before a narrowed passage, with at most one word between ("I", "I'm", "I am",
# "we've", "I have").
_SUBJECT = re.compile(r"\b(?:I|[Ww]e|[Mm]y|[Oo]ur)(?:['\u2019][a-z]+)?\s+(?:[a-z]+\s+)?$")
_JOINED = re.compile(r"\w+['\u2019]$")


def _word_start(text: str, start: int) -> int:
    """`start` moved back to the beginning of a word joined by an apostrophe ("I'm", not "m")."""
    joined = _JOINED.search(text[:start])
    return joined.start() if joined is not None and text[start - 1:start] in "'\u2019" else start


def _word_end(text: str, end: int) -> int:
    """`end` moved on to the end of a word joined by an apostrophe ("don't", not "don")."""
    joined = re.match(r"['\u2019]\w+", text[end:])
    return end + joined.end() if joined is not None else end


TIME_WORDS = frozenset("""today tonight tomorrow yesterday next last this coming weekend week weeks month months year
years ago soon later monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december""".split())
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b(?:19|20)\d{2}\b")


def _date_numbers(text: str) -> frozenset[str]:
    """The numbers of the dates in a text (an ISO date's year, month and day; a year)."""
    return frozenset(n for m in _DATE.finditer(text) for n in re.findall(r"\d+", m.group()))


def said_as_a_day(words: Iterable[str], fact: str) -> frozenset[str]:
    """The numbers of `fact`'s dates that the quote's `words` say by a word of time instead: "next Friday" and
    "tomorrow" state the date the extractor or coop wrote out ("2026-11-27")."""
    return _date_numbers(fact) if TIME_WORDS & set(words) else frozenset()


def added_words(old: str, new: str) -> frozenset[str]:
    """What `new` says that `old` did not: its content words and negations that `old` lacks."""
    return (content_words(new) - content_words(old)) | (negations(new) - negations(old))


def supports_change(quote: str | None, old: str, new: str) -> bool:
    """True when the user's quote carries every word the change adds, as itself or a form of it, as `proves`
    reads words ("Lives in Berlin" from "Berlin: we moved"; a date from "tomorrow"). A change that adds nothing (a
    rewording, or information dropped) is not supported: memory keeps what the user said."""
    if not isinstance(quote, str):
        return False
    needed = added_words(old, new)
    day = needed & said_as_a_day(quote_words(quote), new)
    needed -= day
    said = negations(quote)
    return bool(needed | day) and needed - said <= held(needed - said, content_words(quote)) \
        and needed & NEGATIONS <= said


