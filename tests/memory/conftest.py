"""The engine's tests run against both backends: `store` (and so `memory`) is a SQLite file and, again, a fresh
database on the throwaway Postgres server (`tests/postgres.py`). Under Postgres, the configuration the CLI and
services read names the same database (COOP_MEMORY_BACKEND, COOP_DATABASE_URL), so a test that mixes `memory`
with `coop ...` commands sees one store.

A test that reaches SQLite itself (the `db` fixture: its pragmas, FTS5 tables, migrations, files) runs on SQLite
only, as does one marked `sqlite_only`."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if backend == "sqlite":
        from coop.memory.storage.store import MemoryStore

        return MemoryStore(request.getfixturevalue("db"))
    from coop.memory.storage.postgres.store import PgStore

    url = request.getfixturevalue("postgres_url")
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", url)
    opened = PgStore.open(url)
    request.addfinalizer(opened.close)
    return opened


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        sqlite_only = "db" in getattr(item, "fixturenames", ()) or item.get_closest_marker("sqlite_only")
        (drop if on_postgres and sqlite_only else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
