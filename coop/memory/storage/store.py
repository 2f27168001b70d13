"""MemoryStore and UserMemory: the only way to reach a user's rows.

`MemoryStore(db).user(user_id)` returns a `UserMemory`, and every query that reads or writes user data is a
method of it (or of the vector index and search, which take a `UserMemory` and bind its `user_id`). There is
no call that takes an item id alone: an id that belongs to another user is simply "not found".

`UserMemory` is built in layers, one module each: `scope.py` (the user's handle), `reads.py` (every read),
`facts.py` (every fact write), and this module: sessions, messages, summaries and forgetting. `forget` deletes
the row, its full-text entry and its vectors; every history row that held the text loses it, and only a
content-free record (kind, id, hash, time) remains, so extraction can tell it must not re-create the item.
The text does not linger in the file either: deleted rows are zeroed (`secure_delete`), the full-text indexes
drop its postings and are merged, and the write-ahead log is checkpointed.

No API key is ever written: every text these methods and facts.py store (messages and their tool calls, session
titles, summaries, facts, their history and reasons) is masked first (`coop.privacy.secrets.mask`), so the chat, the
extraction, consolidation, the model's tools and the importer are all covered here.
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

from coop.errors import NotFoundError, UsageError
from coop.memory.kinds import MESSAGE, REGISTRY
from coop.memory.storage import fulltext, vectors
from coop.memory.storage.connection import Database
from coop.memory.storage.items import MAX_MESSAGE_CHARS, MAX_USER_ID_CHARS, ROLES
from coop.memory.storage.links import Links
from coop.memory.storage.scope import fresh_id_sql
from coop.memory.storage.text_index import SqliteTextIndex
from coop.memory.text import check_text, estimate_tokens
from coop.memory.words import states
from coop.privacy.secrets import mask, mask_optional


def check_user_id(user_id: str) -> str:
    if not user_id or not user_id.strip() or len(user_id) > MAX_USER_ID_CHARS:
        raise UsageError(f"not a valid user id: {user_id!r}", hint="use a short name such as 'ana'")
    check_text(user_id, "user id", MAX_USER_ID_CHARS)
    return user_id


class MemoryStore:
    """The database as a whole: hands out `UserMemory` handles and answers questions about every user."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def user(self, user_id: str) -> "UserMemory":
        return UserMemory(self.db, check_user_id(user_id))

    def user_ids(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT id FROM users ORDER BY id")]


class UserMemory(Links):
    """One user's memory: reads (reads.py), fact writes (facts.py), provenance and durable jobs (links.py), and
    here sessions, messages, summaries and forgetting. Every statement binds `self.user_id`."""

    @cached_property
    def text(self) -> SqliteTextIndex:
        """The user's full-text index (`text_index.py`)."""
        return SqliteTextIndex(self)

    # -- sessions -----------------------------------------------------------------------------------------

    def start_session(self, title: str | None = None, *, started_at: float | None = None,
                      external_id: str | None = None, ended_at: float | None = None,
                      last_activity_at: float | None = None) -> int:
        """A new session (or, for an `external_id` already imported, that session's id)."""
        with self.db.atomic():
            self.ensure_user()
            now = started_at if started_at is not None else time.time()
            if external_id is not None:
                existing = self.session_by_external_id(external_id)
                if existing is not None:
                    return existing
            self.db.execute("INSERT INTO sessions (user_id, title, started_at, ended_at, last_activity_at, "
                            "external_id) VALUES (?, ?, ?, ?, ?, ?)",
                            (self.user_id, mask_optional(title), now, ended_at, last_activity_at or now, external_id))
            return int(self.db.conn.last_insert_rowid())

    def session_by_external_id(self, external_id: str) -> int | None:
        found = self.db.scalar("SELECT id FROM sessions WHERE user_id = ? AND external_id = ?",
                               (self.user_id, external_id))
        return None if found is None else int(found)

    def sessions_by_start(self) -> dict[tuple[float, str | None], int]:
        """This user's sessions by (start, title as stored): how an import recognises a session it already holds
        when the record carries no source id of it (a coop export read back into the database it came from)."""
        return {(row[1], row[2]): int(row[0]) for row in self.db.execute(
            "SELECT id, started_at, title FROM sessions WHERE user_id = ? ORDER BY id DESC", (self.user_id,))}

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        """This user's sessions that hold messages, most recently active first, with their message counts. (Empty
        ones, which older versions left at every start, are not listed.)"""
        rows = self.db.execute(
            "SELECT s.id, s.title, s.started_at, s.ended_at, s.last_activity_at, "
            "(SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.user_id = s.user_id) AS n "
            "FROM sessions s WHERE s.user_id = ? AND n > 0 ORDER BY s.last_activity_at DESC, s.id DESC LIMIT ?",
            (self.user_id, limit))
        return [{"id": r[0], "title": r[1], "started_at": r[2], "ended_at": r[3], "last_activity_at": r[4],
                 "messages": r[5]} for r in rows]

    def set_session_title(self, session_id: int, title: str) -> None:
        self.db.execute("UPDATE sessions SET title = ? WHERE id = ? AND user_id = ? AND title IS NULL",
                        (mask(title)[:80], session_id, self.user_id))

    def end_session(self, session_id: int, *, at: float | None = None, last_activity_at: float | None = None) -> None:
        """Mark a session ended (at `at`, default now). An imported session keeps the end it already has."""
        if at is None:
            self.db.execute("UPDATE sessions SET ended_at = ? WHERE id = ? AND user_id = ?",
                            (time.time(), session_id, self.user_id))
            return
        self.db.execute("UPDATE sessions SET ended_at = coalesce(ended_at, ?), last_activity_at = "
                        "max(last_activity_at, ?) WHERE id = ? AND user_id = ?",
                        (at, last_activity_at if last_activity_at is not None else at, session_id, self.user_id))

    def drop_if_empty(self, session_id: int) -> bool:
        """Remove a session that holds no message and no summary (an import whose every message failed leaves
        none behind); True when it was removed."""
        removed = list(self.db.execute(
            "DELETE FROM sessions WHERE id = ? AND user_id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE "
            "session_id = ? AND user_id = ?) AND NOT EXISTS (SELECT 1 FROM summaries WHERE session_id = ? AND "
            "user_id = ?) RETURNING id", (session_id, self.user_id) * 3))
        return bool(removed)

    def session_exists(self, session_id: int) -> bool:
        return self.db.scalar("SELECT 1 FROM sessions WHERE id = ? AND user_id = ?",
                              (session_id, self.user_id)) is not None

    # -- messages -----------------------------------------------------------------------------------------

    def add_message(self, session_id: int | None, role: str, content: str, *, created_at: float | None = None,
                    importance: float = 0.5, external_id: str | None = None, tool_name: str | None = None,
                    tool_call_id: str | None = None, tool_calls: str | None = None,
                    consolidated_at: float | None = None, origin: str | None = None) -> int | None:
        """Store one message; returns its id, or None when `external_id` was already imported. `origin` "host"
        marks an exchange an MCP host recorded (facts learned from it have the source "host")."""
        if role not in ROLES:
            raise UsageError(f"unknown message role {role!r}", hint="use one of: " + ", ".join(ROLES))
        if origin not in (None, "host"):
            raise UsageError(f"unknown message origin {origin!r}", hint="use none or host")
        if role != "tool" and not tool_calls:  # a tool result, or a call without text, may be empty
            check_text(content, "message", MAX_MESSAGE_CHARS)
        content, tool_calls = mask(content), mask_optional(tool_calls)
        now = created_at if created_at is not None else time.time()
        with self.db.atomic():
            self.ensure_user()
            if session_id is not None and not self.session_exists(session_id):
                raise NotFoundError(f"no session {session_id} for user {self.user_id}",
                                    hint="list sessions with `coop memory stats`")
            # origin only when there is one: an older schema (a test's, a migration's) has no such column
            row = self.db.one(
                "INSERT INTO messages (id, user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, "
                f"created_at, importance, token_count, consolidated_at, external_id{', origin' if origin else ''}) "
                f"VALUES ({fresh_id_sql('message')}, ?,?,?,?,?,?,?,?,?,?,?,?{',?' if origin else ''}) "
                "ON CONFLICT (user_id, external_id) DO NOTHING RETURNING id",
                (self.user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, now,
                 importance, estimate_tokens(content), consolidated_at, external_id, *([origin] if origin else [])))
            if row is None:
                return None
            if session_id is not None:
                self.db.execute("UPDATE sessions SET last_activity_at = max(last_activity_at, ?) WHERE id = ?",
                                (now, session_id))
            return int(row[0])

    def message_by_external_id(self, external_id: str) -> int | None:
        found = self.db.scalar("SELECT id FROM messages WHERE user_id = ? AND external_id = ?",
                               (self.user_id, external_id))
        return None if found is None else int(found)

    def session_message_rows(self, session_id: int | None) -> list[tuple[int, str, float, str]]:
        """(id, role, created_at, content as stored) of this user's messages in one session (None: outside any),
        for an import to recognise messages it already holds when their records carry no source id of them."""
        return [(int(r[0]), r[1], r[2], r[3]) for r in self.db.execute(
            "SELECT id, role, created_at, content FROM messages WHERE user_id = ? AND session_id IS ?",
            (self.user_id, session_id))]

    def mark_consolidated(self, message_ids: list[int]) -> None:
        """These messages are summarised: consolidation does not take them up again."""
        marks = ",".join("?" * len(message_ids))
        self.db.execute(f"UPDATE messages SET consolidated_at = ? WHERE +user_id = ? AND id IN ({marks})",
                        (time.time(), self.user_id, *message_ids))

    def unmark_consolidated(self, session_id: int | None, first_id: int, last_id: int) -> None:
        """The messages of a span whose summary was forgotten: consolidation summarises what is left again."""
        self.db.execute("UPDATE messages SET consolidated_at = NULL WHERE user_id = ? AND session_id IS ? "
                        "AND id BETWEEN ? AND ? AND role IN ('user', 'assistant')",
                        (self.user_id, session_id, first_id, last_id))

    # -- summaries ----------------------------------------------------------------------------------------

    def add_summary(self, text: str, *, session_id: int | None = None,
                    span: tuple[int | None, int | None] | None = None, created_at: float | None = None) -> int:
        text = mask(check_text(text, "summary", MAX_MESSAGE_CHARS))
        with self.db.atomic():
            self.ensure_user()
            return int(self.db.scalar(
                "INSERT INTO summaries (id, user_id, session_id, span_start_id, span_end_id, text, created_at) "
                f"VALUES ({fresh_id_sql('summary')}, ?,?,?,?,?,?) RETURNING id",
                (self.user_id, session_id, span[0] if span else None, span[1] if span else None, text,
                 created_at if created_at is not None else time.time())))

    def has_summary(self, text: str, created_at: float) -> bool:
        return self.db.scalar("SELECT 1 FROM summaries WHERE user_id = ? AND created_at = ? AND text = ?",
                              (self.user_id, created_at, mask(text))) is not None  # stored masked

    # -- forgetting ---------------------------------------------------------------------------------------

    def forget(self, kind: str, item_id: int, *, reason: str = "forgotten by the user") -> dict[str, int]:
        """Delete one item with its FTS row and vectors, keeping only a content-free record that it existed; a
        session title made from a forgotten message is made again from what is left. Returns what went where
        (vectors, session titles), for the receipt `coop memory forget` prints."""
        item = self.get(kind, item_id)
        now = time.time()
        with self.db.atomic():
            counts = {"vectors": int(self.db.scalar(
                "SELECT count(*) FROM embeddings WHERE kind = ? AND item_id = ? AND user_id = ?",
                (kind, item_id, self.user_id)))}
            vectors.delete_item_vectors(self, kind, item_id)
            if kind == "fact":
                self.scrub_history(item_id, item.text, reason=reason, at=now)
            self.db.execute(f"DELETE FROM {REGISTRY[kind].table} WHERE id = ? AND user_id = ?",
                            (item_id, self.user_id))
            self.record_forgotten(kind, self.forget_digest(item.text), now, item_id=item_id)
            # a message's words also sit in the context column of the two messages after it
            fulltext.purge(self.db, sorted({REGISTRY[kind].fulltext, MESSAGE.fulltext}))
            counts["session titles"] = self.retitle([item.text] if kind == "message" else [],
                                                    fact=item.text if kind == "fact" else None,
                                                    session_id=item.session_id if kind == "message" else None)
        self.db.checkpoint()
        return counts

    def retitle(self, gone: list[str], *, fact: str | None = None, session_id: int | None = None) -> int:
        """Titles that hold a forgotten text (a session is titled by its first message; an import brings titles
        of its own), or state a forgotten fact, made again from the session's first remaining message of the
        user (or none); `session_id` limits it to one session. Returns how many changed."""
        if not gone and fact is None:
            return 0
        where = "" if session_id is None else " AND id = ?"
        rows = list(self.db.execute(f"SELECT id, title FROM sessions WHERE user_id = ? AND title IS NOT NULL{where}",
                                    (self.user_id, *(() if session_id is None else (session_id,)))))

        def holds(title: str) -> bool:
            flat = " ".join(title.split()).casefold().rstrip("…")
            return any(flat in " ".join(text.split()).casefold() for text in gone) or (
                fact is not None and states(title, fact))
        changed = 0
        for session, title in rows:
            if not holds(title):
                continue
            first = self.db.scalar("SELECT content FROM messages WHERE user_id = ? AND session_id = ? AND "
                                   "role = 'user' ORDER BY id LIMIT 1", (self.user_id, session))
            new = " ".join(str(first).split())[:80] if first else None
            self.db.execute("UPDATE sessions SET title = ? WHERE id = ? AND user_id = ?",
                            (None if new is None or holds(new) else new, session, self.user_id))
            changed += 1
        return changed

    def undo(self, fact_id: int, *, reason: str = "undone by the user") -> str:
        """Take back the change that made fact `fact_id` what it is, and say what was done.

        A fact that was updated in place gets its previous text back; a fact that was added is forgotten (so
        extraction does not bring it back), and a fact it superseded is current again."""
        item = self.get("fact", fact_id)
        changes = [e for e in self.history(fact_id) if e.action in ("ADD", "UPDATE", "RESTORE")]
        last = changes[-1] if changes else None
        if last is not None and last.action == "UPDATE" and last.old_value:
            self.update_fact_value(fact_id, last.old_value, reason=reason)
            return f"f{fact_id} is “{last.old_value}” again"
        if last is None or last.action != "ADD":
            raise UsageError(f"f{fact_id} has no change to undo", hint=f"see `coop memory history f{fact_id}`")
        replaced = [int(r[0]) for r in self.db.execute(
            "SELECT id FROM facts WHERE user_id = ? AND superseded_by = ? AND superseded_at IS NOT NULL",
            (self.user_id, fact_id))]
        with self.db.atomic():
            self.forget("fact", fact_id, reason=reason)
            for old in replaced:
                self.reinstate_fact(old, reason=f"{reason}: f{fact_id} took back")
        return f"f{fact_id} forgotten" + "".join(f"; f{old} is current again" for old in replaced) \
            + ("" if replaced else f" (“{item.text}”)")

    def record_forgotten(self, kind: str, digest: str | None, at: float, *, item_id: int = 0) -> None:
        """The content-free trace of a forgotten item: its kind, id, time and keyed hash (`forget_digest`; None
        for one an import carries over: an export holds no hash)."""
        self.db.execute("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
                        "VALUES (?,?,?,?,?)", (self.user_id, kind, item_id, digest, at))

    def has_forgotten_record(self, kind: str, at: float) -> bool:
        """A record of an item of this kind forgotten at this time: an import does not add it twice."""
        return self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = ? AND kind = ? AND forgotten_at = ?",
                              (self.user_id, kind, at)) is not None
