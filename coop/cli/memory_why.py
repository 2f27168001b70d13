"""`coop memory why ID`: where a fact came from, so a person can judge whether to trust it; and what a message
taught memory and what memory turned down from it (`why mN`, `why --refused`), so a person can see why a sentence
of theirs changed nothing.

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
from coop.cli.memory import JsonOption, UserOption, app, history_table

if TYPE_CHECKING:
    from coop.memory.storage.interface import UserStore
    from coop.memory.storage.items import HistoryEntry, Item, Provenance, Refusal

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
    item_id: Annotated[str | None, typer.Argument(
        metavar="[ID]", help="a fact id such as f12, or a message id such as m34", show_default=False)] = None,
    refused: Annotated[bool, typer.Option(
        "--refused", help="what memory turned down lately from your messages, and why")] = False,
    user: UserOption = None,
    json_: JsonOption = False,
) -> None:
    """Where a fact came from: the words it quoted, its source messages, what wrote it, and its whole history.
    For a message (m34): what memory learned from it and what it turned down, with the reasons."""
    from coop.cli.refs import typed
    from coop.errors import NotFoundError, UsageError

    if item_id is None:
        if not refused:
            raise UsageError("coop memory why needs an id, or --refused",
                             hint="coop memory why f12 (a fact), coop memory why m34 (a message), "
                                  "or coop memory why --refused")
        _refusals(state(ctx).memory(user), json_)
        return
    memory = state(ctx).memory(user)
    kind, number = typed(memory, item_id)  # through an import's alias, when the id was renumbered
    if kind == "message":
        _message(memory, number, json_)
        return
    if kind != "fact":
        raise UsageError(f"{item_id.strip()} is a {kind}; why takes a fact or a message",
                         hint="give a fact id such as f12 or a message id such as m34 (`coop memory list`)")
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


# What each refusal reason means, in a few words (`coop.memory.growth.refusals`).
REASON_WORDS = {
    "evidence": "not in your own words",
    "mood": "not something you stated",
    "holder": "about someone else",
    "polarity": "the opposite of what you said",
    "instruction": "not an instruction to the assistant",
    "widening": "an instruction that widens what the assistant may do",
    "unsafe": "an instruction to drop a safety behaviour",
    "change": "your words do not say it changed",
    "target": "the model named a fact it was not offered",
    "forgotten": "you forgot it",
    "value": "not a fact",
    "host": "beyond what an MCP host may do",
    "summary": "a summary holding what its conversation does not",
}


def _cited(refusal: Refusal, text: str | None) -> list[str]:
    """The clauses the model pointed at, read from the message (None: the message is gone)."""
    if text is None:
        return []
    return [text[start:end] for start, end in refusal.spans if 0 <= start < end <= len(text)]


def _refusal_json(refusal: Refusal, text: str | None) -> dict[str, Any]:
    return {"reason": refusal.reason, "meaning": REASON_WORDS.get(refusal.reason), "why": refusal.what,
            "category": refusal.category, "source": refusal.source,
            "message": None if refusal.message_id is None else f"m{refusal.message_id}",
            "session_id": refusal.session_id, "at": refusal.created_at, "cited": _cited(refusal, text)}


def _refusal_lines(refusal: Refusal, text: str | None, indent: str) -> list[str]:
    meaning = REASON_WORDS.get(refusal.reason, refusal.reason)  # [reason] as coop.log names it
    lines = [f"{indent}[{refusal.reason}] {refusal.category or 'a fact'}: {meaning} ({refusal.what})"]
    lines += [f"{indent}  cited: “{output.one_line(words, 200)}”" for words in _cited(refusal, text)]
    return lines


def _message(memory: UserStore, number: int, json_: bool) -> None:
    """`why mN`: the message, the facts learned from it, and the proposals turned down, with their reasons."""
    item = memory.get("message", number)  # a forgotten message is gone: not found
    learned = memory.sources.facts_from_messages([number]).get(number, [])
    refusals = memory.refusals.of_message(number)
    if json_:
        output.print_json({**output.item_json(item), "learned": [output.item_json(f) for f in learned],
                           "refused": [_refusal_json(r, item.text) for r in refusals]})
        return
    where = f"session {item.session_id}" if item.session_id is not None else "no session"
    lines = [f"{item.ref}, {output.local_time(item.created_at)}, {where}, {item.role}",
             f"  {output.one_line(item.text, 300)}", ""]
    lines += ["learned from it:"] + [f"  {f.ref}: {output.one_line(f.text, 120)}" for f in learned] if learned \
        else ["learned from it: nothing"]
    if refusals:
        lines += ["", f"turned down ({len(refusals)}):"]
        for refusal in refusals:
            lines += _refusal_lines(refusal, item.text, "  ")
    elif item.role == "user":
        lines += ["turned down: nothing (the model proposed nothing more, or it was not asked yet)"]
    _print_lines(lines)


def _refusals(memory: UserStore, json_: bool) -> None:
    """`why --refused`: the newest refusals, with the message each came from, and the counts by reason."""
    from coop.memory.storage.items import REFUSALS_KEPT

    recent = memory.refusals.recent(20)
    texts = memory.get_many("message", {r.message_id for r in recent if r.message_id is not None})

    def text_of(refusal: Refusal) -> str | None:
        found = texts.get(refusal.message_id) if refusal.message_id is not None else None
        return None if found is None else found.text

    counts = memory.refusals.counts()
    if json_:
        output.print_json({"counts": counts, "recent": [_refusal_json(r, text_of(r)) for r in recent]})
        return
    if not recent:
        _print_lines(["memory has turned down nothing from your messages yet"])
        return
    lines = ["turned down: " + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))
             + f" (the newest {REFUSALS_KEPT:,} are kept)", ""]
    for refusal in recent:
        where = f"m{refusal.message_id}" if refusal.message_id is not None else \
            (f"session {refusal.session_id}" if refusal.session_id is not None else "-")
        lines.append(f"{where}, {output.local_time(refusal.created_at)}, {refusal.source}")
        lines += _refusal_lines(refusal, text_of(refusal), "  ")
    lines += ["", "coop memory why mN shows what one message taught memory and what it turned down"]
    _print_lines(lines)


def _print_lines(lines: list[str]) -> None:
    console = output.out()
    for text in lines:
        console.print(output.printable(text), markup=False, highlight=False)
