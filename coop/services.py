"""Wires one user's parts for the CLI commands: config, database, embedder, chat model, fast model, memory jobs
and the background worker. Commands ask this module for what they need instead of building it themselves,
so `coop chat`, `coop memory ...` and `coop mcp` get the same parts the same way.

Everything is built lazily (the database opens, the embedder loads, litellm imports only when first asked for)
because `coop --help` and most commands need none of it.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coop.errors import UsageError

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.memory.embedder import Embedder
    from coop.memory.growth.embedders import EmbedderStatus
    from coop.memory.growth.extract import Complete
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.growth.reconcile import FactWriter
    from coop.memory.growth.worker import BackgroundWorker
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.interface import Backend, UserStore
    from coop.model.llm import ChatModel

def load_embedder(config: "Config") -> "EmbedderStatus":
    """The configured embedder (a remote one calls its API through `coop.model.llm`); never raises."""
    from coop.memory.growth.embedders import load_embedder as load
    from coop.model import llm

    return load(config.memory.embedder, remote=llm.embed)


def chat_model(config: "Config", name: str | None = None) -> "ChatModel":
    """The chat model, or a ModelError that says how to configure one."""
    from coop.model import llm

    return llm.chat_model(config, name)


def fast_complete(config: "Config") -> "Complete | None":
    """The fast model as the `complete` callable the memory engine takes, or None without a model."""
    from coop.model import llm

    return llm.fast_complete(config)


@dataclass
class Services:
    """One command's parts, built on first use from the config and the chosen user."""

    config: "Config"
    user: str | None = None
    warn: Callable[[str, str | None], None] = lambda message, hint: None  # how a failed embedder load is told
    _store: "Backend | None" = field(default=None, repr=False)
    _embedder: "EmbedderStatus | None" = field(default=None, repr=False)

    def user_id(self, override: str | None = None) -> str:
        """`override` (a command's --user), then the global --user, then the one person a server's role serves,
        then `chat.user`, then the OS user name. A server refuses a user its role may not reach (`store().user`)."""
        for candidate in (override, self.user):
            if candidate:
                return candidate
        if sole := self._sole_user():
            return sole
        if self.config.chat.user:
            return self.config.chat.user
        try:
            return getpass.getuser() or "default"
        except Exception:
            return "default"

    def store(self) -> "Backend":
        """The configured store (`memory.db_path`, or the Postgres server of `memory.url`), opened once."""
        if self._store is None:
            from coop.config.loading import coop_home, resolve_store
            from coop.files.writing import private_dir
            from coop.memory.storage.backends import open_store

            backend, location = resolve_store(self.config)
            if backend == "postgres" or location == str(coop_home() / "coop.db"):
                private_dir(coop_home())  # coop's own directory (logs, history, keys): 0700, even if an old
                # install left it open; on a server it holds no database but still those
            self._store = open_store(backend, location, busy_timeout_ms=self.config.memory.busy_timeout_ms)
        return self._store

    def _sole_user(self) -> str | None:
        """The one person a server's role serves; a SQLite file, which has none, is not opened to ask."""
        from coop.config.loading import resolve_store

        if self._store is None and resolve_store(self.config)[0] != "postgres":
            return None
        return self.store().sole_user()

    def use_store(self, store: "Backend") -> None:
        """Serve from this store instead (a throwaway one for `coop chat --incognito`)."""
        self._store = store

    def memory(self, user: str | None = None) -> "UserStore":
        """A person's memory, never through a role no policy binds (a server's owner or superuser): that role
        reads everyone's, and is for `coop admin`."""
        store = self.store()
        if unbound := store.unbound():
            raise UsageError(unbound + "; coop will not chat or remember as it",
                             hint="connect as a person's role (COOP_DATABASE_URL): as this role, run "
                                  "`coop admin person add NAME --role ROLE --create-role`")
        return store.user(self.user_id(user))

    def embedder(self) -> "Embedder | None":
        """The configured embedder, loaded once; when it cannot load, say so once and carry on without it."""
        if self._embedder is None:
            self._embedder = load_embedder(self.config)
            if self._embedder.embedder is None:
                self.warn(f"no embedder: {self._embedder.error}; using full-text search only", self._embedder.hint)
        return self._embedder.embedder

    def retrieval(self) -> "RetrievalSettings":
        from coop.memory.retrieval.settings import RetrievalSettings

        return RetrievalSettings.from_config(self.config.memory)

    def jobs(self, embedder: "Callable[[], Embedder | None] | None" = None) -> "MemoryJobs":
        from coop.memory.growth.jobs import MemoryJobs

        return MemoryJobs(self.config, fast_complete(self.config), embedder or self.embedder)

    def writer(self, memory: "UserStore") -> "FactWriter":
        return self.jobs().writer(memory)

    def worker(self) -> "BackgroundWorker | None":
        """A background worker with a handle of its own on the store; None for a throwaway store, which no
        second handle can reach."""
        from coop.memory.growth.worker import BackgroundWorker

        store = self.store()
        return None if store.throwaway else BackgroundWorker(store.reopen)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
