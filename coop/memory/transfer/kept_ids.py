"""Ids across stores, for an import or a migration (`coop_format.CoopImport`): what the rows keep, what is
aliased, and what is rewritten.

- Kept: a fact, message or summary gets the id it had in the source where the target can give it
  (`storage/aliases.py` says where each engine can). The export's header carries the highest id of each kind
  (`ids`; absent from older exports, whose ids are then claimed as they come), claimed first (`claim`), so the
  rows the import must renumber go above every id of the source and never cost a later row its id.
- Aliased: a row that gets another id (its id is another row's, or a forgotten item's, or another person's on
  a server), and a row recognised as one the target holds already under another id, is recorded as an alias
  (kind, the source's id, the id here, when): a reference typed later (`coop memory show f12`, undo, forget,
  why, edit, history, --replaces, the chat's /forget, MCP's get) resolves through it with a one-line note.
- Carried: the source's own aliases travel in the export (`alias` records, after everything else) and are
  recorded again against the ids their items got here, so SQLite -> Postgres -> SQLite keeps a reference that
  was renumbered on the way resolvable at the end. An alias whose source id is a row here of its own is kept
  too: the row wins when typed, and the note names the imported item.
- Rewritten: a history reason that names facts or messages (`supersedes f12`, `the user's words in m34 deny
  f12`) names them by their ids here; a name the map does not know (an item forgotten before the export, or a
  word that only looks like an id) is left as written. Message and summary texts are never rewritten.
"""

from __future__ import annotations

import re
from typing import Any

from coop.memory.kinds import KINDS
from coop.memory.storage.interface import UserStore
from coop.memory.transfer.coop_fields import integer, string
from coop.memory.transfer.coop_fields import time as field_time

_REF = re.compile(r"(?<![\w])([fm])(\d{1,18})(?!\w)")  # a fact's or message's id in a history reason


def claim(memory: UserStore, header: dict[str, Any]) -> None:
    """The ids the header says the source has (the highest of each kind): kept where the target can give them."""
    highest = header.get("ids")
    for kind, top in (highest.items() if isinstance(highest, dict) else ()):
        if kind in KINDS and isinstance(top, int) and not isinstance(top, bool) and 0 < top < 2 ** 63:
            memory.aliases.claim(kind, top)


def renamed(text: str, facts: dict[int, int], messages: dict[int, int]) -> str:
    """`text` with the facts and messages it names (`f12`, `m34`) named by their ids here, where the maps know."""
    maps = {"f": facts, "m": messages}

    def here(match: re.Match[str]) -> str:
        found = maps[match.group(1)].get(int(match.group(2)))
        return f"{match.group(1)}{found}" if found else match.group(0)
    return _REF.sub(here, text)


def carry_alias(memory: UserStore, record: dict[str, Any], maps: dict[str, dict[int, int]]) -> None:
    """An alias of the source's (`{"type": "alias", "kind", "source_id", "target_id", "created_at"}`), recorded
    against the id its item has here; one whose item did not come is dropped."""
    kind = string(record, "kind", limit=20)
    here = maps.get(kind, {}).get(integer(record, "target_id"))
    if here:
        memory.aliases.record(kind, integer(record, "source_id"), here, field_time(record, "created_at"))
