"""The house plan, checked: storage owns every write, migrations are frozen, modules stay small. (Import
direction is checked by import-linter in .ci/run.)"""

from __future__ import annotations

import re

from coop.memory.storage import fulltext, migrations
from tests import REPO

COOP = REPO / "coop"
WRITE_SQL = re.compile(r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO)\b",
                       re.IGNORECASE)


def test_only_storage_writes_sql():
    writers = []
    for path in sorted(COOP.rglob("*.py")):
        relative = path.relative_to(COOP).as_posix()
        if relative.startswith("memory/storage/"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if WRITE_SQL.search(line):
                writers.append(f"{relative}:{number}: {line.strip()}")
    assert writers == [], "SQL writes outside coop/memory/storage:\n" + "\n".join(writers)


def test_fact_rows_and_history_are_written_only_by_facts_py():
    fact_writes = re.compile(r"\b(INSERT\s+INTO\s+(facts|fact_history)\b|UPDATE\s+(facts|fact_history)\s+SET)",
                             re.IGNORECASE)
    offenders = [path.relative_to(COOP).as_posix() for path in COOP.rglob("*.py")
                 if fact_writes.search(path.read_text(encoding="utf-8"))
                 and path.name != "facts.py" and path.parent.name != "migrations"]  # migrations: the frozen schema history
    assert offenders == []


def test_no_module_is_over_400_lines():
    long = {path.relative_to(COOP).as_posix(): n for path in COOP.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def test_the_installed_message_triggers_use_the_context_expression_rebuild_uses(db):
    """The frozen m002 triggers and `fulltext.INDEX_EVERY_MESSAGE` (what `coop memory reindex` runs) must index
    a message alike; a later migration that changes the triggers must change the rebuild too."""
    trigger = db.scalar("SELECT sql FROM sqlite_master WHERE name = 'messages_context_fts_ai'")
    squash = lambda sql: " ".join(sql.split())  # noqa: E731
    assert squash(fulltext.message_context_sql("new")) in squash(trigger)
    assert squash(fulltext.INDEX_EVERY_MESSAGE) in squash(migrations.M002_MESSAGE_CONTEXT_FTS.sql)


def test_migrations_are_numbered_frozen_sql_applied_once(db):
    rows = list(db.execute("SELECT id, name FROM _migrations ORDER BY id"))
    assert rows == [(i, m.name) for i, m in enumerate(migrations.MIGRATIONS, start=1)]
    assert all(isinstance(m.sql, str) and isinstance(m.postgres, str | None) for m in migrations.MIGRATIONS)
    assert all(m.sql.strip() for m in migrations.MIGRATIONS[:13])  # "" from m014 on: nothing to do on SQLite
    assert migrations.apply_migrations(db) == 0
