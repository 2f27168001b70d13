"""Whether a known fact is still true after what the user just said: one question about one pair, for the change
the reconciler saw but pinned on the wrong fact.

The reconciler is shown a new fact and the known facts that may overlap, and names one. A 1.5B model says UPDATE
to nearly everything (32 of 33 decisions in one run) and names whichever fact comes to hand, so a real change
("I've started eating fish again" after "Has been vegetarian for ten years") lands on a fact about another thing
and both are kept. Asked about the whole list at once, it answers by position; asked about one pair, with the
user's own sentence and "what is each about" first, it tells a change from two things that are both true well
enough for coop's own rules to do the rest (`FactWriter._confirmed`; figures in docs/benchmarks.md, "Is the
known fact still true?").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING

from coop.memory.growth.vocabulary import CALENDAR
from coop.memory.words import content_sequence, same_word
from coop.model.jsonreply import STILL_TRUE, ModelReplyError, ask, parse_json_reply

if TYPE_CHECKING:
    from coop.memory.growth.reconcile import Candidate
    from coop.memory.storage.items import Item

DIFFERENT, BOTH_TRUE, CHANGED = "different_things", "same_thing_both_true", "same_thing_changed"
VERDICTS = (DIFFERENT, BOTH_TRUE, CHANGED)

STILL_TRUE_PROMPT = """You keep a memory of facts about a user. The user has just said something new. Compare it \
with one fact the memory already holds.
First say in two or three words what the known fact is about, and what the user's new words are about.
Then answer:
- "different_things": they are about different things (a hobby and a job, a pet and a city, a trip and a food). \
Both stay true.
- "same_thing_both_true": the same thing, and the known fact is still true (the new words add to it).
- "same_thing_changed": the same thing, and the known fact is no longer true (a new city, a new job, a new \
amount, a new date, stopped).
Reply with JSON only: {"known_is_about": "...", "new_is_about": "...", "answer": "..."}"""

# (the new fact, a known fact) -> one of VERDICTS
Judge = Callable[["Candidate", "Item"], str]


_YEAR = re.compile(r"^(?:19|20)\d\d$")


def amounts(text: str) -> list[tuple[str, str]]:
    """The amounts a fact states, each (number, the word it counts): "Runs about 20 km a week": ("20", "km");
    "for two weeks": ("2", "week"). A date is no amount: a year, a day of a month ("1 March")."""
    words = content_sequence(text)
    return [(number, unit) for number, unit in pairwise(words)
            if number.isdigit() and not _YEAR.match(number) and not unit.isdigit() and unit not in CALENDAR]


def a_new_amount(new: str, known: str) -> bool:
    """Whether `new` gives another number of something `known` counts ("35 km a week" after "20 km a week"): a
    1.5B model calls that the same thing, still true, though its own question names a new amount a change."""
    return any(same_word(unit, known_unit) and number != known_number
               for number, unit in amounts(new) for known_number, known_unit in amounts(known))


def pair_request(prompt: str, said: str, known: str) -> list[dict[str, str]]:
    """The messages that ask `prompt`'s question about one known fact and what the user just said (the still-true
    question here, the known fact as it reads now in `restate`)."""
    return [{"role": "system", "content": prompt},
            {"role": "user", "content": f'KNOWN FACT: {" ".join(known.split())}\n'
                                        f'THE USER JUST SAID: "{" ".join(said.split())}"'}]


def judge_request(said: str, known: str) -> list[dict[str, str]]:
    """The messages that ask whether `known` is still true after the user said `said`."""
    return pair_request(STILL_TRUE_PROMPT, said, known)


def said_by(candidate: "Candidate") -> str:
    """What a pair question shows as the user's words: the sentence the new fact comes from, else its quote, else
    the fact itself."""
    return candidate.sentence or candidate.evidence or candidate.value


def parse_verdict(text: str) -> str:
    data = parse_json_reply(text)
    answer = data.get("answer") if isinstance(data, dict) else None
    if answer not in VERDICTS:
        raise ModelReplyError(f"unknown answer {answer!r}")
    return str(answer)


def model_judge(complete: Callable[..., str]) -> Judge:
    """A `Judge` that asks the fast model about one pair, showing it the user's sentence the new fact comes from
    (the fact itself when there is none); its failures propagate (the pipeline then keeps both facts)."""

    def judge(candidate: "Candidate", known: "Item") -> str:
        return parse_verdict(ask(complete, judge_request(said_by(candidate), known.text), STILL_TRUE))

    return judge
