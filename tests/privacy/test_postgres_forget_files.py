"""Forgetting on Postgres, read from the server's own files (issue 42): a fact forgotten with the messages and
summary that said it, through `coop memory forget` as a person's role, then a CHECKPOINT; every file of the
database (tables, their indexes, TOAST, free space maps) is read for the forgotten word. The README's "Forgetting on
a server" says what this finds: the forget deletes every row that held it and its VACUUM frees their space, but
Postgres does not zero freed space, so the bytes can stay in table and index pages (here: of the tables
`TEXT_TABLES` names) until the pages are reused or rewritten; `--compact` rewrites those tables, after which no
file of the database holds the word."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from coop.memory.storage.postgres.connection import TEXT_TABLES

WORD = "zqxwvuheron"  # lower case and unstemmed: as it is in the text and in the full-text terms alike


def _holding(server: Any, database: str) -> dict[str, str]:
    """Every relation of `database` whose files hold WORD, after a CHECKPOINT (written out), by its kind."""
    import psycopg

    with psycopg.connect(server.url(database), autocommit=True) as admin:
        admin.execute("CHECKPOINT")
        oid = admin.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
        kinds = {int(r[0]): (r[1], r[2]) for r in admin.execute(
            "SELECT pg_relation_filenode(c.oid), c.relname, c.relkind FROM pg_class c "
            "WHERE pg_relation_filenode(c.oid) IS NOT NULL")}
    folder = next(Path(root) for root, _, _ in os.walk(server.directory) if root.endswith(f"base/{oid}"))
    found: dict[str, str] = {}
    for path in folder.iterdir():
        node = path.name.split("_")[0].split(".")[0]
        if node.isdigit() and WORD.encode() in path.read_bytes():
            name, kind = kinds.get(int(node), (f"file {path.name}", "?"))
            found[name] = {"r": "table", "i": "index", "t": "toast"}.get(kind, kind)
    return found


def _tables_of(server: Any, database: str, relations: dict[str, str]) -> set[str]:
    """The tables the relations belong to (an index's table, a TOAST table's owner)."""
    import psycopg

    with psycopg.connect(server.url(database), autocommit=True) as admin:
        return {str(r[0]) for r in admin.execute(
            "SELECT coalesce(t.relname, o.relname, c.relname) FROM pg_class c "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid "
            "LEFT JOIN pg_class o ON o.reltoastrelid = c.oid WHERE c.relname = ANY(%s)", (list(relations),))}


@pytest.fixture
def said(postgres_server, postgres_url, run_cli, monkeypatch, hash_embedder) -> dict[str, Any]:
    """Ana's memory, a word of which is in a message (and the context of the two after it), the session's title, a
    fact quoting the message, and a summary; embedded."""
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.storage.postgres.store import PgStore

    if getattr(postgres_server, "directory", None) is None:
        pytest.skip("needs the throwaway server's files (not a COOP_TEST_DATABASE_URL server)")
    store = PgStore.open(postgres_url)
    ana = store.user("ana")
    session = ana.sessions.start()
    for i in range(30):
        ana.messages.add(session, "user", f"an ordinary message, number {i}")
    marked = ana.messages.add(session, "user", f"my neighbour keeps a {WORD} in the garden")
    for i in range(30):
        ana.messages.add(session, "user", f"a later message, number {i}")
    other = ana.sessions.start()
    again = ana.messages.add(other, "user", f"the {WORD} came back today")  # the session's title
    ana.sessions.set_title(other, f"the {WORD} came back today")
    fact = ana.facts.add(f"Neighbour keeps a {WORD}", category="people", key="neighbour").fact_id
    ana.sources.link(fact, [marked], quote=f"keeps a {WORD}")
    ana.jobs.record("extraction", session_id=session, message_id=marked, reply_id=None)
    summary = ana.summaries.add(f"Ana said her neighbour keeps a {WORD}", session_id=session)
    embed_pending(ana, hash_embedder)
    store.close()
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", postgres_url)
    return {"refs": [f"f{fact}", f"m{marked}", f"m{again}", f"s{summary}"], "database": postgres_url.rsplit("/", 1)[1]}


@pytest.mark.postgres
def test_after_a_forget_no_table_file_holds_the_word_and_compact_clears_the_indexes(said, postgres_server, run_cli):
    before = _holding(postgres_server, said["database"])
    assert {"messages", "facts", "summaries", "sessions", "fulltext_items", "fulltext_postings"} <= set(before)
    forgotten = run_cli("memory", "forget", *said["refs"], "--yes", "--user", "ana")
    assert forgotten.exit_code == 0, forgotten.stderr
    left = _holding(postgres_server, said["database"])
    tables = _tables_of(postgres_server, said["database"], left)
    assert tables <= set(TEXT_TABLES), tables  # what --compact rewrites covers every file that still holds it
    compacted = run_cli("memory", "forget", "--compact", "--user", "ana")
    assert compacted.exit_code == 0, compacted.stderr
    assert _holding(postgres_server, said["database"]) == {}


@pytest.mark.postgres
def test_compact_without_the_right_to_rewrite_says_so_and_deletes_nothing_more(said, postgres_server, run_cli):
    import psycopg

    with psycopg.connect(postgres_server.url(said["database"]), autocommit=True) as admin:
        admin.execute("REVOKE MAINTAIN ON messages FROM coop_app")
    refused = run_cli("memory", "forget", "--compact", "--user", "ana")
    assert refused.exit_code == 5
    assert "may not rewrite messages" in refused.stderr and "VACUUM FULL" in refused.stderr
    assert WORD in run_cli("memory", "search", WORD, "--user", "ana").stdout



@pytest.mark.postgres
def test_analyze_keeps_no_sample_of_the_text_in_the_catalog_and_the_upgrade_clears_what_it_kept(postgres_owner_url):
    """ANALYZE (autovacuum runs it unasked) keeps each column's most common values in `pg_statistic`, where a
    forget cannot reach them: the columns that hold a person's words collect none (m018), and the statistics an
    older schema collected are cleared by the upgrade."""
    import psycopg

    from coop.memory.storage.migrations import MIGRATIONS, apply_migrations
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(postgres_owner_url)
    ana = store.user("ana")
    session = ana.sessions.start(f"{WORD} notes")
    for _ in range(30):  # a common value, as ANALYZE samples it
        ana.messages.add(session, "user", f"my {WORD} is in the blue box")
    ana.facts.add(f"Keeps a {WORD}", category="hobbies")

    def sampled(conn: Any, analyze: bool = True) -> set[str]:
        if analyze:
            conn.execute("ANALYZE")
        return {f"{r[0]}.{r[1]}" for r in conn.execute(
            "SELECT tablename, attname FROM pg_stats WHERE schemaname = current_schema() AND "
            "(coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') || "
            "coalesce(most_common_elems::text, '')) LIKE %s", (f"%{WORD}%",))}

    try:
        with psycopg.connect(postgres_owner_url, autocommit=True) as owner:
            assert sampled(owner) == set()
            # as before m018: the columns sampled by ANALYZE, then the upgrade run again by the runner (the later
            # migrations' records put back after it)
            owner.execute("ALTER TABLE messages ALTER COLUMN content SET STATISTICS -1")
            owner.execute("ALTER TABLE fulltext_terms ALTER COLUMN term SET STATISTICS -1")
            assert {"messages.content", "fulltext_terms.term"} <= sampled(owner)
            number = next(n for n, m in enumerate(MIGRATIONS, start=1) if m.name == "m018_no_statistics_of_text")
            later = owner.execute("SELECT id, name, applied_at FROM _migrations WHERE id > %s", (number,)).fetchall()
            owner.execute("DELETE FROM _migrations WHERE id >= %s", (number,))
            assert apply_migrations(store.db, MIGRATIONS[:number]) == 1
            for row in later:
                owner.execute("INSERT INTO _migrations (id, name, applied_at) VALUES (%s, %s, %s)", row)
            assert sampled(owner, analyze=False) == set()  # cleared by the upgrade
            assert sampled(owner) == set()  # and not taken again
    finally:
        store.close()
