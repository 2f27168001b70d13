"""Storage promises under attack: forgotten text leaves the file, non-Latin text survives check and reindex, a
failed COMMIT loses nothing that comes after it."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from coop.errors import StoreError
from coop.memory.retrieval.search import search
from coop.memory.storage.database import open_database
from coop.memory.storage.fulltext import fulltext_problems, rebuild_fulltext
from coop.memory.storage.store import MemoryStore
from coop.memory.transfer.export import write_coop


def raw_bytes(path: str) -> bytes:
    """The database file and its write-ahead log, as anyone with the files could read them."""
    data = b""
    for suffix in ("", "-wal"):
        if Path(path + suffix).exists():
            data += Path(path + suffix).read_bytes()
    return data


def test_a_forgotten_fact_is_gone_from_the_file_the_wal_history_and_exports(coop_home, run_cli):
    path = str(coop_home / "coop.db")
    db = open_database(path)
    memory = MemoryStore(db).user("ana")
    for i in range(40):  # enough rows that the index has segments and pages to leave traces in
        memory.facts.add(f"unrelated fact number {i} about gardening")
    old = memory.facts.add("The user lives in Quixotlan", category="location", key="city").fact_id
    new = memory.facts.add("The user lives in Paris", category="location", key="city")
    assert new.action == "SUPERSEDE" and new.previous_id == old
    assert b"Quixotlan" in raw_bytes(path)
    memory.forget("fact", old)
    assert b"Quixotlan" not in raw_bytes(path), "the forgotten text is still readable in the database or its WAL"
    assert all("Quixotlan" not in (e.old_value or "") + (e.new_value or "") + (e.reason or "")
               for e in memory.facts.history(new.fact_id))
    assert [h.item.item_id for h in search(memory, "Quixotlan", include_inactive=True).hits] == []
    import io

    exported = io.StringIO()
    write_coop(memory, exported)
    assert "Quixotlan" not in exported.getvalue()
    db.close()


def test_a_forgotten_message_is_gone_from_the_file_and_its_neighbours_index_entries(coop_home):
    path = str(coop_home / "coop.db")
    db = open_database(path)
    memory = MemoryStore(db).user("ana")
    session = memory.sessions.start()
    secret = memory.messages.add(session, "user", "my locker code is zebrafinch-7741")
    memory.messages.add(session, "assistant", "noted")
    memory.messages.add(session, "user", "thanks")
    for i in range(30):
        memory.messages.add(session, "user", f"filler message {i}")
    memory.forget("message", secret)
    data = raw_bytes(path)
    assert b"zebrafinch" not in data and b"7741" not in data
    assert search(memory, "zebrafinch").hits == []
    db.close()


@pytest.mark.sqlite_only  # the config file names a second SQLite store; COOP_DATABASE_URL would override it
def test_a_chinese_fact_passes_check_and_survives_reindex(memory, run_cli):
    fact = memory.facts.add("用户喜欢徒步旅行").fact_id
    assert fulltext_problems(memory.db) == []
    assert [h.item.item_id for h in search(memory, "徒步").hits] == [fact]
    rebuild_fulltext(memory.db)
    assert fulltext_problems(memory.db) == []
    assert [h.item.item_id for h in search(memory, "徒步").hits] == [fact]
    memory.summaries.add("我们讨论了徒步路线")
    assert fulltext_problems(memory.db) == []


def test_a_commit_that_fails_rolls_back_and_later_writes_commit(coop_home):
    """In rollback-journal mode a reader blocks COMMIT; the failed transaction must not stay open and swallow
    every later write as a savepoint that never commits."""
    path = str(coop_home / "journal.db")
    writer = open_database(path, busy_timeout_ms=50)
    writer.conn.execute("pragma journal_mode = delete").fetchall()
    memory = MemoryStore(writer).user("ana")
    memory.facts.add("first fact")
    reader = apsw.Connection(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM facts").fetchall()  # a shared lock held across the writer's COMMIT
    with pytest.raises(StoreError):
        memory.facts.add("written while the reader holds its lock")
    assert not writer.conn.in_transaction
    reader.execute("COMMIT")
    memory.facts.add("written after the reader let go")
    writer.close()
    again = MemoryStore(open_database(path)).user("ana")
    assert [i.text for i in again.facts.active()] == ["first fact", "written after the reader let go"]


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d\ufeff", " \u2060 \u200e "])
def test_a_fact_of_invisible_characters_is_refused(memory, text):
    from coop.errors import UsageError

    with pytest.raises(UsageError, match="empty"):
        memory.facts.add(text)
    assert memory.facts.active() == []


def test_an_instruction_with_the_text_of_a_fact_is_stored_as_an_instruction(memory, hash_embedder):
    from coop.config.loading import ExtractionConfig
    from coop.memory.growth.reconcile import Candidate, FactWriter

    writer = FactWriter(memory, ExtractionConfig(), embedder=hash_embedder)
    fact = writer.write(Candidate("answer in French", source="user"))
    instruction = writer.write(Candidate("answer in French", category="instruction", source="user"))
    assert fact is not None and instruction is not None and instruction.action == "ADD"
    assert [i.text for i in memory.facts.active("instruction")] == ["answer in French"]
    assert len(memory.facts.active()) == 2
