"""Builds the prompt of a turn from memory, within a token budget.

Order (DESIGN.md): system preamble with standing instructions -> "Known about the user" facts (id, since when: the
facts the turn asked for, then the profile within `profile_share` of the memory budget) -> earlier values, marked
former, when the turn asks about the past ->
where the previous conversation left off (a session's first turn) -> relevant past (dated, with session) ->
history -> the new message. History is chosen first, newest first, from what the budget leaves beside the memory
budget (`memory_budget_fraction` of `context_budget`; on a conversation's first message, more for what the turn
asked for: `turn.memory_shares`), and reaches further back into whatever memory leaves
unused; the session's first user message (the anchor) keeps its room when it fits. In the memory budget, facts come
first (short and durable), then past items by score; whatever does not fit is left out whole (a past message may
be shortened, a fact never is), and a past message the history shows is not recalled again. The past items chosen
are shown newest first.

Token counts are estimates (about four characters a token): the budget is a guard against overflowing the model's
window and crowding out the conversation, not an exact accounting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from coop.memory.kinds import HOST
from coop.memory.retrieval.search import LegScore
from coop.memory.storage.items import Item
from coop.memory.text import estimate_tokens, shorten

PAST_ITEM_MAX_CHARS = 700
MIN_LINE_TOKENS = 8  # no fact line is shorter (its id and date)


@dataclass(frozen=True)
class Recalled:
    """One memory item chosen for the prompt, with the leg(s) that chose it."""

    item: Item
    reason: str  # "profile" | "relevance" | "salience" | "continuity" | "history" (a former value)
    score: float = 0.0
    legs: dict[str, LegScore] = field(default_factory=dict)
    note: str = ""  # shown beside it: "newer than f3"


@dataclass(frozen=True)
class HistoryMessage:
    role: str
    content: str
    message_id: int | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    name: str | None = None

    def as_chat(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = self.tool_calls
        if self.tool_call_id:
            data["tool_call_id"] = self.tool_call_id
        if self.name and self.role == "tool":
            data["name"] = self.name
        return data


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, Any]]
    recalled: list[Recalled]           # what made it into the prompt
    left_out: list[Recalled]           # recalled but over the budget
    tokens: dict[str, int]


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d")


_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|me|my|mine|myself)\b|^(I|me|my)\b", re.IGNORECASE)


def fact_line(entry: Recalled) -> str:
    """A fact as the model reads it: its id (for the memory tools), since when it holds, and the fact in the
    third person. What the user typed in the first person (/remember I am allergic to peanuts) is quoted as
    theirs, so it is never read as the assistant speaking about itself; what an MCP host wrote is quoted as the
    host's, never as the user's."""
    item = entry.item
    when = f"since {_date(item.created_at)}" + (f", {entry.note}" if entry.note else "")
    text = " ".join(item.text.split())
    if item.source == HOST:
        text = f"another assistant (an MCP host) noted “{text}”"
    elif _FIRST_PERSON.search(text):
        text = f"the user said “{text}”"
    return f"- {item.ref} ({when}): {text}"


def explain(entry: Recalled) -> str:
    """Why an item is in the prompt, in words, for `/memory`, `coop memory recall` and MCP `memory_context`."""
    item = entry.item
    if entry.reason == "profile":
        why = f"profile: {item.category or 'general'}, importance {item.importance or 0:.2f}"
    elif entry.reason == "history":
        why = "a former value: the turn asks about the past"
    elif entry.reason == "continuity":
        why = "where the previous session left off"
    elif entry.reason == "salience":
        why = "salient: you asked to keep it, or corrected something"
    elif entry.legs:
        why = "relevant: found " + found_by(entry.legs)
    else:
        why = f"relevant: near in meaning (cosine {entry.score:.2f})"
    return f"{why}; {entry.note}" if entry.note else why


# Each search leg as a person reads it.
LEG_WORDS = {"vector": "by meaning", "fts": "by its words"}


def found_by(legs: dict[str, LegScore]) -> str:
    """Which searches found an item and at what place, in words: "by meaning #2 (cosine 0.71), by its words #1".
    The cosine says how near in meaning; BM25's own number means nothing to a reader, so the words' leg says its
    place only."""
    parts = [f"{LEG_WORDS.get(leg, leg)} #{score.rank}" + (f" (cosine {score.score:.2f})" if leg == "vector" else "")
             for leg, score in legs.items()]
    return ", ".join(parts) if parts else "-"


def past_line(entry: Recalled) -> str:
    """A past item, dated, on one line; one with code keeps its lines (code flattened onto one line is no code)."""
    item = entry.item
    text = item.text.strip() if "```" in item.text else " ".join(item.text.split())
    text = shorten(text, PAST_ITEM_MAX_CHARS)
    if "\n" in text:
        text = "\n" + text + ("\n```" if text.count("```") % 2 else "")  # a cut block is closed
    where = f", session {item.session_id}" if item.session_id else ""
    note = f" ({entry.note})" if entry.note else ""
    if item.kind == "summary":
        return f"- [{_date(item.created_at)}{where}] summary{note}: {text}"
    return f"- [{_date(item.created_at)}{where}] {item.role or 'message'}{note}: {text}"


def _history(history: Sequence[HistoryMessage], anchor: HistoryMessage | None,
             budget: int) -> list[HistoryMessage]:
    """The newest messages that fit `budget`, whole, in order, and the session's first user message (the anchor)
    whenever it fits the budget at all: its room is kept before the newest messages fill the rest, so a long
    session keeps what it set out to do. Never a tool result without the call before it."""
    newest = _newest(history, budget)
    if anchor is None or anchor in newest:
        return newest
    cost = estimate_tokens(anchor.content) + 4
    if cost > budget:
        return newest
    return [anchor] + _newest(history, budget - cost)  # not among the newest at the full budget: not here


def _newest(history: Sequence[HistoryMessage], budget: int) -> list[HistoryMessage]:
    """The newest messages that fit `budget`, whole, in order, not starting with a tool result."""
    chosen: list[HistoryMessage] = []
    used = 0
    for message in reversed(history):
        cost = estimate_tokens(message.content) + 4
        if used + cost > budget:
            break
        chosen.append(message)
        used += cost
    chosen.reverse()
    while chosen and chosen[0].role == "tool":  # a tool result must follow the assistant message that asked
        chosen.pop(0)
    return chosen


def _newest_first(lines: list[str], entries: list[Recalled]) -> list[str]:
    """The past lines chosen by score, shown newest first: what holds now is read before what it replaced (an
    item marked "newer than X" is before X), and a question about a date finds the dated lines in time order."""
    order = sorted(range(len(entries)), key=lambda j: -(entries[j].item.created_at or 0.0))
    return [lines[j] for j in order]


def _cost(messages: Sequence[HistoryMessage]) -> int:
    return sum(estimate_tokens(m.content) + 4 for m in messages)


def build_prompt(*, preamble: str, instructions: Sequence[Item] = (), facts: Sequence[Recalled] = (),
                 past: Sequence[Recalled] = (), previous: Sequence[Recalled] = (),
                 history: Sequence[HistoryMessage] = (), anchor: HistoryMessage | None = None, new_message: str,
                 context_budget: int, memory_fraction: float, salience_share: float = 1.0,
                 profile: Sequence[Recalled] = (), profile_share: float = 1.0,
                 former: Sequence[Recalled] = ()) -> Prompt:
    """The prompt. History is chosen first, from what the budget leaves beside the memory budget, and a past
    message it already shows is not recalled again; if recalled memory uses less than its budget, history
    reaches further back into the rest. Past items recalled by salience (not asked for by this turn) take at
    most `salience_share` of the memory budget, so they never crowd out what the turn is about. `previous` (the
    session before this one, on its first turn) comes out of the memory budget first."""
    memory_budget = int(context_budget * memory_fraction)
    salience_budget = int(memory_budget * salience_share)
    head = [preamble.strip()]
    if instructions:
        head.append("Standing instructions from the user (always follow them):\n"
                    + "\n".join(f"- {i.text}" for i in instructions))
    new_tokens = estimate_tokens(new_message)
    fixed = estimate_tokens("\n\n".join(head)) + new_tokens
    chosen = _history(history, anchor, max(0, context_budget - fixed - memory_budget))
    in_history = {m.message_id for m in chosen if m.message_id is not None}

    profile_budget = int(memory_budget * profile_share)
    used_memory = used_salience = used_profile = 0
    recalled: list[Recalled] = []
    left_out: list[Recalled] = []
    lines: dict[str, list[str]] = {"previous": [], "profile": [], "facts": [], "former": [], "past": []}
    # the profile's share is spent before what the turn brings (it is the part no question's words can find);
    # the facts the turn asked for are still shown first
    for section, entries, render in (("previous", previous, past_line), ("profile", profile, fact_line),
                                     ("facts", facts, fact_line), ("former", former, fact_line),
                                     ("past", past, past_line)):
        for entry in entries:
            if entry.item.kind == "message" and entry.item.item_id in in_history:
                continue
            if entry.reason == "profile" and profile_budget - used_profile < MIN_LINE_TOKENS:
                left_out.append(entry)  # the profile is full: not rendered (a memory may hold thousands)
                continue
            line = render(entry)
            cost = estimate_tokens(line)
            salient = entry.reason == "salience" and section == "past"
            in_profile = entry.reason == "profile"
            if used_memory + cost <= memory_budget and (not salient or used_salience + cost <= salience_budget) \
                    and (not in_profile or used_profile + cost <= profile_budget):
                lines[section].append(line)
                recalled.append(entry)
                used_memory += cost
                used_salience += cost if salient else 0
                used_profile += cost if in_profile else 0
            else:
                left_out.append(entry)

    past_entries = {id(entry) for entry in past}
    lines["past"] = _newest_first(lines["past"], [r for r in recalled if id(r) in past_entries])
    sections = list(head)
    if lines["facts"] or lines["profile"]:
        sections.append("Known about the user (id, since when):\n"
                        + "\n".join(lines["facts"] + lines["profile"]))
    if lines["former"]:
        sections.append("Earlier values (former: no longer true, for questions about the past):\n"
                        + "\n".join(lines["former"]))
    if lines["previous"]:
        sections.append("Where the previous conversation left off:\n" + "\n".join(lines["previous"]))
    if lines["past"]:
        sections.append("Relevant past conversation (from memory, dated; it may be out of date):\n"
                        + "\n".join(lines["past"]))
    system = "\n\n".join(sections)
    system_tokens = estimate_tokens(system)
    room = max(0, context_budget - system_tokens - new_tokens)
    if room > _cost(chosen) and len(chosen) < len(history):  # memory left room: reach further back
        shown = {r.item.item_id for r in recalled if r.item.kind == "message"}
        cut = next((k for k in range(len(history) - 1, -1, -1) if history[k].message_id in shown), -1)
        chosen = _history(history[cut + 1:], anchor, room)
    used_history = _cost(chosen)

    messages = [{"role": "system", "content": system}] + [m.as_chat() for m in chosen]
    messages.append({"role": "user", "content": new_message})
    tokens = {"system": system_tokens, "memory": used_memory, "history": used_history, "new_message": new_tokens,
              "total": system_tokens + used_history + new_tokens, "memory_budget": memory_budget,
              "context_budget": context_budget}
    return Prompt(messages, recalled, left_out, tokens)
