"""The three kinds of memory item and where each lives: one registry instead of a mapping in every module.

An item is named by a reference that carries its kind: `f12` (fact 12), `m345` (message 345), `s7` (summary 7).
People type these in `coop memory show/forget`; JSON output carries them as `id` beside `kind`.

A fact is *active* while it is neither superseded nor archived: only active facts are recalled, deduplicated
against and counted; `ACTIVE_FACT` is that condition, written once. The rules every writer and reader of facts
share live here too, once each: the slot a fact is filed under (`fact_slot`: one normal form and one set of
limits, whether extraction, the model's tool, `coop memory add` or an import writes it) and how a weight fades
with age (`decayed`: retention, salience, the profile and recall's recency prior).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coop.errors import UsageError


@dataclass(frozen=True)
class Kind:
    name: str       # fact | message | summary
    table: str      # the table its rows live in
    text: str       # the column holding its text
    prefix: str     # the letter of its references (f12)
    fulltext: str   # the full-text index over it


FACT = Kind("fact", "facts", "value", "f", "facts_fts")
MESSAGE = Kind("message", "messages", "content", "m", "message_context_fts")
SUMMARY = Kind("summary", "summaries", "text", "s", "summaries_fts")
REGISTRY: dict[str, Kind] = {kind.name: kind for kind in (FACT, MESSAGE, SUMMARY)}
KINDS: tuple[str, ...] = tuple(REGISTRY)
_BY_PREFIX = {kind.prefix: kind for kind in REGISTRY.values()}

# A fact still in use: not replaced by a newer value, not archived by retention or the user.
ACTIVE_FACT = "superseded_at IS NULL AND archived_at IS NULL"
INSTRUCTION = "instruction"  # the category of a standing instruction: in every preamble, never recalled as a fact
GENERAL = "general"  # the category of a fact filed under none
HOST = "host"  # the source of what an MCP host writes: never the user's own words (growth/reconcile.py)
MAX_CATEGORY_CHARS = 100  # the stored limits of a fact's category and key: every writer cuts there
MAX_KEY_CHARS = 200


def fact_slot(category: object, key: object) -> tuple[str, str | None]:
    """The (category, key) a fact is filed under, whoever writes it: trimmed, lower-cased and cut at the stored
    limits, so a long name lands in the same slot by every path; a blank or missing category is `GENERAL`, a blank
    key none. (Extraction first turns the model's words into snake_case vocabulary; the cut is this one.)"""
    slot = category.strip().lower()[:MAX_CATEGORY_CHARS].strip() if isinstance(category, str) else ""
    name = key.strip().lower()[:MAX_KEY_CHARS].strip() if isinstance(key, str) else ""
    return slot or GENERAL, name or None


def decayed(weight: float, age_days: float, half_life_days: float) -> float:
    """`weight` halved every `half_life_days` of `age_days` (an age below zero, a clock's skew, counts as none):
    the one decay with age, for a fact's retention weight, a salient message's score, the profile's signals of
    use and change, and recall's recency prior."""
    faded: float = weight * 0.5 ** (max(0.0, age_days) / half_life_days)
    return faded


def active_fact(alias: str) -> str:
    """`ACTIVE_FACT` for a table alias (`f.superseded_at IS NULL AND f.archived_at IS NULL`)."""
    return f"{alias}.superseded_at IS NULL AND {alias}.archived_at IS NULL"


def inactive_facts(user: str) -> str:
    """A subquery of the ids of the user's facts that are not active (`user`: the statement's placeholder for the
    user id). Searches leave these out (`NOT IN`) rather than keep the active ones (`IN`): the inactive are few,
    and Postgres runs the subquery once and hashes it whatever its statistics say (a memory just written has
    none), where `IN (active ones)` let it read a word's postings once per fact."""
    return f"SELECT f.id FROM facts f WHERE f.user_id = {user} AND NOT ({active_fact('f')})"


def kind(name: str) -> Kind:
    """The registered kind, or a usage error naming the ones there are."""
    found = REGISTRY.get(name)
    if found is None:
        raise UsageError(f"unknown kind {name!r}", hint="use fact, message or summary")
    return found


def make_ref(kind_name: str, item_id: int) -> str:
    return f"{REGISTRY[kind_name].prefix}{item_id}"


def parse_ref(ref: str) -> tuple[str, int]:
    """`'f12'` -> `('fact', 12)`. Anything else is a usage error naming the accepted forms."""
    match = re.fullmatch(r"\s*([fmsFMS])\s*:?\s*(\d{1,18})\s*", ref or "")
    if not match:
        raise UsageError(f"not a memory id: {ref!r}",
                         hint="ids look like f12 (fact), m345 (message) or s7 (summary); see `coop memory list`")
    return _BY_PREFIX[match.group(1).lower()].name, int(match.group(2))
