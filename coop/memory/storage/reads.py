"""What storage answers about one user's memory: items by id, lists, the recency and salience legs, history,
counts. Reads only; `facts.py` and `store.py` build the writes on top of it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coop.errors import NotFoundError
from coop.memory.kinds import ACTIVE_FACT, KINDS, REGISTRY, make_ref
from coop.memory.kinds import kind as lookup_kind
from coop.memory.storage.forget_key import forget_key, forgotten_digest
from coop.memory.storage.items import (
    BUILDERS,
    COLUMNS,
    FACT_COLUMNS,
    MESSAGE_COLUMNS,
    HistoryEntry,
    Item,
    fact_item,
    message_item,
)
from coop.memory.storage.scope import UserScope
from coop.memory.text import content_hash
from coop.privacy.secrets import mask


class Reads(UserScope):
    """Read queries over one user's rows."""

    def get(self, kind: str, item_id: int) -> Item:
        """One item of this user's, or NotFoundError (also when the id belongs to someone else)."""
        spec = lookup_kind(kind)
        row = self.db.one(f"SELECT {COLUMNS[kind]} FROM {spec.table} WHERE id = ? AND user_id = ?",
                          (item_id, self.user_id))
        if row is None:
            raise NotFoundError(f"no {kind} {make_ref(kind, item_id)} in {self.user_id}'s memory",
                                hint="list items with `coop memory list`")
        return BUILDERS[kind](row)

    def exists(self, kind: str, item_id: int) -> bool:
        spec = lookup_kind(kind)
        return self.db.scalar(f"SELECT 1 FROM {spec.table} WHERE id = ? AND user_id = ?",
                              (item_id, self.user_id)) is not None

    def get_many(self, kind: str, ids: Iterable[int]) -> dict[int, Item]:
        """Items of one kind by id, skipping ids that are not this user's. `+user_id`: each row is found by its
        id; on `user_id` the planner would read every message of the user (100,000 of them: 4 ms a call)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.db.execute(f"SELECT {COLUMNS[kind]} FROM {REGISTRY[kind].table} WHERE +user_id = ? "
                               f"AND id IN ({marks})", (self.user_id, *wanted))
        build = BUILDERS[kind]
        return {row[0]: build(row) for row in rows}

    def session_ids(self, message_ids: Iterable[int]) -> dict[int, int]:
        """The session of each of these messages of this user's (messages without one are left out)."""
        return self._message_column("session_id", message_ids, "AND session_id IS NOT NULL")

    def neighbour_ids(self, message_ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """For each of these messages of this user's, the messages just before and after it in its session (None
        at a session's edge, or for a message without a session). Each is one step on `messages_user_session`."""
        wanted = list(dict.fromkeys(message_ids))
        out: dict[int, tuple[int | None, int | None]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            out.update((row[0], (row[1], row[2])) for row in self.db.execute(
                "SELECT m.id, (SELECT p.id FROM messages p WHERE p.user_id = ?1 AND p.session_id = m.session_id "
                "AND p.id < m.id ORDER BY p.id DESC LIMIT 1), (SELECT n.id FROM messages n WHERE n.user_id = ?1 "
                "AND n.session_id = m.session_id AND n.id > m.id ORDER BY n.id LIMIT 1) FROM messages m "
                f"WHERE +m.user_id = ?1 AND m.id IN ({','.join('?' * len(chunk))})", (self.user_id, *chunk)))
        return out

    def message_lengths(self, message_ids: Iterable[int]) -> dict[int, int]:
        """The length in characters of each of these messages of this user's (as stored: masked)."""
        return self._message_column("length(content)", message_ids)

    def _message_column(self, expression: str, message_ids: Iterable[int], condition: str = "") -> dict[int, Any]:
        """`expression` for each of these messages of this user's, by id, in chunks of 500. `+user_id`: each row
        is found by its id; on `user_id` the planner would scan the user's covering (user_id, session_id) index."""
        wanted = list(dict.fromkeys(message_ids))
        out: dict[int, Any] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            out.update((row[0], row[1]) for row in self.db.execute(
                f"SELECT id, {expression} FROM messages WHERE +user_id = ? AND id IN ({','.join('?' * len(chunk))}) "
                f"{condition}", (self.user_id, *chunk)))
        return out

    def is_active_fact(self, fact_id: int) -> bool:
        return self.db.scalar(f"SELECT 1 FROM facts WHERE id = ? AND user_id = ? AND {ACTIVE_FACT}",
                              (fact_id, self.user_id)) is not None

    def find_exact(self, value: str, category: str) -> Item | None:
        """The active fact with this category and normalised text, if any."""
        row = self.db.one(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = ? "
                          f"AND content_hash = ? AND {ACTIVE_FACT} ORDER BY id LIMIT 1",
                          (self.user_id, category.strip().lower(), content_hash(mask(value))))  # stored masked
        return fact_item(row) if row else None

    def facts_with_hash(self, category: str, digest: str) -> list[Item]:
        """Every fact of this user (active or not) in `category` whose normalised text has this hash."""
        rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = ? "
                               "AND content_hash = ? ORDER BY id", (self.user_id, category, digest))
        return [fact_item(r) for r in rows]

    def find_by_key(self, category: str, key: str) -> Item | None:
        row = self.db.one(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = ? AND key = ? "
                          f"AND {ACTIVE_FACT}", (self.user_id, category.strip().lower(), key.strip().lower()))
        return fact_item(row) if row else None

    def fact_signals(self, limit: int = 100_000) -> list[tuple[int, str, float, float, float | None, bool, str]]:
        """(id, category, importance, last changed, last recalled, has a key, text) of every active fact but the
        standing instructions, newest first: what the profile ranks, without building an Item per fact."""
        return [(int(r[0]), r[1], float(r[2]), float(r[3]), r[4], bool(r[5]), r[6]) for r in self.db.execute(
            f"SELECT id, category, importance, updated_at, last_recalled_at, key IS NOT NULL, value FROM facts "
            f"WHERE user_id = ? AND {ACTIVE_FACT} AND category != 'instruction' ORDER BY updated_at DESC, id DESC "
            "LIMIT ?", (self.user_id, limit))]

    def active_facts(self, category: str | None = None, *, limit: int = 1000, newest_first: bool = False) -> list[Item]:
        """Active facts (of one category), oldest change first, or newest first."""
        where = "AND category = ?" if category else ""
        params: tuple[Any, ...] = (self.user_id, category, limit) if category else (self.user_id, limit)
        order = "updated_at DESC, id DESC" if newest_first else "updated_at, id"
        rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND {ACTIVE_FACT} {where} "
                               f"ORDER BY {order} LIMIT ?", params)
        return [fact_item(r) for r in rows]

    def history(self, fact_id: int) -> list[HistoryEntry]:
        """Every recorded change of one fact, oldest first; a fact that was never this user's is not found."""
        rows = list(self.db.execute("SELECT action, old_value, new_value, reason, created_at, related_fact_id "
                                    "FROM fact_history WHERE user_id = ? AND fact_id = ? ORDER BY id",
                                    (self.user_id, fact_id)))
        if not rows:
            raise NotFoundError(f"no history for f{fact_id}", hint="list facts with `coop memory list --kind fact`")
        return [HistoryEntry(*row) for row in rows]

    def forget_digest(self, text: str) -> str:
        """The keyed hash a forgotten text is recorded by (`forget_key.py`: never a plain hash of the text)."""
        return forgotten_digest(forget_key(self.db.path), text)

    def was_forgotten(self, text: str) -> bool:
        """True when the user forgot an item with this (normalised) text: extraction must not bring it back."""
        return self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = ? AND content_hash = ?",
                              (self.user_id, self.forget_digest(mask(text)))) is not None  # stored masked

    def list_items(self, kind: str | None = None, *, limit: int = 50, include_inactive: bool = False) -> list[Item]:
        """The newest items first; facts are the active ones unless `include_inactive`."""
        active = "" if include_inactive else f"AND {ACTIVE_FACT}"
        if kind == "instruction":  # standing instructions are facts of their own category
            rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = 'instruction' "
                                   f"{active} ORDER BY updated_at DESC, id DESC LIMIT ?", (self.user_id, limit))
            return [fact_item(r) for r in rows]
        items: list[Item] = []
        for name in [kind] if kind else list(KINDS):
            spec = lookup_kind(name)
            where, order = (active, "updated_at") if name == "fact" else ("", "created_at")
            rows = self.db.execute(f"SELECT {COLUMNS[name]} FROM {spec.table} WHERE user_id = ? {where} "
                                   f"ORDER BY {order} DESC, id DESC LIMIT ?", (self.user_id, limit))
            items += [BUILDERS[name](r) for r in rows]
        items.sort(key=lambda i: (i.updated_at or i.created_at, i.item_id), reverse=True)
        return items[:limit]

    def recent_messages(self, session_id: int, limit: int) -> list[Item]:
        """The last `limit` messages of one session, oldest first (the recency leg)."""
        rows = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id = ? "
                               "ORDER BY id DESC LIMIT ?", (self.user_id, session_id, limit))
        return [message_item(r) for r in rows][::-1]

    def around(self, message_id: int, *, before: int = 3, after: int = 3) -> list[Item]:
        """The messages of the same session just before and after one message, in order (the timeline)."""
        centre = self.get("message", message_id)
        earlier = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id IS ? "
                                  "AND id < ? ORDER BY id DESC LIMIT ?",
                                  (self.user_id, centre.session_id, message_id, before))
        later = self.db.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id IS ? "
                                "AND id > ? ORDER BY id LIMIT ?", (self.user_id, centre.session_id, message_id, after))
        return [message_item(r) for r in earlier][::-1] + [centre] + [message_item(r) for r in later]

    def items_mentioning(self, word: str, kind: str, *, limit: int = 2000) -> list[Item]:
        """Messages or summaries whose text contains `word` (case-insensitive), newest first: the candidates
        when forgetting a fact reaches what else stated it (a scan; forgetting is rare and deliberate)."""
        spec = lookup_kind(kind)
        rows = self.db.execute(f"SELECT {COLUMNS[kind]} FROM {spec.table} WHERE user_id = ? "
                               f"AND instr(lower({spec.text}), ?) > 0 ORDER BY id DESC LIMIT ?",
                               (self.user_id, word.casefold(), limit))
        return [BUILDERS[kind](r) for r in rows]

    def summary_span(self, summary_id: int) -> tuple[int, int] | None:
        """The first and last message ids a summary covers (None for an imported summary without one)."""
        row = self.db.one("SELECT span_start_id, span_end_id FROM summaries WHERE id = ? AND user_id = ?",
                          (summary_id, self.user_id))
        return None if row is None or row[0] is None or row[1] is None else (int(row[0]), int(row[1]))

    def previous_session(self, session_id: int | None, *, active_after: float) -> int | None:
        """The most recently active other session with messages, if it was active after `active_after`."""
        found = self.db.scalar(
            "SELECT s.id FROM sessions s WHERE s.user_id = ? AND s.id IS NOT ? AND s.last_activity_at > ? "
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.user_id = s.user_id) "
            "ORDER BY s.last_activity_at DESC, s.id DESC LIMIT 1", (self.user_id, session_id, active_after))
        return None if found is None else int(found)

    def session_summaries(self, session_id: int, *, limit: int) -> list[Item]:
        """A session's summaries, newest first."""
        rows = self.db.execute(f"SELECT {COLUMNS['summary']} FROM summaries WHERE user_id = ? AND session_id = ? "
                               "ORDER BY created_at DESC, id DESC LIMIT ?", (self.user_id, session_id, limit))
        return [BUILDERS["summary"](r) for r in rows]

    def salient(self, threshold: float, limit: int) -> list[Item]:
        """Active facts and messages at or above `threshold` importance, most important first (salience leg)."""
        facts = [fact_item(r) for r in self.db.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = ? AND importance >= ? AND {ACTIVE_FACT} "
            "ORDER BY importance DESC, updated_at DESC LIMIT ?", (self.user_id, threshold, limit))]
        messages = [message_item(r) for r in self.db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND importance >= ? "
            "ORDER BY importance DESC, id DESC LIMIT ?", (self.user_id, threshold, limit))]
        both = facts + messages
        both.sort(key=lambda i: (i.importance or 0, i.created_at), reverse=True)
        return both[:limit]

    def unconsolidated(self, *, written_before: float, session_id: int | None = None) -> list[tuple[int, int]]:
        """(message id, session id) of conversation messages not yet consolidated whose session has ended or
        that were written before `written_before`, in session and id order."""
        where = "AND m.session_id = ?" if session_id is not None else ""
        params = (self.user_id, written_before) + ((session_id,) if session_id is not None else ())
        return [(int(r[0]), int(r[1])) for r in self.db.execute(
            "SELECT m.id, m.session_id FROM messages m JOIN sessions s ON s.id = m.session_id "
            "WHERE m.user_id = ? AND m.consolidated_at IS NULL AND m.role IN ('user', 'assistant') "
            f"AND (s.ended_at IS NOT NULL OR m.created_at <= ?) {where} ORDER BY m.session_id, m.id", params)]

    def unembedded_count(self) -> int:
        """Items of this user with no vector yet (new, or handed back for re-embedding)."""
        return sum(int(self.db.scalar(f"SELECT count(*) FROM {spec.table} WHERE user_id = ? AND embedder IS NULL",
                                      (self.user_id,))) for spec in REGISTRY.values())

    def stale_count(self, embedder_id: str) -> int:
        """Items of this user without a vector from `embedder_id` (never embedded, or embedded by another model)."""
        return sum(int(self.db.scalar(f"SELECT count(*) FROM {spec.table} WHERE user_id = ? "
                                      "AND (embedder IS NULL OR embedder != ?)", (self.user_id, embedder_id)))
                   for spec in REGISTRY.values())

    def stats(self) -> dict[str, Any]:
        uid = (self.user_id,)
        tables = [spec.table for spec in REGISTRY.values()]
        return {
            "user": self.user_id,
            "sessions": self.db.scalar("SELECT count(*) FROM sessions WHERE user_id = ?", uid),
            "messages": self.db.scalar("SELECT count(*) FROM messages WHERE user_id = ?", uid),
            "facts_active": self.db.scalar(f"SELECT count(*) FROM facts WHERE user_id = ? AND {ACTIVE_FACT}", uid),
            "facts_superseded": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = ? "
                                               "AND superseded_at IS NOT NULL", uid),
            "facts_archived": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = ? "
                                             "AND archived_at IS NOT NULL AND superseded_at IS NULL", uid),
            "summaries": self.db.scalar("SELECT count(*) FROM summaries WHERE user_id = ?", uid),
            "forgotten": self.db.scalar("SELECT count(*) FROM forgotten WHERE user_id = ?", uid),
            "unembedded": self.unembedded_count(),
            "embedding_errors": sum(self.db.scalar(f"SELECT count(*) FROM {t} WHERE user_id = ? "
                                                   "AND embedding_error IS NOT NULL", uid) for t in tables),
            "embedders": {row[0]: row[1] for row in self.db.execute(
                "SELECT embedder, count(*) FROM embeddings WHERE user_id = ? GROUP BY embedder", uid)},
        }
