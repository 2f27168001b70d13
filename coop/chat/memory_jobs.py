"""Binds the memory engine to the model: the fast model's `complete`, the fact writer, and the background jobs
(embedding, extraction, consolidation) that run on the worker's own connection.

The engine (`coop.memory`) takes a `complete(messages) -> text` callable and never imports litellm; this module
supplies it. Every job is built from plain values (user id, config, embedder) so it can run on another thread
with another connection, and returns a one-line notice (or None) for the REPL to show at the next prompt.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable

from coop import llm
from coop.memory.reconcile import FactWriter

if TYPE_CHECKING:
    from coop.config import Config
    from coop.memory.db import Database
    from coop.memory.embed import Embedder
    from coop.memory.extract import Complete
    from coop.memory.store import UserMemory

log = logging.getLogger(__name__)

Job = Callable[["Database"], "str | None"]


def fast_settings(config: "Config") -> llm.ModelSettings | None:
    name = config.model.fast or config.model.name
    if not name:
        return None
    return llm.ModelSettings(name, config.model.api_base or None, config.model.api_key_env or None,
                             timeout=config.model.timeout_seconds)


def fast_complete(config: "Config") -> "Complete | None":
    """The fast model as a `complete` callable, or None when no model is configured."""
    settings = fast_settings(config)
    if settings is None:
        return None
    return lambda messages: llm.complete(settings, messages, json_mode=True)


def make_writer(memory: "UserMemory", config: "Config", embedder: "Embedder | None") -> FactWriter:
    from coop.memory.extract import model_decider

    complete = fast_complete(config)
    return FactWriter(memory, config.memory.extraction, embedder=embedder,
                      decide=model_decider(complete) if complete else None)


def _user(db: "Database", user_id: str) -> "UserMemory":
    from coop.memory.store import MemoryStore

    return MemoryStore(db).user(user_id)


def embedding_job(user_id: str, embedder: "Embedder", batch_size: int) -> Job:
    def run(db: "Database") -> str | None:
        from coop.memory.vectors import embed_pending

        embed_pending(_user(db, user_id), embedder, batch_size=batch_size)
        return None

    return run


def extraction_job(user_id: str, config: "Config", embedder: "Embedder | None", user_text: str, reply: str) -> Job:
    """Facts from one exchange, through the write pipeline. A failure anywhere changes nothing."""

    def run(db: "Database") -> str | None:
        from coop.memory.extract import extract_facts

        complete = fast_complete(config)
        if complete is None:
            return None
        memory = _user(db, user_id)
        candidates = extract_facts(complete, user_text, reply, config.memory.extraction.max_facts_per_turn)
        writer = make_writer(memory, config, embedder)
        actions = [result.action for result in (writer.write(c) for c in candidates) if result is not None]
        new = sum(1 for a in actions if a == "ADD")
        changed = sum(1 for a in actions if a in ("UPDATE", "SUPERSEDE"))
        if not (new or changed):
            return None
        return f"memory: {new} new fact(s)" + (f", {changed} updated" if changed else "")

    return run


def consolidation_job(user_id: str, config: "Config", embedder: "Embedder | None", *, session_id: int | None = None,
                      ended: bool = False) -> Job:
    def run(db: "Database") -> str | None:
        from coop.memory.consolidate import consolidate
        from coop.memory.vectors import embed_pending

        memory = _user(db, user_id)
        report = consolidate(memory, config, fast_complete(config), make_writer(memory, config, embedder),
                             session_id=session_id, ended=ended)
        if embedder is not None and report.summaries:
            embed_pending(memory, embedder, kinds=("summary",))
        return report.notice()

    return run


class Timer:
    """Calls `action` every `interval` seconds on its own thread until stopped (stops within its wait)."""

    def __init__(self, interval: float, action: Callable[[], None], name: str = "coop-timer") -> None:
        self.interval = interval
        self.action = action
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.action()
            except Exception as exc:  # a timer never dies of its action
                log.warning("timer action failed: %s", exc)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
