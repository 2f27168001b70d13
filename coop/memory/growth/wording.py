"""A fact's wording: what a value the model cut from the user's words keeps of them.

A value that is one of the cited clauses with only its subject cut ("Repair old clocks on weekends" of "I repair
old clocks on weekends") keeps the user's verb forms without the subject they agree with, which reads as neither
the user's words nor a profile line. The cited words whole stand for it then, as the user wrote them; the prompt
quotes a first-person fact as the user's (`retrieval/context.fact_line`). Where the subject is cut is the
language's lexicon's "subject" mark (I, je, ich, yo, eu, 私は; not "my", whose noun a value may rightly open
with), so this holds in every language with a lexicon and leaves the others' values as written. A profile line
the model wrote ("Repairs ...") is not such a cut and is kept as written, except where the language gives the
first and third person one form (French "travaille"): the user's words whole say the same. A language that
drops the subject ("Trabajo de ...") has none to cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from coop.memory.growth.pointing import Listed
from coop.memory.language.lexicon import has_lexicon, has_mark, normalise
from coop.memory.language.scripts import has_unspaced

MAX_SUBJECT_WORDS = 2      # a subject pronoun, with one word beside it at most ("I also", "je ne": not a clause)
MAX_UNSPACED_SUBJECT = 4   # characters: 私は, 私たちは


def with_its_subject(value: str, items: Sequence[Listed], language: str) -> str:
    """`value`, or the cited words it is cut from (a clause, or the cited clauses together) when only their
    subject was cut (module docstring)."""
    if not has_lexicon(language):
        return value
    wanted = [word for word, _ in _words(value)]
    texts = [item.clause.text for item in items] + ([" ".join(item.clause.text for item in items)] * (len(items) > 1))
    for text in texts:
        said = " ".join(text.split()).strip(" ,;:").rstrip(".。!！")
        words = _words(said)
        first = len(words) - len(wanted)
        if not wanted or first < 1 or [word for word, _ in words[first:]] != wanted:
            continue
        subject = normalise(said)[:words[first][1]].strip()
        short = first <= MAX_SUBJECT_WORDS if not has_unspaced(subject) else len(subject) <= MAX_UNSPACED_SUBJECT
        if short and has_mark(subject, language, "subject"):
            return said
    return value


def _words(text: str) -> list[tuple[str, int]]:
    """Each word of `text` as the lexicon reads it (a character of an unspaced script), with where it starts in
    the normalised text; punctuation and elisions (j', l') are not words."""
    flat = normalise(text)
    if has_unspaced(flat):
        return [(ch, at) for at, ch in enumerate(flat) if ch.isalnum()]
    return [(match.group(), match.start()) for match in re.finditer(r"\w+", flat)]
