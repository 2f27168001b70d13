"""What the write path turned down, kept per user (`refusals`, m017), so `coop memory why mN` can show a person
what a message taught coop and what it refused, with the reason.

A row holds coop's reason and few words of why, the fact's category, the source (an extraction, a consolidation,
an MCP host's exchange), the message and the character spans of the clauses the model cited in it. It holds no
text of the user's or the model's: the words are read from the message when shown, so forgetting the message
forgets them, and its refusals go with it (a trigger). Only the newest `REFUSALS_KEPT` of a user are kept: this is a
record for judging the write path, not a history of the person.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from coop.memory.storage.items import REFUSALS_KEPT, Refusal
from coop.memory.storage.scope import Part

_COLUMNS = "id, created_at, reason, category, what, source, message_id, session_id, spans"


class Refusals(Part):
    """One user's kept refusals (`memory.refusals`)."""

    def keep(self, refused: Iterable[Refusal]) -> int:
        """Record these refusals (each stamped now) and drop the oldest beyond `REFUSALS_KEPT`; returns how
        many."""
        now = time.time()
        kept = 0
        with self.db.atomic():
            for one in refused:
                self.db.execute(
                    "INSERT INTO refusals (user_id, created_at, reason, category, what, source, message_id, "
                    "session_id, spans) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
                    (self.user_id, now, one.reason, one.category, one.what[:300], one.source, one.message_id,
                     one.session_id, _spans_text(one.spans)))
                kept += 1
            if kept:
                self.db.execute(
                    "DELETE FROM refusals WHERE user_id = $1 AND id <= (SELECT id FROM refusals WHERE user_id = $1 "
                    "ORDER BY id DESC LIMIT 1 OFFSET $2)", (self.user_id, REFUSALS_KEPT))
        return kept

    def of_message(self, message_id: int) -> list[Refusal]:
        """The refusals of what the model proposed from message `message_id`, oldest first."""
        return [_refusal(r) for r in self.db.execute(
            f"SELECT {_COLUMNS} FROM refusals WHERE user_id = $1 AND message_id = $2 ORDER BY id",
            (self.user_id, message_id))]

    def recent(self, limit: int = 20) -> list[Refusal]:
        """The newest `limit` refusals, newest first."""
        return [_refusal(r) for r in self.db.execute(
            f"SELECT {_COLUMNS} FROM refusals WHERE user_id = $1 ORDER BY id DESC LIMIT $2", (self.user_id, limit))]

    def counts(self) -> dict[str, int]:
        """How many kept refusals there are, by reason."""
        return {str(r[0]): int(r[1]) for r in self.db.execute(
            "SELECT reason, count(*) FROM refusals WHERE user_id = $1 GROUP BY reason ORDER BY reason",
            (self.user_id,))}


def _spans_text(spans: Iterable[tuple[int, int]]) -> str | None:
    return " ".join(f"{start}-{end}" for start, end in spans) or None


def _refusal(row: Any) -> Refusal:
    spans = tuple((int(a), int(b)) for a, _, b in (part.partition("-") for part in (row[8] or "").split()))
    return Refusal(reason=row[2], what=row[4], source=row[5], category=row[3],
                   message_id=None if row[6] is None else int(row[6]),
                   session_id=None if row[7] is None else int(row[7]), spans=spans, id=int(row[0]),
                   created_at=float(row[1]))
