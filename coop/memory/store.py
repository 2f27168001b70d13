"""MemoryStore and UserMemory: the only way to reach a user's rows.

`MemoryStore(db).user(user_id)` returns a `UserMemory`, and every query that reads or writes user data is a
method of it (or of the search and vector modules, which take a `UserMemory` and bind its `user_id`). There is
no call that takes an item id alone: an id that belongs to another user is simply "not found".

Items are named by a reference that carries their kind: `f12` (fact 12), `m345` (message 345), `s7` (summary 7).
People type these in `coop memory show/forget`; JSON output carries them as `id` beside `kind`.

Facts are never deleted by an update: a new value for the same (category, key) supersedes the old row, which is
kept with `superseded_by` / `superseded_at`, and every change is written to `fact_history` with its reason.
`forget` is the exception the user asks for: the row, its full-text entry and its vectors go, the history of
that fact loses its text, and only a content-free record (kind, id, hash, time) remains, so extraction can tell
it must not re-create the fact.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from datetime import datetime, timezone
from dataclasses import dataclass
from typing import Any, Iterable

from coop.errors import NotFoundError, UsageError
from coop.memory.db import Database

KINDS = ("fact", "message", "summary")
REF_PREFIX = {"fact": "f", "message": "m", "summary": "s"}
PREFIX_KIND = {v: k for k, v in REF_PREFIX.items()}
FACT_SOURCES = ("user", "model", "extraction", "consolidation", "import")
ROLES = ("user", "assistant", "system", "tool")
MAX_FACT_CHARS = 10_000
MAX_MESSAGE_CHARS = 2_000_000
MAX_USER_ID_CHARS = 200
MAX_CATEGORY_CHARS = 100
MAX_KEY_CHARS = 200


def iso_time(ts: float | None) -> str | None:
    """A timestamp as ISO 8601 in UTC, the form every JSON output and tool result uses."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def make_ref(kind: str, item_id: int) -> str:
    return f"{REF_PREFIX[kind]}{item_id}"


def parse_ref(ref: str) -> tuple[str, int]:
    """`'f12'` -> `('fact', 12)`. Anything else is a usage error naming the accepted forms."""
    match = re.fullmatch(r"\s*([fmsFMS])\s*:?\s*(\d{1,18})\s*", ref or "")
    if not match:
        raise UsageError(f"not a memory id: {ref!r}",
                         hint="ids look like f12 (fact), m345 (message) or s7 (summary); see `coop memory list`")
    return PREFIX_KIND[match.group(1).lower()], int(match.group(2))


def normalise_text(text: str) -> str:
    """The form two texts are compared in for exact duplicates: NFKC, case-folded, spaces and edge punctuation
    collapsed. "I live in Lyon." and "i live in  lyon" are the same fact."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" .!?;,:\"'`")


def content_hash(text: str) -> str:
    """Never raises: text that is not valid UTF-8 (lone surrogates) gets a hash too, so a duplicate or forgotten
    check on it answers "no" and the write itself reports the bad text as a `UsageError`. Text that is nothing
    but punctuation keeps its punctuation, so "?" and "!" are not one fact."""
    normal = normalise_text(text) or " ".join(text.split())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters a token) for budgets; exact counts are not needed there."""
    return max(1, (len(text) + 3) // 4) if text else 0


def fresh_id_sql(table: str, kind: str) -> str:
    """SQL for the id a new row of `table` gets: above every id the table has *and* every id it had before a
    forget. SQLite reuses the highest rowid once that row is deleted, so without this a new fact could take the
    id of one just forgotten, inherit its history and answer to references (f12 in an old tool result) that meant
    the forgotten one. Used inside the write transaction, so two writers cannot pick the same id."""
    return (f"(SELECT max(coalesce((SELECT max(id) FROM {table}), 0), "
            f"coalesce((SELECT max(item_id) FROM forgotten WHERE kind = '{kind}'), 0)) + 1)")


def check_text(text: str, what: str, limit: int) -> str:
    """Reject text that cannot be stored faithfully: empty, not UTF-8 (lone surrogates from bad bytes), too long."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{what} is empty", hint=f"give the {what} some text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8", hint="convert the input to UTF-8 (e.g. with iconv)") from None
    if "\x00" in text:
        raise UsageError(f"{what} contains a NUL byte", hint="remove binary data from the input")
    if len(text) > limit:
        raise UsageError(f"{what} is too long ({len(text):,} characters; the limit is {limit:,})",
                         hint="shorten it, or store it as a conversation message")
    return text


def check_user_id(user_id: str) -> str:
    if not user_id or not user_id.strip() or len(user_id) > MAX_USER_ID_CHARS:
        raise UsageError(f"not a valid user id: {user_id!r}", hint="use a short name such as 'ana'")
    check_text(user_id, "user id", MAX_USER_ID_CHARS)
    return user_id


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


_FACT_COLUMNS = ("id, value, created_at, category, key, importance, mention_count, source, updated_at, "
                 "superseded_by, superseded_at, archived_at, embedder, embedding_error, last_recalled_at")
_MESSAGE_COLUMNS = "id, content, created_at, session_id, role, external_id, importance, embedder, embedding_error"
_SUMMARY_COLUMNS = "id, text, created_at, session_id, embedder, embedding_error"


def _fact_item(row: Any) -> Item:
    (fid, value, created, category, key, importance, mentions, source, updated, sup_by, sup_at, archived,
     embedder, error, recalled) = row
    return Item("fact", fid, value, created, category=category, key=key, importance=importance,
                mention_count=mentions, source=source, updated_at=updated, superseded_by=sup_by,
                superseded_at=sup_at, archived_at=archived, embedder=embedder, embedding_error=error,
                last_recalled_at=recalled)


def _message_item(row: Any) -> Item:
    mid, content, created, session, role, external, importance, embedder, error = row
    return Item("message", mid, content, created, session_id=session, role=role, external_id=external,
                importance=importance, embedder=embedder, embedding_error=error)


def _summary_item(row: Any) -> Item:
    sid, text, created, session, embedder, error = row
    return Item("summary", sid, text, created, session_id=session, embedder=embedder, embedding_error=error)


class MemoryStore:
    """The database as a whole: hands out `UserMemory` handles and answers questions about every user."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def user(self, user_id: str) -> "UserMemory":
        return UserMemory(self.db, check_user_id(user_id))

    def user_ids(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT id FROM users ORDER BY id")]


@dataclass
class UserMemory:
    """One user's memory. Every statement below binds `self.user_id`."""

    db: Database
    user_id: str

    # -- users and sessions -------------------------------------------------------------------------------

    def ensure_user(self) -> None:
        """Make sure the user's row exists. Not cached: a write that created it and then failed (a full disk, a
        session that was not this user's) rolls the row back, and the next write must create it again."""
        self.db.execute("INSERT OR IGNORE INTO users (id, created_at) VALUES (?, ?)", (self.user_id, time.time()))

    def start_session(self, title: str | None = None, *, started_at: float | None = None,
                      external_id: str | None = None) -> int:
        with self.db.atomic():
            self.ensure_user()
            now = started_at if started_at is not None else time.time()
            if external_id is not None:
                existing = self.db.scalar("SELECT id FROM sessions WHERE user_id = ? AND external_id = ?",
                                          (self.user_id, external_id))
                if existing is not None:
                    return int(existing)
            self.db.execute("INSERT INTO sessions (user_id, title, started_at, last_activity_at, external_id) "
                            "VALUES (?, ?, ?, ?, ?)", (self.user_id, title, now, now, external_id))
            return int(self.db.conn.last_insert_rowid())

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        """This user's sessions, most recently active first, with their message counts."""
        rows = self.db.execute(
            "SELECT s.id, s.title, s.started_at, s.ended_at, s.last_activity_at, "
            "(SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.user_id = s.user_id) "
            "FROM sessions s WHERE s.user_id = ? ORDER BY s.last_activity_at DESC, s.id DESC LIMIT ?",
            (self.user_id, limit))
        return [{"id": r[0], "title": r[1], "started_at": r[2], "ended_at": r[3], "last_activity_at": r[4],
                 "messages": r[5]} for r in rows]

    def set_session_title(self, session_id: int, title: str) -> None:
        self.db.execute("UPDATE sessions SET title = ? WHERE id = ? AND user_id = ? AND title IS NULL",
                        (title[:80], session_id, self.user_id))

    def end_session(self, session_id: int) -> None:
        self.db.execute("UPDATE sessions SET ended_at = ? WHERE id = ? AND user_id = ?",
                        (time.time(), session_id, self.user_id))

    def session_exists(self, session_id: int) -> bool:
        return self.db.scalar("SELECT 1 FROM sessions WHERE id = ? AND user_id = ?",
                              (session_id, self.user_id)) is not None

    # -- messages -----------------------------------------------------------------------------------------

    def add_message(self, session_id: int | None, role: str, content: str, *, created_at: float | None = None,
                    importance: float = 0.5, external_id: str | None = None, tool_name: str | None = None,
                    tool_call_id: str | None = None, tool_calls: str | None = None) -> int | None:
        """Store one message; returns its id, or None when `external_id` was already imported."""
        if role not in ROLES:
            raise UsageError(f"unknown message role {role!r}", hint="use one of: " + ", ".join(ROLES))
        if role != "tool" and not tool_calls:  # a tool result, or a call without text, may be empty
            check_text(content, "message", MAX_MESSAGE_CHARS)
        now = created_at if created_at is not None else time.time()
        with self.db.atomic():
            self.ensure_user()
            if session_id is not None and not self.session_exists(session_id):
                raise NotFoundError(f"no session {session_id} for user {self.user_id}",
                                    hint="list sessions with `coop memory stats`")
            row = self.db.one(
                "INSERT INTO messages (id, user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, "
                f"created_at, importance, token_count, external_id) VALUES ({fresh_id_sql('messages', 'message')}, "
                "?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (user_id, external_id) DO NOTHING RETURNING id",
                (self.user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, now,
                 importance, estimate_tokens(content), external_id))
            if row is None:
                return None
            if session_id is not None:
                self.db.execute("UPDATE sessions SET last_activity_at = max(last_activity_at, ?) WHERE id = ?",
                                (now, session_id))
            return int(row[0])

    # -- facts --------------------------------------------------------------------------------------------

    def add_fact(self, value: str, *, category: str = "general", key: str | None = None,
                 importance: float = 0.5, source: str = "user", reason: str | None = None) -> FactWrite:
        """Write one fact: an exact duplicate bumps the existing row's mention count (MERGE); a new value for an
        existing (category, key) supersedes the old row (kept, marked); anything else is an ADD."""
        value = check_text(value, "fact", MAX_FACT_CHARS).strip()
        category = check_text(category, "category", MAX_CATEGORY_CHARS).strip().lower() if category and \
            category.strip() else "general"
        key = check_text(key, "key", MAX_KEY_CHARS).strip().lower() if key and key.strip() else None
        if source not in FACT_SOURCES:
            raise UsageError(f"unknown fact source {source!r}", hint="use one of: " + ", ".join(FACT_SOURCES))
        if not 0.0 <= importance <= 1.0:
            raise UsageError(f"importance {importance} is out of range", hint="use a number from 0 to 1")
        digest = content_hash(value)
        now = time.time()
        with self.db.atomic():
            self.ensure_user()
            same = self.db.one("SELECT id FROM facts WHERE user_id = ? AND category = ? AND content_hash = ? "
                               "AND superseded_at IS NULL AND archived_at IS NULL "
                               "AND (key IS ? OR ? IS NULL) ORDER BY id LIMIT 1",
                               (self.user_id, category, digest, key, key))
            if same is not None:
                fact_id = int(same[0])
                self.db.execute("UPDATE facts SET mention_count = mention_count + 1, updated_at = ?, "
                                "importance = max(importance, ?) WHERE id = ?", (now, importance, fact_id))
                self._history(fact_id, "MERGE", None, None, reason or "exact duplicate: mention counted", now)
                return FactWrite(fact_id, "MERGE")
            previous = None
            if key is not None:
                previous = self.db.one("SELECT id, value FROM facts WHERE user_id = ? AND category = ? AND key = ? "
                                       "AND superseded_at IS NULL AND archived_at IS NULL",
                                       (self.user_id, category, key))
                if previous is not None:  # free the (category, key) slot before the new row takes it
                    self.db.execute("UPDATE facts SET superseded_at = ? WHERE id = ?", (now, previous[0]))
            fact_id = int(self.db.scalar(
                "INSERT INTO facts (id, user_id, category, key, value, source, importance, content_hash, created_at, "
                f"updated_at) VALUES ({fresh_id_sql('facts', 'fact')}, ?,?,?,?,?,?,?,?,?) RETURNING id",
                (self.user_id, category, key, value, source, importance, digest, now, now)))
            self._history(fact_id, "ADD", None, value, reason or f"added by {source}", now)
            if previous is None:
                return FactWrite(fact_id, "ADD")
            self.db.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (fact_id, previous[0]))
            self._history(int(previous[0]), "SUPERSEDE", previous[1], value,
                          reason or f"new value for {category}/{key}", now, related=fact_id)
            return FactWrite(fact_id, "SUPERSEDE", previous_id=int(previous[0]))

    def find_exact(self, value: str, category: str) -> Item | None:
        """The active fact with this category and normalised text, if any."""
        row = self.db.one(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = ? AND content_hash = ? "
                          "AND superseded_at IS NULL AND archived_at IS NULL ORDER BY id LIMIT 1",
                          (self.user_id, category.strip().lower(), content_hash(value)))
        return _fact_item(row) if row else None

    def find_by_key(self, category: str, key: str) -> Item | None:
        row = self.db.one(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = ? AND key = ? "
                          "AND superseded_at IS NULL AND archived_at IS NULL",
                          (self.user_id, category.strip().lower(), key.strip().lower()))
        return _fact_item(row) if row else None

    def bump_fact(self, fact_id: int, *, importance: float = 0.0, reason: str) -> None:
        """Count one more mention of an existing fact (MERGE): no new row."""
        now = time.time()
        with self.db.atomic():
            self.db.execute("UPDATE facts SET mention_count = mention_count + 1, updated_at = ?, "
                            "importance = max(importance, ?) WHERE id = ? AND user_id = ?",
                            (now, importance, fact_id, self.user_id))
            self._history(fact_id, "MERGE", None, None, reason, now)

    def update_fact_value(self, fact_id: int, value: str, *, reason: str) -> None:
        """Rewrite a fact's text in place (UPDATE: a refinement of the same fact); the old text stays in history.
        Its vectors are dropped so it is embedded again."""
        from coop.memory import vectors

        value = check_text(value, "fact", MAX_FACT_CHARS).strip()
        old = self.get("fact", fact_id)
        now = time.time()
        with self.db.atomic():
            vectors.delete_item_vectors(self, "fact", fact_id)
            self.db.execute("UPDATE facts SET value = ?, content_hash = ?, updated_at = ?, embedder = NULL, "
                            "mention_count = mention_count + 1 WHERE id = ? AND user_id = ?",
                            (value, content_hash(value), now, fact_id, self.user_id))
            self._history(fact_id, "UPDATE", old.text, value, reason, now)

    def archive_fact(self, fact_id: int, *, reason: str) -> None:
        """Take a fact out of active use without deleting it: it stays searchable with --archived."""
        now = time.time()
        with self.db.atomic():
            self.db.execute("UPDATE facts SET archived_at = ? WHERE id = ? AND user_id = ? AND archived_at IS NULL",
                            (now, fact_id, self.user_id))
            self._history(fact_id, "ARCHIVE", None, None, reason, now)

    def active_facts(self, category: str | None = None, *, limit: int = 1000) -> list[Item]:
        where = "AND category = ?" if category else ""
        params: tuple[Any, ...] = (self.user_id, category, limit) if category else (self.user_id, limit)
        rows = self.db.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? AND superseded_at IS NULL "
                               f"AND archived_at IS NULL {where} ORDER BY updated_at, id LIMIT ?", params)
        return [_fact_item(r) for r in rows]

    def _history(self, fact_id: int, action: str, old: str | None, new: str | None, reason: str | None,
                 at: float, related: int | None = None) -> None:
        self.db.execute("INSERT INTO fact_history (user_id, fact_id, action, old_value, new_value, related_fact_id, "
                        "reason, created_at) VALUES (?,?,?,?,?,?,?,?)",
                        (self.user_id, fact_id, action, old, new, related, reason, at))

    def history(self, fact_id: int) -> list[HistoryEntry]:
        """Every recorded change of one fact, oldest first; a fact that was never this user's is not found."""
        rows = list(self.db.execute("SELECT action, old_value, new_value, reason, created_at, related_fact_id "
                                    "FROM fact_history WHERE user_id = ? AND fact_id = ? ORDER BY id",
                                    (self.user_id, fact_id)))
        if not rows:
            raise NotFoundError(f"no history for f{fact_id}", hint="list facts with `coop memory list --kind fact`")
        return [HistoryEntry(*row) for row in rows]

    def touch_facts(self, fact_ids: Iterable[int]) -> None:
        """Record that these facts were just recalled into a prompt (retention goes by last use)."""
        ids = list(fact_ids)
        if ids:
            self.db.execute(f"UPDATE facts SET last_recalled_at = ? WHERE user_id = ? AND id IN "
                            f"({','.join('?' * len(ids))})", (time.time(), self.user_id, *ids))

    def was_forgotten(self, text: str) -> bool:
        """True when the user forgot an item with this (normalised) text: extraction must not bring it back."""
        return self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = ? AND content_hash = ?",
                              (self.user_id, content_hash(text))) is not None

    # -- summaries ----------------------------------------------------------------------------------------

    def add_summary(self, text: str, *, session_id: int | None = None, span: tuple[int, int] | None = None,
                    created_at: float | None = None) -> int:
        check_text(text, "summary", MAX_MESSAGE_CHARS)
        with self.db.atomic():
            self.ensure_user()
            return int(self.db.scalar(
                "INSERT INTO summaries (id, user_id, session_id, span_start_id, span_end_id, text, created_at) "
                f"VALUES ({fresh_id_sql('summaries', 'summary')}, ?,?,?,?,?,?) RETURNING id",
                (self.user_id, session_id, span[0] if span else None, span[1] if span else None, text,
                 created_at if created_at is not None else time.time())))

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, kind: str, item_id: int) -> Item:
        """One item of this user's, or NotFoundError (also when the id belongs to someone else)."""
        row = None
        if kind == "fact":
            row = self.db.one(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = ? AND user_id = ?", (item_id, self.user_id))
            item = _fact_item(row) if row else None
        elif kind == "message":
            row = self.db.one(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ? AND user_id = ?",
                              (item_id, self.user_id))
            item = _message_item(row) if row else None
        elif kind == "summary":
            row = self.db.one(f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE id = ? AND user_id = ?",
                              (item_id, self.user_id))
            item = _summary_item(row) if row else None
        else:
            raise UsageError(f"unknown kind {kind!r}", hint="use fact, message or summary")
        if item is None:
            raise NotFoundError(f"no {kind} {make_ref(kind, item_id)} in {self.user_id}'s memory",
                                hint="list items with `coop memory list`")
        return item

    def get_many(self, kind: str, ids: Iterable[int]) -> dict[int, Item]:
        """Items of one kind by id, skipping ids that are not this user's."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        table, columns, build = {"fact": ("facts", _FACT_COLUMNS, _fact_item),
                                 "message": ("messages", _MESSAGE_COLUMNS, _message_item),
                                 "summary": ("summaries", _SUMMARY_COLUMNS, _summary_item)}[kind]
        rows = self.db.execute(f"SELECT {columns} FROM {table} WHERE user_id = ? AND id IN ({marks})",
                               (self.user_id, *ids))
        return {row[0]: build(row) for row in rows}

    def list_items(self, kind: str | None = None, *, limit: int = 50, include_inactive: bool = False) -> list[Item]:
        """The newest items first; facts are the active ones unless `include_inactive`."""
        if kind == "instruction":  # standing instructions are facts of their own category
            active = "" if include_inactive else "AND superseded_at IS NULL AND archived_at IS NULL"
            rows = self.db.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? AND category = 'instruction' "
                                   f"{active} ORDER BY updated_at DESC, id DESC LIMIT ?", (self.user_id, limit))
            return [_fact_item(r) for r in rows]
        kinds = [kind] if kind else list(KINDS)
        items: list[Item] = []
        for k in kinds:
            if k == "fact":
                active = "" if include_inactive else "AND superseded_at IS NULL AND archived_at IS NULL"
                rows = self.db.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? {active} "
                                       "ORDER BY updated_at DESC, id DESC LIMIT ?", (self.user_id, limit))
                items += [_fact_item(r) for r in rows]
            elif k == "message":
                rows = self.db.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE user_id = ? "
                                       "ORDER BY created_at DESC, id DESC LIMIT ?", (self.user_id, limit))
                items += [_message_item(r) for r in rows]
            elif k == "summary":
                rows = self.db.execute(f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE user_id = ? "
                                       "ORDER BY created_at DESC, id DESC LIMIT ?", (self.user_id, limit))
                items += [_summary_item(r) for r in rows]
            else:
                raise UsageError(f"unknown kind {k!r}", hint="use fact, message or summary")
        items.sort(key=lambda i: (i.updated_at or i.created_at, i.item_id), reverse=True)
        return items[:limit]

    def recent_messages(self, session_id: int, limit: int) -> list[Item]:
        """The last `limit` messages of one session, oldest first (the recency leg)."""
        rows = self.db.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id = ? "
                               "ORDER BY id DESC LIMIT ?", (self.user_id, session_id, limit))
        return [_message_item(r) for r in rows][::-1]

    def around(self, message_id: int, *, before: int = 3, after: int = 3) -> list[Item]:
        """The messages of the same session just before and after one message, in order (the timeline)."""
        centre = self.get("message", message_id)
        earlier = self.db.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id IS ? "
                                  "AND id < ? ORDER BY id DESC LIMIT ?",
                                  (self.user_id, centre.session_id, message_id, before))
        later = self.db.execute(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND session_id IS ? "
                                "AND id > ? ORDER BY id LIMIT ?", (self.user_id, centre.session_id, message_id, after))
        return [_message_item(r) for r in earlier][::-1] + [centre] + [_message_item(r) for r in later]

    def salient(self, threshold: float, limit: int) -> list[Item]:
        """Active facts and messages at or above `threshold` importance, most important first (salience leg)."""
        facts = [_fact_item(r) for r in self.db.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts WHERE user_id = ? AND importance >= ? AND superseded_at IS NULL "
            "AND archived_at IS NULL ORDER BY importance DESC, updated_at DESC LIMIT ?",
            (self.user_id, threshold, limit))]
        messages = [_message_item(r) for r in self.db.execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE user_id = ? AND importance >= ? "
            "ORDER BY importance DESC, id DESC LIMIT ?", (self.user_id, threshold, limit))]
        both = facts + messages
        both.sort(key=lambda i: (i.importance or 0, i.created_at), reverse=True)
        return both[:limit]

    # -- forgetting ---------------------------------------------------------------------------------------

    def forget(self, kind: str, item_id: int, *, reason: str = "forgotten by the user") -> None:
        """Delete one item with its FTS row and vectors, keeping only a content-free record that it existed."""
        from coop.memory import vectors

        item = self.get(kind, item_id)
        now = time.time()
        table = {"fact": "facts", "message": "messages", "summary": "summaries"}[kind]
        with self.db.atomic():
            vectors.delete_item_vectors(self, kind, item_id)
            if kind == "fact":
                self.db.execute("UPDATE fact_history SET old_value = NULL, new_value = NULL "
                                "WHERE user_id = ? AND fact_id = ?", (self.user_id, item_id))
                self._history(item_id, "FORGET", None, None, reason, now)
            self.db.execute(f"DELETE FROM {table} WHERE id = ? AND user_id = ?", (item_id, self.user_id))
            self.db.execute("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
                            "VALUES (?,?,?,?,?)", (self.user_id, kind, item_id, content_hash(item.text), now))

    # -- counts -------------------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        uid = (self.user_id,)
        return {
            "user": self.user_id,
            "sessions": self.db.scalar("SELECT count(*) FROM sessions WHERE user_id = ?", uid),
            "messages": self.db.scalar("SELECT count(*) FROM messages WHERE user_id = ?", uid),
            "facts_active": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = ? AND superseded_at IS NULL "
                                           "AND archived_at IS NULL", uid),
            "facts_superseded": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = ? "
                                               "AND superseded_at IS NOT NULL", uid),
            "facts_archived": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = ? "
                                             "AND archived_at IS NOT NULL AND superseded_at IS NULL", uid),
            "summaries": self.db.scalar("SELECT count(*) FROM summaries WHERE user_id = ?", uid),
            "forgotten": self.db.scalar("SELECT count(*) FROM forgotten WHERE user_id = ?", uid),
            "unembedded": sum(self.db.scalar(f"SELECT count(*) FROM {t} WHERE user_id = ? AND embedder IS NULL", uid)
                              for t in ("messages", "facts", "summaries")),
            "embedding_errors": sum(self.db.scalar(f"SELECT count(*) FROM {t} WHERE user_id = ? "
                                                   "AND embedding_error IS NOT NULL", uid)
                                    for t in ("messages", "facts", "summaries")),
            "embedders": {row[0]: row[1] for row in self.db.execute(
                "SELECT embedder, count(*) FROM embeddings WHERE user_id = ? GROUP BY embedder", uid)},
        }
