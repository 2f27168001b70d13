"""One user's messages (`memory.messages`): written (masked), and read back as the recency leg, the timeline
around one message, the salient ones, their sessions, neighbours and lengths, and what consolidation still owes."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from coop.errors import NotFoundError, UsageError
from coop.memory.kinds import ACTIVE_FACT
from coop.memory.storage.items import (
    FACT_COLUMNS,
    MAX_MESSAGE_CHARS,
    MESSAGE_COLUMNS,
    ROLES,
    Item,
    fact_item,
    message_item,
)
from coop.memory.storage.scope import Part, in_chunks
from coop.memory.storage.sql import marks
from coop.memory.text import check_text, estimate_tokens
from coop.privacy.secrets import mask, mask_optional


class Messages(Part):
    """The messages of one user."""

    def session_ids(self, message_ids: Iterable[int]) -> dict[int, int]:
        """The session of each of these messages of this user's (messages without one are left out)."""
        return self._message_column("session_id", message_ids, "AND session_id IS NOT NULL")

    def neighbour_ids(self, message_ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """For each of these messages of this user's, the messages just before and after it in its session (None
        at a session's edge, or for a message without a session). Each is one step on `messages_user_session`."""
        wanted = list(dict.fromkeys(message_ids))
        out: dict[int, tuple[int | None, int | None]] = {}
        for chunk in in_chunks(wanted):
            out.update((row[0], (row[1], row[2])) for row in self.db.execute(
                "SELECT m.id, (SELECT p.id FROM messages p WHERE p.user_id = $1 AND p.session_id = m.session_id "
                "AND p.id < m.id ORDER BY p.id DESC LIMIT 1), (SELECT n.id FROM messages n WHERE n.user_id = $1 "
                "AND n.session_id = m.session_id AND n.id > m.id ORDER BY n.id LIMIT 1) FROM messages m "
                f"WHERE {self.sql.no_index}m.user_id = $1 AND m.id IN ({marks(len(chunk), first=2)})",
                (self.user_id, *chunk)))
        return out

    def lengths(self, message_ids: Iterable[int]) -> dict[int, int]:
        """The length in characters of each of these messages of this user's (as stored: masked)."""
        return self._message_column("length(content)", message_ids)

    def _message_column(self, expression: str, message_ids: Iterable[int], condition: str = "") -> dict[int, Any]:
        """`expression` for each of these messages of this user's, by id, in chunks of 500. `+user_id`: each row
        is found by its id; on `user_id` the planner would scan the user's covering (user_id, session_id) index."""
        wanted = list(dict.fromkeys(message_ids))
        out: dict[int, Any] = {}
        for chunk in in_chunks(wanted):
            out.update((row[0], row[1]) for row in self.db.execute(
                f"SELECT id, {expression} FROM messages WHERE {self.sql.no_index}user_id = $1 "
                f"AND id IN ({marks(len(chunk), first=2)}) "
                f"{condition}", (self.user_id, *chunk)))
        return out

    def recent(self, session_id: int, limit: int) -> list[Item]:
        """The last `limit` messages of one session, oldest first (the recency leg)."""
        rows = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND session_id = $2 "
                               "ORDER BY id DESC LIMIT $3", (self.user_id, session_id, limit))
        return [message_item(r) for r in rows][::-1]

    def around(self, message_id: int, *, before: int = 3, after: int = 3) -> list[Item]:
        """The messages of the same session just before and after one message, in order (the timeline)."""
        centre = self.memory.get("message", message_id)
        earlier = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 "
                                  "AND session_id IS NOT DISTINCT FROM $2 AND id < $3 ORDER BY id DESC LIMIT $4",
                                  (self.user_id, centre.session_id, message_id, before))
        later = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 "
                                "AND session_id IS NOT DISTINCT FROM $2 AND id > $3 ORDER BY id LIMIT $4",
                                (self.user_id, centre.session_id, message_id, after))
        return [message_item(r) for r in earlier][::-1] + [centre] + [message_item(r) for r in later]

    def salient(self, threshold: float, limit: int) -> list[Item]:
        """Active facts and messages at or above `threshold` importance, most important first (salience leg)."""
        facts = [fact_item(r) for r in self.db.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND importance >= $2 AND {ACTIVE_FACT} "
            "ORDER BY importance DESC, updated_at DESC LIMIT $3", (self.user_id, threshold, limit))]
        messages = [message_item(r) for r in self.db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = $1 AND importance >= $2 "
            "ORDER BY importance DESC, id DESC LIMIT $3", (self.user_id, threshold, limit))]
        both = facts + messages
        both.sort(key=lambda i: (i.importance or 0, i.created_at), reverse=True)
        return both[:limit]

    def unconsolidated(self, *, written_before: float, session_id: int | None = None) -> list[tuple[int, int]]:
        """(message id, session id) of conversation messages not yet consolidated whose session has ended or
        that were written before `written_before`, in session and id order."""
        where = "AND m.session_id = $3" if session_id is not None else ""
        params = (self.user_id, written_before) + ((session_id,) if session_id is not None else ())
        return [(int(r[0]), int(r[1])) for r in self.db.execute(
            "SELECT m.id, m.session_id FROM messages m JOIN sessions s ON s.id = m.session_id "
            "WHERE m.user_id = $1 AND m.consolidated_at IS NULL AND m.role IN ('user', 'assistant') "
            f"AND (s.ended_at IS NOT NULL OR m.created_at <= $2) {where} ORDER BY m.session_id, m.id", params)]

    def add(self, session_id: int | None, role: str, content: str, *, created_at: float | None = None,
                    importance: float = 0.5, external_id: str | None = None, tool_name: str | None = None,
                    tool_call_id: str | None = None, tool_calls: str | None = None,
                    consolidated_at: float | None = None, origin: str | None = None,
                    source_id: int | None = None) -> int | None:
        """Store one message; returns its id, or None when `external_id` was already imported. `origin` "host"
        marks an exchange an MCP host recorded (facts learned from it have the source "host"); `source_id`, an
        import's: its id in the export, kept where free (`aliases.py`)."""
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
            if session_id is not None and not self.memory.sessions.exists(session_id):
                raise NotFoundError(f"no session {session_id} for user {self.user_id}",
                                    hint="list sessions with `coop memory stats`")
            # origin only when there is one: an older schema (a test's, a migration's) has no such column
            row = self.memory.aliases.insert("message", source_id,
                "INSERT INTO messages (id, user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, "
                f"created_at, importance, token_count, consolidated_at, external_id{', origin' if origin else ''}) "
                f"VALUES ({{id}}, $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12{',$13' if origin else ''}) "
                "{conflict} RETURNING id",
                (self.user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, now,
                 importance, estimate_tokens(content), consolidated_at, external_id, *([origin] if origin else [])),
                conflict="ON CONFLICT (user_id, external_id) DO NOTHING")
            if row is None:
                return None
            if session_id is not None:
                self.db.execute(f"UPDATE sessions SET last_activity_at = {self.sql.greatest}(last_activity_at, $1) "
                                "WHERE id = $2", (now, session_id))
            return int(row[0])

    def by_external_id(self, external_id: str) -> int | None:
        found = self.db.scalar("SELECT id FROM messages WHERE user_id = $1 AND external_id = $2",
                               (self.user_id, external_id))
        return None if found is None else int(found)

    def of_session(self, session_id: int | None) -> list[tuple[int, str, float, str]]:
        """(id, role, created_at, content as stored) of this user's messages in one session (None: outside any),
        for an import to recognise messages it already holds when their records carry no source id of them."""
        return [(int(r[0]), r[1], r[2], r[3]) for r in self.db.execute(
            "SELECT id, role, created_at, content FROM messages WHERE user_id = $1 "
            "AND session_id IS NOT DISTINCT FROM $2",
            (self.user_id, session_id))]

    def mark_consolidated(self, message_ids: list[int]) -> None:
        """These messages are summarised: consolidation does not take them up again."""
        self.db.execute(f"UPDATE messages SET consolidated_at = $1 WHERE {self.sql.no_index}user_id = $2 "
                        f"AND id IN ({marks(len(message_ids), first=3)})",
                        (time.time(), self.user_id, *message_ids))

    def unmark_consolidated(self, session_id: int | None, first_id: int, last_id: int) -> None:
        """The messages of a span whose summary was forgotten: consolidation summarises what is left again."""
        self.db.execute("UPDATE messages SET consolidated_at = NULL WHERE user_id = $1 "
                        "AND session_id IS NOT DISTINCT FROM $2 AND id BETWEEN $3 AND $4 "
                        "AND role IN ('user', 'assistant')",
                        (self.user_id, session_id, first_id, last_id))
