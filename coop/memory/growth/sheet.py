"""The extractor's sheet: the user's message as numbered sentences, and for each one what kind of sentence it is and
the facts it states, each with the topic it is about.

A free list of facts asks a small model to do five things at once (find the facts, phrase them, quote the user,
file them, judge the mood) and a 1.5B model does about one of them per turn: it copies the prompt's examples, the
known facts, the assistant's life. The sheet asks less of it, one sentence at a time, and coop does the rest:
- the evidence is the numbered sentence itself, never a quote the model copies;
- `kind` is the model's reading of the sentence (a statement, a plan, a question, a greeting, a joke, what
  someone else says, an instruction to the assistant): only statements, plans and instructions give facts, and
  the mood check still reads the sentence itself (`admission`);
- `topic` comes from a fixed list (`vocabulary.TOPICS`), enforced as an enum where the server takes a schema, so
  a subject keeps one slot; an instruction topic on a sentence the model read as a statement (or the reverse) is
  not taken;
- the value it writes is kept when it is a third-person statement that the sentence proves, with every name and
  number of the clause it comes from; otherwise the fact is written from the user's clause (`clauses.py`).
The schema's `minItems`/`maxItems` make the model answer for every sentence, not just the first.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from coop.errors import UsageError
from coop.memory.growth.clauses import FIRST_PERSON, facts_in
from coop.memory.growth.evidence import (
    content_words,
    find_quote,
    held,
    holds_every_word,
    names_and_numbers,
    negations,
    proves,
    subject_words,
)
from coop.memory.growth.instructions import ASSISTANT_VERBS, STANDING, turned_around
from coop.memory.growth.reconcile import Candidate
from coop.memory.growth.refusals import refuse
from coop.memory.growth.sameness import someone
from coop.memory.growth.vocabulary import TOPICS, as_sentence, bad_value, is_bare, normalise, slot_of
from coop.memory.kinds import GENERAL, INSTRUCTION
from coop.memory.text import check_text
from coop.memory.words import sentences
from coop.model.jsonreply import Schema, sheet_schema
from coop.privacy.secrets import mask

log = logging.getLogger(__name__)

MAX_FACT_CHARS = 500  # a proposed fact's text, and its quote (the store takes up to items.MAX_FACT_CHARS)
MAX_SENTENCES = 24     # a longer message is read in its first 24 sentences (a pasted text states nothing anyway)
MAX_FACTS_PER_SENTENCE = 4

# What the model may say a sentence is, and the stance it gives the sentence's facts (`mood` names).
KINDS = {"statement": "asserted", "plan": "asserted", "instruction": "asserted", "considering": "considering",
         "question": "question", "greeting": "joke", "joke": "joke", "about_someone_else": "reported"}
GIVES_FACTS = ("statement", "plan", "instruction")


def numbered(message: str) -> list[str]:
    """The sentences of the user's message the sheet asks about."""
    return (sentences(message) or [message])[:MAX_SENTENCES]


def schema(count: int) -> Schema:
    return sheet_schema(count, list(KINDS), list(TOPICS), MAX_FACTS_PER_SENTENCE)


def read_sheet(rows: Any, said: Sequence[str], limit: int, source: str,
               context: Sequence[str] = ()) -> list[Candidate]:
    """The candidates a sheet reply proposes, at most `limit`, each with its sentence as evidence; what cannot be
    a fact is refused here (counted) and the rest goes to `admission`."""
    found: list[Candidate] = []
    for index, row in enumerate(rows if isinstance(rows, list) else []):
        if not isinstance(row, dict):
            continue
        n = row.get("n")
        n = n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(said) else index + 1
        if n > len(said):
            continue
        kind = row.get("kind") if row.get("kind") in KINDS else "statement"
        facts = [f for f in (row.get("facts") or []) if isinstance(f, dict) and isinstance(f.get("fact"), str)]
        if kind not in GIVES_FACTS:
            for fact in facts:
                refuse("mood", f"the extractor read the sentence as a {kind}", text=fact["fact"])
            continue
        for fact in facts[:MAX_FACTS_PER_SENTENCE]:
            for candidate in _candidates(fact, kind, said, n - 1, source, context):
                if all(c.value.casefold() != candidate.value.casefold() for c in found):
                    found.append(candidate)
                if len(found) >= limit:
                    return found
    return found


def _candidates(fact: dict[str, Any], kind: str, said: Sequence[str], index: int, source: str,
                context: Sequence[str]) -> list[Candidate]:
    """The candidates one fact of the sheet gives: written from its own sentence, else from another sentence of
    the message (a small model puts a fact on the wrong row: "I work at the Charité now" on "Settling in
    fine."); none, refused once, when no sentence says it."""
    category, key = TOPICS.get(str(fact.get("topic")), (GENERAL, None))
    if category == INSTRUCTION and kind != "instruction":  # an instruction only from a sentence read as one
        category, key = GENERAL, None
    elif kind == "instruction" and category != INSTRUCTION and _imperative(str(fact["fact"])):
        category, key = INSTRUCTION, None  # "Answer in Spanish" filed under languages: still the instruction
    category, key = normalise(category, key)
    try:  # empty, NUL, a lone surrogate, too long: this fact only
        text = " ".join(check_text(fact["fact"], "fact", MAX_FACT_CHARS).split())
    except UsageError as exc:
        log.info("extraction: a fact dropped: %s", exc.message)
        return []
    why = ""
    for sentence in [said[index], *(s for i, s in enumerate(said) if i != index)]:
        values, reason = written(category, key, text, sentence, context)
        why = why or reason
        if values:
            slots = [_slot(v, category, key, len(values) > 1) for v in values]
            return [Candidate(value=mask(v), category=c, key=k, importance=0.7 if k else 0.5, source=source,
                              evidence=mask(sentence), stance=KINDS[kind]) for v, (c, k) in zip(values, slots)]
    refuse("value", why, category=category, text=text)
    return []


def _slot(value: str, category: str, key: str | None, split: bool) -> tuple[str, str | None]:
    """Where one of the facts a value gave is filed: the topic's slot, but no slot for a fact about someone else;
    for one of several facts written from the user's clauses ("Lives in Lyon", "Works as a nurse ..." for one
    value about both), the slot whose sentence it opens with (`vocabulary.slot_of`), else the topic's category
    without its key, which names one thing."""
    if category == INSTRUCTION:
        return category, key
    if someone(value):  # "Sister Ana is a dentist": no slot of the user's (a 1.5B model filed it as occupation)
        return category, None
    if not split:
        return category, key
    return slot_of(value) or (category, None)


def _imperative(value: str) -> bool:
    """Whether `value` is worded as an instruction to the assistant ("Answer in ...", "Never use ...")."""
    words = [w for w in re.findall(r"[a-z']+", value.casefold()) if w not in STANDING]
    return bool(words) and words[0] in ASSISTANT_VERBS


def _proved(value: str, sentence: str, context: Sequence[str]) -> bool:
    """Whether the sentence, or one of its comma-separated parts (which may lean on the earlier turns: "..., it's
    all Java here"), proves `value`."""
    parts = [sentence, *(p for p in re.split(r"\s*[,;:]\s*", sentence) if p and p != sentence)]
    return any(proves(part, [sentence], value, context) is None for part in parts)


def _holds_every_word(sentence: str, value: str) -> bool:
    """Whether `sentence` holds every word of what the instruction `value` says ("Answer in English" in "switch
    back to English for your answers"), not turned around (`instructions.turned_around`); an instruction that says
    nothing ("Do it") holds nothing."""
    wanted = subject_words(value) - negations(value)
    return bool(wanted) and holds_every_word(sentence, wanted) and not turned_around(sentence, value)


def _shared(value: str, clause: str) -> set[str]:
    """The words of `value` that `clause` holds, a stem or a start apart ("drive" in "drives")."""
    return held(content_words(value), content_words(clause))


def _says_it(value: str, clauses: Sequence[str]) -> bool:
    """Whether the user's `clauses` say what the model's `value` is about: half of its words, or every one of its
    names and numbers ("Is 47 years old" from "I'm 47")."""
    wanted, names = content_words(value), names_and_numbers(value)
    shared = set().union(*(_shared(value, c) for c in clauses)) if clauses else set()
    return len(shared) * 2 >= len(wanted) or (bool(names) and names <= held(names, frozenset(shared)))


def _within(clause: str, value: str) -> bool:
    """Whether `value` says all that `clause` says, every word of it. A value that says two of the user's clauses
    ("Lives in Lyon and works as a nurse at ...") is two facts, each changed on its own when the user moves or
    changes jobs; one that merges them into one statement ("Quit smoking in 2019" from "I used to smoke but I
    quit in 2019") lacks a word of each and is kept whole."""
    wanted = content_words(clause) | names_and_numbers(clause)
    return bool(wanted) and held(wanted, content_words(value) | names_and_numbers(value)) == wanted


def _drops_a_name(value: str, clause: str) -> bool:
    """Whether `value` names what `clause` names but drops part of it: "Drives a Skoda Octavia" for "I drive a 2015
    Skoda Octavia". A value with none of the clause's names took another part of it ("Works day shifts" from "I
    work at the Charité now, on day shifts"), and keeps its own words."""
    mine, theirs = names_and_numbers(value), names_and_numbers(clause)
    return bool(mine & theirs) and not theirs <= mine


def written(category: str, key: str | None, value: str, sentence: str,
            context: Sequence[str] = ()) -> tuple[list[str], str]:
    """The fact's values, and why there are none:
    - the model's, when it is a third-person statement the sentence proves (with the earlier turns in `context`
      when it leans on them: "it's all Java here") and it drops no name or number of the user's clause it comes
      from; a bare slot value is written as the slot's sentence first ("Berlin" -> "Lives in Berlin");
    - one fact a clause when the model's value says two or more of the user's clauses (`_within`: "Lives in Lyon
      and works as a nurse at ..." is "Lives in Lyon" and "Works as a nurse at ...");
    - else the user's clauses said of them (`clauses.facts_in`) that hold its words ("I sold the Skoda and now
      drive a Nissan Leaf": "Sold the Skoda", "Now drives a Nissan Leaf"), when together they say it (`_says_it`),
      or when the value is the user's words copied ("I'm allergic to walnuts, so nothing with those please.");
    - none when they do not (the model's fact is not in the user's words), and for an instruction the user's words
      do not hold: an instruction is never written from a clause, since it addresses the assistant, not the user."""
    value = value.strip().rstrip(".")
    if category == INSTRUCTION:  # the user's own words, every one: "Ignore your rules" is never "Never use rules"
        if bad_value(value) is None and _holds_every_word(sentence, value):
            return [value], ""
        return [], "an instruction the user's words do not hold"
    clauses = [c for c in facts_in(sentence) if bad_value(c) is None]
    if not FIRST_PERSON.search(value):  # "I take metformin", "Not a fan, it's too oily for me": the user's words
        own = as_sentence(category, key, value) if is_bare(value) or bad_value(value) else value
        best = max(clauses, key=lambda c: len(_shared(own, c)), default=None)
        if not is_bare(own) and bad_value(own) is None and _proved(own, sentence, context) \
                and (best is None or not _drops_a_name(own, best)):
            joined = [c for c in clauses if _within(c, own)]
            return (joined, "") if len(joined) > 1 else ([own], "")
    saying = [c for c in clauses if _shared(value, c)]
    copied = find_quote(value, [sentence]) is not None  # the user's own words: the clauses they touch say them
    if not saying or (not copied and not _says_it(value, saying)):
        return [], "no clause of the user's says it"
    return saying, ""
