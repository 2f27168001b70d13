"""Scripted replies of the fast model on the path production takes: the notes of the pointing call (`growth/
pointing.py`), each citing the clauses of the user's message that hold a passage, read from the request itself.

    scripted.background_replies = [notes(note("Lives in Lyon", "I live in Lyon", topic="home_city"))]

`note(value, said, ...)` cites every clause of the message the passage `said` overlaps; a passage found in no
clause cites "c99", which no message has (for a test of a pointer that does not exist, pass `clauses=[...]`).
`notes(...)` is a callable entry: the in-process `ScriptedModel` and the scripted HTTP server both call it with the
request (the messages, or the body holding them) and play the JSON it returns.
"""

from __future__ import annotations

import json
import re
from typing import Any

from coop.memory.growth.pointing import MESSAGE_HEADING

_LINE = re.compile(r"^\s*(c\d+)(?: \(([^)]*)\))?: (.*)$")


def note(value: str, said: str | None = None, *, kind: str = "fact", topic: str = "other", about: str = "user",
         polarity: str = "holds", modality: str = "stated", clauses: list[str] | None = None) -> dict[str, Any]:
    return {"said": said, "clauses": clauses, "kind": kind, "topic": topic, "about": about, "polarity": polarity,
            "modality": modality, "value": value}


def listed_clauses(content: str) -> list[tuple[str, str, bool]]:
    """(id, text, own) of each clause a pointing request (or a consolidation request) lists."""
    found = []
    for line in content.splitlines():
        match = _LINE.match(line)
        if match:
            found.append((match.group(1), match.group(3), match.group(2) is None))
    return found


def said_in(content: str) -> str | None:
    """The user's message a pointing request lists (its clauses joined), or None for another request."""
    if MESSAGE_HEADING not in content:
        return None
    return " ".join(text for _, text, _ in listed_clauses(content.split(MESSAGE_HEADING, 1)[1]))


def cite(said: str, content: str) -> list[str]:
    """The ids of the listed clauses that overlap the passage `said` (any clause, own or not: the test decides)."""
    flat = _flat(said)
    listed = listed_clauses(content)
    hits = [cid for cid, text, _ in listed if _flat(text) and (_flat(text) in flat or flat in _flat(text))]
    return hits or ["c99"]


def notes(*entries: dict[str, Any], summary: str | None = None) -> Any:
    """A callable reply: the notes, each citing the clauses of the request that hold its passage; with `summary`,
    a consolidation reply."""

    def reply(request: Any) -> str:
        messages = request["messages"] if isinstance(request, dict) else request
        content = str(messages[-1]["content"])
        out = []
        for entry in entries:
            cited = entry["clauses"] if entry["clauses"] is not None else cite(entry["said"] or entry["value"],
                                                                                  content)
            out.append({k: v for k, v in entry.items() if k not in ("said", "clauses")} | {"clauses": cited})
        body: dict[str, Any] = {"notes": out}
        if summary is not None:
            body = {"summary": summary, **body}
        return json.dumps(body)

    return reply


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())
