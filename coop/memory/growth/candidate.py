"""A proposed fact on its way into memory, whoever proposes it: extraction (what `verify` let through), the user
(`coop memory add`, /remember), the chat model's tool, an MCP host, an import or consolidation."""

from __future__ import annotations

from dataclasses import dataclass

ASSERTED, PLAN = "asserted", "plan"
HOLDS, NO_LONGER, NEVER = "holds", "no_longer", "never"


@dataclass(frozen=True)
class Candidate:
    value: str
    category: str = "general"
    key: str | None = None
    importance: float = 0.5
    source: str = "extraction"
    evidence: str | None = None  # the user's own words it rests on (the clauses the model cited)
    replaces: int | None = None  # a user's own write naming the fact it replaces (`coop memory add --replaces f12`)
    stance: str = ASSERTED       # ASSERTED, or PLAN: decided for later, so it never holds a slot or changes a fact
    sentence: str | None = None  # the user's sentence(s) the evidence is from
    polarity: str = HOLDS        # HOLDS, NO_LONGER (it ended: the matching fact is retired), NEVER (denied)
    about: str | None = None     # None: the user; else the person it is about
    language: str = "und"        # the language of the user's words it rests on
    messages: tuple[int, ...] = ()  # which of the listed messages (by position) its words are from
    spans: tuple[tuple[int, int, int], ...] = ()  # its cited clauses: (listed message, start, end), for a refusal
