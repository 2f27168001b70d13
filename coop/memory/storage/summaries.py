"""One user's summaries (`memory.summaries`): written by consolidation and imports (masked), read by session
and span."""

from __future__ import annotations

import time

from coop.memory.storage.items import BUILDERS, COLUMNS, MAX_MESSAGE_CHARS, Item
from coop.memory.storage.scope import Part
from coop.memory.text import check_text
from coop.privacy.secrets import mask


class Summaries(Part):
    """The summaries of one user."""

    def span(self, summary_id: int) -> tuple[int, int] | None:
        """The first and last message ids a summary covers (None for an imported summary without one)."""
        row = self.db.one("SELECT span_start_id, span_end_id FROM summaries WHERE id = $1 AND user_id = $2",
                          (summary_id, self.user_id))
        return None if row is None or row[0] is None or row[1] is None else (int(row[0]), int(row[1]))

    def of_session(self, session_id: int, *, limit: int) -> list[Item]:
        """A session's summaries, newest first."""
        rows = self.db.execute(f"SELECT {COLUMNS['summary']} FROM summaries WHERE user_id = $1 AND session_id = $2 "
                               "ORDER BY created_at DESC, id DESC LIMIT $3", (self.user_id, session_id, limit))
        return [BUILDERS["summary"](r) for r in rows]

    def add(self, text: str, *, session_id: int | None = None,
                    span: tuple[int | None, int | None] | None = None, created_at: float | None = None,
                    source_id: int | None = None) -> int:
        """Store one summary; `source_id`, an import's: its id in the export, kept where free (`aliases.py`)."""
        text = mask(check_text(text, "summary", MAX_MESSAGE_CHARS))
        with self.db.atomic():
            self.ensure_user()
            return int(self.memory.aliases.insert("summary", source_id,
                "INSERT INTO summaries (id, user_id, session_id, span_start_id, span_end_id, text, created_at) "
                "VALUES ({id}, $1,$2,$3,$4,$5,$6) {conflict} RETURNING id",
                (self.user_id, session_id, span[0] if span else None, span[1] if span else None, text,
                 created_at if created_at is not None else time.time()))[0])

    def has(self, text: str, created_at: float) -> bool:
        return self.db.scalar("SELECT 1 FROM summaries WHERE user_id = $1 AND created_at = $2 AND text = $3",
                              (self.user_id, created_at, mask(text))) is not None  # stored masked
