"""The profile: the facts that describe the person, in every prompt, whatever the turn's words.

A question that needs a fact rarely shares its words ("weather in my city" needs "Lives in Porto"): MiniLM puts a
short fact and such a question at cosine 0.1-0.3, no higher than unrelated facts, so a fact's place cannot rest on
a similarity floor. Every active fact (standing instructions aside: they have their own section) is a profile
candidate, scored by what makes it worth keeping in mind, and the best are shown until the profile's share of
the memory budget (`memory.profile_share`) is spent:
- importance (0.40): what the user asked to keep, corrected, or what is core biography;
- category (0.25): where they live, work, family, health, diet, pets, languages, plans describe a person more than
  a film they watched (`CATEGORY_WEIGHTS`; an unknown category weighs `OTHER_CATEGORY`);
- relevance to the turn (0.15): the cosine of the nearest facts, as a tie-breaker among many, never a floor;
- recent use (0.10): recalled into a prompt lately (halving every 30 days);
- recency (0.10): stated or changed lately (halving every 180 days).
With a few dozen facts all of them fit, and the score only orders them. Beside it, `out_of_date` marks the facts
that may have gone stale when another was superseded, and `former_values` gives a fact's earlier values, dated,
for a turn that asks about the past. Figures: docs in the README's profile benchmark.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coop.memory.kinds import INSTRUCTION
from coop.memory.retrieval.context import Recalled
from coop.memory.storage import vectors
from coop.memory.storage.items import Item
from coop.memory.words import names_and_numbers

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.embedder import Embedder
    from coop.memory.storage.store import UserMemory

CATEGORY_WEIGHTS = {
    "location": 1.0, "home": 1.0, "residence": 1.0, "work": 1.0, "job": 1.0, "career": 1.0, "occupation": 1.0,
    "family": 1.0, "relationships": 1.0, "relationship": 1.0, "partner": 1.0, "people": 0.8, "health": 1.0,
    "medical": 1.0, "diet": 1.0, "food": 0.7, "pets": 1.0, "pet": 1.0, "languages": 0.9, "language": 0.9,
    "plans": 0.9, "plan": 0.9, "goals": 0.8, "education": 0.8, "identity": 1.0, "personal": 0.8, "name": 1.0,
    "dates": 0.7, "finance": 0.6, "preferences": 0.6, "preference": 0.6, "hobbies": 0.6, "hobby": 0.6,
    "possessions": 0.5, "travel": 0.6, "general": 0.3,
}
OTHER_CATEGORY = 0.4
WEIGHTS = {"importance": 0.40, "category": 0.25, "relevance": 0.15, "used": 0.10, "fresh": 0.10}
CANDIDATES = 5000         # active facts read per turn (newest first); a memory with more keeps the newest
NEAREST = 40              # facts whose cosine with the turn is looked up (the rest count as unrelated)
USED_HALF_LIFE_DAYS = 30
FRESH_HALF_LIFE_DAYS = 180
PAST_QUESTION = re.compile(
    r"\b(before|previous(ly)?|used to|former(ly)?|earlier|originally|old|past|back (when|in|then)|ago|"
    r"no longer|any ?more|did i|was i|were we|how long)\b|\b(19|20)\d\d\b", re.IGNORECASE)


def candidates(memory: "UserMemory") -> list[Item]:
    """The active facts that may be shown, newest first."""
    return [f for f in memory.active_facts(limit=CANDIDATES, newest_first=True) if f.category != INSTRUCTION]


def nearest(memory: "UserMemory", embedder: "Embedder | None", query: "np.ndarray | None") -> dict[int, float]:
    """Fact id -> cosine with the turn, for the facts nearest it."""
    if embedder is None or query is None:
        return {}
    hits = vectors.nearest(memory, embedder.id, embedder.dims, query, k=NEAREST, kinds=("fact",))
    return {h.item_id: h.similarity for h in hits}


def score(fact: Item, cosine: float, now: float) -> float:
    """How much a fact belongs in the profile of this turn (see the module's weights)."""
    relevance = min(1.0, max(0.0, (cosine - 0.05) / 0.45))
    used = 0.5 ** (max(0.0, now - fact.last_recalled_at) / 86400 / USED_HALF_LIFE_DAYS) \
        if fact.last_recalled_at else 0.0
    changed = fact.updated_at or fact.created_at
    fresh = 0.5 ** (max(0.0, now - changed) / 86400 / FRESH_HALF_LIFE_DAYS)
    category = CATEGORY_WEIGHTS.get((fact.category or "general").lower(), OTHER_CATEGORY)
    return float(WEIGHTS["importance"] * (fact.importance or 0.0) + WEIGHTS["category"] * category
                 + WEIGHTS["relevance"] * relevance + WEIGHTS["used"] * used + WEIGHTS["fresh"] * fresh)


def choose(facts: Sequence[Item], cosines: dict[int, float], now: float | None = None) -> list[Recalled]:
    """Every candidate as a profile entry, best first (the prompt shows as many as its share holds)."""
    now = time.time() if now is None else now
    ranked = [Recalled(f, "profile", score(f, cosines.get(f.item_id, 0.0), now)) for f in facts]
    return sorted(ranked, key=lambda r: -r.score)


def out_of_date(memory: "UserMemory", facts: Sequence[Item]) -> dict[int, str]:
    """Fact id -> why it may be out of date. When a fact was superseded, the facts about the same subject that
    held beside it may have gone stale with it: an active fact older than the change that names what the old
    value named and the new one does not ("Commutes to the Lisbon office by tram", after "Lives in Lisbon" became
    "Lives in Porto"). Settled when the fact changes or is said again after the change (its `updated_at`)."""
    marks: dict[int, str] = {}
    replaced = memory.superseded_facts()
    if not replaced:
        return marks
    successors = memory.get_many("fact", [f.superseded_by for f in replaced if f.superseded_by])
    for old in replaced:
        new = successors.get(old.superseded_by or 0)
        gone = _names(old.text) - (_names(new.text) if new is not None else frozenset())
        if not gone or old.superseded_at is None:
            continue
        for fact in facts:
            if fact.item_id in marks or fact.item_id == old.superseded_by:
                continue
            if (fact.updated_at or fact.created_at) < old.superseded_at and gone & _names(fact.text):
                marks[fact.item_id] = f"may be out of date: {old.ref} was replaced by f{old.superseded_by}"
    return marks


def _names(text: str) -> frozenset[str]:
    return frozenset(n for n in names_and_numbers(text) if not n.isdigit())


def asks_about_past(text: str) -> bool:
    """The turn asks about how things were ("where did I live before?", "my job in 2022")."""
    return bool(PAST_QUESTION.search(text))


def former_values(memory: "UserMemory", shown: Sequence[Recalled], limit: int = 8) -> list[Recalled]:
    """The earlier values of the shown facts, newest first, each marked former with the span it held."""
    former: list[Recalled] = []
    for entry in shown:
        chain = memory.replaced_facts(entry.item.item_id)
        while chain and len(former) < limit:
            old = chain.pop()
            until = old.superseded_at or entry.item.created_at
            former.append(Recalled(old, "history", entry.score, note=f"former, until {_day(until)}; now "
                                                                      f"{entry.item.ref}"))
            chain = memory.replaced_facts(old.item_id) + chain
        if len(former) >= limit:
            break
    return former


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts))
