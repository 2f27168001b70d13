"""The database file: pragmas, private permissions, migrations, triggers, and errors that name the problem."""

from __future__ import annotations

import os
import stat

import pytest

from coop.errors import StoreError
from coop.memory import db as dbmod
from coop.memory.db import SCHEMA_VERSION, open_database, schema_version


def test_pragmas_wal_foreign_keys_busy_timeout(coop_home):
    database = open_database(str(coop_home / "coop.db"), busy_timeout_ms=1234)
    assert database.scalar("pragma journal_mode") == "wal"
    assert database.scalar("pragma foreign_keys") == 1
    assert database.scalar("pragma busy_timeout") == 1234
    database.close()


def test_database_and_directory_are_private(coop_home):
    path = coop_home / "nested" / "coop.db"
    database = open_database(str(path))
    database.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_migrations_are_recorded_and_run_once(coop_home):
    path = str(coop_home / "coop.db")
    first = open_database(path)
    rows = list(first.execute("select id, name from _migrations order by id"))
    assert rows == [(i + 1, m.__name__) for i, m in enumerate(dbmod.MIGRATIONS)]
    assert schema_version(first) == SCHEMA_VERSION
    first.close()
    again = open_database(path)
    assert dbmod.apply_migrations(again) == 0
    assert again.scalar("select count(*) from _migrations") == SCHEMA_VERSION
    again.close()


def test_schema_has_the_design_tables(db):
    names = {row[0] for row in db.execute("select name from sqlite_master where type in ('table')")}
    for table in ("users", "sessions", "messages", "facts", "fact_history", "summaries", "embeddings",
                  "messages_fts", "facts_fts", "summaries_fts", "forgotten"):
        assert table in names


def test_newer_schema_is_refused(coop_home):
    path = str(coop_home / "coop.db")
    database = open_database(path)
    database.execute("insert into _migrations (id, name, applied_at) values (999, 'm999_future', 0)")
    database.close()
    with pytest.raises(StoreError) as excinfo:
        open_database(path)
    assert "newer coop" in excinfo.value.message and excinfo.value.hint


def test_corrupted_file_is_a_store_error_and_left_alone(coop_home):
    path = coop_home / "coop.db"
    coop_home.mkdir(parents=True, exist_ok=True)
    garbage = b"this is not sqlite at all " * 100
    path.write_bytes(garbage)
    with pytest.raises(StoreError) as excinfo:
        open_database(str(path))
    assert excinfo.value.exit_code == 5 and excinfo.value.hint
    assert path.read_bytes() == garbage


def test_uncreatable_directory_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError) as excinfo:
        open_database(str(blocker / "sub" / "coop.db"))
    assert "cannot create" in excinfo.value.message


def test_fts_triggers_follow_insert_update_delete(memory):
    session = memory.start_session()
    mid = memory.add_message(session, "user", "the quick brown fox")
    match = "select rowid from messages_fts where messages_fts match ?"
    assert [r[0] for r in memory.db.execute(match, ('"fox"',))] == [mid]
    memory.db.execute("update messages set content = 'a lazy dog' where id = ?", (mid,))
    assert list(memory.db.execute(match, ('"fox"',))) == []
    assert [r[0] for r in memory.db.execute(match, ('"dog"',))] == [mid]
    memory.db.execute("delete from messages where id = ?", (mid,))
    assert list(memory.db.execute(match, ('"dog"',))) == []
    memory.db.execute("insert into messages_fts(messages_fts) values ('integrity-check')")


def test_atomic_rolls_back_everything_inside(memory):
    with pytest.raises(RuntimeError):
        with memory.db.atomic():
            memory.add_fact("first fact")
            with memory.db.atomic():
                memory.add_fact("second fact")
            raise RuntimeError("boom")
    assert memory.list_items("fact") == []


def test_fts_text_splits_unspaced_scripts_only():
    assert dbmod.fts_text("hello world") == "hello world"
    assert dbmod.fts_text("我住在北京").split() == list("我住在北京")
    assert dbmod.fts_text("東京タワー").split() == list("東京タワー")
