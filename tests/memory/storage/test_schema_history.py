"""One schema history for both engines (`coop/memory/storage/migrations/`): every migration recorded in
`_migrations` on SQLite and on Postgres, the next migration run on both by the same test, a newer database
refused, and a Postgres database made before the history (`coop_schema` version 1) upgraded in place with every
row kept."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from coop.errors import StoreError
from coop.memory.storage.health import schema
from coop.memory.storage.migrations import MIGRATIONS, SCHEMA_VERSION, Migration, apply_migrations, schema_version
from coop.memory.storage.migrations.engines import MARKER_FOR_OLDER_RELEASES, POSTGRES_BEGAN_AT

V1_SCHEMA = Path(__file__).parent / "data" / "postgres_schema_v1.sql"
# The full-text tables m014 replaces and builds again from the stored text (`test_postgres_fulltext.py`).
REBUILT = ("fulltext_postings", "fulltext_docs", "fulltext_pending", "fulltext_stats", "fulltext_items",
           "fulltext_terms")
MADE_SINCE = ("coop_people", "refusals", "id_aliases")  # new tables, empty until filled (m015, m017, m019)

ran_steps: list[str] = []

# A migration as the next one will be written: SQL for each engine (or the same text for both), and a Python
# step for each where SQL cannot say it. Replace the probe with nothing; it only shows the runner's part.
NEXT = Migration(
    "m999_probe", why="Shows the runner running each engine's form.",
    sql="CREATE TABLE probe (engine TEXT NOT NULL, at REAL NOT NULL); INSERT INTO probe VALUES ('sqlite', 1.5);",
    postgres="CREATE TABLE probe (engine TEXT NOT NULL, at DOUBLE PRECISION NOT NULL); "
             "INSERT INTO probe VALUES ('postgres', 1.5);",
    step=lambda db: ran_steps.append(db.dialect), postgres_step=lambda db: ran_steps.append(db.dialect))


@pytest.fixture
def bare(backend: str, request: pytest.FixtureRequest, coop_home: Path) -> Any:
    """An empty database of the engine at hand, not yet migrated."""
    if backend == "sqlite":
        from coop.memory.storage.database import open_database

        database: Any = open_database(str(coop_home / "coop.db"), migrate=False)
    else:
        from coop.memory.storage.postgres.connection import Link, PgDatabase, connect

        url = request.getfixturevalue("postgres_owner_url")
        database = PgDatabase(Link(connect(url), url))
    yield database
    database.close()


def rows(db: Any, sql: str) -> list[tuple[Any, ...]]:
    """A query both engines read alike, without parameters, through each engine's own path."""
    found = db.run(sql) if db.dialect == "postgres" else db.conn.execute(sql).fetchall()
    return [tuple(row) for row in found]


def test_one_history_runs_on_either_engine_and_refuses_a_newer_database(bare):
    """A new database runs and records every migration; the next one (`NEXT` here: put a real one's checks
    beside it) runs in the form for the engine at hand and is recorded; a coop that does not know it refuses
    the database it made, and `coop check` says so."""
    ran_steps.clear()
    assert apply_migrations(bare) == SCHEMA_VERSION == len(MIGRATIONS)
    assert rows(bare, "SELECT id, name FROM _migrations ORDER BY id") == [
        (number, migration.name) for number, migration in enumerate(MIGRATIONS, start=1)]
    assert apply_migrations(bare) == 0 and schema(bare)[0].severity == "ok"

    assert apply_migrations(bare, (*MIGRATIONS, NEXT)) == 1
    assert rows(bare, "SELECT engine, at FROM probe") == [(bare.dialect, 1.5)]
    assert ran_steps == [bare.dialect]
    assert schema_version(bare) == SCHEMA_VERSION + 1
    assert rows(bare, f"SELECT name FROM _migrations WHERE id = {SCHEMA_VERSION + 1}") == [("m999_probe",)]

    with pytest.raises(StoreError) as refused:
        apply_migrations(bare)
    assert "newer coop" in refused.value.message and refused.value.hint
    finding = schema(bare)[0]
    assert finding.severity == "error" and finding.hint == "upgrade coop on this machine"


def test_every_migration_after_postgres_began_has_a_postgres_form():
    """m001's Postgres form is the schema SQLite reached at m013; every later migration says what it does on
    Postgres ("" for nothing, with why)."""
    assert MIGRATIONS[0].postgres and "CREATE TABLE users" in MIGRATIONS[0].postgres
    assert all(m.postgres is None for m in MIGRATIONS[1:POSTGRES_BEGAN_AT])
    assert all(m.postgres is not None for m in MIGRATIONS[POSTGRES_BEGAN_AT:])


@pytest.mark.postgres
def test_a_migration_without_a_postgres_form_is_refused_on_postgres_and_nothing_is_recorded(postgres_owner_url):
    from coop.memory.storage.postgres.connection import Link, PgDatabase, connect

    db = PgDatabase(Link(connect(postgres_owner_url), postgres_owner_url))
    try:
        apply_migrations(db)
        with pytest.raises(ValueError, match="no Postgres form"):
            apply_migrations(db, (*MIGRATIONS, Migration("m999_sqlite_only", sql="SELECT 1", why="")))
        assert schema_version(db) == SCHEMA_VERSION
    finally:
        db.close()


# -- a Postgres database made before the history -----------------------------------------------------------------

def make_v1(url: str) -> None:
    """A database as coop's Postgres backend made it before the history (the frozen script), with rows in every
    table, each written with the columns as that schema has them."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(V1_SCHEMA.read_text())
        conn.execute("SELECT set_config('coop.user_id', '*', false)")
        fill_v1(conn)


def fill_v1(conn: Any) -> None:
    def new(sql: str, params: tuple[Any, ...] = ()) -> int:
        return int(conn.execute(sql + " RETURNING id", params).fetchone()[0])

    conn.execute("INSERT INTO users VALUES ('ana', 1.5, 2.5), ('bob', 3.0, NULL)")
    session = new("INSERT INTO sessions (user_id, title, started_at, ended_at, last_activity_at, external_id) "
                  "VALUES ('ana', 'Herons at dawn', 10, 20, 20, 'host-7')")
    asked = new("INSERT INTO messages (user_id, session_id, role, content, created_at, importance, token_count, "
                "embedder, consolidated_at, external_id, origin) VALUES ('ana', %s, 'user', 'I watch herons at "
                "dawn by the river', 11, 0.7, 9, 'hash-3', 30, 'host-m1', 'host')", (session,))
    reply = new("INSERT INTO messages (user_id, session_id, role, content, tool_name, tool_call_id, tool_calls, "
                "created_at, embedding_error) VALUES ('ana', %s, 'assistant', 'Herons are patient hunters', "
                "'memory_search', 'call-1', '[{\"name\": \"memory_search\"}]', 12, 'timed out')", (session,))
    new("INSERT INTO messages (user_id, role, content, created_at) VALUES ('bob', 'user', 'Bob likes rain', 14)")
    old = new("INSERT INTO facts (user_id, category, key, value, source, content_hash, created_at, updated_at, "
              "superseded_at) VALUES ('ana', 'hobby', 'birds', 'Watches herons', 'extraction', 'h1', 11, 13, 13)")
    fact = new("INSERT INTO facts (user_id, category, key, value, source, importance, mention_count, content_hash, "
               "created_at, updated_at, last_recalled_at, embedder) VALUES ('ana', 'hobby', 'birds', 'Watches "
               "herons at dawn', 'host', 0.8, 2, 'h2', 13, 13, 15, 'hash-3')")
    conn.execute("UPDATE facts SET superseded_by = %s WHERE id = %s", (fact, old))
    conn.execute("INSERT INTO fact_history (user_id, fact_id, action, old_value, new_value, related_fact_id, "
                 "reason, created_at) VALUES ('ana', %s, 'ADD', NULL, 'Watches herons', NULL, 'extraction', 11), "
                 "('ana', %s, 'SUPERSEDE', 'Watches herons', 'Watches herons at dawn', %s, 'more precise', 13)",
                 (old, old, fact))
    conn.execute("INSERT INTO fact_sources VALUES ('ana', %s, %s, 'I watch herons at dawn')", (fact, asked))
    new("INSERT INTO summaries (user_id, session_id, span_start_id, span_end_id, text, created_at, embedder) "
        "VALUES ('ana', %s, %s, %s, 'Ana watches herons at dawn', 25, 'hash-3')", (session, asked, reply))
    new("INSERT INTO forgotten (user_id, kind, item_id, content_hash, forgotten_at) "
        "VALUES ('ana', 'message', 99, 'keyed-digest', 40)")
    new("INSERT INTO memory_jobs (user_id, kind, session_id, message_id, reply_id, attempts, created_at, claimed_at) "
        "VALUES ('ana', 'extraction', %s, %s, %s, 1, 12, 12.5)", (session, asked, reply))
    vector = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    embedding = new("INSERT INTO embeddings (user_id, kind, item_id, embedder, vector, parts) "
                    "VALUES ('ana', 'fact', %s, 'hash-3', %s, %s)",
                    (fact, vector.tobytes(), vector.astype(np.float16).tobytes()))
    conn.execute("INSERT INTO embedding_points VALUES (%s, 'ana', 'hash-3', 'fact', '[0.6,0.8,0]')", (embedding,))
    conn.execute("INSERT INTO vector_indexes VALUES ('hash-3', 'embedding_points_hash_3', 3, 0)")
    conn.execute("INSERT INTO user_vector_indexes VALUES ('hash-3', 'ana', 'embedding_points_hash_3_ana', 3)")
    conn.execute("INSERT INTO fulltext_postings VALUES ('ana', 'fact', 'heron', %s, 1, 0, 4)", (fact,))
    conn.execute("INSERT INTO fulltext_docs VALUES ('fact', %s, 'ana', 4)", (fact,))
    conn.execute("INSERT INTO fulltext_stats VALUES ('ana', 'fact', 1, 4)")


def contents(url: str) -> dict[str, list[str]]:
    """Every table's rows, each as Postgres writes the row out, in one order."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('coop.user_id', '*', false)")
        tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {table: sorted(row[0] for row in conn.execute(f"SELECT t::text FROM {table} t"))
                for table in sorted(tables)}


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What a schema is made of: columns, constraints, indexes, triggers, functions, row-level security."""
    import psycopg

    queries = {
        "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default "
                   "FROM information_schema.columns WHERE table_schema = 'public'",
        "constraints": "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                       "WHERE connamespace = 'public'::regnamespace",
        "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
        "triggers": "SELECT event_object_table, trigger_name, event_manipulation, action_statement "
                    "FROM information_schema.triggers WHERE trigger_schema = 'public'",
        "functions": "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
                     "AND proname LIKE 'coop%'",
        "security": "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
                    "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'",
        "policies": "SELECT tablename, policyname, qual FROM pg_policies WHERE schemaname = 'public'",
    }
    with psycopg.connect(url, autocommit=True) as conn:
        return {name: sorted(conn.execute(sql).fetchall()) for name, sql in queries.items()}


def before_ids(tables: dict[str, list[str]]) -> list[str]:
    """The ids of the facts in `contents`' rows (each row's text starts with its id)."""
    return [row.strip("(").split(",")[0] for row in tables["facts"]]


@pytest.mark.postgres
def test_a_postgres_database_made_before_the_history_upgrades_in_place_and_keeps_every_row(postgres_owner_url):
    from coop.memory.storage.postgres.store import PgStore

    make_v1(postgres_owner_url)
    before = contents(postgres_owner_url)
    assert [table for table, found in before.items() if not found] == []  # every table holds rows
    store = PgStore.open(postgres_owner_url)
    try:
        after = contents(postgres_owner_url)
        assert [row.strip("()").split(",")[0] for row in after["coop_schema"]] == ["1", "2"]
        assert {t: found for t, found in after.items() if t not in ("_migrations", "coop_schema", *REBUILT, *MADE_SINCE)} == \
            {t: found for t, found in before.items() if t not in ("coop_schema", *REBUILT)}
        assert len(after["fulltext_items"]) == len(before["messages"]) + len(before["facts"]) + len(before["summaries"])
        assert rows(store.db, "SELECT id, name FROM _migrations ORDER BY id") == [
            (number, migration.name) for number, migration in enumerate(MIGRATIONS, start=1)]
        assert {f.name: f.severity for f in store.check()}["schema"] == "ok"

        ana = store.user("ana")
        added = ana.facts.add("Keeps a notebook of the birds she sees", category="hobby", key="notebook")
        assert added.action == "ADD" and added.fact_id > max(int(fact) for fact in before_ids(before))
        assert {item.text for item in ana.facts.active()} == {"Watches herons at dawn",
                                                               "Keeps a notebook of the birds she sees"}
    finally:
        store.close()


@pytest.mark.postgres
def test_an_upgraded_postgres_database_has_the_schema_a_new_one_gets(postgres_server, postgres_owner_url):
    from coop.memory.storage.postgres.store import PgStore

    make_v1(postgres_owner_url)
    PgStore.open(postgres_owner_url).close()
    fresh = postgres_server.create_owner_database()
    try:
        PgStore.open(fresh).close()
        assert catalog(postgres_owner_url) == catalog(fresh)
    finally:
        postgres_server.drop_database(fresh)


@pytest.mark.postgres
@pytest.mark.parametrize("made", ["new", "before the history"])
def test_two_clients_opening_one_postgres_database_at_once_migrate_it_once(postgres_owner_url, made):
    from coop.memory.storage.postgres.store import PgStore

    if made != "new":
        make_v1(postgres_owner_url)
    start, failures = threading.Barrier(2), []

    def open_it() -> None:
        start.wait()
        try:
            PgStore.open(postgres_owner_url).close()
        except Exception as exc:  # pragma: no cover - shown by the assertion below
            failures.append(exc)

    clients = [threading.Thread(target=open_it) for _ in range(2)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    assert failures == []
    store = PgStore.open(postgres_owner_url)
    try:
        assert rows(store.db, "SELECT id FROM _migrations ORDER BY id") == [(n,) for n in range(1, SCHEMA_VERSION + 1)]
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("made", ["new", "before the history"])
def test_a_release_before_the_history_reads_a_version_above_its_own_and_stops(postgres_owner_url, made):
    """Those releases read only `max(version)` of `coop_schema`, knew version 1, and refused anything above it
    with "made by a newer coop": a device not yet upgraded must stop there, not make the schema again."""
    from coop.memory.storage.postgres.store import PgStore

    if made == "before the history":
        make_v1(postgres_owner_url)
    PgStore.open(postgres_owner_url).close()
    tables = contents(postgres_owner_url)
    versions = [int(row.strip("()").split(",")[0]) for row in tables["coop_schema"]]
    assert max(versions) == MARKER_FOR_OLDER_RELEASES > 1
