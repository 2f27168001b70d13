"""The ids people type (f12, m345, s7), read in one memory: `parse_ref`'s form, then through the aliases an import
or a migration left (`coop.memory.storage.aliases`: an id the other store had, which this one could not give the
item), so an undo hint printed on one device names the same fact on another. When an alias was read, one line
on stderr says so ("f12 is f57 here since the import of 2025-03-01"; or, when f12 is also this memory's own, that
the own one is meant and which id the imported one has); stdout, and so --json, is unchanged.

Every command that takes an id comes here: show, forget, undo, history, why, edit, review's and add's
--replaces, the chat's /forget (`coop.chat.slash`, which says the note in the chat) and MCP's get, timeline and
forget (`coop.memory.tools.toolbox`, which reads `aliases.resolve` itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop import output
from coop.memory.kinds import parse_ref

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore

__all__ = ["fact_here", "parse_ref", "resolve", "typed"]


def resolve(memory: UserStore, kind: str, number: int) -> tuple[str, int]:
    """The (kind, id) that the parsed reference (`kind`, `number`) names in `memory`, saying so when an alias
    was read."""
    found = memory.aliases.resolve(kind, number)
    if found.note:
        output.info(found.note)
    return found.kind, found.item_id


def typed(memory: UserStore, ref: str) -> tuple[str, int]:
    """`parse_ref(ref)` (a usage error for anything but an id), resolved in `memory`."""
    return resolve(memory, *parse_ref(ref))


def fact_here(memory: UserStore, number: int) -> int:
    """The id here of the fact the user called f`number` (checked to be a fact id already: `fact_ref`)."""
    return resolve(memory, "fact", number)[1]
