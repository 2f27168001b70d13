"""The memory tools over one user's memory, called with typed, checked arguments (registry.py): what the chat's
model and an MCP host's model both run. Results are plain data; a call the model can correct raises
`ToolArgumentError`, what the memory refuses a `CoopError`, and each front end says them in its own way.

A write is two steps, `plan_remember` and `apply`, so the chat can ask its user between them (`change_question`)
and MCP need not. Every stretch of database work runs inside `guard.database()`; the embedder is loaded and the
query or fact embedded before it (guard.py), so the MCP server's lock is never held through a slow model.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coop.memory.kinds import INSTRUCTION, parse_ref
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.text import iso_time, shorten
from coop.memory.tools.guard import NO_GUARD, Guard, Prepared
from coop.memory.tools.registry import MAX_GET_CHARS, MAX_ITEM_CHARS, MAX_RESULT_CHARS, ToolArgumentError

if TYPE_CHECKING:
    from coop.config.sections import MemoryConfig
    from coop.memory.embedder import Embedder
    from coop.memory.growth.forgetting import Forgotten
    from coop.memory.growth.reconcile import FactWriter, Plan
    from coop.memory.retrieval.turn import TurnContext
    from coop.memory.storage.interface import UserStore
    from coop.memory.storage.items import Item

MAX_PROFILE_FACTS = 200
NOT_STORED = "not stored (the user forgot this, or it is not allowed as an instruction)"


class NotStored(Exception):
    """The write pipeline skipped the fact: the result the model reads is `NOT_STORED`."""


@dataclass
class PendingWrite:
    """A fact's plan, and the writer (with this call's prepared embedder) that carries it out."""

    plan: "Plan"
    writer: "FactWriter"


@dataclass
class MemoryToolbox:
    """The tools' behaviour for one user. `writer` makes the one fact write pipeline; `write_source` is who a
    write comes from: "model" in chat (the model's own call, which the user confirms), "user" over MCP (the host
    asked its user before the call)."""

    memory: "UserStore"
    embedder: Callable[[], "Embedder | None"]
    writer: Callable[[], "FactWriter"]
    settings: RetrievalSettings = field(default_factory=RetrievalSettings.defaults)
    write_source: str = "model"
    guard: Guard = NO_GUARD

    # -- reading ----------------------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 8, kind: str | None = None) -> dict[str, Any]:
        from coop.memory.retrieval.search import search_or_full_text

        embedder = self._prepared(queries=[query])
        with self.guard.database():
            result, _ = search_or_full_text(self.memory, query, embedder=embedder, limit=limit,
                                            kinds=(kind,) if kind else ("fact", "message", "summary"),
                                            settings=self.settings)
        return {"results": [{**item_result(hit.item), "score": round(hit.score, 4)} for hit in result.hits]}

    def get(self, id: str) -> dict[str, Any]:
        kind, number = parse_ref(id)
        with self.guard.database():
            found = self.memory.aliases.resolve(kind, number)  # an id another store gave it: an import's alias
            item = self.memory.get(found.kind, found.item_id)
        return {**item_result(item), "text": clip(item.text, MAX_GET_CHARS), **_noted(found.note)}

    def timeline(self, id: str, before: int = 3, after: int = 3) -> dict[str, Any]:
        kind, number = parse_ref(id)
        if kind != "message":
            raise ToolArgumentError("memory_timeline takes a message id (m...)")
        with self.guard.database():
            found = self.memory.aliases.resolve(kind, number)
            items = self.memory.messages.around(found.item_id, before=before, after=after)
        return {"results": [item_result(item) for item in items], **_noted(found.note)}

    def context(self, question: str, cfg: "MemoryConfig") -> "TurnContext":
        """What a turn with `question` would recall now (the chat's own recall: coop/memory/retrieval/turn.py)."""
        from coop.memory.retrieval.turn import turn_context

        if not question.strip():
            raise ToolArgumentError("question must be non-empty text")
        embedder = self._prepared(queries=[question])
        with self.guard.database():
            return turn_context(self.memory, question, cfg=cfg, embedder=embedder, settings=self.settings)

    def profile_lines(self) -> tuple[list[str], list[str]]:
        """Standing instructions, and the profile as the chat's prompt chooses it (coop/memory/retrieval/
        profile.py: best first, marked when it may be out of date), each with its id and since when."""
        from coop.memory.retrieval import profile
        from coop.memory.retrieval.context import Recalled, fact_line

        with self.guard.database():
            rules = self.memory.facts.active(INSTRUCTION, limit=MAX_PROFILE_FACTS, newest_first=True)
            chosen, _ = profile.best(self.memory, {}, time.time(), pool=MAX_PROFILE_FACTS)
            marks = profile.out_of_date(self.memory, [r.item for r in chosen])
        instructions = [fact_line(Recalled(f, "profile")) for f in rules]
        known = [fact_line(Recalled(r.item, "profile", note=marks.get(r.item.item_id, ""))) for r in chosen]
        return instructions, known

    def profile(self) -> dict[str, Any]:
        """The profile as a tool result: the facts cut from the end to fit `MAX_RESULT_CHARS`."""
        instructions, known = self.profile_lines()
        payload: dict[str, Any] = {"user": self.memory.user_id, "instructions": instructions, "facts": known}
        while len(json.dumps(payload, ensure_ascii=False)) > MAX_RESULT_CHARS and payload["facts"]:
            payload["facts"] = payload["facts"][:-1]
            payload["truncated"] = True
        return payload

    def profile_text(self) -> str:
        instructions, known = self.profile_lines()
        parts = [f"# What coop knows about {self.memory.user_id}"]
        if instructions:
            parts += ["", "Standing instructions:", *instructions]
        parts += ["", "Known about the user (id, since when):", *(known or ["- nothing yet"])]
        return "\n".join(parts) + "\n"

    # -- writing ----------------------------------------------------------------------------------------------

    def plan_remember(self, text: str, category: str | None = None, key: str | None = None) -> PendingWrite:
        """What the write pipeline would do with the fact (`NotStored` when it would not store it). The fact is
        embedded first (outside the guard); the table of slots decides, with no model question."""
        from coop.memory.growth.reconcile import Candidate

        if not text.strip():
            raise ToolArgumentError("text is empty")
        candidate = Candidate(text, category=category or "general", key=key or None, importance=0.7,
                              source=self.write_source)
        writer = copy.copy(self.writer())  # its own copy: the prepared embedder is this call's alone
        if writer.embedder is not None:
            writer.embedder = Prepared(writer.embedder, texts=[" ".join(text.split())])
        with self.guard.database():
            plan = writer.plan(candidate)
        if plan.action == "SKIP":
            raise NotStored(plan.reason)
        return PendingWrite(plan, writer)

    def change_question(self, pending: PendingWrite) -> str:
        """What the user is asked before the plan is carried out; "" for a mention of a known fact, which changes
        nothing. Nothing the model says about the user is kept on its word alone ("Has a criminal record"): a new
        fact, a change and an instruction all need the user's yes, given to the whole text (never cut)."""
        plan = pending.plan
        if plan.action in ("UPDATE", "SUPERSEDE") and plan.target_id is not None:
            with self.guard.database():
                old = self.memory.get("fact", plan.target_id)
            verb = "rewrite" if plan.action == "UPDATE" else "replace"
            return f"{verb} {old.ref} {quote(old.text)} with {quote(plan.candidate.value)}"
        if plan.action == "MERGE":
            return ""
        if plan.candidate.category == INSTRUCTION:
            return f"add a standing instruction {quote(plan.candidate.value)}"
        return f"remember {quote(plan.candidate.value)}"

    def apply(self, pending: PendingWrite) -> dict[str, Any]:
        """Carry out a plan from `plan_remember` (one transaction)."""
        with self.guard.database():
            result = pending.writer.apply(pending.plan)
        if result is None:
            raise NotStored(pending.plan.reason)
        return {"id": f"f{result.fact_id}", "action": result.action}

    def remember(self, text: str, category: str | None = None, key: str | None = None) -> dict[str, Any]:
        return self.apply(self.plan_remember(text, category, key))

    def forget_target(self, id: str) -> "Item":
        kind, number = parse_ref(id)
        with self.guard.database():
            found = self.memory.aliases.resolve(kind, number)  # the result names the item by its id here
            return self.memory.get(found.kind, found.item_id)

    def forget(self, item: "Item", why: str, reason: str | None = None) -> "Forgotten":
        """Forget the item (a fact with the messages and summaries that said it), `why` and the model's reason
        recorded in its history."""
        from coop.memory.growth.forgetting import forget_with_traces

        reason = " ".join((reason or "").split())[:200]
        with self.guard.database():
            return forget_with_traces(self.memory, item.kind, item.item_id,
                                      reason=why + (f": {reason}" if reason else ""))

    def _prepared(self, *, queries: list[str]) -> "Embedder | None":
        embedder = self.embedder()  # loading it (seconds, the first time) happens here, outside the guard
        return None if embedder is None else Prepared(embedder, queries=queries)


def clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    return shorten(text, limit)


def quote(text: str) -> str:
    """`text` on one line, in quotes, whole: a question about a change shows all of what would be stored (an
    instruction's dangerous end is often its last words); the terminal wraps it."""
    return '"' + " ".join(text.split()) + '"'


def _noted(note: str | None) -> dict[str, str]:
    """A result's `note` when the id asked for was read through an import's alias (`storage/aliases.py`)."""
    return {"note": note} if note else {}


def item_result(item: "Item") -> dict[str, Any]:
    """An item as a tool result: id, kind, text (clipped), date; the role and session of a message, the category
    and key of a fact."""
    data: dict[str, Any] = {"id": item.ref, "kind": item.kind, "text": clip(item.text),
                            "created_at": iso_time(item.created_at)}
    if item.kind == "message":
        data.update(role=item.role, session_id=item.session_id)
    if item.kind == "fact":
        data.update(category=item.category, key=item.key)
    return data


def bounded(payload: Any) -> str:
    """`payload` as JSON of at most `MAX_RESULT_CHARS`: a list of results loses its last entries (marked
    truncated); anything else too large is an error result."""
    text = json.dumps(payload, ensure_ascii=False)
    if len(text) <= MAX_RESULT_CHARS:
        return text
    if isinstance(payload, dict) and isinstance(payload.get("results"), list):
        results = list(payload["results"])
        while results and len(json.dumps({**payload, "results": results}, ensure_ascii=False)) > MAX_RESULT_CHARS:
            results.pop()
        return json.dumps({**payload, "results": results, "truncated": True}, ensure_ascii=False)
    return json.dumps({"error": "result too large"})
