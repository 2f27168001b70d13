"""What a machine's proposed fact must pass before it reaches the write pipeline: the user's words prove it, the
user asserted it, and an instruction was given to the assistant as one.

Extraction, consolidation and exchanges an MCP host recorded all come through `admit`. The evidence is the user's
sentence that proves the fact (`evidence.locate`: the extractor's quote points at it). Each refusal is logged and
counted by reason (`refusals.py`): `evidence` (`evidence.proves`), `mood` (`mood.stance_of`), `instruction`
(`instructions.addresses_assistant`). Unsafe and widening instructions are refused by `FactWriter`, the one place
every writer passes (the model's tool too). A plan the user is still weighing passes as a plan (`stance` "plan"),
which the pipeline never lets change another fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from coop.memory.growth.evidence import find_quote, holding_sentence, locate, proves
from coop.memory.growth.instructions import addresses_assistant, turned_around
from coop.memory.growth.mood import ASSERTED, PLAN, stance_of
from coop.memory.growth.reconcile import Candidate
from coop.memory.growth.refusals import refuse
from coop.memory.kinds import INSTRUCTION


def admit_one(candidate: Candidate, user_texts: Sequence[str], context: Sequence[str] = ()) -> Candidate | None:
    """The candidate as the pipeline may take it (its stance settled), or None (refused, logged, counted)."""
    evidence = locate(candidate.evidence, user_texts, candidate.value, context,
                      narrow=candidate.category != INSTRUCTION)
    if evidence is None:
        why = proves(candidate.evidence, user_texts, candidate.value, context) or "no sentence of the user's proves it"
        refuse("evidence", why, category=candidate.category, text=candidate.value)
        return None
    found = find_quote(evidence, user_texts)  # where they stand: their sentence, and the mood check's source
    sentence = holding_sentence(evidence, user_texts[found[0]]) if found else None
    candidate = replace(candidate, evidence=evidence, sentence=sentence or candidate.sentence)
    if candidate.category == INSTRUCTION:  # (unsafe and widening ones: FactWriter refuses them, for every writer)
        if not addresses_assistant(candidate.evidence, list(user_texts)):
            refuse("instruction", "the user's words do not address the assistant as an instruction",
                   category=INSTRUCTION, text=candidate.value)
            return None
        if turned_around(candidate.sentence or str(candidate.evidence), candidate.value):
            refuse("instruction", "the instruction says the opposite of the user's words", category=INSTRUCTION,
                   text=candidate.value)
            return None
        return replace(candidate, stance=ASSERTED)
    assert found is not None  # locate() returns the user's words
    stance, why = stance_of(evidence, user_texts[found[0]], candidate.value, claimed=candidate.stance)
    if stance not in (ASSERTED, PLAN):
        refuse("mood", why, category=candidate.category, text=candidate.value)
        return None
    return replace(candidate, stance=stance)


def admit(candidates: Sequence[Candidate], user_texts: Sequence[str], context: Sequence[str] = ()) -> list[Candidate]:
    """The candidates that pass, in order."""
    admitted = (admit_one(c, user_texts, context) for c in candidates)
    return [c for c in admitted if c is not None]
