"""Importing memory: conversations from ChatGPT and Claude exports, and coop's own export (`coop_format.py`).

Importing is idempotent: messages and sessions carry a source id (`external_id`: the ChatGPT or Claude id, or for
coop records the original one, or one derived from the record), facts and summaries are recognised by their text
and creation time, so importing the same file twice adds nothing the second time. Everything is written through
storage (`UserStore`), as a chat turn writes it, in bounded transactions (`batches.py`); a malformed record is a
problem in the report, and the rest of the file is imported. Only regular files are read (`source.py`), one
bounded record at a time (`jsonstream.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from coop.config.loading import ImportanceConfig
from coop.errors import CoopError, StoreError, UsageError
from coop.memory.growth.importance import message_importance
from coop.memory.storage.interface import UserStore
from coop.memory.storage.items import MAX_MESSAGE_CHARS
from coop.memory.transfer.batches import Batches
from coop.memory.transfer.coop_format import import_coop
from coop.memory.transfer.readers import FORMATS, ImportedConversation, Problem, read_conversations
from coop.memory.transfer.report import ImportProgress, ImportReport, ProgressCallback
from coop.memory.transfer.source import Source, detect_format


def import_file(memory: UserStore, path: Path, fmt: str = "auto", *, importance: ImportanceConfig,
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
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}",
                         hint="check the path and its permissions") from None
    report = ImportReport(chosen)
    memory.ensure_user()
    try:
        with Source(path) as source:
            if chosen == "coop":
                import_coop(memory, source, report, progress)
            else:
                _import_conversations(memory, source, chosen, importance, report, progress, path.name)
            if source.replaced:
                report.problems.append(Problem(path.name, f"{source.replaced:,} byte sequence(s) are not valid "
                                                          "UTF-8: imported as U+FFFD (\ufffd)"))
    except (ValueError, OSError) as exc:
        raise UsageError(f"cannot read {path.name}: {exc}",
                         hint="check that the file is a complete export") from None
    return report


def _import_conversations(memory: UserStore, source: Source, fmt: str, importance: ImportanceConfig,
                          report: ImportReport, progress: ProgressCallback | None, name: str) -> None:
    def show() -> None:
        if progress is not None:
            progress(ImportProgress(source.position(), source.size, report.conversations, report.messages_added))

    with Batches(memory) as batches:
        for record in read_conversations(source, fmt, name):
            if isinstance(record, Problem):
                report.problems.append(record)
                continue
            report.conversations += 1
            _store_conversation(memory, record, importance, report, message_importance, batches)
            batches.commit()  # the write lock is never held while the next conversation is read
            show()


def _store_conversation(memory: UserStore, conversation: ImportedConversation, weights: ImportanceConfig,
                        report: ImportReport, score: Callable[..., float], batches: Batches) -> None:
    """One conversation as one session, in bounded batches; messages already imported are left alone, and a
    message that cannot be stored is reported and skipped alone. A failing database (StoreError) stops it."""
    messages = conversation.messages
    if not messages:
        return
    start = conversation.started_at or next((m.created_at for m in messages if m.created_at), None) or time.time()
    try:
        with batches.record(savepoint=False):  # one atomic call
            existed = memory.sessions.by_external_id(conversation.external_id)
            session_id = memory.sessions.start(conversation.title, started_at=start,
                                              external_id=conversation.external_id)
    except StoreError:
        raise  # the database itself failed (disk full, read-only): stop; committed batches stay
    except CoopError as exc:
        report.problems.append(Problem(conversation.where, f"{exc.message}: skipped"))
        return
    clock, added_before = start, report.messages_added
    for position, message in enumerate(messages):
        clock = message.created_at or clock
        where = f"{conversation.where}, message {position + 1}"
        if len(message.content) > MAX_MESSAGE_CHARS:
            report.problems.append(Problem(where, f"longer than {MAX_MESSAGE_CHARS:,} characters: skipped"))
            continue
        try:
            with batches.record(savepoint=False):  # add_message is atomic
                added = memory.messages.add(session_id, message.role, message.content, created_at=clock,
                                           importance=score(message.role, message.content, weights),
                                           external_id=message.external_id, tool_name=message.tool_name)
        except StoreError:
            raise
        except CoopError as exc:
            report.problems.append(Problem(where, f"{exc.message}: skipped"))
            continue
        if added is None:
            report.messages_skipped += 1
        else:
            report.messages_added += 1
    with batches.record(savepoint=False):  # one statement
        if existed is None and report.messages_added == added_before and memory.sessions.drop_if_empty(session_id):
            return  # every message failed: no empty session is left behind
        memory.sessions.end(session_id, at=max(conversation.ended_at or clock, clock), last_activity_at=clock)
    report.sessions_added += existed is None
