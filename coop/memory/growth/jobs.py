"""The memory jobs that follow a chat turn or an import: embedding, fact extraction, consolidation.

Each job is built from plain values (a user id, the config, the fast model's `complete`, the embedder) and takes
the database connection it runs on, so it can run on the background worker's thread with the worker's own
connection. A job returns a one-line notice for the user (or None); it never prints. `MemoryJobs` holds what
every job needs; `coop.services` builds it with the configured fast model, so the engine never imports litellm.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coop.memory.embedder import Embedder
from coop.memory.growth.consolidate import consolidate
from coop.memory.growth.embedding import embed_pending
from coop.memory.growth.extract import Complete, extract_facts, model_decider
from coop.memory.growth.reconcile import FactWriter
from coop.memory.storage.connection import Database
from coop.memory.storage.items import FactWrite
from coop.memory.storage.store import MemoryStore, UserMemory

if TYPE_CHECKING:
    from coop.config import Config

log = logging.getLogger(__name__)

Job = Callable[[Database], "str | None"]


@dataclass
class MemoryJobs:
    """Builds the fact writer and the background jobs for one configuration."""

    config: "Config"
    complete: Complete | None                   # the fast model, or None when no model is configured
    embedder: Callable[[], Embedder | None]     # called when a job needs it (it may still be loading)
    stopping: threading.Event = field(default_factory=threading.Event)  # set at exit: jobs stop between batches

    def writer(self, memory: UserMemory, embedder: Embedder | None = None) -> FactWriter:
        """The one fact write pipeline, with the fast model as reconciler when there is one."""
        return FactWriter(memory, self.config.memory.extraction,
                          embedder=embedder if embedder is not None else self.embedder(),
                          decide=model_decider(self.complete) if self.complete else None)

    def embedding(self, user_id: str) -> Job:
        embedder = self.embedder()
        batch_size = self.config.memory.embedder.batch_size

        def run(db: Database) -> str | None:
            if embedder is not None:
                embed_pending(_user(db, user_id), embedder, batch_size=batch_size, should_stop=self.stopping.is_set)
            return None

        return run

    def extraction(self, user_id: str, user_text: str, reply: str) -> Job:
        """Facts from one exchange, through the write pipeline. A failure anywhere changes nothing."""
        max_facts = self.config.memory.extraction.max_facts_per_turn
        max_changes = self.config.memory.extraction.max_changes_per_turn

        def run(db: Database) -> str | None:
            if self.complete is None:
                return None
            memory = _user(db, user_id)
            candidates = extract_facts(self.complete, user_text, reply, max_facts)
            writer = self.writer(memory)
            done: list[str] = []
            changes = 0
            for candidate in candidates:
                plan = writer.plan(candidate)
                if plan.action in CHANGES and changes >= max_changes:
                    log.info("extraction: more than %d changes in one exchange; %r was not applied", max_changes,
                             candidate.value)
                    continue
                result = writer.apply(plan)
                if result is None or result.action == "MERGE":
                    continue
                changes += result.action in CHANGES
                done.append(describe_change(memory, result))
            return "memory: " + "; ".join(done) if done else None

        return run

    def consolidation(self, user_id: str, *, session_id: int | None = None, ended: bool = False) -> Job:
        def run(db: Database) -> str | None:
            memory = _user(db, user_id)
            embedder = self.embedder()
            report = consolidate(memory, self.config, self.complete, self.writer(memory, embedder),
                                 session_id=session_id, ended=ended)
            if embedder is not None and report.summaries:
                embed_pending(memory, embedder, kinds=("summary",))
            return report.notice()

        return run

    def end_session(self, user_id: str, session_id: int) -> Job:
        """End a session (after an idle spell) and consolidate it, on the worker's connection."""
        consolidation = self.consolidation(user_id, session_id=session_id, ended=True)

        def run(db: Database) -> str | None:
            _user(db, user_id).end_session(session_id)
            return consolidation(db)

        return run


CHANGES = ("UPDATE", "SUPERSEDE")


def describe_change(memory: UserMemory, result: FactWrite) -> str:
    """One change for the user to see at the next prompt, with how to take it back."""
    text = memory.get("fact", result.fact_id).text
    shown = text if len(text) <= 80 else text[:79] + "…"
    ref = f"f{result.fact_id}"
    what = {"ADD": f"{ref} added", "UPDATE": f"{ref} updated",
            "SUPERSEDE": f"{ref} replaces f{result.previous_id}"}.get(result.action, f"{ref} {result.action.lower()}")
    return f"{what}: “{shown}” (undo: coop memory undo {ref})"


def _user(db: Database, user_id: str) -> UserMemory:
    return MemoryStore(db).user(user_id)
