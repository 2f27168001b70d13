"""The state every command shares, built lazily from the global options: config, database, user, embedder.

Kept apart from `app.py` so command modules can import it without importing the root app (which imports them).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from coop.config import Config
    from coop.memory.db import Database
    from coop.memory.embed import Embedder
    from coop.memory.store import UserMemory


@dataclass
class AppContext:
    """What every command needs, built lazily from the global options."""

    config_path: str | None = None
    user: str | None = None
    debug: bool = False
    _config: "Config | None" = field(default=None, repr=False)
    _db: "Database | None" = field(default=None, repr=False)
    _embedder_loaded: bool = field(default=False, repr=False)
    _embedder: "Embedder | None" = field(default=None, repr=False)

    def config(self) -> "Config":
        if self._config is None:
            from coop.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    def user_id(self, override: str | None = None) -> str:
        """`--user` on the command, then the global `--user`, then `chat.user`, then the OS user name."""
        for candidate in (override, self.user, self.config().chat.user):
            if candidate:
                return candidate
        try:
            return getpass.getuser() or "default"
        except Exception:
            return "default"

    def db(self) -> "Database":
        if self._db is None:
            from coop.config import resolve_db_path
            from coop.memory.db import open_database

            config = self.config()
            self._db = open_database(resolve_db_path(config), busy_timeout_ms=config.memory.busy_timeout_ms)
        return self._db

    def memory(self, user: str | None = None) -> "UserMemory":
        from coop.memory.store import MemoryStore

        return MemoryStore(self.db()).user(self.user_id(user))

    def embedder(self) -> "Embedder | None":
        """The configured embedder, loaded once; when it cannot load, say so once and carry on without it."""
        if not self._embedder_loaded:
            from coop.cli import output
            from coop.memory.embed import load_embedder

            status = load_embedder(self.config().memory.embedder)
            self._embedder, self._embedder_loaded = status.embedder, True
            if status.embedder is None:
                output.warn(f"no embedder: {status.error}; using full-text search only", status.hint)
        return self._embedder

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def state(ctx: typer.Context) -> AppContext:
    obj = ctx.find_object(AppContext)
    assert obj is not None, "the root callback sets the context"
    return obj
