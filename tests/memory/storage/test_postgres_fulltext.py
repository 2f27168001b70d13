"""Postgres full text is written by the write and only read by a search (migration m014, `postgres/text_index.py`):
a role with SELECT rights alone, in read-only transactions (as on a replica), runs the read commands; a message is
found by its words as soon as it is written, and a change to it re-indexes the two after it; a forgotten word is in
no index row once the forget commits; a database at m013's schema, with rows, upgrades and every item is found;
and both engines find a Japanese fact by a word of it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from coop.memory.retrieval.search import search


def _texts(result: Any) -> list[str]:
    return [hit.item.text for hit in result.hits]


def _words(memory: Any, word: str, kind: str = "message") -> list[int]:
    """The ids of the items of `kind` the index matches with `word`, in id order."""
    return sorted(item_id for _, item_id, _ in memory.text.matches([], [word], kinds=(kind,), limit=10))


def _traces(db: Any, stem: str, item_id: int) -> list[str]:
    """The full-text tables that still hold a term, or a message's id."""
    by_term = {"fulltext_terms": "SELECT count(*) FROM fulltext_terms WHERE term = $1",
               "fulltext_postings": "SELECT count(*) FROM fulltext_postings WHERE term = $1",
               "fulltext_items": "SELECT count(*) FROM fulltext_items WHERE $1 = ANY(tsvector_to_array(words))"}
    by_item = {"fulltext_postings ids": "SELECT count(*) FROM fulltext_postings WHERE kind = 'message' "
                                        "AND $1 = ANY(items)",
               "fulltext_items ids": "SELECT count(*) FROM fulltext_items WHERE kind = 'message' AND item_id = $1"}
    return ([name for name, sql in by_term.items() if db.scalar(sql, (stem,))] +
            [name for name, sql in by_item.items() if db.scalar(sql, (item_id,))])


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Any]:
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(postgres_url)
    yield store
    store.close()


@pytest.fixture
def reader_url(postgres_server: Any, postgres_url: str) -> Iterator[str]:
    """The database of `postgres_url` reached as a role with SELECT rights alone, every transaction read-only (what
    a read replica allows), mapped to ana's memory."""
    import psycopg
    from psycopg import sql

    role = f"coop_reader_{uuid.uuid4().hex[:8]}"
    database = urlsplit(postgres_url).path.lstrip("/")
    admin = postgres_server.url(database)
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
        try:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test server's role may not create roles")
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(sql.Identifier(role)))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(role)))
        conn.execute("INSERT INTO coop_people (role_name, user_id) VALUES (%s, 'ana')", (role,))  # ana's reader
    parts = urlsplit(postgres_url)
    yield parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _written(store: Any) -> dict[str, Any]:
    """A user's memory with a few of each kind of item."""
    ana = store.user("ana")
    session = ana.sessions.start("Birds")
    said = ana.messages.add(session, "user", "I watched a grey heron fishing by the river this morning")
    ana.messages.add(session, "assistant", "Herons stand very still before they strike")
    fact = ana.facts.add("Watches herons at dawn", category="hobby", key="birds").fact_id
    ana.summaries.add("Ana talked about the heron she watches by the river", session_id=session)
    return {"session": session, "message": said, "fact": fact}


@pytest.mark.postgres
def test_a_select_only_role_in_read_only_transactions_runs_the_read_commands(pg, reader_url, run_cli, monkeypatch):
    from coop.memory.storage.postgres.store import PgStore

    made = _written(pg)
    reader = PgStore.open(reader_url)  # up to date: opening only reads the schema's history
    try:
        ana = reader.user("ana")
        assert reader.db.run("SHOW default_transaction_read_only")[0][0] == "on"
        assert {hit.item.item_id for hit in search(ana, "heron river", embedder=None).hits} >= {
            made["message"], made["fact"]}
        assert ana.text.matches([], ["heron"], kinds=("fact",), limit=5)[0][1] == made["fact"]
        assert ana.text.affordable_terms(["heron", "river"], 1) in (["heron"], ["river"])
        assert ana.text.rare_word_score("message") == 0.0
        assert {f.name: f.severity for f in reader.check()}["full text"] == "ok"
    finally:
        reader.close()
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", reader_url)
    for command in (["memory", "search", "heron"], ["memory", "list"], ["memory", "show", f"m{made['message']}"],
                    ["memory", "stats"], ["memory", "history", f"f{made['fact']}"],
                    ["memory", "why", f"f{made['fact']}"], ["memory", "recall", "What do I watch by the river?"]):
        result = run_cli(*command, "--user", "ana")
        assert result.exit_code == 0, (command, result.stderr)
    assert run_cli("memory", "add", "Likes herons", "--user", "ana").exit_code != 0  # and it can write nothing


@pytest.mark.postgres
def test_a_search_writes_nothing(pg):
    """The same search in a READ ONLY transaction on the writer's own connection: any write would be refused."""
    _written(pg)
    ana = pg.user("ana")
    ana.db.run("SET default_transaction_read_only = on")
    try:
        assert _texts(search(ana, "heron", embedder=None))
    finally:
        ana.db.run("SET default_transaction_read_only = off")


@pytest.mark.postgres
def test_a_message_is_found_at_once_and_a_change_to_it_reindexes_the_next_two(pg):
    ana = pg.user("ana")
    session = ana.sessions.start()
    ids = [ana.messages.add(session, "user", text) for text in
           ("the heron stood there", "and then it flew", "far over the water", "it came back at noon")]
    assert _words(ana, "heron") == ids[:3]  # its own words, then as the context of the two after it
    ana.db.execute("UPDATE messages SET content = 'the egret stood there' WHERE id = $1", (ids[0],))
    assert _words(ana, "heron") == []
    assert _words(ana, "egret") == ids[:3]
    where = ana.db.run("SELECT ts_filter(words, '{a}') @@ 'egret', ts_filter(words, '{b}') @@ 'egret' "
                       "FROM fulltext_items WHERE kind = 'message' AND item_id = ANY(%s) ORDER BY item_id", (ids[:3],))
    assert where == [(True, False), (False, True), (False, True)]  # its own word (A), their context's (B)
    ana.forget("message", ids[1])  # the two after it lose its words, and gain the one before it
    assert _words(ana, "flew") == []
    assert _words(ana, "egret") == [ids[0], ids[2], ids[3]]
    monday = ana.messages.add(ana.sessions.start(), "user", "lunch", created_at=1683547200)  # 8 May 2023, noon UTC
    assert _words(ana, "monday") == [monday]  # and the day it was written


@pytest.mark.postgres
def test_a_forgotten_word_is_in_no_index_row_once_the_forget_commits(pg):
    ana = pg.user("ana")
    session = ana.sessions.start()
    secret = ana.messages.add(session, "user", "my locker code is zanzibarquux")
    after = [ana.messages.add(session, "user", text) for text in ("noted", "anything else", "no")]
    assert _words(ana, "zanzibarquux") == [secret, *after[:2]]
    assert len(_traces(ana.db, "zanzibarquux", secret)) == 5
    ana.forget("message", secret)
    assert _traces(ana.db, "zanzibarquux", secret) == []
    assert _words(ana, "zanzibarquux") == []
    stats = ana.db.run("SELECT docs FROM fulltext_stats WHERE user_id = 'ana' AND kind = 'message'")
    assert stats[0][0] == 3


@pytest.mark.postgres
def test_a_forgotten_fact_leaves_the_index_in_the_forgets_own_transaction(pg):
    ana = pg.user("ana")
    fact = ana.facts.add("Keeps a heron called Gusquatch").fact_id
    with ana.transaction():
        ana.forget("fact", fact)
        assert ana.db.scalar("SELECT count(*) FROM fulltext_terms WHERE term = 'gusquatch'") == 0
        assert ana.db.scalar("SELECT count(*) FROM fulltext_items WHERE kind = 'fact'") == 0


def _spans_hold_their_items(db: Any) -> bool:
    """Every sealed postings row (m021) knows the lowest and highest id it holds, and holds none outside them."""
    return db.scalar("SELECT count(*) FROM fulltext_postings p WHERE chunk <> 0 AND cardinality(items) > 0 AND ("
                     "lowest IS NULL OR highest IS NULL OR EXISTS (SELECT 1 FROM unnest(p.items) AS i "
                     "WHERE i < p.lowest OR i > p.highest))") == 0


def _postings_rows_fetched(db: Any) -> int:
    """Rows of `fulltext_postings` read so far in this database (the server's statistics, flushed first)."""
    db.run("SELECT pg_stat_force_next_flush()")
    return db.scalar("SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) FROM pg_stat_user_tables "
                     "WHERE relname = 'fulltext_postings'")


@pytest.mark.postgres
def test_a_forget_reads_only_the_postings_rows_that_can_hold_the_item(pg):
    """A word in many sealed rows of 64: forgetting one item reads the word's open row and the sealed row whose span
    holds the item's id, not every row of the word (m021), whichever of the item's ids is forgotten, and the index
    keeps its spans through writes, forgets and a rebuild."""
    ana = pg.user("ana")
    facts = [ana.facts.add(f"Counted heron {n}").fact_id for n in range(64 * 12 + 5)]
    rows = ana.db.scalar("SELECT count(*) FROM fulltext_postings WHERE term = 'heron'")
    assert rows == 13 and _spans_hold_their_items(ana.db)
    for fact in (facts[3], facts[64 * 6 + 10], facts[-2]):  # in the first, a middle and the open row
        before = _postings_rows_fetched(ana.db)
        ana.forget("fact", fact)
        fetched = _postings_rows_fetched(ana.db) - before
        assert fetched <= 4 * 3, fetched  # its three terms ("counted", "heron", its number), a few reads each
        assert _words(ana, f"{facts.index(fact)}", "fact") == []
    assert ana.db.scalar("SELECT sum(cardinality(items)) FROM fulltext_postings WHERE term = 'heron'") == \
        len(facts) - 3
    assert _spans_hold_their_items(ana.db)
    pg.rebuild_fulltext()
    assert _spans_hold_their_items(ana.db)
    assert ana.db.scalar("SELECT count(*) FROM fulltext_postings a JOIN fulltext_postings b ON a.term = b.term "
                         "AND a.kind = b.kind AND a.user_id = b.user_id AND a.chunk < b.chunk "
                         "AND a.lowest <= b.highest AND b.lowest <= a.highest") == 0  # cut in id order


@pytest.mark.postgres
def test_facts_just_written_are_searched_by_reading_each_posting_once(pg):
    """A memory just written has no statistics until autovacuum analyzes it, so the planner takes a user's facts
    for one row: the fact leg's filter of active facts must not make it read the word's postings once per fact
    (a fresh memory of 1,000 facts took 0.8 s a search so). Archived facts are still never found."""
    ana = pg.user("ana")
    facts = [ana.facts.add(f"Counted heron {n}").fact_id for n in range(300)]
    ana.facts.archive(facts[7], reason="test")
    before = _postings_rows_fetched(ana.db)
    found = sorted(item for _, item, _ in ana.text.matches([], ["heron"], kinds=("fact",), limit=1000))
    fetched = _postings_rows_fetched(ana.db) - before
    assert found == sorted(set(facts) - {facts[7]})
    rows = ana.db.scalar("SELECT count(*) FROM fulltext_postings WHERE kind = 'fact'")
    assert fetched <= rows, (fetched, rows)  # at worst each row once (300 times each, before)


@pytest.mark.postgres
def test_a_database_at_m013_with_rows_upgrades_and_every_item_is_found(postgres_owner_url):
    from coop.memory.storage.migrations import MIGRATIONS, SCHEMA_VERSION, apply_migrations, schema_version
    from coop.memory.storage.postgres.connection import Link, PgDatabase, connect
    from coop.memory.storage.postgres.store import PgStore

    db = PgDatabase(Link(connect(postgres_owner_url), postgres_owner_url))
    try:
        apply_migrations(db, MIGRATIONS[:13])
        db.run("INSERT INTO users (id, created_at) VALUES ('ana', 1), ('bob', 1)")
        session = db.run("INSERT INTO sessions (user_id, started_at, last_activity_at) VALUES ('ana', 1, 1) "
                         "RETURNING id")[0][0]
        for n, text in enumerate(["We hiked the Dolomites in June", "The via ferrata was scary", "Lunch at a rifugio",
                                  "東京に住んでいます"]):
            db.run("INSERT INTO messages (user_id, session_id, role, content, created_at) "
                   "VALUES ('ana', %s, 'user', %s, %s)", (session, text, 1_700_000_000 + n))
        db.run("INSERT INTO messages (user_id, role, content, created_at) VALUES ('bob', 'user', 'Bob hikes too', 1)")
        db.run("INSERT INTO facts (user_id, value, source, content_hash, created_at, updated_at) "
               "VALUES ('ana', 'Climbs via ferratas', 'user', 'h', 1, 1)")
        db.run("INSERT INTO summaries (user_id, session_id, text, created_at) "
               "VALUES ('ana', %s, 'A hike in the Dolomites', 2)", (session,))
        assert db.run("SELECT count(*) FROM fulltext_pending")[0][0] == 7  # m013's queue, never indexed
    finally:
        db.close()
    store = PgStore.open(postgres_owner_url)
    try:
        assert schema_version(store.db) == SCHEMA_VERSION
        assert not store.db.run("SELECT 1 FROM pg_tables WHERE tablename IN ('fulltext_pending', 'fulltext_docs')")
        ana = store.user("ana")
        assert _texts(search(ana, "rifugio", embedder=None, kinds=("message",)))[0] == "Lunch at a rifugio"
        assert _texts(search(ana, "ferrata", embedder=None, kinds=("fact",))) == ["Climbs via ferratas"]
        assert _texts(search(ana, "Dolomites", embedder=None, kinds=("summary",))) == ["A hike in the Dolomites"]
        assert _texts(search(ana, "東京", embedder=None, kinds=("message",))) == ["東京に住んでいます"]
        assert _texts(search(store.user("bob"), "hikes", embedder=None)) == ["Bob hikes too"]
        assert ana.db.scalar("SELECT docs FROM fulltext_stats WHERE user_id = 'ana' AND kind = 'message'") == 4
    finally:
        store.close()


def test_both_engines_find_a_japanese_fact_and_message_by_a_word_of_it(memory):
    memory.facts.add("東京タワーの近くに住んでいます")
    memory.facts.add("京都の東に行きました")  # 東 and 京, but not side by side
    memory.messages.add(memory.sessions.start(), "user", "昨日は京都で抹茶を飲みました")
    assert _texts(search(memory, "東京", embedder=None, kinds=("fact",))) == ["東京タワーの近くに住んでいます"]
    assert _texts(search(memory, "タワー", embedder=None, kinds=("fact",))) == ["東京タワーの近くに住んでいます"]
    assert _texts(search(memory, "抹茶", embedder=None, kinds=("message",))) == ["昨日は京都で抹茶を飲みました"]


@pytest.mark.postgres
def test_coop_check_finds_the_index_out_of_step_and_reindex_mends_it(pg, run_cli, monkeypatch, postgres_url):
    made = _written(pg)
    pg.db.run("SELECT coop_fulltext_drop('message', %s)", (made["message"],))
    assert {f.name: f.severity for f in pg.check()}["full text"] == "warning"
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", postgres_url)
    assert run_cli("memory", "reindex").exit_code == 0
    assert {f.name: f.severity for f in pg.check()}["full text"] == "ok"
    assert made["message"] in _words(pg.user("ana"), "fishing")


def _index_rows(db: Any) -> dict[str, Any]:
    """Every user's full-text index as sets and counts that do not depend on how its rows were cut or ordered."""
    postings = db.run("SELECT user_id, kind, term, unnest(items), unnest(own), unnest(context), unnest(terms) "
                      "FROM fulltext_postings")
    return {"postings": sorted(postings),
            "terms": sorted(db.run("SELECT user_id, kind, term, docs FROM fulltext_terms")),
            "stats": sorted(db.run("SELECT user_id, kind, docs, terms FROM fulltext_stats")),
            "items": sorted(db.run("SELECT user_id, kind, item_id, terms, words::text FROM fulltext_items")),
            "oversized": db.scalar("SELECT count(*) FROM fulltext_postings WHERE cardinality(items) > 64")}


@pytest.mark.postgres
def test_the_index_rebuilt_in_bulk_is_the_index_the_writes_made(pg):
    """`coop_fulltext_rebuild` (m014's upgrade, `rebuild_fulltext`) and the triggers are two ways to one index: a
    common word held by more items than one postings row takes, over two users, messages, facts and summaries."""
    for user, count in (("ana", 150), ("ben", 70)):
        memory = pg.user(user)
        session = memory.sessions.start()
        for n in range(count):
            memory.messages.add(session, "user", f"the heron number {n} stood by a river {'reed' * (n % 3)}")
        memory.facts.add(f"{user} counts herons")
        memory.summaries.add(f"{user} talked about herons", session_id=session)
    written = _index_rows(pg.db)
    assert written["oversized"] == 0 and len({row[:3] for row in written["postings"]}) > 10
    assert pg.rebuild_fulltext()["fulltext_postings"] == 150 + 70 + 2 * 2
    assert _index_rows(pg.db) == written
