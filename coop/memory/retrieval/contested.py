"""Two active facts that fill one single-valued slot: which of them is current, and keeping the other out of the
prompt.

The write path keeps one active fact per key, but a slot can still end up with two: a key spelled two ways
("city" from an older memory or an import, "home_city" from extraction), or an MCP host's account kept beside the
user's (`coop.memory.slots.host_key`: a host may not change what the user said). Such facts disagree, and a model
shown both as current picks one at random. The one shown is the user's own over a host's, then the one said last
(its last change, `updated_at`: a value said again counts as said then); the others stay in memory, flagged in
`coop memory list` and `coop memory review`, where "replaces" settles the pair with its history kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from coop.memory.kinds import HOST
from coop.memory.retrieval.context import Recalled
from coop.memory.slots import slot_of, spellings
from coop.memory.storage.items import Item

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore

Slot = tuple[str, str]


def current_first(facts: Iterable[Item]) -> list[Item]:
    """One slot's facts, the one that holds first: the user's own before a host's, then the one said last."""
    return sorted(facts, key=lambda f: (f.source == HOST, -(f.updated_at or f.created_at), -f.item_id))


def rivals(facts: Iterable[Item]) -> dict[Slot, list[Item]]:
    """The slots more than one of `facts` fills, each with its facts, the current one first."""
    groups: dict[Slot, list[Item]] = {}
    for fact in facts:
        slot = slot_of(fact.category, fact.key)
        if slot is not None:
            groups.setdefault(slot, []).append(fact)
    return {slot: current_first(group) for slot, group in groups.items() if len(group) > 1}


def contested(memory: "UserStore", facts: Sequence[Item] | None = None) -> dict[Slot, list[Item]]:
    """The slots two or more active facts fill: of `facts`' slots (every slot of the memory when None)."""
    if facts is None:
        return rivals(memory.facts.keyed())
    slots = {slot for slot in (slot_of(f.category, f.key) for f in facts) if slot is not None}
    keys = sorted({key for _, name in slots for key in spellings(name)})
    return {slot: group for slot, group in rivals(memory.facts.keyed(keys)).items() if slot in slots}


def flags(groups: dict[Slot, list[Item]]) -> dict[int, str]:
    """Fact id -> what `list` and `review` say of it: the fact it disagrees with, and which one holds."""
    said: dict[int, str] = {}
    for (_, name), group in groups.items():
        current, others = group[0], group[1:]
        said[current.item_id] = f"disagrees with {', '.join(f.ref for f in others)} on {name}; shown as current"
        for other in others:
            said[other.item_id] = f"disagrees with {current.ref} on {name}; {current.ref} is shown as current"
    return said


def current_only(facts: list[Item]) -> list[Item]:
    """`facts` (all of them read: the standing instructions) less those another of them holds a slot against."""
    groups = rivals(facts)
    outvoted = {f.item_id for group in groups.values() for f in group[1:]}
    return [f for f in facts if f.item_id not in outvoted]


def one_value_per_slot(memory: "UserStore", facts: list[Recalled], profile: list[Recalled]
                       ) -> tuple[list[Recalled], list[Recalled]]:
    """The turn's facts and profile with one value per slot: a fact another fact of its slot holds against is
    left out, and the current one takes its place when it was not there; the one shown is noted as current, with
    the ids of the others (so the model knows memory holds them, and can name them to its tools)."""
    groups = contested(memory, [r.item for r in facts + profile])
    if not groups:
        return facts, profile
    current = {f.item_id: group[0] for group in groups.values() for f in group}
    placed: set[int] = set()

    def settled(entries: list[Recalled]) -> list[Recalled]:
        kept = []
        for entry in entries:
            holder = current.get(entry.item.item_id)
            if holder is None:
                kept.append(entry)
                continue
            if holder.item_id in placed:
                continue
            placed.add(holder.item_id)
            others = [f.ref for f in groups[slot_of(holder.category, holder.key) or ("", "")][1:]]
            note = f"memory also holds {', '.join(others)} for this; this one is current"
            kept.append(replace(entry, item=holder, note=_join(entry.note if holder == entry.item else "", note)))
        return kept

    return settled(facts), settled(profile)


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more
