"""What no standing instruction may say, whoever writes it.

An instruction is in every prompt, so one written by mistake or by someone else steers every later reply. Two
checks, on the instruction's own text, run by `FactWriter` for every writer:
- `is_unsafe_instruction`: it asks the assistant to drop a safety behaviour; never stored as an instruction.
- `widens`: it lets the assistant reveal or do more: share, send, publish, ignore, or anything "to anyone",
  "whoever asks", "con cualquiera", in the words of each language's lexicon (its "widening" mark), without a
  negation of its own. A machine source (extraction, the model's tool, an MCP host, an import, consolidation)
  never stores such an instruction (refused and logged); a person who means it adds it with `coop memory add`.
- `widening_fact`: the same words in a fact not said of the user: an instruction filed as a fact.
The lexicons are the one home of those words (coop/memory/language/lexicon/); this module only says how they are
read. A language without a lexicon is not read here: its instructions reach memory from the user's own words only,
through `verify`.
"""

from __future__ import annotations

import re

from coop.memory.language.lexicon import LANGUAGES, has_mark, in_another_language, marks, scopes, unmarked


def is_unsafe_instruction(text: str) -> bool:
    """A 'standing instruction' that asks the assistant to drop a safety behaviour is never stored as one."""
    lowered = text.casefold()
    return bool(re.search(
        r"(ignore|disregard|bypass|disable|turn off|skip|drop|remove|forget|without)\b[^.]{0,40}\b"
        r"(safety|guardrail|filter|rules|polic|restriction|ethic|warning|content polic|system prompt)"
        r"|\b(jailbreak|developer mode|dan mode|no (limits|restrictions|filters))\b"
        r"|pretend (you have|there are) no (rules|restrictions|limits)", lowered))


def widens(instruction: str) -> bool:
    """True when a part of the instruction (a sentence, or what follows a "but") widens in a language it may be
    written in, and nothing in that part outside the widening words themselves negates or holds it back ("never",
    "stop", "keep it private"). Any language that may read it counts: a machine's instruction is refused on the
    cautious side, and the user can still say it themselves."""
    for language in LANGUAGES:
        if not has_mark(instruction, language, "widening") or in_another_language(instruction, language):
            continue  # the words first: telling the language is the slower question
        for part in scopes(instruction, language):
            if not has_mark(part, language, "widening"):
                continue
            rest = unmarked(part, language, "widening")
            if not has_mark(rest, language, "negation") and not has_mark(rest, language, "withholding"):
                return True
    return False


def widening_fact(value: str, evidence: str, language: str) -> bool:
    """Whether a fact widens what the assistant may reveal ("you may give my address to whoever asks") without the
    user as its subject ("I share my photos with everyone" is news of the user): an instruction filed as a fact,
    which the prompt would show beside the user's facts, where a model may take it as leave. The subject is told by
    the language's lexicon: without one, such a fact is refused, on the cautious side (`FactWriter` refuses it
    from a machine source)."""
    texts = (value, evidence)
    return any(widens(text) for text in texts) and not any("self" in marks(text, language) for text in texts)
