"""Exporting memory: coop's JSON Lines format (`coop_format.py` describes it) and a readable markdown document.

An export is read from one consistent snapshot, and a file is written privately and replaced only when complete.
Vectors are not exported: they belong to one embedder, and the importing side embeds the text with its own.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from itertools import groupby, islice
from pathlib import Path
from typing import IO, Any, cast

from coop.errors import UsageError
from coop.files.writing import replace_file, write_stream
from coop.memory.storage.interface import UserStore
from coop.memory.text import iso_time, show_controls
from coop.memory.transfer.coop_format import EXPORT_VERSION


def export_records(memory: UserStore) -> Iterator[dict[str, Any]]:
    """Every record of this user in the coop format, header first, read from one consistent snapshot."""
    rows = memory.records.dump()
    try:
        total = next(rows)
        yield {"format": "coop", "version": EXPORT_VERSION, "user": memory.user_id, "exported_at": time.time(),
               "records": total, "ids": memory.records.highest_ids()}  # read in the snapshot `dump` holds
        for kind, records in groupby(rows, key=lambda record: cast(dict[str, Any], record)["type"]):
            typed = (cast(dict[str, Any], record) for record in records)
            yield from (_with_sources(memory, typed) if kind == "fact" else typed)
    finally:
        rows.close()


def _with_sources(memory: UserStore, facts: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each fact record with `sources`: the messages it was learned from (this export's ids) and the user's words
    it quoted from each, read 500 facts at a time."""
    while chunk := list(islice(facts, 500)):
        links = memory.sources.quotes_of(record["id"] for record in chunk)
        for record in chunk:
            record["sources"] = [{"message_id": message_id, "quote": quote}
                                 for message_id, quote in links.get(record["id"], [])]
            yield record


def write_coop(memory: UserStore, out: IO[str]) -> int:
    """Write the coop JSON Lines export; returns the number of records after the header."""
    count = -1
    for record in export_records(memory):
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def write_markdown(memory: UserStore, out: IO[str]) -> int:
    """A readable export: facts by category, instructions, summaries, then every session's conversation. Stored
    text is shown with its control characters as codes (`show_controls`): a document people `cat` or preview must
    not run the escape sequences an imported file or a model's reply carried."""
    records: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in export_records(memory):
        if "type" in record and record["type"] != "message":
            records[record["type"]].append(record)

    def day(ts: float | None) -> str:
        return (iso_time(ts) or "")[:16].replace("T", " ")

    out.write(f"# coop memory of {_md_line(memory.user_id)}\n\nExported {day(time.time())} UTC.\n\n")
    active = [f for f in records["fact"] if f["superseded_at"] is None and f["archived_at"] is None]
    inactive = [f for f in records["fact"] if f not in active]
    out.write("## Facts\n\n")
    for category in sorted({f["category"] for f in active}):
        out.write(f"### {_md_line(category)}\n\n")
        for fact in (f for f in active if f["category"] == category):
            key = f" ({_md_line(fact['key'])})" if fact["key"] else ""
            seen = f", mentioned {fact['mention_count']} times" if fact["mention_count"] > 1 else ""
            out.write(f"- {_md_line(fact['value'])}{key} (f{fact['id']}, {day(fact['created_at'])}{seen})\n")
            for quote in dict.fromkeys(link["quote"] for link in fact["sources"] if link["quote"]):
                out.write(f"  > you said: “{_md_line(quote)}”\n")
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
    for session_id, role, content, created in memory.records.conversation():
        if session_id != current:
            current = session_id
            session = sessions.get(session_id)
            title = (session or {}).get("title") or ("untitled" if session else "no session")
            out.write(f"\n### {_md_line(title)} ({day((session or {}).get('started_at', created))})\n\n")
        out.write(f"**{_md_line(role)}** ({day(created)}):\n\n{show_controls(content.strip())}\n\n")
        count += 1
    return count + len(records["fact"]) + len(records["summary"])


def _md_line(text: str) -> str:
    return show_controls(" ".join(text.split()))


def export_user(memory: UserStore, fmt: str, path: Path | None, stdout: IO[str]) -> int:
    """Export to `path` (written privately, replaced only when complete) or to `stdout`; returns records written."""
    writer = {"coop": write_coop, "markdown": write_markdown}.get(fmt)
    if writer is None:
        raise UsageError(f"unknown export format {fmt!r}", hint="use --format coop or markdown")
    if path is None:
        return write_stream(stdout, lambda out: writer(memory, out))
    return replace_file(path, lambda handle: writer(memory, handle))
