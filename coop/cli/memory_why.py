"""`coop memory why ID`: where a fact came from, so a person can judge whether to trust it.

A fact is only as good as what it rests on: the user's words it quoted, the messages they were in (when, in which
session, typed into coop or recorded by an MCP host), the part of coop that wrote it (extraction, consolidation,
the assistant's tool, the user's own `add`, an import) and every change since, including what it replaced and
what replaced it. Registered on the `coop memory` app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import JsonOption, UserOption, app, fact_ref, history_table

if TYPE_CHECKING:
    from coop.memory.storage.items import HistoryEntry, Item, Provenance

# Who wrote a fact, by its `source`, in words.
SOURCE_WORDS = {
    "user": "you (`coop memory add`, /remember or `coop memory edit`)",
    "model": "the assistant, with its memory tool",
    "extraction": "extracted from a conversation",
    "consolidation": "found when a conversation was summarised",
    "import": "imported",
    "host": "extracted from a conversation an MCP host recorded",
}
HOST_WORDS = "recorded by an MCP host"


@app.command()
def why(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="a fact id such as f12")],
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Where a fact came from: the words it quoted, its source messages, what wrote it, and its whole history."""
    from coop.errors import NotFoundError

    number = fact_ref(item_id, "why")
    memory = state(ctx).memory(user)
    item = memory.get("fact", number)  # a forgotten fact is gone: not found
    sources = memory.sources.provenance(number)
    replaced = memory.facts.replaced(number)
    try:
        entries = memory.facts.history(number)
    except NotFoundError:  # a fact restored without its history
        entries = []
    added = next((entry for entry in entries if entry.action == "ADD"), None)
    if json_:
        output.print_json(_why_json(item, sources, replaced, entries, added))
        return
    _print_why(item, sources, replaced, entries, added)


def _why_json(item: Item, sources: list[Provenance], replaced: list[Item], entries: list[HistoryEntry],
              added: HistoryEntry | None) -> dict[str, Any]:
    return {**output.item_json(item), "added_by": None if added is None else added.reason,
            "supersedes": [fact.ref for fact in replaced], "sources": [output.source_json(s) for s in sources],
            "history": [output.history_json(entry) for entry in entries]}


def _print_why(item: Item, sources: list[Provenance], replaced: list[Item], entries: list[HistoryEntry],
               added: HistoryEntry | None) -> None:
    console = output.out()

    def line(text: str) -> None:
        console.print(output.printable(text), markup=False, highlight=False)

    line(f"{item.ref}: {item.text}")
    slot = (item.category or "general") + (f"/{item.key}" if item.key else "")
    line(f"{slot}, importance {item.importance or 0:.2f}, mentioned {item.mention_count or 1} "
         f"time{'' if item.mention_count == 1 else 's'}")
    line(f"written by: {SOURCE_WORDS.get(item.source or '', item.source or 'unknown')}")
    if added is not None:
        line(f"added {output.local_time(added.created_at)}" + (f": {added.reason}" if added.reason else ""))
    for fact in replaced:
        line(f"supersedes {fact.ref}: {output.one_line(fact.text, 120)}")
    if item.superseded_at is not None:
        by = f" by f{item.superseded_by}" if item.superseded_by else ""
        line(f"superseded{by} {output.local_time(item.superseded_at)}: no longer current")
    if item.archived_at is not None:
        line(f"archived {output.local_time(item.archived_at)}: no longer recalled")
    console.print()
    if not sources:
        line("source messages: none" + ("" if item.source == "user" else " (never linked, or forgotten since)"))
    else:
        line("source messages:")
    for source in sources:
        where = f"session {source.session_id}" if source.session_id is not None else "no session"
        host = f", {HOST_WORDS}" if source.origin == "host" else ""
        line(f"  m{source.message_id}, {output.local_time(source.created_at)}, {where}, {source.role}{host}")
        if source.quote:
            line(f"    quoted: “{output.one_line(source.quote, 300)}”")
        line(f"    message: {output.one_line(source.text, 300)}")
    if entries:
        console.print()
        line("history:")
        console.print(history_table(entries))
