"""The one extra model question an exchange may cost: which known fact each new fact makes no longer true, asked
only where the table of slots cannot decide (a many-valued topic, or the first value of a slot where a fact of its
category has no key; a known fact of the same category that shares a term with the new one, and the user's words
say something changed or give a new amount).

All such new facts of one exchange go into one request, each with the known facts it may replace as an enum, so
the model can only name one of those, or none. `FactWriter.plan_exchange` takes the answer; a failure, or an
answer that names nothing, keeps both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coop.memory.growth.refusals import refuse
from coop.model.jsonreply import ModelReplyError, Schema, ask, parse_json_reply

if TYPE_CHECKING:
    from coop.memory.storage.items import Item

CHANGES_PROMPT = """You keep a memory of facts about a user. The user has just said something, and NEW facts were \
learned from it. For each new fact, say which KNOWN fact, if any, it makes no longer true: a new value of the same \
thing (a new amount, a new level, a new car, a moved date, a new way of doing it). A new fact about another thing \
replaces nothing: answer null.
Reply with JSON only: {"changes": [{"new": "n1", "replaces": "k1" or null}]}"""


@dataclass(frozen=True)
class Undecided:
    """A new fact and the known facts it may replace."""

    value: str
    known: list["Item"]


# (what the user said, the undecided new facts) -> {index of a new fact: the id of the known fact it replaces}
AskChanges = Callable[[str, Sequence[Undecided]], dict[int, int]]


def changes_request(said: str, undecided: Sequence[Undecided]) -> tuple[list[dict[str, str]], Schema,
                                                                           dict[str, int]]:
    """The messages and schema of the question, and what each known fact's label ("k1") stands for."""
    labels: dict[int, str] = {}
    for entry in undecided:
        for item in entry.known:
            labels.setdefault(item.item_id, f"k{len(labels) + 1}")
    known = {item.item_id: item for entry in undecided for item in entry.known}
    text = (f'THE USER SAID: "{" ".join(said.split())}"\n\nNEW:\n'
            + "\n".join(f"n{i + 1}: {entry.value}" for i, entry in enumerate(undecided))
            + "\n\nKNOWN:\n" + "\n".join(f"{labels[i]}: {known[i].text}" for i in labels))
    change = {"type": "object", "additionalProperties": False, "required": ["new", "replaces"],
              "properties": {"new": {"type": "string", "enum": [f"n{i + 1}" for i in range(len(undecided))]},
                             "replaces": {"type": ["string", "null"], "enum": [*labels.values(), None]}}}
    schema: Schema = {"name": "changes", "schema": {
        "type": "object", "additionalProperties": False, "required": ["changes"],
        "properties": {"changes": {"type": "array", "items": change, "maxItems": len(undecided)}}}}
    return ([{"role": "system", "content": CHANGES_PROMPT}, {"role": "user", "content": text}], schema,
            {label: item_id for item_id, label in labels.items()})


def read_changes(text: str, count: int, labels: dict[str, int]) -> dict[int, int]:
    """{index of a new fact: id of the known fact it replaces}; a label the request did not give is refused."""
    data = parse_json_reply(text)
    rows = data.get("changes") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ModelReplyError("the reply has no list of changes")
    found: dict[int, int] = {}
    for row in rows:
        if not isinstance(row, dict):
            continue
        new, old = str(row.get("new") or ""), row.get("replaces")
        index = int(new[1:]) - 1 if new[:1] == "n" and new[1:].isascii() and new[1:].isdigit() else -1
        if not 0 <= index < count or not isinstance(old, str):
            continue
        if old not in labels:
            refuse("target", "the question's answer names a fact it did not offer")
            continue
        found.setdefault(index, labels[old])
    return found


def model_asker(complete: Callable[..., Any]) -> AskChanges:
    """An `AskChanges` that asks the fast model; its failures propagate (the writer then keeps both)."""

    def ask_changes(said: str, undecided: Sequence[Undecided]) -> dict[int, int]:
        messages, schema, labels = changes_request(said, undecided)
        return read_changes(ask(complete, messages, schema), len(undecided), labels)

    return ask_changes
