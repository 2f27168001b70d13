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
    from coop.config import ImportanceConfig

REMEMBER = re.compile(r"\b(remember( that| this)?|don'?t forget|do not forget|note that|keep in mind|"
                      r"for (the|your) record|make a note)\b", re.IGNORECASE)
CORRECTION = re.compile(r"(^|\b)(actually[, ]|no,? i meant|that'?s (wrong|not right|incorrect)|correction:|"
                        r"i was wrong|not \w+, but\b|to correct)", re.IGNORECASE)
CODE = re.compile(r"```|^( {4}|\t)\S", re.MULTILINE)


def message_importance(role: str, content: str, weights: "ImportanceConfig") -> float:
    """The importance of one message; see the module docstring for the signals."""
    base = {"user": weights.user, "assistant": weights.assistant, "tool": weights.tool}.get(role, weights.assistant)
    score = base
    if role == "user":
        if REMEMBER.search(content):
            score = max(score, weights.explicit_remember)
        if CORRECTION.search(content):
            score = max(score, weights.correction)
    if len(content) >= weights.long_chars:
        score += weights.long_bonus
    if CODE.search(content):
        score += weights.code_bonus
    return round(min(1.0, max(0.0, score)), 3)
