"""Opening the configured store, the one way the code above storage gets one: SQLite's file (`store.MemoryStore`)
or a Postgres server (`postgres/store.PgStore`), by the (backend, location) that `config.loading.resolve_store`
gives. Both are returned as an `interface.Backend`, and mypy checks each against it here; both hand out the same
`UserMemory`, and nothing above storage asks which one it has. `THROWAWAY` names a SQLite store that lives in
memory only (`coop chat --incognito`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop.memory.storage.connection import THROWAWAY as THROWAWAY

if TYPE_CHECKING:
    from coop.memory.storage.interface import Backend, ServerAdmin

BACKENDS = ("sqlite", "postgres")


def open_store(backend: str, location: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> Backend:
    """The store at `location`: a file path (or `THROWAWAY`, ':memory:') for "sqlite", a postgresql:// URL for
    "postgres"."""
    if backend == "postgres":
        from coop.memory.storage.postgres.store import PgStore

        return PgStore.open(location, migrate=migrate)
    from coop.memory.storage.store import MemoryStore

    return MemoryStore.open(location, busy_timeout_ms=busy_timeout_ms, migrate=migrate)


def describe(backend: str, location: str) -> str:
    """Where memories are, for people (a Postgres URL without its password)."""
    if backend == "postgres":
        from coop.memory.storage.postgres.connection import redacted

        return redacted(location)
    return location


def open_server_admin(url: str) -> "ServerAdmin":
    """A Postgres server as the owner of coop's tables, its schema brought up to date (`coop admin`)."""
    from coop.memory.storage.postgres.store import PgStore

    return PgStore.open(url)
