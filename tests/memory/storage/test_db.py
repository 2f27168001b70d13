"""The database file: pragmas, private permissions, migrations, triggers, and errors that name the problem."""

from __future__ import annotations

import os
import stat

import pytest

from coop.errors import StoreError
from coop.memory.storage import migrations as dbmod
from coop.memory.storage.database import open_database
from coop.memory.storage.fulltext import fulltext_problems, rebuild_fulltext
from coop.memory.storage.migrations import SCHEMA_VERSION, schema_version
from coop.memory.text import fts_text


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
    assert rows == [(i + 1, m.name) for i, m in enumerate(dbmod.MIGRATIONS)]
    assert schema_version(first) == SCHEMA_VERSION
    first.close()
    again = open_database(path)
    assert dbmod.apply_migrations(again) == 0
    assert again.scalar("select count(*) from _migrations") == SCHEMA_VERSION
    again.close()


def test_schema_has_the_design_tables(db):
    names = {row[0] for row in db.execute("select name from sqlite_master where type in ('table')")}
    for table in ("users", "sessions", "messages", "facts", "fact_history", "summaries", "embeddings",
                  "message_context_fts", "facts_fts", "summaries_fts", "forgotten"):
        assert table in names
    assert "messages_fts" not in names  # m004: message_context_fts replaced it


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


@pytest.mark.sqlite_only
def test_fts_triggers_follow_insert_update_delete(memory):
    session = memory.sessions.start()
    mid = memory.messages.add(session, "user", "the quick brown fox")
    match = "select rowid from message_context_fts where message_context_fts match ?"
    assert [r[0] for r in memory.db.execute(match, ('"fox"',))] == [mid]
    memory.db.execute("update messages set content = 'a lazy dog' where id = ?", (mid,))
    assert list(memory.db.execute(match, ('"fox"',))) == []
    assert [r[0] for r in memory.db.execute(match, ('"dog"',))] == [mid]
    memory.db.execute("delete from messages where id = ?", (mid,))
    assert list(memory.db.execute(match, ('"dog"',))) == []
    assert fulltext_problems(memory.db) == []


def test_atomic_rolls_back_everything_inside(memory):
    with pytest.raises(RuntimeError), memory.db.atomic():
        memory.facts.add("first fact")
        with memory.db.atomic():
            memory.facts.add("second fact")
        raise RuntimeError("boom")
    assert memory.list_items("fact") == []


def test_fts_text_splits_unspaced_scripts_only():
    assert fts_text("hello world") == "hello world"
    assert fts_text("我住在北京").split() == list("我住在北京")
    assert fts_text("東京タワー").split() == list("東京タワー")


def test_a_schema_3_database_loses_messages_fts_and_keeps_every_message_findable(coop_home):
    from coop.memory.retrieval.search import search
    from coop.memory.storage.store import MemoryStore

    path = str(coop_home / "coop.db")
    old = open_database(path, migrate=False)
    dbmod.apply_migrations(old, dbmod.MIGRATIONS[:3])  # a database as coop wrote it before m004
    memory = MemoryStore(old).user("ana")
    session = memory.sessions.start()
    wanted = memory.messages.add(session, "user", "my sister Ola plays the cello")
    assert old.scalar("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'cello'") == 1
    old.close()

    new = open_database(path)
    names = {row[0] for row in new.execute("SELECT name FROM sqlite_master")}
    assert "messages_fts" not in names and not any(n.startswith("messages_fts_") for n in names)
    memory = MemoryStore(new).user("ana")
    assert [h.item.item_id for h in search(memory, "cello", kinds=("message",)).hits] == [wanted]
    later = memory.messages.add(session, "user", "the cello needs new strings")
    assert {h.item.item_id for h in search(memory, "cello", kinds=("message",)).hits} == {wanted, later}
    assert fulltext_problems(new) == []


@pytest.mark.sqlite_only
def test_damaged_full_text_indexes_are_found_and_rebuilt(memory):
    from coop.memory.retrieval.search import search

    session = memory.sessions.start()
    message = memory.messages.add(session, "user", "we adopted a greyhound named Pixel")
    memory.messages.add(session, "assistant", "what a lovely name")
    fact = memory.facts.add("Has a greyhound named Pixel").fact_id
    assert fulltext_problems(memory.db) == []
    # A message's entry lost (as a copy made mid-write could leave it) and a fact's entry on the wrong row.
    memory.db.execute("DELETE FROM message_context_fts WHERE rowid = ?", (message,))
    memory.db.execute("DELETE FROM facts_fts WHERE rowid = ?", (fact,))
    memory.db.execute("INSERT INTO facts_fts(rowid, key, value) VALUES (?, '', 'greyhound')", (fact + 50,))
    assert set(fulltext_problems(memory.db)) == {"message_context_fts", "facts_fts"}
    assert message not in {h.item.item_id for h in search(memory, "greyhound", kinds=("message",)).hits}

    counts = rebuild_fulltext(memory.db)
    assert counts == {"message_context_fts": 2, "facts_fts": 1, "summaries_fts": 0}
    assert fulltext_problems(memory.db) == []
    assert [h.item.item_id for h in search(memory, "greyhound", kinds=("message",)).hits][0] == message
    assert [h.item.item_id for h in search(memory, "greyhound", kinds=("fact",)).hits] == [fact]
    # The context column is rebuilt too: the reply is found by the words of the message before it.
    assert message + 1 in {h.item.item_id for h in search(memory, "lovely greyhound", kinds=("message",)).hits}


@pytest.mark.sqlite_only
def test_an_index_entry_for_the_wrong_row_is_found_even_when_the_counts_agree(memory):
    session = memory.sessions.start()
    message = memory.messages.add(session, "user", "the heron came back to the pond")
    memory.db.execute("DELETE FROM message_context_fts WHERE rowid = ?", (message,))
    memory.db.execute("INSERT INTO message_context_fts (rowid, content, context) VALUES (?, 'heron', '')",
                      (message + 100,))
    assert memory.db.scalar("SELECT count(*) FROM message_context_fts_docsize") == 1  # as many entries as rows
    assert fulltext_problems(memory.db) == ["message_context_fts"]
    rebuild_fulltext(memory.db)
    assert fulltext_problems(memory.db) == []


def test_a_new_id_above_the_forgotten_ones_is_an_index_lookup(db):
    from coop.memory.storage.sql import SQLITE

    plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN SELECT " + SQLITE.fresh_id("message")))
    assert "forgotten USING COVERING INDEX forgotten_kind_item" in plan


def test_a_damaged_page_met_while_rows_are_read_is_a_store_error(coop_home):
    """A statement runs a row at a time: a damaged page of a table is met by the row that lives on it, after
    `execute` has returned. However the rows are read (iterated, fetchall, fetchone), that is the store error with
    its hint, as when `execute` meets it, never an apsw error that the CLI would report as a bug in coop."""
    path = coop_home / "coop.db"
    database = open_database(str(path))
    database.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)")
    database.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) "
                     "INSERT INTO filler (body) SELECT hex(randomblob(1500)) FROM n")
    database.checkpoint()
    page, pages = database.scalar("pragma page_size"), database.scalar("pragma page_count")
    database.close()
    with path.open("r+b") as f:  # the table's last leaf: its first rows read fine
        f.seek((pages - 2) * page)
        f.write(b"\xff" * page)
    database = open_database(str(path), migrate=False)
    for read in (list, lambda rows: rows.fetchall(), lambda rows: [rows.fetchone() for _ in range(300)]):
        rows = database.execute("SELECT id, body FROM filler ORDER BY id")
        with pytest.raises(StoreError, match="is corrupted"):
            read(rows)
    assert next(iter(database.execute("SELECT id FROM filler ORDER BY id"))) == (1,)  # the damage is further on
    database.close()


def test_a_write_that_fails_as_its_statement_completes_is_a_store_error(coop_home):
    """An INSERT ... RETURNING gives its first row before it has written the rest: a full disk (SQLite's
    max_page_count) then fails while the rows are read, not when the statement starts. `one`, `scalar` and
    `stream` name it as `execute` does (a `StoreError` with a hint), never as a bug; nothing is left written."""
    database = open_database(str(coop_home / "coop.db"))
    database.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)")
    database.execute("vacuum")
    database.execute(f"pragma max_page_count = {database.scalar('pragma page_count')}")
    many = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) "
            "INSERT INTO filler (body) SELECT hex(randomblob(2000)) FROM n RETURNING id")
    with pytest.raises(StoreError, match="the disk is full"):
        database.scalar(many)
    with pytest.raises(StoreError, match="the disk is full"):
        list(database.stream(many))
    assert database.scalar("SELECT count(*) FROM filler") == 0
    database.close()
