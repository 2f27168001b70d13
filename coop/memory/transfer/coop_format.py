"""coop's own export format, and importing it.

The format (JSON Lines, UTF-8, one record per line; timestamps are Unix seconds as JSON numbers so
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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any, Literal, overload

from coop.errors import CoopError, StoreError
from coop.memory.kinds import KINDS
from coop.memory.storage.facts import FactFields, RestoredFact
from coop.memory.storage.items import FACT_SOURCES, HISTORY_ACTIONS, MAX_FACT_CHARS, MAX_MESSAGE_CHARS, ROLES
from coop.memory.storage.store import UserMemory
from coop.memory.text import content_hash
from coop.memory.transfer.readers import Problem, Source
from coop.memory.transfer.report import BATCH, ImportProgress, ImportReport, ProgressCallback

EXPORT_VERSION = 1


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
                raise ValueError(f"line {number} is not JSON ({exc.msg}); "
                                 "a coop export starts with its header") from None
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


@overload
def _num(record: dict[str, Any], name: str, *, optional: Literal[False] = False) -> float: ...
@overload
def _num(record: dict[str, Any], name: str, *, optional: bool) -> float | None: ...
def _num(record: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise _Invalid(f"{name} is not a number")
    return float(value)


@overload
def _int(record: dict[str, Any], name: str, *, optional: Literal[False] = False) -> int: ...
@overload
def _int(record: dict[str, Any], name: str, *, optional: bool) -> int | None: ...
def _int(record: dict[str, Any], name: str, *, optional: bool = False) -> int | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"{name} is not an integer")
    return value


@overload
def _str(record: dict[str, Any], name: str, *, optional: Literal[False] = False,
         limit: int = MAX_MESSAGE_CHARS) -> str: ...
@overload
def _str(record: dict[str, Any], name: str, *, optional: bool, limit: int = MAX_MESSAGE_CHARS) -> str | None: ...
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

    def __init__(self, memory: UserMemory, report: ImportReport) -> None:
        self.memory = memory
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
        existing = self.memory.session_by_external_id(external)
        if existing is not None:
            self.sessions[old_id] = existing
            return
        self.sessions[old_id] = self.memory.start_session(
            _str(record, "title", optional=True, limit=1000), started_at=started, external_id=external,
            ended_at=_num(record, "ended_at", optional=True),
            last_activity_at=_num(record, "last_activity_at", optional=True) or started)
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
        new_id = self.memory.add_message(
            session, role, content, created_at=created, importance=importance, external_id=external,
            tool_name=_str(record, "tool_name", optional=True, limit=200),
            tool_call_id=_str(record, "tool_call_id", optional=True, limit=500),
            tool_calls=_str(record, "tool_calls", optional=True),
            consolidated_at=_num(record, "consolidated_at", optional=True))
        if new_id is None:
            self.messages[old_id] = self.memory.message_by_external_id(external) or 0
            self.report.messages_skipped += 1
            return
        self.messages[old_id] = new_id
        self.report.messages_added += 1

    def fact(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        value = _str(record, "value", limit=MAX_FACT_CHARS).strip()
        if not value:
            raise _Invalid("value is empty")
        source = _str(record, "source", limit=20)
        if source not in FACT_SOURCES:
            raise _Invalid(f"unknown source {source!r}")
        importance = _num(record, "importance", optional=True)
        fields = FactFields.checked(value, category=_str(record, "category", limit=100),
                                    key=_str(record, "key", optional=True, limit=200),
                                    importance=0.5 if importance is None else min(max(importance, 0.0), 1.0),
                                    source=source)
        created = _num(record, "created_at")
        restored = RestoredFact(fields, _int(record, "mention_count", optional=True) or 1, created,
                                _num(record, "updated_at", optional=True) or created,
                                _num(record, "last_recalled_at", optional=True),
                                _num(record, "superseded_at", optional=True),
                                _num(record, "archived_at", optional=True))
        same = self._known(fields, created, restored.active)
        if same is not None:  # already here (this file imported before, or the same fact known already)
            self.facts[old_id] = same
            self.report.facts_skipped += 1
            return
        new_id = self.memory.restore_fact(restored, reason="import: the newer value for this key wins")
        self.facts[old_id] = new_id
        self.new_facts.add(new_id)
        self.report.facts_added += 1
        superseded_by = _int(record, "superseded_by", optional=True)
        if superseded_by is not None:
            self.supersede_links.append((new_id, superseded_by))

    def _known(self, fields: FactFields, created: float, active: bool) -> int | None:
        """The fact of this user that a record is: the same text and creation time, or (for an active record)
        the same active fact."""
        for item in self.memory.facts_with_hash(fields.category, content_hash(fields.value)):
            if item.created_at == created:
                return item.item_id
        if active:
            exact = self.memory.find_exact(fields.value, fields.category)
            if exact is not None:
                return exact.item_id
        return None

    def history(self, record: dict[str, Any]) -> None:
        fact_id = self.facts.get(_int(record, "fact_id"))
        if fact_id is None or fact_id not in self.new_facts:
            return  # the fact was not imported now (already known) or was skipped: its history is already here
        action = _str(record, "action", limit=20)
        if action not in HISTORY_ACTIONS:
            raise _Invalid(f"unknown action {action!r}")
        related = _int(record, "related_fact_id", optional=True)
        self.memory.record_history(fact_id, action, _str(record, "old_value", optional=True),
                                   _str(record, "new_value", optional=True),
                                   _str(record, "reason", optional=True, limit=10_000), _num(record, "created_at"),
                                   related=self.facts.get(related) if related is not None else None)

    def summary(self, record: dict[str, Any]) -> None:
        text = _str(record, "text")
        if not text.strip():
            raise _Invalid("text is empty")
        created = _num(record, "created_at")
        if self.memory.has_summary(text, created):
            return
        old_session, start, end = (_int(record, name, optional=True) for name in
                                   ("session_id", "span_start_id", "span_end_id"))
        self.memory.add_summary(text, session_id=self.sessions.get(old_session) if old_session is not None else None,
                                span=(self.messages.get(start) if start is not None else None,
                                      self.messages.get(end) if end is not None else None), created_at=created)
        self.report.summaries_added += 1

    def forgotten(self, record: dict[str, Any]) -> None:
        kind = _str(record, "kind", limit=20)
        if kind not in KINDS:
            raise _Invalid(f"unknown kind {kind!r}")
        digest = _str(record, "content_hash", optional=True, limit=200)
        if digest is not None and self.memory.is_forgotten_hash(kind, digest):
            return
        self.memory.record_forgotten(kind, digest, _num(record, "forgotten_at"))

    def finish(self) -> None:
        """Point `superseded_by` at the new ids, now that every fact of the file has one."""
        for new_id, old_target in self.supersede_links:
            target = self.facts.get(old_target)
            if target is not None:
                self.memory.link_superseded(new_id, target)


def import_coop(memory: UserMemory, source: Source, report: ImportReport,
                progress: ProgressCallback | None) -> None:
    """Import a coop export into `memory`, in transactions of `BATCH` records; a bad record is skipped alone."""
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
