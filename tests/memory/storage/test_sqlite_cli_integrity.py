"""The schema checks clean with Debian's sqlite3 (3.40) as with apsw's SQLite (issue 27).

What was found: SQLite 3.40's `PRAGMA integrity_check` reports "NULL value in T.c" for every row of a WITHOUT ROWID
table whose last stored column is a NOT NULL column declared before the primary key's columns (such a table stores
its key's columns first, so the declared order and the stored order differ): `fact_sources (user_id NOT NULL,
fact_id, message_id, PRIMARY KEY (fact_id, message_id)) WITHOUT ROWID` from m007 until m010 added `quote` after it.
The rows were whole (3.54 and a read of every row agree); the report was false. Since m010, `user_id` is no longer
the last stored column and 3.40 says ok, on new databases and on ones migrated from m001 with rows written before
m010. These tests hold that: a database written through the real paths, and one migrated from m009 with a fact
source, are checked with /usr/bin/sqlite3 when it is there."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from coop.memory.storage.connection import connect
from coop.memory.storage.database import open_database
from coop.memory.storage.migrations import MIGRATIONS, apply_migrations

SQLITE3 = shutil.which("sqlite3", path="/usr/bin")
needs_cli = pytest.mark.skipif(SQLITE3 is None, reason="no /usr/bin/sqlite3 (apt-get install sqlite3)")


def cli_check(path: str) -> str:
    assert SQLITE3 is not None
    return subprocess.run([SQLITE3, path, "PRAGMA integrity_check"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


@needs_cli
def test_a_database_migrated_from_m001_with_a_fact_source_checks_clean_with_sqlite_3_40(tmp_path):
    path = str(tmp_path / "old.db")
    db = connect(path)
    apply_migrations(db, MIGRATIONS[:9])  # the schema the issue was found on
    db.conn.execute("INSERT INTO fact_sources (user_id, fact_id, message_id) VALUES ('ana', 1, 1)")
    db.checkpoint()
    db.close()
    assert cli_check(path).startswith("NULL value in fact_sources.user_id")  # the false report, as it was
    db = open_database(path)  # every later migration
    db.checkpoint()
    db.close()
    assert cli_check(path) == "ok"


@needs_cli
def test_a_database_written_through_chat_import_and_add_checks_clean_with_sqlite_3_40(tmp_path, coop_home, run_cli,
                                                                                        openai_server):
    from tests.files.test_log_no_text import run_turns
    from tests.memory.transfer.test_reliability_import import conversation, write

    run_turns(run_cli, openai_server)  # a chat whose extraction learns a fact, linked to its source message
    assert run_cli("memory", "add", "I work at the harbour", "--user", "ana").exit_code == 0
    export = write(tmp_path / "conversations.json", [conversation("c1", "trip", ["We fly to Oslo", "Nice"])])
    assert run_cli("memory", "import", str(export), "--user", "ana").exit_code == 0
    path = str(coop_home / "coop.db")
    db = open_database(path)
    assert db.scalar("SELECT count(*) FROM fact_sources") >= 1
    db.checkpoint()
    db.close()
    assert cli_check(path) == "ok"
