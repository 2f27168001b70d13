"""One user's sessions (`memory.sessions`): started, titled, ended, listed; an empty one dropped."""

from __future__ import annotations

import time
from typing import Any

from coop.memory.storage.scope import Part
from coop.memory.text import grapheme_start
from coop.privacy.secrets import mask, mask_optional


class Sessions(Part):
    """The sessions of one user."""

    def __call__(self, limit: int = 20) -> list[dict[str, Any]]:  # transitional: `memory.sessions.recent(limit)`
        return self.recent(limit)

    def previous(self, session_id: int | None, *, active_after: float) -> int | None:
        """The most recently active other session with messages, if it was active after `active_after`."""
        found = self.db.scalar(
            "SELECT s.id FROM sessions s WHERE s.user_id = $1 AND s.id IS DISTINCT FROM $2 AND s.last_activity_at > $3 "
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.user_id = s.user_id) "
            "ORDER BY s.last_activity_at DESC, s.id DESC LIMIT 1", (self.user_id, session_id, active_after))
        return None if found is None else int(found)

    def start(self, title: str | None = None, *, started_at: float | None = None,
                      external_id: str | None = None, ended_at: float | None = None,
                      last_activity_at: float | None = None) -> int:
        """A new session (or, for an `external_id` already imported, that session's id)."""
        with self.db.atomic():
            self.ensure_user()
            now = started_at if started_at is not None else time.time()
            if external_id is not None:
                existing = self.by_external_id(external_id)
                if existing is not None:
                    return existing
            return int(self.db.scalar(
                "INSERT INTO sessions (user_id, title, started_at, ended_at, last_activity_at, external_id) "
                "VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                (self.user_id, mask_optional(title), now, ended_at, last_activity_at or now, external_id)))

    def by_external_id(self, external_id: str) -> int | None:
        found = self.db.scalar("SELECT id FROM sessions WHERE user_id = $1 AND external_id = $2",
                               (self.user_id, external_id))
        return None if found is None else int(found)

    def by_start(self) -> dict[tuple[float, str | None], int]:
        """This user's sessions by (start, title as stored): how an import recognises a session it already holds
        when the record carries no source id of it (a coop export read back into the database it came from)."""
        return {(row[1], row[2]): int(row[0]) for row in self.db.execute(
            "SELECT id, started_at, title FROM sessions WHERE user_id = $1 ORDER BY id DESC", (self.user_id,))}

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """This user's sessions that hold messages, most recently active first, with their message counts. (Empty
        ones, which older versions left at every start, are not listed.)"""
        rows = self.db.execute(
            "SELECT * FROM (SELECT s.id, s.title, s.started_at, s.ended_at, s.last_activity_at, "
            "(SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.user_id = s.user_id) AS n "
            "FROM sessions s WHERE s.user_id = $1) counted WHERE n > 0 "
            "ORDER BY last_activity_at DESC, id DESC LIMIT $2", (self.user_id, limit))
        return [{"id": r[0], "title": r[1], "started_at": r[2], "ended_at": r[3], "last_activity_at": r[4],
                 "messages": r[5]} for r in rows]

    def set_title(self, session_id: int, title: str) -> None:
        """The session's title, once: the start of `title`, masked before it is cut (a key across the cut is still
        a key) and cut between two characters a reader sees."""
        title = mask(title)
        self.db.execute("UPDATE sessions SET title = $1 WHERE id = $2 AND user_id = $3 AND title IS NULL",
                        (title[:grapheme_start(title, 80)], session_id, self.user_id))

    def end(self, session_id: int, *, at: float | None = None, last_activity_at: float | None = None) -> None:
        """Mark a session ended (at `at`, default now). An imported session keeps the end it already has."""
        if at is None:
            self.db.execute("UPDATE sessions SET ended_at = $1 WHERE id = $2 AND user_id = $3",
                            (time.time(), session_id, self.user_id))
            return
        self.db.execute("UPDATE sessions SET ended_at = coalesce(ended_at, $1), last_activity_at = "
                        f"{self.sql.greatest}(last_activity_at, $2) WHERE id = $3 AND user_id = $4",
                        (at, last_activity_at if last_activity_at is not None else at, session_id, self.user_id))

    def drop_if_empty(self, session_id: int) -> bool:
        """Remove a session that holds no message and no summary (an import whose every message failed leaves
        none behind); True when it was removed."""
        removed = list(self.db.execute(
            "DELETE FROM sessions WHERE id = $1 AND user_id = $2 AND NOT EXISTS (SELECT 1 FROM messages WHERE "
            "session_id = $3 AND user_id = $4) AND NOT EXISTS (SELECT 1 FROM summaries WHERE session_id = $5 AND "
            "user_id = $6) RETURNING id", (session_id, self.user_id) * 3))
        return bool(removed)

    def exists(self, session_id: int) -> bool:
        return self.db.scalar("SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2",
                              (session_id, self.user_id)) is not None
