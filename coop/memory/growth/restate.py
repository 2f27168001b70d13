"""The known fact as it reads now: what a change stores in place of the fact it replaces.

A change is found from a new fact the extractor wrote from one clause ("Moved the trip to October 2027",
"Moved last month", "Sold the Skoda"), which leans on the fact it changes: stored as it is, the memory says the
trip moved but no longer where to, and "Moved last month" holds the home-city slot that "Lives in Lyon" held.
So once coop has decided that a known fact is no longer true, the fast model is asked to write that fact again,
changed only where the user's words change it ("Is going to Japan for two weeks in October 2027"); coop stores
that in the known fact's slot.

A 1.5B model copies whatever the prompt shows, writes the fact unchanged when it sees no change, and sometimes
answers with something else entirely (asked about "Answer in Spanish" it wrote a sentence in Spanish), so its
answer is kept only when `accepted` holds (every word from the known fact or the user's sentence, a change the
user's words carry, a statement about the user); otherwise the new fact is stored as the extractor wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from coop.memory.growth.clauses import FIRST_PERSON, clauses, said_of_the_user
from coop.memory.growth.evidence import content_words, held, names_and_numbers, negations, supports_change
from coop.memory.growth.sameness import someone
from coop.memory.growth.still_true import pair_request, said_by
from coop.memory.growth.vocabulary import bad_value
from coop.memory.words import _stem, _words
from coop.model.jsonreply import NOW_TRUE, ModelReplyError, ask, parse_json_reply

if TYPE_CHECKING:
    from coop.memory.growth.reconcile import Candidate
    from coop.memory.storage.items import Item

RESTATE_PROMPT = """You keep a memory of facts about a user. The user has just said something that makes a known \
fact no longer true.
Rewrite the known fact so that it is true now: change only the words that the user's news makes false, and keep \
every other word of the known fact as it is.
Reply with JSON only: {"now_true": "..."}"""

# (the new fact, the known fact it changes) -> the known fact as it reads now, or None
Restate = Callable[["Candidate", "Item"], "str | None"]


def restate_request(said: str, known: str) -> list[dict[str, str]]:
    """The messages that ask for `known` as it reads after the user said `said`."""
    return pair_request(RESTATE_PROMPT, said, known)


def parse_restated(text: str) -> str:
    data = parse_json_reply(text)
    value = data.get("now_true") if isinstance(data, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise ModelReplyError("no now_true text")
    return " ".join(value.split()).rstrip(".")


def accepted(restated: str, known: str, said: str) -> bool:
    """Whether a restated fact may be stored in place of `known`: it changes the known fact, as the user's words
    carry (`supports_change`); it says nothing from elsewhere (every content word, names and numbers among them,
    and every negation is the known fact's or in what the user's sentence says, a form apart: its clauses
    (`clauses.clauses`) without a trailing "not in Munich", and without a clause about someone else); and it is a
    statement about the user (not in the first person, not a question or a bare word: `vocabulary.bad_value`)."""
    if " ".join(restated.casefold().split()) == " ".join(known.casefold().rstrip(".").split()):
        return False
    if bad_value(restated) is not None or FIRST_PERSON.search(restated):
        return False
    # what the user says: the sentence's clauses without a trailing "not X", and none of what someone else does
    # ("it's all Java here" stays: it says what the user works with)
    parts = clauses(said)
    stated = " ; ".join(p for p in parts if not someone(said_of_the_user(p) or "")) if parts else said
    sources = content_words(known) | content_words(stated)
    words = content_words(restated)
    if held(words, sources) != set(words):
        return False
    if not negations(restated) <= negations(known) | negations(stated):
        return False
    return supports_change(stated, known, restated) and not _keeps_what_went(restated, known, stated)


def _keeps_what_went(restated: str, known: str, stated: str) -> bool:
    """Whether the rewrite keeps a name or number the known fact gave the thing it replaced: one the user did not
    say, standing right before a name the rewrite dropped ("Drives a 2015 Nissan Leaf" after "Drives a 2015 Skoda
    Octavia": the year was the Skoda's) or anywhere after it, where the known fact goes on about that thing ("Is a
    senior engineer at Allegro, a small fintech in Warsaw" after "Is a backend developer at Finly, a small fintech
    in Warsaw"). A name or number the user said again stays ("October 2027" after "April 2027")."""
    names = names_and_numbers(known)
    kept = held(names, content_words(restated))
    dropped, unsaid = names - kept, kept - held(kept, content_words(stated))
    tokens = [_stem(word) for word in _words(known)]
    went = [index for index, token in enumerate(tokens) if token in dropped]
    return bool(went) and any(token in unsaid and index >= went[0] - 1 for index, token in enumerate(tokens))


def model_restater(complete: Callable[..., str]) -> Restate:
    """A `Restate` that asks the fast model, showing it the user's whole sentence; None when its answer is not
    `accepted`. Its failures propagate (the writer then stores the new fact as the extractor wrote it)."""

    def restate(candidate: "Candidate", known: "Item") -> str | None:
        said = said_by(candidate)
        restated = parse_restated(ask(complete, restate_request(said, known.text), NOW_TRUE))
        return restated if accepted(restated, known.text, said) else None

    return restate
