"""Opening the configured store: SQLite's file (`store.MemoryStore`) or a Postgres server
(`postgres.store.PgStore`), by the (backend, location) that `config.loading.resolve_store` gives. Both hand out
the same `UserMemory`; nothing above storage asks which one it has."""

from __future__ import annotations

from coop.memory.storage.store import MemoryStore

BACKENDS = ("sqlite", "postgres")


def open_store(backend: str, location: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> MemoryStore:
    """The store at `location`: a file path (or ':memory:') for "sqlite", a postgresql:// URL for "postgres"."""
    if backend == "postgres":
        from coop.memory.storage.postgres.store import PgStore

        return PgStore.open(location, migrate=migrate)
    return MemoryStore.open(location, busy_timeout_ms=busy_timeout_ms, migrate=migrate)


def describe(backend: str, location: str) -> str:
    """Where memories are, for people (a Postgres URL without its password)."""
    if backend == "postgres":
        from coop.memory.storage.postgres.connection import redacted

        return redacted(location)
    return location
