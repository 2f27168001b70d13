"""Whose words answer a question. A question about the user's own life, asked in the first person ("Where did I
park the car?", "What did I cook last Sunday?"), is answered by what the user said: the
assistant's replies restate it or advise around it, and, long and on the subject, they outrank the one line of
the user's that says it. A search for such a question weighs the assistant's messages at `assistant_weight` of
their score. A question that speaks to the assistant ("what did you recommend?", "I remember you said ...") asks
for its words, and one in the third person ("What did Caroline paint?") for no one's in particular (in a
conversation of two people, the other one is stored as the assistant): both are left as they are.

Who a question speaks of is read with its language's lexicon (`coop.memory.language.lexicon`): a word of the
first person and none of address. Telling the language loads a model once per process (most of a second), so it
is asked only when the first-person word is in more than one lexicon ("me"): a search for "hiking", or "where did I
park?", never loads it.
"""

from __future__ import annotations

import re

from coop.memory.language import lexicon
from coop.memory.language.detect import detect
from coop.memory.storage.items import Item

# A word of two letters or more written in capitals is a name or an acronym ("the US", "IT support"), never a
# pronoun, though it reads as one once case is folded.
_WORD = re.compile(r"\w{2,}")


def _without_acronyms(text: str) -> str:
    return _WORD.sub(lambda word: " " if word.group().isupper() else word.group(), text)


def about_the_user(question: str) -> bool:
    """The question speaks of the user (first person) and not to the assistant (no word of address)."""
    question = _without_acronyms(question)
    speaking = [language for language in lexicon.LANGUAGES if lexicon.has_mark(question, language, "first_person")]
    if not speaking:
        return False
    # one lexicon knows the word ("I", "ich", "私"): the question is read as its language; "me" is English, French,
    # Spanish and Portuguese, and the question's language tells
    language = speaking[0] if len(speaking) == 1 else detect(question)
    return lexicon.has_mark(question, language, "first_person") and not lexicon.has_mark(question, language,
                                                                                         "addressee")


def weight_of(item: Item, assistant_weight: float) -> float:
    """What an item's score counts for in a search about the user: an assistant's message `assistant_weight`,
    anything else (the user's words, facts, summaries) all of it."""
    return assistant_weight if item.kind == "message" and item.role == "assistant" else 1.0
