"""Importance of a message at write time: a cheap, explainable score in 0..1 that the salience leg reads.

The score starts from the role (what the user says about themselves matters more than the assistant's prose)
and is raised by signals that a person wants something kept:
- an explicit request to remember ("remember that", "don't forget", "note that", "keep in mind");
- a correction ("actually, ...", "no, I meant", "that's wrong", "correction:");
- length (a long message carries more) and code (pasted code is often what a later question refers to).
Every weight is a setting (`[memory.importance]`), so a user who finds coop too eager can turn it down. At
0.85 and above (`memory.salience_threshold`) a message is recalled in every turn, so only the explicit signals
reach it with the defaults.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coop.config.loading import ImportanceConfig

REMEMBER = re.compile(r"\b(remember( that| this)?|don'?t forget|do not forget|note that|keep in mind|"
                      r"for (the|your) record|make a note)\b", re.IGNORECASE)
# Remembering together is not a request to keep something: "Remember when we went hiking?", "I remember that".
REMINISCING = re.compile(r"\b(remember (when|the time|that time|how|our|those|what)|(i|you|we) (still )?remember|"
                         r"do you remember|don'?t you remember)\b", re.IGNORECASE)
STRONG_CORRECTION = re.compile(r"(^|\b)(no,? i meant|that'?s (wrong|not right|incorrect)|correction:|i was wrong|"
                               r"not \w+, but\b|to correct)", re.IGNORECASE)
# "Actually" alone is filler ("Actually, I think so"); with a negation it corrects ("actually I'm not vegan").
ACTUALLY_NOT = re.compile(r"\bactually\b.*\b(not|no longer|isn'?t|aren'?t|wasn'?t|don'?t|doesn'?t|never)\b|"
                          r"^\s*actually,?\s+(i|i'm|my|it's|it is|we|the)\b(?!\s+(think|guess|feel|believe|mean|"
                          r"suppose|wonder|don'?t know)\b)", re.IGNORECASE)
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]*")


def asks_to_remember(content: str) -> bool:
    """A sentence that asks for something to be kept, not a question ("should I remember...?") nor a memory
    shared ("remember when..."): those are conversation, and salience would recall them in every turn."""
    return any(REMEMBER.search(s) and not s.rstrip().endswith("?") and not REMINISCING.search(s)
               for s in _SENTENCES.findall(content))


def corrects(content: str) -> bool:
    return any((STRONG_CORRECTION.search(s) or ACTUALLY_NOT.search(s)) and not s.rstrip().endswith("?")
               for s in _SENTENCES.findall(content))
CODE = re.compile(r"```|^( {4}|\t)\S", re.MULTILINE)


def message_importance(role: str, content: str, weights: "ImportanceConfig") -> float:
    """The importance of one message; see the module docstring for the signals."""
    base = {"user": weights.user, "assistant": weights.assistant, "tool": weights.tool}.get(role, weights.assistant)
    score = base
    if role == "user":
        if asks_to_remember(content):
            score = max(score, weights.explicit_remember)
        if corrects(content):
            score = max(score, weights.correction)
    if len(content) >= weights.long_chars:
        score += weights.long_bonus
    if CODE.search(content):
        score += weights.code_bonus
    return round(min(1.0, max(0.0, score)), 3)
