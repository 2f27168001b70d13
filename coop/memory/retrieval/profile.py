"""The profile: the facts that describe the person, in every prompt, whatever the turn's words.

A question that needs a fact rarely shares its words ("weather in my city" needs "Lives in Porto"): MiniLM puts a
short fact and such a question at cosine 0.1-0.3, no higher than unrelated facts, so a fact's place cannot rest on
a similarity floor. Every active fact (standing instructions aside: they have their own section) is a profile
candidate, scored by what makes it worth keeping in mind, and the best are shown until the profile's share of
the memory budget (`memory.profile_share`) is spent:
- importance (0.35): what the user asked to keep, corrected, or what is core biography;
- category (0.20): where they live, work, family, health, diet, pets, languages, plans describe a person more than
  a film they watched (`CATEGORY_WEIGHTS`; an unknown category weighs `OTHER_CATEGORY`);
- a slot (0.10): a fact with a key fills one of the person's slots (home city, employer, diet), which is what a
  key is for (`extract.py` asks for one exactly then);
- a standing trait (0.10): "Drives a Clio", "Is pescatarian", not an episode ("Visited a pier last weekend",
  "Got a recipe from Ana", `is_event`): episodes are recalled when the turn is about them, by relevance;
- relevance to the turn (0.15): the fact's cosine with the turn, as a tie-breaker among many, never a floor;
- recent use (0.05): recalled into a prompt lately (halving every 30 days);
- recency (0.05): stated or changed lately (halving every 180 days).
With a few dozen facts all of them fit, and the score only orders them. Beside it, `out_of_date` marks the facts
that may have gone stale when another was superseded, and `former_values` gives a fact's earlier values, dated,
for a turn that asks about the past. Figures: docs in the README's profile benchmark.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coop.memory.kinds import INSTRUCTION, decayed
from coop.memory.retrieval.context import Recalled
from coop.memory.storage.items import Item
from coop.memory.words import names_and_numbers

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.embedder import Embedder
    from coop.memory.storage.interface import UserStore

CATEGORY_WEIGHTS = {
    "location": 1.0, "home": 1.0, "residence": 1.0, "work": 1.0, "job": 1.0, "career": 1.0, "occupation": 1.0,
    "family": 1.0, "relationships": 1.0, "relationship": 1.0, "partner": 1.0, "people": 0.8, "health": 1.0,
    "medical": 1.0, "diet": 1.0, "food": 0.7, "pets": 1.0, "pet": 1.0, "languages": 0.9, "language": 0.9,
    "plans": 0.9, "plan": 0.9, "goals": 0.8, "education": 0.8, "identity": 1.0, "personal": 0.8, "name": 1.0,
    "dates": 0.7, "finance": 0.6, "preferences": 0.6, "preference": 0.6, "hobbies": 0.6, "hobby": 0.6,
    "possessions": 0.5, "travel": 0.6, "general": 0.3,
}
OTHER_CATEGORY = 0.4
WEIGHTS = {"importance": 0.35, "category": 0.20, "slot": 0.10, "trait": 0.10, "relevance": 0.15, "used": 0.05,
           "fresh": 0.05}
# An episode: a fact that opens with a verb in the past tense, or is dated by a time of its own.
_EVENT = re.compile(r"^(?!(?:married|engaged|divorced|widowed|retired|employed|unemployed|self-employed|based|"
                    r"interested|qualified|trained|certified|licensed|separated|related|located|allergic|used)\b)"
                    r"(\w+ed|went|got|saw|took|made|bought|met|ate|ran|won|lost|found|gave|came|left|spent|read a|"
                    r"wrote|heard|caught|did|had a|had an|threw|sent|sold|drove|flew|rode|swam|sang|began|"
                    r"brought|taught|thought|felt)\b|\b(last (week|weekend|night|month|year|summer|winter|"
                    r"spring|autumn)|yesterday|this morning|ago)\b", re.IGNORECASE)
CANDIDATES = 5000         # active facts listed for review and MCP's profile (newest first)
POOL = 120                # the best entries made into items each turn: far more than the profile's share holds
NEAREST = 40              # beyond EXACT_FACTS, the facts whose cosine the index finds (the rest count as unrelated)
EXACT_FACTS = 2000        # up to this many facts are compared exactly: reading their vectors costs less than the
                          # bit scan over every vector of a large memory (2.4 -> 0.3 ms for 30 facts among 100,000)
USED_HALF_LIFE_DAYS = 30
FRESH_HALF_LIFE_DAYS = 180
PAST_QUESTION = re.compile(
    r"\b(before|previous(ly)?|used to|former(ly)?|earlier|originally|old|past|back (when|in|then)|ago|"
    r"no longer|any ?more|did i|was i|were we|how long)\b|\b(19|20)\d\d\b", re.IGNORECASE)


def candidates(memory: "UserStore") -> list[Item]:
    """Every active fact that may be shown (standing instructions aside), newest first."""
    return [f for f in memory.facts.active(limit=CANDIDATES, newest_first=True) if f.category != INSTRUCTION]


def nearest(memory: "UserStore", embedder: "Embedder | None", query: "np.ndarray | None") -> dict[int, float]:
    """Fact id -> cosine with the turn: of every fact while they are few enough to compare exactly, else of the
    `NEAREST` the index finds. Every fact is a profile candidate, and relevance breaks the ties among them: a
    nearest-40 cut gave a car the question needed relevance 0 among a thousand small facts, some of them a little
    nearer, and the profile left it out (docs/benchmarks.md, the profile with 1,000 extra facts)."""
    if embedder is None or query is None:
        return {}
    size = memory.vectors.size(embedder.id, "fact")
    if not size:
        return {}
    exact = size <= EXACT_FACTS
    hits = memory.vectors.nearest(embedder.id, embedder.dims, query, k=size if exact else NEAREST, kinds=("fact",),
                                  exact=exact)
    return {h.item_id: h.similarity for h in hits}


def is_event(text: str) -> bool:
    """An episode rather than a standing trait ("Visited a pier last weekend"; not "Drives a Clio")."""
    return bool(_EVENT.search(text.strip()))


def signal_score(category: str | None, importance: float, changed: float, recalled: float | None, cosine: float,
                 now: float, *, slot: bool = False, trait: bool = True) -> float:
    """How much a fact belongs in the profile of this turn (see the module's weights)."""
    relevance = min(1.0, max(0.0, (cosine - 0.05) / 0.45))
    used = decayed(1.0, (now - recalled) / 86400, USED_HALF_LIFE_DAYS) if recalled else 0.0
    fresh = decayed(1.0, (now - changed) / 86400, FRESH_HALF_LIFE_DAYS)
    weight = CATEGORY_WEIGHTS.get((category or "general").lower(), OTHER_CATEGORY)
    return float(WEIGHTS["importance"] * importance + WEIGHTS["category"] * weight + WEIGHTS["slot"] * slot
                 + WEIGHTS["trait"] * trait + WEIGHTS["relevance"] * relevance + WEIGHTS["used"] * used
                 + WEIGHTS["fresh"] * fresh)


def score(fact: Item, cosine: float, now: float) -> float:
    """`signal_score` of one fact."""
    return signal_score(fact.category, fact.importance or 0.0, fact.updated_at or fact.created_at,
                        fact.last_recalled_at, cosine, now, slot=fact.key is not None, trait=not is_event(fact.text))


def best(memory: "UserStore", cosines: dict[int, float], now: float, *, pool: int = POOL,
         leaving_out: frozenset[int] = frozenset()) -> tuple[list[Recalled], int]:
    """The `pool` best profile entries for this turn, best first, and how many candidates there were. The
    scores are made from each fact's signals alone (one lean read of every active fact); only the best become
    items, so a memory of thousands of facts costs a few milliseconds."""
    signals = memory.facts.signals()
    ranked = sorted(((signal_score(category, importance, changed, recalled, cosines.get(fact_id, 0.0), now,
                                   slot=keyed, trait=not is_event(text)), fact_id)
                     for fact_id, category, importance, changed, recalled, keyed, text in signals
                     if fact_id not in leaving_out), reverse=True)[:pool]
    items = memory.get_many("fact", [fact_id for _, fact_id in ranked])
    return [Recalled(items[fact_id], "profile", value) for value, fact_id in ranked if fact_id in items], len(signals)


def out_of_date(memory: "UserStore", facts: Sequence[Item]) -> dict[int, str]:
    """Fact id -> why it may be out of date. When a fact was superseded, the facts about the same subject that
    held beside it may have gone stale with it: an active fact older than the change that names what the old
    value named and the new one does not ("Commutes to the Lisbon office by tram", after "Lives in Lisbon" became
    "Lives in Porto"). Settled when the fact changes or is said again after the change (its `updated_at`)."""
    marks: dict[int, str] = {}
    replaced = memory.facts.superseded()
    if not replaced:
        return marks
    successors = memory.get_many("fact", [f.superseded_by for f in replaced if f.superseded_by])
    named = {fact.item_id: _names(fact.text) for fact in facts}
    for old in replaced:
        new = successors.get(old.superseded_by or 0)
        gone = _names(old.text) - (_names(new.text) if new is not None else frozenset())
        if not gone or old.superseded_at is None:
            continue
        for fact in facts:
            if fact.item_id in marks or fact.item_id == old.superseded_by:
                continue
            if (fact.updated_at or fact.created_at) < old.superseded_at and gone & named[fact.item_id]:
                marks[fact.item_id] = f"may be out of date: {old.ref} was replaced by f{old.superseded_by}"
    return marks


def _names(text: str) -> frozenset[str]:
    return frozenset(n for n in names_and_numbers(text) if not n.isdigit())


def asks_about_past(text: str) -> bool:
    """The turn asks about how things were ("where did I live before?", "my job in 2022")."""
    return bool(PAST_QUESTION.search(text))


def former_values(memory: "UserStore", shown: Sequence[Recalled], limit: int = 8) -> list[Recalled]:
    """The earlier values of the shown facts, newest first, each marked former with the span it held."""
    former: list[Recalled] = []
    for entry in shown:
        chain = memory.facts.replaced(entry.item.item_id)
        while chain and len(former) < limit:
            old = chain.pop()
            until = old.superseded_at or entry.item.created_at
            former.append(Recalled(old, "history", entry.score, note=f"former, until {_day(until)}; now "
                                                                      f"{entry.item.ref}"))
            chain = memory.facts.replaced(old.item_id) + chain
        if len(former) >= limit:
            break
    return former


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts))
