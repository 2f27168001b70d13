"""Forgetting one item for good (`memory.forget`, `memory.undo`, `memory.forgotten`).

`forget` deletes the row, its full-text entry and its vectors; every history row that held the text loses it,
and only a content-free record (kind, id, keyed hash, time) remains, so extraction can tell it must not
re-create the item. The text does not linger in the file either: deleted rows are zeroed (`secure_delete`), the
full-text indexes drop its postings and are merged, and the write-ahead log is checkpointed. A session title made
from a forgotten text is made again from what is left."""

from __future__ import annotations

import time

from coop.errors import UsageError
from coop.memory.kinds import REGISTRY
from coop.memory.storage import vectors
from coop.memory.storage.forget_key import forget_key, forgotten_digest
from coop.memory.storage.scope import Part
from coop.memory.words import states
from coop.privacy.secrets import mask


class Forgetting(Part):
    """Forgetting for one user, and the content-free records of what was forgotten."""

    def digest(self, text: str) -> str:
        """The keyed hash a forgotten text is recorded by (`forget_key.py`: never a plain hash of the text)."""
        return forgotten_digest(forget_key(self.db.key_location), text)

    def was_forgotten(self, text: str) -> bool:
        """True when the user forgot an item with this (normalised) text: extraction must not bring it back."""
        return self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = $1 AND content_hash = $2",
                              (self.user_id, self.digest(mask(text)))) is not None  # stored masked

    def forget(self, kind: str, item_id: int, *, reason: str = "forgotten by the user") -> dict[str, int]:
        """Delete one item with its FTS row and vectors, keeping only a content-free record that it existed; a
        session title made from a forgotten message is made again from what is left. Returns what went where
        (vectors, session titles), for the receipt `coop memory forget` prints."""
        item = self.memory.get(kind, item_id)
        now = time.time()
        with self.db.atomic():
            counts = {"vectors": int(self.db.scalar(
                "SELECT count(*) FROM embeddings WHERE kind = $1 AND item_id = $2 AND user_id = $3",
                (kind, item_id, self.user_id)))}
            vectors.delete_item_vectors(self.memory, kind, item_id)
            if kind == "fact":
                self.memory.facts.scrub_history(item_id, item.text, reason=reason, at=now)
            self.db.execute(f"DELETE FROM {REGISTRY[kind].table} WHERE id = $1 AND user_id = $2",
                            (item_id, self.user_id))
            self.record(kind, self.digest(item.text), now, item_id=item_id)
            # a message's words also sit in the context column of the two messages after it
            self.memory.text.purge(kind)
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
        where = "" if session_id is None else " AND id = $2"
        rows = list(self.db.execute(f"SELECT id, title FROM sessions WHERE user_id = $1 AND title IS NOT NULL{where}",
                                    (self.user_id, *(() if session_id is None else (session_id,)))))

        def holds(title: str) -> bool:
            flat = " ".join(title.split()).casefold().rstrip("…")
            return any(flat in " ".join(text.split()).casefold() for text in gone) or (
                fact is not None and states(title, fact))
        changed = 0
        for session, title in rows:
            if not holds(title):
                continue
            first = self.db.scalar("SELECT content FROM messages WHERE user_id = $1 AND session_id = $2 AND "
                                   "role = 'user' ORDER BY id LIMIT 1", (self.user_id, session))
            new = " ".join(str(first).split())[:80] if first else None
            self.db.execute("UPDATE sessions SET title = $1 WHERE id = $2 AND user_id = $3",
                            (None if new is None or holds(new) else new, session, self.user_id))
            changed += 1
        return changed

    def undo(self, fact_id: int, *, reason: str = "undone by the user") -> str:
        """Take back the change that made fact `fact_id` what it is, and say what was done.

        A fact that was updated in place gets its previous text back; a fact that was added is forgotten (so
        extraction does not bring it back), and a fact it superseded is current again; a fact retired because
        the user said it no longer holds (archived) is current again."""
        item = self.memory.get("fact", fact_id)
        changes = [e for e in self.memory.facts.history(fact_id)
                   if e.action in ("ADD", "UPDATE", "RESTORE", "ARCHIVE")]
        last = changes[-1] if changes else None
        if last is not None and last.action == "ARCHIVE" and item.archived_at is not None \
                and item.superseded_at is None:
            self.memory.facts.unarchive(fact_id, reason=reason)
            return f"f{fact_id} is current again (“{item.text}”)"
        if last is not None and last.action == "UPDATE" and last.old_value:
            self.memory.facts.update_value(fact_id, last.old_value, reason=reason)
            return f"f{fact_id} is “{last.old_value}” again"
        if last is None or last.action != "ADD":
            raise UsageError(f"f{fact_id} has no change to undo", hint=f"see `coop memory history f{fact_id}`")
        replaced = [int(r[0]) for r in self.db.execute(
            "SELECT id FROM facts WHERE user_id = $1 AND superseded_by = $2 AND superseded_at IS NOT NULL",
            (self.user_id, fact_id))]
        with self.db.atomic():
            self.forget("fact", fact_id, reason=reason)
            for old in replaced:
                self.memory.facts.reinstate(old, reason=f"{reason}: f{fact_id} took back")
        return f"f{fact_id} forgotten" + "".join(f"; f{old} is current again" for old in replaced) \
            + ("" if replaced else f" (“{item.text}”)")

    def record(self, kind: str, digest: str | None, at: float, *, item_id: int = 0) -> None:
        """The content-free trace of a forgotten item: its kind, id, time and keyed hash (`forget_digest`; None
        for one an import carries over: an export holds no hash)."""
        self.db.execute("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
                        "VALUES ($1,$2,$3,$4,$5)", (self.user_id, kind, item_id, digest, at))

    def has_record(self, kind: str, at: float) -> bool:
        """A record of an item of this kind forgotten at this time: an import does not add it twice."""
        return self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = $1 AND kind = $2 AND forgotten_at = $3",
                              (self.user_id, kind, at)) is not None
