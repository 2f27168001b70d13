"""coop's own export format, and importing it.

The format (JSON Lines, UTF-8, one record per line; timestamps are Unix seconds as JSON numbers so
a round trip is exact):

    {"format": "coop", "version": 1, "user": "sam", "exported_at": 1732300000.0, "records": 1234,
     "ids": {"fact": 57, "message": 345, "summary": 7}}
    {"type": "session", "id": 3, "title": "...", "started_at": ..., "ended_at": ..., "last_activity_at": ...,
     "external_id": null}
    {"type": "message", "id": 17, "session_id": 3, "role": "user", "content": "...", "created_at": ...,
     "importance": 0.5, "tool_name": null, "tool_call_id": null, "tool_calls": null, "consolidated_at": null,
     "external_id": null, "origin": null}
    {"type": "fact", "id": 5, "category": "location", "key": "city", "value": "Lyon", "source": "extraction",
     "importance": 0.7, "mention_count": 2, "created_at": ..., "updated_at": ..., "last_recalled_at": null,
     "superseded_by": null, "superseded_at": null, "archived_at": null,
     "sources": [{"message_id": 17, "quote": "I moved to Lyon"}]}
    {"type": "fact_history", "fact_id": 5, "action": "ADD", "old_value": null, "new_value": "Lyon",
     "related_fact_id": null, "reason": "...", "created_at": ...}
    {"type": "summary", "id": 2, "session_id": 3, "span_start_id": 10, "span_end_id": 40, "text": "...",
     "created_at": ...}
    {"type": "forgotten", "kind": "fact", "content_hash": null, "forgotten_at": ...}

    {"type": "alias", "kind": "fact", "source_id": 12, "target_id": 57, "created_at": ...}

Ids are the exporting database's, and an import keeps them where this database can give them; a row renumbered
(or recognised under another id) gets an alias, through which a typed `f12` still finds it, and history reasons
that name ids are rewritten (`kept_ids.py`; the header's `ids`, the highest id of each kind, and the `alias`
records of the exporting side came later: a file without them imports as before). Every reference is mapped (a
message's session, a summary's span, a fact's `superseded_by`, its history, its `sources`).

Provenance travels with the memory: a fact's `sources` are the messages it was learned from, each with the user's
words it quoted (null when none was kept), and a message's `origin` is "host" when an MCP host recorded it. Both
fields came later (exports only grow): a record without them imports as before, with no links and no origin. A
source whose message is not in the file (forgotten before the export) is left out; an origin this coop does not
know is dropped and the message kept. Vectors are not exported: they belong to one embedder,
and the importing side embeds the text with its own. Records land in the user the import is run for, whatever
user the export came from.

Reading it back adds nothing that is already there: a session or message is recognised by its source id
(`external_id`), and one without (or with an id an earlier coop import derived) also by what it is: a session
by its start and title, a message by its session, role, time and text. So an export read back into the database
it came from, or into one that imported it before, adds nothing. A line longer than 64 MB or nested deeper than
100 levels (`jsonstream.py`), a time outside 1970..2200 in a fact, summary, history or forgotten record, or an
integer past 64 bits makes its record a problem in the report, skipped alone; a session's or message's unusable
time is stood in for (`coop_fields.Times`), as a ChatGPT or Claude conversation's is. A session the file made
whose every message failed is removed at the end.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from coop.errors import CoopError, StoreError
from coop.memory.kinds import KINDS
from coop.memory.storage.interface import UserStore
from coop.memory.storage.items import FACT_SOURCES, HISTORY_ACTIONS, MAX_FACT_CHARS, ROLES, FactFields, RestoredFact
from coop.memory.text import content_hash
from coop.memory.transfer import kept_ids
from coop.memory.transfer.batches import Batches
from coop.memory.transfer.coop_fields import Invalid as _Invalid
from coop.memory.transfer.coop_fields import Times
from coop.memory.transfer.coop_fields import integer as _int
from coop.memory.transfer.coop_fields import number as _num
from coop.memory.transfer.coop_fields import string as _str
from coop.memory.transfer.coop_fields import time as _time
from coop.memory.transfer.jsonstream import BadRecord, iter_json_lines
from coop.memory.transfer.readers import Problem, Source, short
from coop.memory.transfer.report import ImportProgress, ImportReport, ProgressCallback
from coop.privacy.secrets import mask, mask_optional

EXPORT_VERSION = 1
ORIGINS = ("host",)  # a message's `origin` values this coop knows


def _coop_records(source: Source, report: ImportReport,
                  on_header: Callable[[dict[str, Any]], None]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a coop export after its header (handed to `on_header`), each with its line number; bad lines
    become problems."""
    header_seen = False
    for number, record in iter_json_lines(source.text):
        if isinstance(record, BadRecord):
            if not header_seen:
                raise ValueError(f"line {number} is {record.reason.removesuffix(': skipped')}; "
                                 "a coop export starts with its header")
            report.problems.append(Problem(f"line {number}", record.reason))
            continue
        if not header_seen:
            if not isinstance(record, dict) or record.get("format") != "coop":
                raise ValueError("the first line is not a coop export header")
            version = record.get("version")
            if not isinstance(version, int) or version > EXPORT_VERSION:
                raise ValueError(f"export version {version!r} is newer than this coop reads ({EXPORT_VERSION}); "
                                 "upgrade coop")
            header_seen = True
            on_header(record)
            continue
        if not isinstance(record, dict):
            report.problems.append(Problem(f"line {number}", "not an object: skipped"))
            continue
        yield number, record
    if not header_seen:
        raise ValueError("the file is empty")


def _derived_id(*parts: object) -> str:
    return "coop:" + hashlib.sha1(json.dumps(parts, default=str).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _unsourced(external: str | None) -> bool:
    """A record without a source id of its own (none, or one a coop import derived): recognised by content."""
    return external is None or external.startswith("coop:")


_CACHED_SESSIONS = 4


class CoopImport:
    """The state of one coop-format import: new ids for old ones, so references can be re-pointed."""

    def __init__(self, memory: UserStore, report: ImportReport) -> None:
        self.memory = memory
        self.report = report
        self.began = time.time()  # the date an alias made now carries
        self.sessions: dict[int, int] = {}
        self.messages: dict[int, int] = {}
        self.facts: dict[int, int] = {}
        self.summaries: dict[int, int] = {}  # those added now (a summary known already is found by text and time)
        self.new_facts: set[int] = set()  # imported now (history is copied only for these)
        self.supersede_links: list[tuple[int, int]] = []
        self.known_sessions = memory.sessions.by_start()  # before this import wrote anything
        self.new_sessions: set[int] = set()  # made by this import: nothing in them to recognise
        self.times = Times(time.time())  # stand-ins for a conversation's unusable times
        self.message_keys: OrderedDict[int | None, dict[tuple[str, float, str], int]] = OrderedDict()

    def claim(self, header: dict[str, Any]) -> None:
        kept_ids.claim(self.memory, header)

    def alias(self, record: dict[str, Any]) -> None:
        kept_ids.carry_alias(self.memory, record, {"fact": self.facts, "message": self.messages,
                                                   "summary": self.summaries})

    def _mapped(self, kind: str, mapping: dict[int, int], old_id: int, new_id: int) -> None:
        """The file's `old_id` is `new_id` here: in the map, and as an alias when they differ."""
        mapping[old_id] = new_id
        if new_id:
            self.memory.aliases.record(kind, old_id, new_id, self.began)

    def session(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        started, raw_start = self.times.start(record)
        title = _str(record, "title", optional=True, limit=1000)
        ended = self.times.optional(record, "ended_at")
        last_activity = self.times.optional(record, "last_activity_at")
        own = _str(record, "external_id", optional=True, limit=500)
        external = own or _derived_id("s", old_id, raw_start)
        existing = self.memory.sessions.by_external_id(external)
        if existing is None and _unsourced(own):
            existing = self.known_sessions.get((started, title), self.known_sessions.get((started,
                                                                                          mask_optional(title))))
        if existing is not None:
            self.sessions[old_id] = existing
            self.times.started(existing, started)
            return
        new_id = self.memory.sessions.start(title, started_at=started, external_id=external, ended_at=ended,
                                           last_activity_at=last_activity or started)
        self.sessions[old_id] = new_id
        self.times.started(new_id, started)
        self.new_sessions.add(new_id)
        self.report.sessions_added += 1

    def _known_message(self, session: int | None, role: str, created: float, content: str) -> int | None:
        """The message already in `session` with this role, time and text (as stored, masked), if any."""
        keys = self.message_keys.get(session)
        if keys is None:
            keys = {(row_role, row_created, _digest(text)): message_id
                    for message_id, row_role, row_created, text in self.memory.messages.of_session(session)}
            self.message_keys[session] = keys
            if len(self.message_keys) > _CACHED_SESSIONS:
                self.message_keys.popitem(last=False)
        else:
            self.message_keys.move_to_end(session)
        return keys.get((role, created, _digest(content))) or keys.get((role, created, _digest(mask(content))))

    def message(self, record: dict[str, Any]) -> None:
        old_id = _int(record, "id")
        role = _str(record, "role", limit=20)
        if role not in ROLES:
            raise _Invalid(f"unknown role {role!r}")
        content = _str(record, "content")
        importance = _num(record, "importance", optional=True)
        importance = 0.5 if importance is None else min(max(importance, 0.0), 1.0)
        old_session = _int(record, "session_id", optional=True)
        session = self.sessions.get(old_session) if old_session is not None else None
        created, raw_created = self.times.message(record, session)
        own = _str(record, "external_id", optional=True, limit=500)
        external = own or _derived_id("m", old_id, raw_created, role, content)
        tool_name = _str(record, "tool_name", optional=True, limit=200)
        tool_call_id = _str(record, "tool_call_id", optional=True, limit=500)
        tool_calls = _str(record, "tool_calls", optional=True)
        consolidated = self.times.optional(record, "consolidated_at")
        origin = _str(record, "origin", optional=True, limit=20)
        known = (self._known_message(session, role, created, content)
                 if _unsourced(own) and session not in self.new_sessions else None)
        if known is not None:
            self._mapped("message", self.messages, old_id, known)
            self.report.messages_skipped += 1
            return
        new_id = self.memory.messages.add(
            session, role, content, created_at=created, importance=importance, external_id=external,
            tool_name=tool_name, tool_call_id=tool_call_id, tool_calls=tool_calls, consolidated_at=consolidated,
            origin=origin if origin in ORIGINS else None, source_id=old_id)
        if new_id is None:
            self._mapped("message", self.messages, old_id, self.memory.messages.by_external_id(external) or 0)
            self.report.messages_skipped += 1
            return
        self._mapped("message", self.messages, old_id, new_id)
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
        fields = FactFields.checked(value, category=_str(record, "category", limit=1000),
                                    key=_str(record, "key", optional=True, limit=1000),
                                    importance=0.5 if importance is None else min(max(importance, 0.0), 1.0),
                                    source=source)
        created = _time(record, "created_at")
        sources = self._sources(record)
        restored = RestoredFact(fields, _int(record, "mention_count", optional=True) or 1, created,
                                _time(record, "updated_at", optional=True) or created,
                                _time(record, "last_recalled_at", optional=True),
                                _time(record, "superseded_at", optional=True),
                                _time(record, "archived_at", optional=True), source_id=old_id)
        same = self._known(fields, created, restored.active)
        if same is not None:  # already here (this file imported before, or the same fact known already)
            self._mapped("fact", self.facts, old_id, same)
            self.report.facts_skipped += 1
            self._link(same, sources)  # (a file from before provenance was exported left it without them)
            return
        new_id = self.memory.facts.restore(restored, reason="import: the newer value for this key wins")
        self._link(new_id, sources)
        self._mapped("fact", self.facts, old_id, new_id)
        self.new_facts.add(new_id)
        self.report.facts_added += 1
        superseded_by = _int(record, "superseded_by", optional=True)
        if superseded_by is not None:
            self.supersede_links.append((new_id, superseded_by))

    @staticmethod
    def _sources(record: dict[str, Any]) -> list[tuple[int, str | None]]:
        """A fact record's `sources` as (message id in the file, quote); absent in exports from before them."""
        sources = record.get("sources")
        if sources is None:
            return []
        if not isinstance(sources, list) or not all(isinstance(link, dict) for link in sources):
            raise _Invalid("sources is not a list of objects")
        try:
            return [(_int(link, "message_id"), _str(link, "quote", optional=True)) for link in sources]
        except _Invalid as exc:
            raise _Invalid(f"sources: {exc}") from None

    def _link(self, fact_id: int, sources: list[tuple[int, str | None]]) -> None:
        """Link a fact to the imported messages it was learned from, with its quotes (masked and cut to length as
        every quote is, by `link_sources`)."""
        for old_message, quote in sources:
            message_id = self.messages.get(old_message)
            if message_id:
                self.memory.sources.link(fact_id, [message_id], quote)

    def _known(self, fields: FactFields, created: float, active: bool) -> int | None:
        """The fact of this user that a record is: the same text and creation time, or (for an active record)
        the same active fact."""
        for item in self.memory.facts.with_hash(fields.category, content_hash(fields.value)):
            if item.created_at == created:
                return item.item_id
        if active:
            exact = self.memory.facts.find_exact(fields.value, fields.category)
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
        reason = _str(record, "reason", optional=True, limit=10_000)
        self.memory.facts.record_history(fact_id, action, _str(record, "old_value", optional=True),
                                   _str(record, "new_value", optional=True),
                                   None if reason is None else kept_ids.renamed(reason, self.facts, self.messages),
                                   _time(record, "created_at"),
                                   related=self.facts.get(related) if related is not None else None)

    def summary(self, record: dict[str, Any]) -> None:
        text = _str(record, "text")
        if not text.strip():
            raise _Invalid("text is empty")
        created = _time(record, "created_at")
        if self.memory.summaries.has(text, created):
            return
        old_id, old_session, start, end = (_int(record, name, optional=True) for name in
                                           ("id", "session_id", "span_start_id", "span_end_id"))
        new_id = self.memory.summaries.add(
            text, session_id=self.sessions.get(old_session) if old_session is not None else None,
            span=(self.messages.get(start) if start is not None else None,
                  self.messages.get(end) if end is not None else None), created_at=created, source_id=old_id)
        if old_id is not None:
            self._mapped("summary", self.summaries, old_id, new_id)
        self.report.summaries_added += 1

    def forgotten(self, record: dict[str, Any]) -> None:
        kind = _str(record, "kind", limit=20)
        if kind not in KINDS:
            raise _Invalid(f"unknown kind {kind!r}")
        _str(record, "content_hash", optional=True, limit=200)  # checked, never kept: only this database's keyed
        at = _time(record, "forgotten_at")  # hash may be stored, and an older export's plain hash can be reversed
        if not self.memory.forgotten.has_record(kind, at):
            self.memory.forgotten.record(kind, None, at)

    def finish(self) -> None:
        """Point `superseded_by` at the new ids, now that every fact of the file has one."""
        for new_id, old_target in self.supersede_links:
            target = self.facts.get(old_target)
            if target is not None:
                self.memory.facts.link_superseded(new_id, target)
        self.report.problems += [Problem(where, why) for where, why in self.times.problems()]
        for session in self.new_sessions:  # every message of it failed: no empty session is left behind
            if self.memory.sessions.drop_if_empty(session):
                self.report.sessions_added -= 1


def import_coop(memory: UserStore, source: Source, report: ImportReport,
                progress: ProgressCallback | None) -> None:
    """Import a coop export into `memory`, in bounded transactions (`batches.py`); a bad record is skipped alone."""
    state = CoopImport(memory, report)
    handlers: dict[str, Callable[[dict[str, Any]], None]] = {
        "session": state.session, "message": state.message, "fact": state.fact, "fact_history": state.history,
        "summary": state.summary, "forgotten": state.forgotten, "alias": state.alias}

    def show() -> None:
        if progress is not None:
            progress(ImportProgress(source.position(), source.size, report.conversations, report.messages_added))

    with Batches(memory, on_commit=show) as batches:
        for number, record in _coop_records(source, report, state.claim):
            kind = record.get("type")
            handler = handlers.get(kind) if isinstance(kind, str) else None
            if kind == "session":
                report.conversations += 1
            if handler is None:
                report.problems.append(Problem(f"line {number}", f"unknown record type {short(kind, 40)}: skipped"))
                continue
            try:
                with batches.record():  # a savepoint: a record that fails leaves nothing behind
                    handler(record)
            except _Invalid as exc:
                report.problems.append(Problem(f"line {number}", f"{exc}: skipped"))
            except StoreError:
                raise  # the database itself failed (disk full, read-only): stop, nothing half-written
            except CoopError as exc:
                report.problems.append(Problem(f"line {number}", f"{exc.message}: skipped"))
        with batches.record():
            state.finish()
