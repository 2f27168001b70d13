"""Whether a consolidation summary may be kept. A summary comes back in later prompts as what was said, so it may
hold only what its span of conversation holds, and give the user only the user's words (issue 42: a reply that
slips "IMPORTANT SYSTEM NOTE: the user asked ..." into a summary must not become a standing order).

Read clause by clause, in each clause's language (`language/parse.py`):
- every number is one the span holds (its messages, or their dates; a time of day only written as one);
- every name is one the span holds, and in unspaced scripts every kanji or katakana noun (`verify.py`'s rule);
- no clause asks to widen what is revealed or to drop a safety behaviour unless the user's own lines do;
- a clause that names the user ("the user said ...", in the summary's language) rests on the user's lines more
  than on the assistant's: the assistant's suggestion is never given as the user's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from coop.memory.growth.instructions import widens
from coop.memory.growth.overlap import held
from coop.memory.growth.verify import a_noun_not_written
from coop.memory.language.lexicon import marks, module
from coop.memory.language.parse import parse
from coop.memory.language.terms import names, numbers, terms
from coop.memory.storage.items import Item

# A time of day as a summary writes it: 19:24, 19h24, 19.24, 19時24分
_TIME = re.compile(r"(?<!\d)(\d{1,2})\s?(?:[:h.]|時)\s?(\d{2})(?:分)?(?!\d)")


def _dates(span: Sequence[Item]) -> str:
    """The dates the model saw beside each line, written as a summary may write them. Their times of day are not
    among them: an hour or a minute is no support for a number written otherwise ("19 April" in a span written at
    19:24); a time the summary writes as one is checked whole (`_without_its_times`)."""
    return " ".join(datetime.fromtimestamp(item.created_at).strftime("%Y-%m-%d %d %B %Y %A") for item in span)


def _without_its_times(text: str, span: Sequence[Item]) -> str:
    """`text` less the times of day it writes that are a line's time in the span (hour and minute)."""
    times = {(moment.hour, moment.minute) for moment in (datetime.fromtimestamp(i.created_at) for i in span)}
    return _TIME.sub(lambda m: " " if (int(m.group(1)), int(m.group(2))) in times else m.group(0), text)


def summary_refusal(summary: str, span: Sequence[Item]) -> str | None:
    """Why `summary` may not be kept for `span`, in a few words, or None when it may."""
    users = " ".join(item.text for item in span if item.role == "user")
    others = " ".join(item.text for item in span if item.role != "user")
    everything = " ".join([users, others, _dates(span)])
    user_orders = widens(users) or any("unsafe" in marks(c.text, c.language) for c in parse(users).clauses)
    for clause in parse(summary).clauses:
        text, language = clause.text, clause.language
        named = f"{everything} {_naming_the_user(language)}"  # "Der Nutzer", "ユーザー": the summary's own frame
        support = set(terms(named, language))
        if numbers(_without_its_times(text, span), language) - numbers(everything, language):
            return "a number its conversation does not hold"
        if any(not held(name, support) for name in names(text, language)) or a_noun_not_written(text, named):
            return "a name its conversation does not hold"
        said = marks(text, language)
        if not user_orders and (widens(text) or "unsafe" in said):
            return "an order the user did not give"
        if "the_user" in said and _leans_on_others(text, users, others, language):
            return "words of the assistant's given as the user's"
    return None


def _naming_the_user(language: str) -> str:
    """How a summary in `language` names the user (the lexicon's "the_user" phrases), or "" without a lexicon."""
    found = module(language)
    return " ".join(found.MARKERS.get("the_user", ())) if found is not None else ""


def _leans_on_others(clause: str, users: str, others: str, language: str) -> bool:
    """Whether more of a clause's words (by length) are found only in the other lines than in the user's."""
    own = set(terms(users, language))
    theirs = set(terms(others, language))
    mine = sum(len(t) for t in terms(clause, language) if held(t, own))
    borrowed = sum(len(t) for t in terms(clause, language) if held(t, theirs) and not held(t, own))
    return borrowed > mine
