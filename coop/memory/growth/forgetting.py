"""Forgetting a fact so that the model never sees it again.

A fact is rarely stored once: the user's message said it, the reply may have echoed it, a summary restates it,
and a memory tool's result quoted it. Forgetting only the fact row would leave all of those to be recalled
("What does my sister do?" still finds the dentist). So forgetting a fact forgets its traces with it, for good:
- the messages it was extracted from (the `fact_sources` links),
- the messages (the user's, the assistant's, tool results) and summaries that state it (`words.states`:
  three quarters of its content words, every name and number);
- a forgotten summary's span is summarised again from what is left, so the rest of that conversation is kept.
The fact's neighbours in a conversation stay. `forget_fact_traces` returns what it removed, so `coop memory
forget` and the model's tool can say so; `traces` lists them without removing anything (for a preview).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from coop.memory.storage.interface import UserStore
from coop.memory.storage.items import Item
from coop.memory.text import plural
from coop.memory.words import content_words, states

_PLACES = {"fact": "facts", "message": "messages", "summary": "summaries"}


@dataclass
class Forgotten:
    """What one forget removed: the item asked for, the traces that went with it, and how much went from each place
    in the database (`cleaned`: facts, messages, summaries, vectors, session titles), for the receipt."""

    item: Item
    traces: list[Item] = field(default_factory=list)
    cleaned: Counter[str] = field(default_factory=Counter)

    def describe(self) -> str:
        if not self.traces:
            return f"forgot {self.item.ref}"
        listed = ", ".join(t.ref for t in self.traces[:12]) + (" …" if len(self.traces) > 12 else "")
        return f"forgot {self.item.ref} and {plural(len(self.traces), 'item')} that said it: {listed}"

    @property
    def texts(self) -> list[str]:
        return [self.item.text, *(t.text for t in self.traces)]


def receipt(gone: list[Forgotten], files: dict[str, int]) -> list[str]:
    """The places a forget cleaned, one line each: what `coop memory forget` prints after its summary line."""
    total: Counter[str] = Counter()
    for one in gone:
        total.update(one.cleaned)
    rows = [f"{place} {n}" for place, n in sorted(total.items()) if n]
    return ["cleaned: " + ", ".join(rows + [f"{place} {n}" for place, n in files.items()]),
            "with them: their full-text index entries (merged), their fact history text (a FORGET row stays), the "
            "database file and its WAL (freed pages zeroed, WAL checkpointed); the record of the forget keeps a "
            "keyed hash only; exports made from now on hold none of it (export files made before are yours to "
            "delete)"]


def traces(memory: UserStore, fact: Item) -> list[Item]:
    """The messages and summaries that carry a fact: its sources, and whatever states it. Oldest first."""
    found: dict[tuple[str, int], Item] = {}
    sources = memory.sources.of_facts([fact.item_id]).get(fact.item_id, set())
    for message_id, item in memory.get_many("message", sources).items():
        found[("message", message_id)] = item
    words = sorted(content_words(fact.text), key=len, reverse=True)
    if words:
        for kind in ("message", "summary"):
            for item in memory.items_mentioning(words[0], kind):
                if (kind, item.item_id) not in found and states(item.text, fact.text):
                    found[(kind, item.item_id)] = item
    return sorted(found.values(), key=lambda i: (i.created_at, i.kind, i.item_id))


def forget_with_traces(memory: UserStore, kind: str, item_id: int, *, reason: str,
                       keep_traces: bool = False) -> Forgotten:
    """Forget one item; a fact takes its traces with it (unless `keep_traces`)."""
    item = memory.get(kind, item_id)
    gone = Forgotten(item, traces(memory, item) if kind == "fact" and not keep_traces else [])
    with memory.transaction():
        for trace in gone.traces:
            span = memory.summaries.span(trace.item_id) if trace.kind == "summary" else None
            gone.cleaned.update(memory.forget(trace.kind, trace.item_id, reason=f"{reason} (it stated {item.ref})"))
            gone.cleaned[_PLACES[trace.kind]] += 1
            if span is not None:
                memory.messages.unmark_consolidated(trace.session_id, *span)
        gone.cleaned.update(memory.forget(kind, item_id, reason=reason))
        gone.cleaned[_PLACES[kind]] += 1
    memory.checkpoint()  # (each forget's own checkpoint waited for this transaction)
    return gone
