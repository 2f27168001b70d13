"""One user's rows as records, for an export: every session, message, fact, history entry, summary and
forgotten record, read from one consistent snapshot (a write by another process mid-export is either all in or
all out), in the order an import needs them (sessions before their messages, facts before their history).

The record fields are the export format's (`transfer/coop_format.py` describes it); a forgotten record carries
no hash: the database's is keyed by a secret that never leaves it (`forget_key.py`)."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

from coop.memory.storage.scope import Part

_SESSION = ("id", "title", "started_at", "ended_at", "last_activity_at", "external_id")
_MESSAGE = ("id", "session_id", "role", "content", "created_at", "importance", "tool_name", "tool_call_id",
            "tool_calls", "consolidated_at", "external_id", "origin")
_FACT = ("id", "category", "key", "value", "source", "importance", "mention_count", "created_at", "updated_at",
         "last_recalled_at", "superseded_by", "superseded_at", "archived_at")
_HISTORY = ("fact_id", "action", "old_value", "new_value", "related_fact_id", "reason", "created_at")
_SUMMARY = ("id", "session_id", "span_start_id", "span_end_id", "text", "created_at")
_FORGOTTEN = ("kind", "NULL", "forgotten_at")
_ALIAS = ("kind", "source_id", "target_id", "created_at")
RECORDS = (  # (record type, columns, table), in the order they are read and imported
    ("session", _SESSION, "sessions"),
    ("message", _MESSAGE, "messages"),
    ("fact", _FACT, "facts"),
    ("fact_history", _HISTORY, "fact_history"),
    ("summary", _SUMMARY, "summaries"),
    ("forgotten", _FORGOTTEN, "forgotten"),
    ("alias", _ALIAS, "id_aliases"),  # ids another store gave items this one renumbered (`aliases.py`)
)


class Records(Part):
    """One user's rows as an export reads them (`memory.records`)."""

    def dump(self) -> Generator[int | dict[str, Any], None, None]:
        """First the number of records, then each record (a dict with its `type`), all from one snapshot. The
        snapshot is held until the iterator is exhausted or closed."""
        db = self.db
        with db.snapshot():
            yield sum(int(db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = $1", (self.user_id,)))
                      for _, _, table in RECORDS)
            for kind, columns, table in RECORDS:
                names = tuple("content_hash" if column == "NULL" else column for column in columns)
                order = "kind, source_id" if table == "id_aliases" else "id"  # (the one table without an id)
                for row in db.stream(f"SELECT {', '.join(columns)} FROM {table} WHERE user_id = $1 ORDER BY {order}",
                                     (self.user_id,)):
                    yield {"type": kind, **dict(zip(names, row))}

    def highest_ids(self) -> dict[str, int]:
        """The highest id of each kind (fact, message, summary) of this user's, 0 for none: an export's header
        carries them, so an import can keep every id it can and put renumbered rows above them (`aliases.py`)."""
        return {kind: int(self.db.scalar(f"SELECT coalesce(max(id), 0) FROM {table} WHERE user_id = $1",
                                         (self.user_id,)))
                for kind, table in (("fact", "facts"), ("message", "messages"), ("summary", "summaries"))}

    def conversation(self) -> Iterator[tuple[int | None, str, str, float]]:
        """(session id, role, text, written at) of every message, session by session (messages without a session
        first), in the order they were written."""
        yield from self.db.execute("SELECT session_id, role, content, created_at FROM messages WHERE user_id = $1 "
                                   "ORDER BY coalesce(session_id, 0), id", (self.user_id,))
