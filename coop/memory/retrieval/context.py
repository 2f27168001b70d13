"""Builds the prompt of a turn from memory, within a token budget.

Order (DESIGN.md): system preamble -> "Known about the user" facts -> relevant past (dated, with session) ->
recent history -> the new message. Recalled memory (facts and past) gets `memory_budget_fraction` of
`context_budget`; facts are placed first, since they are short and durable; past items follow by score. Whatever
does not fit is left out whole (a past message may be shortened, a fact never is). Recent history takes what is
left of the budget, newest first, and the session's first user message (the anchor) is kept when it fits.

Token counts are estimates (about four characters a token): the budget is a guard against overflowing the model's
window and crowding out the conversation, not an exact accounting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from coop.memory.retrieval.search import LegScore
from coop.memory.storage.items import Item
from coop.memory.text import estimate_tokens

PAST_ITEM_MAX_CHARS = 700


@dataclass(frozen=True)
class Recalled:
    """One memory item chosen for the prompt, with the leg(s) that chose it."""

    item: Item
    reason: str  # "instruction" | "salience" | "relevance"
    score: float = 0.0
    legs: dict[str, LegScore] = field(default_factory=dict)


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


def fact_line(item: Item) -> str:
    return f"- {item.text}"


def past_line(item: Item) -> str:
    text = " ".join(item.text.split())
    if len(text) > PAST_ITEM_MAX_CHARS:
        text = text[: PAST_ITEM_MAX_CHARS - 1] + "…"
    where = f", session {item.session_id}" if item.session_id else ""
    if item.kind == "summary":
        return f"- [{_date(item.created_at)}{where}] summary: {text}"
    return f"- [{_date(item.created_at)}{where}] {item.role or 'message'}: {text}"


def build_prompt(*, preamble: str, instructions: Sequence[Item] = (), facts: Sequence[Recalled] = (),
                 past: Sequence[Recalled] = (), history: Sequence[HistoryMessage] = (),
                 anchor: HistoryMessage | None = None, new_message: str, context_budget: int,
                 memory_fraction: float, salience_share: float = 1.0) -> Prompt:
    """The prompt. Past items recalled by salience (not asked for by this turn) take at most `salience_share`
    of the memory budget, so they never crowd out what the turn is about."""
    memory_budget = int(context_budget * memory_fraction)
    salience_budget = int(memory_budget * salience_share)
    used_memory = used_salience = 0
    recalled: list[Recalled] = []
    left_out: list[Recalled] = []
    fact_lines: list[str] = []
    for entry in facts:
        line = fact_line(entry.item)
        cost = estimate_tokens(line)
        if used_memory + cost <= memory_budget:
            fact_lines.append(line)
            recalled.append(entry)
            used_memory += cost
        else:
            left_out.append(entry)
    past_lines: list[str] = []
    for entry in past:
        line = past_line(entry.item)
        cost = estimate_tokens(line)
        salient = entry.reason == "salience"
        if used_memory + cost <= memory_budget and (not salient or used_salience + cost <= salience_budget):
            past_lines.append(line)
            recalled.append(entry)
            used_memory += cost
            used_salience += cost if salient else 0
        else:
            left_out.append(entry)

    sections = [preamble.strip()]
    if instructions:
        sections.append("Standing instructions from the user (always follow them):\n"
                        + "\n".join(f"- {i.text}" for i in instructions))
    if fact_lines:
        sections.append("Known about the user:\n" + "\n".join(fact_lines))
    if past_lines:
        sections.append("Relevant past conversation (from memory, dated; it may be out of date):\n"
                        + "\n".join(past_lines))
    system = "\n\n".join(sections)

    system_tokens = estimate_tokens(system)
    new_tokens = estimate_tokens(new_message)
    history_budget = max(0, context_budget - system_tokens - new_tokens)
    chosen: list[HistoryMessage] = []
    used_history = 0
    for message in reversed(history):
        cost = estimate_tokens(message.content) + 4
        if used_history + cost > history_budget:
            break
        chosen.append(message)
        used_history += cost
    chosen.reverse()
    # A tool result must follow the assistant message that asked for it: drop orphans at the cut.
    while chosen and chosen[0].role == "tool":
        used_history -= estimate_tokens(chosen[0].content) + 4
        chosen.pop(0)
    if anchor is not None and anchor not in chosen:
        cost = estimate_tokens(anchor.content) + 4
        if used_history + cost <= history_budget:
            chosen.insert(0, anchor)
            used_history += cost

    messages = [{"role": "system", "content": system}] + [m.as_chat() for m in chosen]
    messages.append({"role": "user", "content": new_message})
    tokens = {"system": system_tokens, "memory": used_memory, "history": used_history, "new_message": new_tokens,
              "total": system_tokens + used_history + new_tokens, "memory_budget": memory_budget,
              "context_budget": context_budget}
    return Prompt(messages, recalled, left_out, tokens)
