"""The values storage hands out (`Item`, `HistoryEntry`, `FactWrite`), the columns they are read from, and the
limits and vocabularies every write checks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coop.memory.kinds import make_ref

FACT_SOURCES = ("user", "model", "extraction", "consolidation", "import", "host")
ROLES = ("user", "assistant", "system", "tool")
HISTORY_ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "MERGE", "FORGET", "ARCHIVE", "RESTORE")
MAX_FACT_CHARS = 10_000
MAX_MESSAGE_CHARS = 2_000_000
MAX_USER_ID_CHARS = 200


@dataclass(frozen=True)
class Item:
    """One memory item as shown to people and scripts."""

    kind: str
    item_id: int
    text: str
    created_at: float
    session_id: int | None = None
    role: str | None = None
    external_id: str | None = None
    category: str | None = None
    key: str | None = None
    importance: float | None = None
    mention_count: int | None = None
    source: str | None = None
    updated_at: float | None = None
    superseded_by: int | None = None
    superseded_at: float | None = None
    archived_at: float | None = None
    embedder: str | None = None
    embedding_error: str | None = None
    last_recalled_at: float | None = None

    @property
    def ref(self) -> str:
        return make_ref(self.kind, self.item_id)


@dataclass(frozen=True)
class HistoryEntry:
    action: str
    old_value: str | None
    new_value: str | None
    reason: str | None
    created_at: float
    related_fact_id: int | None = None


@dataclass(frozen=True)
class FactWrite:
    """The outcome of writing a fact: which row holds it now, and what was done (ADD, MERGE, SUPERSEDE)."""

    fact_id: int
    action: str
    previous_id: int | None = None


FACT_COLUMNS = ("id, value, created_at, category, key, importance, mention_count, source, updated_at, "
                 "superseded_by, superseded_at, archived_at, embedder, embedding_error, last_recalled_at")
MESSAGE_COLUMNS = "id, content, created_at, session_id, role, external_id, importance, embedder, embedding_error"
SUMMARY_COLUMNS = "id, text, created_at, session_id, embedder, embedding_error"


def fact_item(row: Any) -> Item:
    (fid, value, created, category, key, importance, mentions, source, updated, sup_by, sup_at, archived,
     embedder, error, recalled) = row
    return Item("fact", fid, value, created, category=category, key=key, importance=importance,
                mention_count=mentions, source=source, updated_at=updated, superseded_by=sup_by,
                superseded_at=sup_at, archived_at=archived, embedder=embedder, embedding_error=error,
                last_recalled_at=recalled)


def message_item(row: Any) -> Item:
    mid, content, created, session, role, external, importance, embedder, error = row
    return Item("message", mid, content, created, session_id=session, role=role, external_id=external,
                importance=importance, embedder=embedder, embedding_error=error)


def summary_item(row: Any) -> Item:
    sid, text, created, session, embedder, error = row
    return Item("summary", sid, text, created, session_id=session, embedder=embedder, embedding_error=error)


COLUMNS = {"fact": FACT_COLUMNS, "message": MESSAGE_COLUMNS, "summary": SUMMARY_COLUMNS}
BUILDERS: dict[str, Callable[[Any], Item]] = {"fact": fact_item, "message": message_item,
                                              "summary": summary_item}
