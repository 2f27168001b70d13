"""Moving memory in and out: import from coop, ChatGPT and Claude exports; export as JSON Lines or markdown;
re-embed after a change of embedder.

The coop export format (JSON Lines, UTF-8, one record per line; timestamps are Unix seconds as JSON numbers so
a round trip is exact):

    {"format": "coop", "version": 1, "user": "sam", "exported_at": 1732300000.0, "records": 1234}
    {"type": "session", "id": 3, "title": "...", "started_at": ..., "ended_at": ..., "last_activity_at": ...,
     "external_id": null}
    {"type": "message", "id": 17, "session_id": 3, "role": "user", "content": "...", "created_at": ...,
     "importance": 0.5, "tool_name": null, "tool_call_id": null, "tool_calls": null, "consolidated_at": null,
     "external_id": null}
    {"type": "fact", "id": 5, "category": "location", "key": "city", "value": "Lyon", "source": "extraction",
     "importance": 0.7, "mention_count": 2, "created_at": ..., "updated_at": ..., "last_recalled_at": null,
     "superseded_by": null, "superseded_at": null, "archived_at": null}
    {"type": "fact_history", "fact_id": 5, "action": "ADD", "old_value": null, "new_value": "Lyon",
     "related_fact_id": null, "reason": "...", "created_at": ...}
    {"type": "summary", "id": 2, "session_id": 3, "span_start_id": 10, "span_end_id": 40, "text": "...",
     "created_at": ...}
    {"type": "forgotten", "kind": "fact", "content_hash": "...", "forgotten_at": ...}

Ids are the exporting database's; an import gives rows new ids and maps every reference (a message's session,
a summary's span, a fact's `superseded_by`, its history). Vectors are not exported: they belong to one embedder,
and the importing side embeds the text with its own. Records land in the user the import is run for, whatever
user the export came from.

Importing is idempotent: messages and sessions carry a source id (`external_id`: the ChatGPT or Claude id, or
for coop records the original one, or one derived from the record), facts and summaries are recognised by their
text and creation time, so importing the same file twice adds nothing the second time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator

from coop.errors import CoopError, StoreError, UsageError
from coop.memory.importers import (FORMATS, ImportedConversation, Problem, Source, detect_format,
                                   read_conversations)
from coop.memory.store import (FACT_SOURCES, MAX_FACT_CHARS, MAX_MESSAGE_CHARS, ROLES, content_hash,
                               estimate_tokens, fresh_id_sql, iso_time)

if TYPE_CHECKING:
    from coop.config import ImportanceConfig
    from coop.memory.embed import Embedder
    from coop.memory.store import UserMemory

log = logging.getLogger(__name__)

EXPORT_VERSION = 1
BATCH = 500  # records per transaction while importing: one commit per batch, not per row


@dataclass
class ImportProgress:
    """Where an import is: bytes of the file read, and what was written so far."""

    position: int
    size: int
    conversations: int
    messages: int


@dataclass
class ImportReport:
    format: str
    conversations: int = 0
    sessions_added: int = 0
    messages_added: int = 0
    messages_skipped: int = 0
    facts_added: int = 0
    facts_skipped: int = 0
    summaries_added: int = 0
    problems: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "conversations": self.conversations, "sessions_added": self.sessions_added,
                "messages_added": self.messages_added, "messages_skipped": self.messages_skipped,
                "facts_added": self.facts_added, "facts_skipped": self.facts_skipped,
                "summaries_added": self.summaries_added,
                "problems": [{"where": p.where, "reason": p.reason} for p in self.problems]}


ProgressCallback = Callable[[ImportProgress], None]


# -- import -----------------------------------------------------------------------------------------------------


def import_file(memory: "UserMemory", path: Path, fmt: str = "auto", *, importance: "ImportanceConfig",
                progress: ProgressCallback | None = None) -> ImportReport:
    """Import one export file into `memory`. A malformed record is reported in the report and skipped."""
    if fmt not in ("auto", *FORMATS):
        raise UsageError(f"unknown format {fmt!r}", hint="use --format auto, coop, chatgpt or claude")
    if not path.exists():
        raise UsageError(f"{path} does not exist", hint="give the path of an export file")
    if path.is_dir():
        candidate = path / "conversations.json"
        if not candidate.is_file():
            raise UsageError(f"{path} is a directory without conversations.json", hint="give the export file itself")
        path = candidate
    try:
        chosen = detect_format(path) if fmt == "auto" else fmt
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot import {path.name}: {exc}", hint="name the format with --format") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}", hint="check the path and its permissions")
    report = ImportReport(chosen)
    memory.ensure_user()
    try:
        with Source(path) as source:
            if chosen == "coop":
                _import_coop(memory, source, report, progress)
            else:
                _import_conversations(memory, source, chosen, importance, report, progress, path.name)
    except (ValueError, OSError) as exc:
        raise UsageError(f"cannot read {path.name}: {exc}", hint="check that the file is a complete export")
    return report


def _import_conversations(memory: "UserMemory", source: Source, fmt: str, importance: "ImportanceConfig",
                          report: ImportReport, progress: ProgressCallback | None, name: str) -> None:
    from coop.memory.importance import message_importance

    for record in read_conversations(source, fmt, name):
        if isinstance(record, Problem):
            report.problems.append(record)
            continue
        report.conversations += 1
        try:
            _store_conversation(memory, record, importance, report, message_importance)
        except StoreError:
            raise  # the database itself failed (disk full, read-only): stop; finished conversations stay
        except CoopError as exc:
            report.problems.append(Problem(record.where, f"{exc.message}: skipped"))
        if progress is not None:
            progress(ImportProgress(source.position(), source.size, report.conversations, report.messages_added))


def _store_conversation(memory: "UserMemory", conversation: ImportedConversation, weights: "ImportanceConfig",
                        report: ImportReport, score: Callable[..., float]) -> None:
    """One conversation as one session, in one transaction; messages already imported are left alone."""
    messages = conversation.messages
    if not messages:
        return
    db = memory.db
    start = conversation.started_at or messages[0].created_at or time.time()
    with db.atomic():
        existed = db.scalar("SELECT id FROM sessions WHERE user_id = ? AND external_id = ?",
                            (memory.user_id, conversation.external_id))
        session_id = memory.start_session(conversation.title, started_at=start,
                                          external_id=conversation.external_id)
        if existed is None:
            report.sessions_added += 1
        clock = start
        for position, message in enumerate(messages):
            clock = message.created_at or clock
            if len(message.content) > MAX_MESSAGE_CHARS:
                report.problems.append(Problem(f"{conversation.where}, message {position + 1}",
                                               f"longer than {MAX_MESSAGE_CHARS} characters: skipped"))
                continue
            added = memory.add_message(session_id, message.role, message.content, created_at=clock,
                                       importance=score(message.role, message.content, weights),
                                       external_id=message.external_id, tool_name=message.tool_name)
            if added is None:
                report.messages_skipped += 1
            else:
                report.messages_added += 1
        end = max(conversation.ended_at or clock, clock)
        db.execute("UPDATE sessions SET ended_at = coalesce(ended_at, ?), "
                   "last_activity_at = max(last_activity_at, ?) WHERE id = ? AND user_id = ?",
                   (end, clock, session_id, memory.user_id))


def _coop_records(source: Source, report: ImportReport) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a coop export after its header, each with its line number; bad lines become problems."""
    header_seen = False
    for number, line in enumerate(source.text, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if not header_seen:
                raise ValueError(f"line {number} is not JSON ({exc.msg}); a coop export starts with its header")
            report.problems.append(Problem(f"line {number}", f"not JSON ({exc.msg}): skipped"))
            continue
        if not header_seen:
            if not isinstance(record, dict) or record.get("format") != "coop":
                raise ValueError("the first line is not a coop export header")
            version = record.get("version")
            if not isinstance(version, int) or version > EXPORT_VERSION:
                raise ValueError(f"export version {version!r} is newer than this coop reads ({EXPORT_VERSION}); "
                                 "upgrade coop")
            header_seen = True
            continue
        if not isinstance(record, dict):
            report.problems.append(Problem(f"line {number}", "not an object: skipped"))
            continue
        yield number, record
    if not header_seen:
        raise ValueError("the file is empty")


class _Invalid(Exception):
    """A record that cannot be imported; the message says why."""


def _num(record: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise _Invalid(f"{name} is not a number")
    return float(value)


def _int(record: dict[str, Any], name: str, *, optional: bool = False) -> int | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"{name} is not an integer")
    return value


def _str(record: dict[str, Any], name: str, *, optional: bool = False, limit: int = MAX_MESSAGE_CHARS) -> str | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _Invalid(f"{name} is not a string")
    if len(value) > limit:
        raise _Invalid(f"{name} is longer than {limit} characters")
    return value


def _derived_id(*parts: object) -> str:
    return "coop:" + hashlib.sha1(json.dumps(parts, default=str).encode("utf-8")).hexdigest()[:24]


class _CoopImport:
    """The state of one coop-format import: new ids for old ones, so references can be re-pointed."""

    def __init__(self, memory: "UserMemory", report: ImportReport) -> None:
        self.memory = memory
        self.db = memory.db
        self.uid = memory.user_id
        self.report = report
        self.sessions: dict[int, int] = {}
        self.messages: dict[int, int] = {}
        self.facts: dict[int, int] = {}
        self.new_facts: set[int] = set()  # imported now (history is copied only for these)
        self.supersede_links: list[tuple[int, int]] = []

    def session(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        started = _num(record, "started_at")
        external = _str(record, "external_id", optional=True, limit=500) or _derived_id("s", old_id, started)
        existing = self.db.scalar("SELECT id FROM sessions WHERE user_id = ? AND external_id = ?", (self.uid, external))
        if existing is not None:
            self.sessions[old_id] = int(existing)
            return
        self.sessions[old_id] = int(self.db.scalar(
            "INSERT INTO sessions (user_id, title, started_at, ended_at, last_activity_at, external_id) "
            "VALUES (?,?,?,?,?,?) RETURNING id",
            (self.uid, _str(record, "title", optional=True, limit=1000), started,
             _num(record, "ended_at", optional=True), _num(record, "last_activity_at", optional=True) or started,
             external)))
        self.report.sessions_added += 1

    def message(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        role = _str(record, "role", limit=20)
        if role not in ROLES:
            raise _Invalid(f"unknown role {role!r}")
        content = _str(record, "content")
        created = _num(record, "created_at")
        importance = _num(record, "importance", optional=True)
        importance = 0.5 if importance is None else min(max(importance, 0.0), 1.0)
        old_session = _int(record, "session_id", optional=True)
        session = self.sessions.get(old_session) if old_session is not None else None
        external = _str(record, "external_id", optional=True, limit=500) or _derived_id("m", old_id, created, role,
                                                                                        content)
        row = self.db.one(
            "INSERT INTO messages (id, user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, "
            "created_at, importance, token_count, consolidated_at, external_id) "
            f"VALUES ({fresh_id_sql('messages', 'message')}, ?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (user_id, external_id) DO NOTHING RETURNING id",
            (self.uid, session, role, content, _str(record, "tool_name", optional=True, limit=200),
             _str(record, "tool_call_id", optional=True, limit=500), _str(record, "tool_calls", optional=True),
             created, importance, estimate_tokens(content), _num(record, "consolidated_at", optional=True), external))
        if row is None:
            existing = self.db.scalar("SELECT id FROM messages WHERE user_id = ? AND external_id = ?",
                                      (self.uid, external))
            self.messages[old_id] = int(existing)
            self.report.messages_skipped += 1
            return
        self.messages[old_id] = int(row[0])
        self.report.messages_added += 1

    def fact(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        value = _str(record, "value", limit=MAX_FACT_CHARS).strip()
        if not value:
            raise _Invalid("value is empty")
        category = (_str(record, "category", limit=100) or "general").strip().lower() or "general"
        key = _str(record, "key", optional=True, limit=200)
        key = key.strip().lower() or None if key is not None else None
        source = _str(record, "source", limit=20)
        if source not in FACT_SOURCES:
            raise _Invalid(f"unknown source {source!r}")
        created = _num(record, "created_at")
        superseded_at = _num(record, "superseded_at", optional=True)
        archived_at = _num(record, "archived_at", optional=True)
        active = superseded_at is None and archived_at is None
        digest = content_hash(value)
        same = self.db.scalar("SELECT id FROM facts WHERE user_id = ? AND category = ? AND content_hash = ? "
                              "AND created_at = ?", (self.uid, category, digest, created))
        if same is None and active:
            same = self.db.scalar("SELECT id FROM facts WHERE user_id = ? AND category = ? AND content_hash = ? "
                                  "AND superseded_at IS NULL AND archived_at IS NULL", (self.uid, category, digest))
        if same is not None:  # already here (this file imported before, or the same fact known already)
            self.facts[old_id] = int(same)
            self.report.facts_skipped += 1
            return
        importance = _num(record, "importance", optional=True)
        mentions = _int(record, "mention_count", optional=True) or 1
        now = time.time()
        slot_holder = None
        if active and key is not None:  # the target already has an active fact for this slot: the newer one wins
            slot_holder = self.db.one("SELECT id, value, updated_at FROM facts WHERE user_id = ? AND category = ? "
                                      "AND key = ? AND superseded_at IS NULL AND archived_at IS NULL",
                                      (self.uid, category, key))
        updated = _num(record, "updated_at", optional=True) or created
        imported_loses = slot_holder is not None and slot_holder[2] >= updated
        if imported_loses:
            superseded_at = now
        elif slot_holder is not None:
            self.db.execute("UPDATE facts SET superseded_at = ? WHERE id = ?", (now, slot_holder[0]))
        new_id = int(self.db.scalar(
            "INSERT INTO facts (id, user_id, category, key, value, source, importance, mention_count, content_hash, "
            "created_at, updated_at, last_recalled_at, superseded_at, archived_at) "
            f"VALUES ({fresh_id_sql('facts', 'fact')}, ?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
            (self.uid, category, key, value, source, 0.5 if importance is None else min(max(importance, 0.0), 1.0),
             max(1, mentions), digest, created, updated, _num(record, "last_recalled_at", optional=True),
             superseded_at, archived_at)))
        self.facts[old_id] = new_id
        self.new_facts.add(new_id)
        self.report.facts_added += 1
        superseded_by = _int(record, "superseded_by", optional=True)
        if superseded_by is not None:
            self.supersede_links.append((new_id, superseded_by))
        if slot_holder is not None:
            older, newer = (new_id, slot_holder[0]) if imported_loses else (slot_holder[0], new_id)
            self.db.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (newer, older))
            self.db.execute("INSERT INTO fact_history (user_id, fact_id, action, old_value, new_value, "
                            "related_fact_id, reason, created_at) VALUES (?,?,?,?,?,?,?,?)",
                            (self.uid, older, "SUPERSEDE", None, None, newer,
                             "import: the newer value for this key wins", now))

    def history(self, record: dict[str, Any]) -> None:
        fact_id = self.facts.get(_int(record, "fact_id"))
        if fact_id is None or fact_id not in self.new_facts:
            return  # the fact was not imported now (already known) or was skipped: its history is already here
        action = _str(record, "action", limit=20)
        if action not in ("ADD", "UPDATE", "SUPERSEDE", "MERGE", "FORGET", "ARCHIVE", "RESTORE"):
            raise _Invalid(f"unknown action {action!r}")
        related = _int(record, "related_fact_id", optional=True)
        self.db.execute("INSERT INTO fact_history (user_id, fact_id, action, old_value, new_value, related_fact_id, "
                        "reason, created_at) VALUES (?,?,?,?,?,?,?,?)",
                        (self.uid, fact_id, action, _str(record, "old_value", optional=True),
                         _str(record, "new_value", optional=True),
                         self.facts.get(related) if related is not None else None,
                         _str(record, "reason", optional=True, limit=10_000), _num(record, "created_at")))

    def summary(self, record: dict[str, Any]) -> None:
        text = _str(record, "text")
        if not text.strip():
            raise _Invalid("text is empty")
        created = _num(record, "created_at")
        if self.db.scalar("SELECT 1 FROM summaries WHERE user_id = ? AND created_at = ? AND text = ?",
                          (self.uid, created, text)) is not None:
            return
        old_session, start, end = (_int(record, name, optional=True) for name in
                                   ("session_id", "span_start_id", "span_end_id"))
        self.db.execute("INSERT INTO summaries (id, user_id, session_id, span_start_id, span_end_id, text, created_at) "
                        f"VALUES ({fresh_id_sql('summaries', 'summary')}, ?,?,?,?,?,?)",
                        (self.uid, self.sessions.get(old_session) if old_session is not None else None,
                         self.messages.get(start) if start is not None else None,
                         self.messages.get(end) if end is not None else None, text, created))
        self.report.summaries_added += 1

    def forgotten(self, record: dict[str, Any]) -> None:
        kind = _str(record, "kind", limit=20)
        if kind not in ("fact", "message", "summary"):
            raise _Invalid(f"unknown kind {kind!r}")
        digest = _str(record, "content_hash", optional=True, limit=200)
        if digest is not None and self.db.scalar("SELECT 1 FROM forgotten WHERE user_id = ? AND kind = ? "
                                                 "AND content_hash = ?", (self.uid, kind, digest)) is not None:
            return
        self.db.execute("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
                        "VALUES (?,?,?,?,?)", (self.uid, kind, 0, digest, _num(record, "forgotten_at")))

    def finish(self) -> None:
        """Point `superseded_by` at the new ids, now that every fact of the file has one."""
        for new_id, old_target in self.supersede_links:
            target = self.facts.get(old_target)
            if target is not None:
                self.db.execute("UPDATE facts SET superseded_by = ? WHERE id = ? AND user_id = ?",
                                (target, new_id, self.uid))


def _import_coop(memory: "UserMemory", source: Source, report: ImportReport,
                 progress: ProgressCallback | None) -> None:
    state = _CoopImport(memory, report)
    handlers: dict[str, Callable[[dict[str, Any]], None]] = {
        "session": state.session, "message": state.message, "fact": state.fact, "fact_history": state.history,
        "summary": state.summary, "forgotten": state.forgotten}
    records = _coop_records(source, report)
    db = memory.db
    while True:
        batch_done = False
        with db.atomic():
            for count, (number, record) in enumerate(records, start=1):
                handler = handlers.get(record.get("type"))  # type: ignore[arg-type]
                if handler is None:
                    report.problems.append(Problem(f"line {number}", f"unknown record type {record.get('type')!r}: "
                                                                     "skipped"))
                else:
                    try:
                        with db.atomic():  # a savepoint: a record that fails leaves nothing behind
                            handler(record)
                    except _Invalid as exc:
                        report.problems.append(Problem(f"line {number}", f"{exc}: skipped"))
                    except StoreError:
                        raise  # the database itself failed (disk full, read-only): stop, nothing half-written
                    except CoopError as exc:
                        report.problems.append(Problem(f"line {number}", f"{exc.message}: skipped"))
                if record.get("type") == "session":
                    report.conversations += 1
                if count % BATCH == 0:
                    break
            else:
                batch_done = True
                state.finish()
        if progress is not None:
            progress(ImportProgress(source.position(), source.size, report.conversations, report.messages_added))
        if batch_done:
            return


# -- embedding after an import or a change of embedder ----------------------------------------------------------


def pending_count(memory: "UserMemory") -> int:
    return sum(int(memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = ? AND embedder IS NULL",
                                    (memory.user_id,))) for table in ("messages", "facts", "summaries"))


def embed_backlog(memory: "UserMemory", embedder: "Embedder", *, batch_size: int = 64,
                  progress: Callable[[int], None] | None = None) -> int:
    """Embed everything of this user that has no vector yet, a few batches at a time; returns how many."""
    from coop.memory.vectors import embed_pending

    total = 0
    while True:
        done = embed_pending(memory, embedder, batch_size=batch_size, limit=batch_size * 4)
        if done == 0:
            return total
        total += done
        if progress is not None:
            progress(done)


@dataclass
class ReembedReport:
    embedded: int
    failed: int
    dropped_vectors: int
    embedders_dropped: list[str]


_TABLES = ("messages", "facts", "summaries")


def stale_count(memory: "UserMemory", embedder_id: str) -> int:
    """Items of this user without a vector from `embedder_id` (never embedded, or embedded by another model)."""
    return sum(int(memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = ? "
                                    "AND (embedder IS NULL OR embedder != ?)", (memory.user_id, embedder_id)))
               for table in _TABLES)


def reembed(memory: "UserMemory", embedder: "Embedder", *, batch_size: int = 64,
            progress: Callable[[int], None] | None = None) -> ReembedReport:
    """Give every item of this user a vector from `embedder`; then drop the vectors of other embedders.

    Resumable: an item's `embedder` column says which model its current vector is from, so an interrupted run
    leaves the finished items marked and the next run takes up the rest. The old vectors stay until every item
    has a new one, so an interruption never leaves an item with neither.
    """
    from coop.memory.vectors import embed_pending

    kinds = {"messages": "message", "facts": "fact", "summaries": "summary"}
    embedded = 0
    for table, kind in kinds.items():
        while True:
            # Hand the next slice of stale items to the ordinary backlog path: it embeds `embedder IS NULL` rows.
            with memory.db.atomic():
                memory.db.execute(f"UPDATE {table} SET embedder = NULL WHERE id IN (SELECT id FROM {table} "
                                  "WHERE user_id = ? AND embedder IS NOT NULL AND embedder != ? ORDER BY id LIMIT ?)",
                                  (memory.user_id, embedder.id, batch_size * 4))
            done = embed_pending(memory, embedder, batch_size=batch_size, kinds=(kind,))
            embedded += done
            if progress is not None and done:
                progress(done)
            left = memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = ? AND embedder IS NOT NULL "
                                    "AND embedder != ?", (memory.user_id, embedder.id))
            if not left:
                break
    failed = stale_count(memory, embedder.id)
    dropped, gone = 0, []
    if failed == 0:
        dropped, gone = _drop_other_vectors(memory, embedder.id)
    return ReembedReport(embedded, failed, dropped, gone)


def _drop_other_vectors(memory: "UserMemory", keep: str) -> tuple[int, list[str]]:
    """Delete this user's vectors from every embedder but `keep`, from the canonical table and the indexes."""
    from coop.memory.vectors import _index_rows_changed

    db = memory.db
    others = [row[0] for row in db.execute("SELECT DISTINCT embedder FROM embeddings WHERE user_id = ? "
                                           "AND embedder != ?", (memory.user_id, keep))]
    dropped = 0
    for embedder_id in others:
        with db.atomic():
            ids = [row[0] for row in db.execute("SELECT id FROM embeddings WHERE user_id = ? AND embedder = ?",
                                                (memory.user_id, embedder_id))]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                _index_rows_changed(db, [embedder_id], chunk)
                db.execute(f"DELETE FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            dropped += len(ids)
    return dropped, others


# -- export -----------------------------------------------------------------------------------------------------


_SESSION = ("id", "title", "started_at", "ended_at", "last_activity_at", "external_id")
_MESSAGE = ("id", "session_id", "role", "content", "created_at", "importance", "tool_name", "tool_call_id",
            "tool_calls", "consolidated_at", "external_id")
_FACT = ("id", "category", "key", "value", "source", "importance", "mention_count", "created_at", "updated_at",
         "last_recalled_at", "superseded_by", "superseded_at", "archived_at")
_HISTORY = ("fact_id", "action", "old_value", "new_value", "related_fact_id", "reason", "created_at")
_SUMMARY = ("id", "session_id", "span_start_id", "span_end_id", "text", "created_at")
_FORGOTTEN = ("kind", "content_hash", "forgotten_at")
_QUERIES = (
    ("session", _SESSION, "sessions"),
    ("message", _MESSAGE, "messages"),
    ("fact", _FACT, "facts"),
    ("fact_history", _HISTORY, "fact_history"),
    ("summary", _SUMMARY, "summaries"),
    ("forgotten", _FORGOTTEN, "forgotten"),
)


def export_records(memory: "UserMemory") -> Iterator[dict[str, Any]]:
    """Every record of this user in the coop format, header first, read from one consistent snapshot."""
    db = memory.db
    own = not db.conn.in_transaction
    if own:  # one read transaction: a write by another process mid-export is either all in or all out
        db.execute("BEGIN")
    try:
        total = sum(int(db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = ?", (memory.user_id,)))
                    for _, _, table in _QUERIES)
        yield {"format": "coop", "version": EXPORT_VERSION, "user": memory.user_id, "exported_at": time.time(),
               "records": total}
        for kind, columns, table in _QUERIES:
            cursor = db.conn.cursor()
            for row in cursor.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE user_id = ? ORDER BY id",
                                      (memory.user_id,)):
                yield {"type": kind, **dict(zip(columns, row))}
    finally:
        if own and db.conn.in_transaction:
            db.execute("COMMIT")


def write_coop(memory: "UserMemory", out: IO[str]) -> int:
    """Write the coop JSON Lines export; returns the number of records after the header."""
    count = -1
    for record in export_records(memory):
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def write_markdown(memory: "UserMemory", out: IO[str]) -> int:
    """A readable export: facts by category, instructions, summaries, then every session's conversation."""
    records: dict[str, list[dict[str, Any]]] = {kind: [] for kind, _, _ in _QUERIES}
    for record in export_records(memory):
        if "type" in record and record["type"] != "message":
            records[record["type"]].append(record)
    day = lambda ts: (iso_time(ts) or "")[:16].replace("T", " ")  # noqa: E731
    out.write(f"# coop memory of {memory.user_id}\n\nExported {day(time.time())} UTC.\n\n")
    active = [f for f in records["fact"] if f["superseded_at"] is None and f["archived_at"] is None]
    inactive = [f for f in records["fact"] if f not in active]
    out.write("## Facts\n\n")
    for category in sorted({f["category"] for f in active}):
        out.write(f"### {category}\n\n")
        for fact in (f for f in active if f["category"] == category):
            key = f" ({fact['key']})" if fact["key"] else ""
            seen = f", mentioned {fact['mention_count']} times" if fact["mention_count"] > 1 else ""
            out.write(f"- {_md_line(fact['value'])}{key} (f{fact['id']}, {day(fact['created_at'])}{seen})\n")
        out.write("\n")
    if not active:
        out.write("None.\n\n")
    if inactive:
        out.write("## Superseded and archived facts\n\n")
        for fact in inactive:
            state = f"superseded by f{fact['superseded_by']}" if fact["superseded_at"] else "archived"
            out.write(f"- {_md_line(fact['value'])} (f{fact['id']}, {state})\n")
        out.write("\n")
    if records["summary"]:
        out.write("## Summaries\n\n")
        for summary in records["summary"]:
            out.write(f"- {day(summary['created_at'])}: {_md_line(summary['text'])}\n")
        out.write("\n")
    out.write("## Conversations\n")
    sessions = {s["id"]: s for s in records["session"]}
    current: object = ()
    count = 0
    for row in memory.db.execute("SELECT session_id, role, content, created_at FROM messages WHERE user_id = ? "
                                 "ORDER BY coalesce(session_id, 0), id", (memory.user_id,)):
        session_id, role, content, created = row
        if session_id != current:
            current = session_id
            session = sessions.get(session_id)
            title = (session or {}).get("title") or ("untitled" if session else "no session")
            out.write(f"\n### {_md_line(title)} ({day((session or {}).get('started_at', created))})\n\n")
        out.write(f"**{role}** ({day(created)}):\n\n{content.strip()}\n\n")
        count += 1
    return count + len(records["fact"]) + len(records["summary"])


def _md_line(text: str) -> str:
    return " ".join(text.split())


def export_user(memory: "UserMemory", fmt: str, path: Path | None, stdout: IO[str]) -> int:
    """Export to `path` (written privately, replaced only when complete) or to `stdout`; returns records written."""
    writer = {"coop": write_coop, "markdown": write_markdown}.get(fmt)
    if writer is None:
        raise UsageError(f"unknown export format {fmt!r}", hint="use --format coop or markdown")
    if path is None:
        return writer(memory, stdout)
    if path.is_dir():
        raise UsageError(f"{path} is a directory", hint="give a file name, e.g. -o memory.jsonl")
    partial = path.with_name(f".{path.name}.partial")
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            count = writer(memory, handle)
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}",
                         hint="choose a writable place with -o") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count
