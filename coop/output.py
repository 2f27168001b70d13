"""The one printer: everything coop writes for people and scripts, from the commands and from the REPL alike.
Data goes to stdout (rich tables for people, JSON for scripts), messages to stderr (the REPL passes its own
console, which is stdout on a terminal).

`--json` output is the contract of DESIGN.md: field names only grow. Times are ISO 8601 in UTC in JSON and
local time for people. `NO_COLOR` and `TERM=dumb` are honoured by rich itself.

Nothing printed here carries an API key: error, warning, hint and info lines, stored text shown to people
(`printable`, `cell`, `one_line`) and every string in JSON output pass through `coop.privacy.secrets.mask`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console

from coop.memory.text import show_controls
from coop.privacy.secrets import mask, mask_data

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from coop.errors import CoopError
    from coop.memory.retrieval.context import Recalled
    from coop.memory.retrieval.search import Hit
    from coop.memory.retrieval.turn import TurnContext
    from coop.memory.storage.items import HistoryEntry, Item, Provenance

_stdout: Console | None = None
_stderr: Console | None = None


def out() -> Console:
    global _stdout
    if _stdout is None or _stdout.file is not sys.stdout:
        _stdout = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    return _stdout


def err() -> Console:
    global _stderr
    if _stderr is None or _stderr.file is not sys.stderr:
        _stderr = Console(file=sys.stderr, highlight=False)
    return _stderr


def print_json(data: Any) -> None:
    """Machine-readable output: one JSON document on stdout and nothing else there."""
    sys.stdout.write(json.dumps(mask_data(data), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def whole_lines(console: Console) -> bool:
    """Whether a line of coop's is written whole (`soft_wrap`): off a terminal (a pipe, a file, a script reading
    one line per error), yes; on a terminal, no: rich wraps it between words, where the terminal would cut a word
    in two at its edge."""
    return not console.is_terminal


def error(exc: "CoopError", console: Console | None = None) -> None:
    """`error: ...` and `hint: ...`, one line each off a terminal; wrapped between words on a narrow one."""
    console = console or err()
    console.print(f"[bold red]error:[/] {escape(_flat(exc.message))}", soft_wrap=whole_lines(console))
    if exc.hint:
        console.print(f"[dim]hint:[/] {escape(_flat(exc.hint))}", soft_wrap=whole_lines(console))


def say(text: str, console: Console | None = None) -> None:
    """A line of coop's own, printed as it is (no markup, no highlighting)."""
    (console or err()).print(escape(printable(text)), highlight=False)


def warn(message: str, hint: str | None = None, console: Console | None = None) -> None:
    console = console or err()
    console.print(f"[yellow]warning:[/] {escape(_flat(message))}", soft_wrap=whole_lines(console))
    if hint:
        console.print(f"[dim]hint:[/] {escape(_flat(hint))}", soft_wrap=whole_lines(console))


def info(message: str) -> None:
    err().print(escape(mask(message)), soft_wrap=whole_lines(err()))


def _flat(text: str) -> str:
    """Messages can carry text from elsewhere (a TOML parser, SQLite, a provider): keep them to one line, keys
    masked."""
    return printable(" ".join(str(text).split()))  # keys masked, control characters shown as codes


def printable(text: str) -> str:
    """Stored text made safe for a terminal: each control character shown as its code (`\x1b`, `\u202e`), so
    nothing in memory can drive the terminal or reorder what follows it, and any key in it masked. For human
    output only: JSON output stays exact (but for masked keys)."""
    return show_controls(mask(text))


def cell(value: object) -> "Text":
    """User data as a table cell: plain text, never rich markup (a fact may contain `[/]`), no control codes."""
    from rich.text import Text

    return Text("" if value is None else printable(str(value)))


def escape(text: str) -> str:
    """Text that rich prints as it is, never as markup."""
    from rich.markup import escape

    return escape(text)


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


def local_time(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def item_json(item: "Item") -> dict[str, Any]:
    data: dict[str, Any] = {"id": item.ref, "kind": item.kind, "text": item.text, "created_at": iso(item.created_at)}
    if item.kind == "message":
        data.update(session_id=item.session_id, external_id=item.external_id, role=item.role,
                    importance=item.importance)
    elif item.kind == "fact":
        data.update(category=item.category, key=item.key, importance=item.importance,
                    mention_count=item.mention_count, source=item.source, updated_at=iso(item.updated_at),
                    superseded_by=None if item.superseded_by is None else f"f{item.superseded_by}",
                    superseded_at=iso(item.superseded_at), archived_at=iso(item.archived_at))
    else:
        data.update(session_id=item.session_id)
    data["embedder"] = item.embedder
    return data


def hit_json(hit: "Hit") -> dict[str, Any]:
    data = item_json(hit.item)
    data["score"] = round(hit.score, 6)
    data["legs"] = {leg: {"rank": s.rank, "score": round(s.score, 6)} for leg, s in hit.legs.items()}
    return data


def history_json(entry: "HistoryEntry") -> dict[str, Any]:
    return {"action": entry.action, "old_value": entry.old_value, "new_value": entry.new_value,
            "reason": entry.reason, "created_at": iso(entry.created_at),
            "related_id": None if entry.related_fact_id is None else f"f{entry.related_fact_id}"}


def source_json(source: "Provenance") -> dict[str, Any]:
    """One message a fact was learned from, with the user's words it quoted (`coop memory why --json`)."""
    return {"message_id": f"m{source.message_id}", "session_id": source.session_id, "role": source.role,
            "created_at": iso(source.created_at), "origin": source.origin, "quote": source.quote,
            "text": source.text}


def one_line(text: str, width: int = 90) -> str:
    """Text on one line at most `width` terminal cells wide (a Japanese character takes two, an accent of an NFD
    "é" none): when longer, its start and "…", cut between two characters a reader sees, never inside one (an
    accent from its letter, half a flag or of an emoji sequence)."""
    from rich.cells import cell_len

    from coop.memory.text import grapheme_start

    flat = " ".join(printable(text).split())
    if cell_len(flat) <= width:
        return flat
    room = max(width - 1, 0)
    end = min(len(flat), 4 * width)  # none is wider than two cells: the cut is inside this, or it is narrow enough
    while end > 0 and (over := cell_len(flat[:end]) - room) > 0:
        end -= (over + 1) // 2
    return flat[:grapheme_start(flat, end)] + "…"


SECTIONS = {"profile": "profile", "relevance": "facts", "history": "former", "continuity": "previous"}


def section_of(entry: "Recalled") -> str:
    """Which part of the prompt a recalled item is in: profile, facts, former, previous or past."""
    section = SECTIONS.get(entry.reason, "past")
    return "facts" if section == "past" and entry.item.kind == "fact" else section


def recall_json(question: str, context: "TurnContext") -> dict[str, Any]:
    """What a prompt for `question` would hold (`coop memory recall --json`, MCP `memory_context`): each item with
    its section and why it is there, the memory text as the model reads it, and what did not fit."""
    from coop.memory.retrieval.context import explain

    prompt = context.prompt
    items = []
    for entry in prompt.recalled:
        items.append({**item_json(entry.item), "section": section_of(entry), "reason": entry.reason,
                      "why": explain(entry), "score": round(entry.score, 6)})
    return {"question": question, "memory": prompt.messages[0]["content"].strip(), "items": items,
            "left_out": len(prompt.left_out), "tokens": {"memory": prompt.tokens["memory"],
                                                         "memory_budget": prompt.tokens["memory_budget"]}}


@dataclass(frozen=True)
class Column:
    """A table column for `fitted_table`: `rank` 0 is never dropped (id, text); on a narrow terminal the highest
    rank goes first. A `wrap` column wraps its text and keeps at least `least` characters a line."""

    name: str
    rank: int = 0
    wrap: bool = False
    least: int = 18


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[Any]],
                 width: int | None = None, header: bool = True) -> "Table":
    """A table that reads at any width: columns drop, least important first, until the others fit with each
    wrapping column at least `least` wide (rich alone would squeeze the text to a few characters, or drop the
    id), so 40 columns shows the id and the text and 200 shows everything."""
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    width = width or out().width

    def widest(index: int) -> int:
        cells = [row[index] for row in rows]
        lines = [line for value in cells
                 for line in (value.plain if isinstance(value, Text) else str(value)).splitlines() or [""]]
        return max([cell_len(line) for line in lines] + [cell_len(columns[index].name) if header else 0])

    need = {i: min(widest(i), c.least) if c.wrap else widest(i) for i, c in enumerate(columns)}
    kept = list(range(len(columns)))
    while sum(need[i] for i in kept) + 2 * (len(kept) - 1) > width:
        droppable = [i for i in kept if columns[i].rank > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda i: (columns[i].rank, i)))
    # the room left after the fixed columns, shared by the wrapping ones: the narrowest takes what it needs, the
    # others split the rest (widths set here, since rich would squeeze a wrapping column under its minimum)
    wrapping = sorted((i for i in kept if columns[i].wrap), key=widest)
    spare = width - sum(need[i] for i in kept) - 2 * (len(kept) - 1)  # beyond each one's least
    for position, i in enumerate(wrapping):
        more = max(min(widest(i) - need[i], spare // (len(wrapping) - position)), 0)
        need[i] += more
        spare -= more
    table = Table(box=None, pad_edge=False, show_header=header)
    for i in kept:
        column = columns[i]
        table.add_column(column.name, overflow="fold" if column.wrap else "ellipsis", no_wrap=not column.wrap,
                         width=need[i] if column.wrap else None, min_width=None if column.wrap else need[i])
    for row in rows:
        table.add_row(*(row[i] for i in kept))
    return table
