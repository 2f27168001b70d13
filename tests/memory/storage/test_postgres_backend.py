"""The Postgres backend's own parts: row-level security, the per-user write lock,
the full-text index, the vector index past its exact threshold, `coop check` and the configuration."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from coop.errors import ConfigError, StoreError

# -- the store ----------------------------------------------------------------------------------------------------

@pytest.fixture
def pg(postgres_url):
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(postgres_url)
    yield store
    store.close()


@pytest.mark.postgres
def test_row_level_security_keeps_a_users_handle_to_that_users_rows(pg, postgres_url):
    ana, bob = pg.user("ana"), pg.user("bob")
    ana.messages.add(ana.sessions.start(), "user", "ana's words about herons")
    bob.messages.add(bob.sessions.start(), "user", "bob's words about herons")
    # a statement that forgets its user filter still sees only the handle's user
    assert [r[0] for r in ana.db.execute("SELECT content FROM messages")] == ["ana's words about herons"]
    assert ana.db.execute("SELECT count(*) FROM messages WHERE user_id = 'bob'")[0][0] == 0
    with pytest.raises(StoreError, match="refused"):
        ana.db.execute("INSERT INTO users (id, created_at) VALUES ('mallory', 0)")
    assert sorted(pg.user_ids()) == ["ana", "bob"]
    checks = {f.name: f.severity for f in pg.check()}  # a role mapped to everyone ('*'): an operator's service
    assert checks["row-level security"] == "warning" and checks["schema"] == "ok" and checks["pgvector"] == "ok"


@pytest.mark.postgres
def test_a_users_writes_queue_behind_one_another_but_not_behind_another_users(pg):
    from coop.memory.storage.postgres.store import PgStore

    other = PgStore.open(pg.url)
    try:
        held = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with pg.user("ana").transaction():
                pg.user("ana").facts.add("Lives in Porto", category="location", key="city")
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(10)
        started = time.monotonic()
        other.user("bob").facts.add("Lives in Lyon", category="location", key="city")  # another user: no wait
        assert time.monotonic() - started < 2
        done = threading.Event()

        def second_device() -> None:
            other.user("ana").facts.add("Lives in Braga", category="location", key="city")
            done.set()

        writer = threading.Thread(target=second_device)
        writer.start()
        assert not done.wait(0.5), "a second write of the same user must wait for the first"
        release.set()
        holder.join(10)
        writer.join(10)
        assert done.is_set()
        active = [i.text for i in pg.user("ana").list_items("fact")]
        assert active == ["Lives in Braga"]  # the later write superseded the earlier, one active per key
    finally:
        other.close()


@pytest.mark.postgres
def test_full_text_follows_writes_updates_and_deletes_with_bm25_ranking(pg):
    ana = pg.user("ana")
    alone = [ana.messages.add(ana.sessions.start(), "user", text) for text in  # no neighbours: no context words
             ("a heron by the river", "a river, a river, and another river", "nothing to see here")]
    hits = ana.text.matches([], ["heron", "river"], kinds=("message",), limit=5)
    assert [h[1] for h in hits][:1] == [alone[0]]  # the rare word outweighs a common one said three times
    session = ana.sessions.start()
    ids = [ana.messages.add(session, "user", text) for text in ("the heron stood there", "and then it flew")]
    assert ids[1] in [h[1] for h in ana.text.matches([], ["stood"], kinds=("message",), limit=5)]  # by context
    fact = ana.facts.add("Keeps a heron called Gus").fact_id
    assert ("fact", fact) in {(k, i) for k, i, _ in ana.text.matches([], ["gus"], kinds=("fact",), limit=5)}
    ana.forget("message", ids[0])
    assert ids[0] not in [h[1] for h in ana.text.matches([], ["heron"], kinds=("message",), limit=5)]
    assert ana.db.scalar("SELECT count(*) FROM fulltext_postings WHERE kind = 'message' AND $1 = ANY(items)",
                         (ids[0],)) == 0
    # the message after the forgotten one held its words as context: it is indexed again without them
    assert ids[1] not in [h[1] for h in ana.text.matches([], ["stood"], kinds=("message",), limit=5)]


def _stored_vectors(memory, count: int, seed: int) -> tuple[list[int], np.ndarray]:
    """`count` messages of a new session, each with a random unit vector of 16 dimensions ("test-16")."""
    session = memory.sessions.start()
    ids = [memory.messages.add(session, "user", f"message {i}") for i in range(count)]
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(count, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    memory.vectors.store("message", ids, "test-16", matrix)
    return ids, matrix


def _owner_builds_the_indexes(owner_url: str) -> int:
    from coop.memory.storage.postgres.store import PgStore

    owner = PgStore.open(owner_url)
    try:
        return owner.build_vector_indexes()
    finally:
        owner.close()


@pytest.mark.postgres
def test_the_vector_index_past_the_exact_threshold_finds_what_exact_search_finds(pg, monkeypatch,
                                                                                postgres_url_owner):
    from coop.memory.storage.postgres import vector_index

    monkeypatch.setattr(vector_index, "EXACT_BELOW", 10)
    ana, bob = pg.user("ana"), pg.user("bob")
    _stored_vectors(ana, 60, seed=7)
    _stored_vectors(bob, 300, seed=8)
    query = np.random.default_rng(9).normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    assert not ana.vectors.has_index("test-16")  # a person's role may not add an index: searched exactly
    assert len(ana.vectors.nearest("test-16", 16, query, k=10)) == 10
    assert _owner_builds_the_indexes(postgres_url_owner) == 2
    assert ana.vectors.has_index("test-16") and bob.vectors.has_index("test-16")  # each user's own graph
    approximate = ana.vectors.nearest("test-16", 16, query, k=10)
    exact = ana.vectors.nearest("test-16", 16, query, k=10, exact=True)
    assert len(approximate) == 10, "the user's filter never leaves fewer than k"
    assert len({h.item_id for h in approximate} & {h.item_id for h in exact}) >= 9
    assert all(pg.user("ana").exists("message", h.item_id) for h in approximate)


# -- configuration ----------------------------------------------------------------------------------------------

def test_the_postgres_backend_needs_a_url_and_takes_coop_database_url():
    from coop.config.loading import build_config, resolve_store

    config = build_config({"memory": {"backend": "postgres"}})
    with pytest.raises(ConfigError, match="no server"):
        resolve_store(config, env={})
    assert resolve_store(config, env={"COOP_DATABASE_URL": "postgresql://coop@db/coop"}) == \
        ("postgres", "postgresql://coop@db/coop")
    with pytest.raises(ConfigError, match="postgresql://"):
        resolve_store(build_config({"memory": {"backend": "postgres", "url": "mysql://x"}}), env={})
    assert resolve_store(build_config({"memory": {"db_path": "/tmp/x.db"}}), env={}) == ("sqlite", "/tmp/x.db")


def test_a_refused_connection_is_one_line_with_a_hint_and_the_password_never_shown(run_cli, monkeypatch):
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", "postgresql://coop:hunter2@127.0.0.1:1/coop")
    result = run_cli("memory", "list")
    assert result.exit_code != 0
    assert "cannot reach the Postgres server" in result.stderr and "hunter2" not in result.stderr
    assert "COOP_DATABASE_URL" in result.stderr


@pytest.mark.postgres
def test_coop_check_reports_the_server_pgvector_and_the_schema(run_cli, monkeypatch, postgres_url):
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", postgres_url)
    result = run_cli("check", "--json")
    names = {c["name"]: c for c in result.json()["checks"]}
    assert "PostgreSQL 18" in names["postgres"]["message"]
    assert names["pgvector"]["message"].startswith("pgvector 0.8")
    assert names["schema"]["severity"] == "ok"


@pytest.mark.postgres
def test_a_connection_the_server_dropped_is_made_again(pg, postgres_server):
    import psycopg

    ana = pg.user("ana")
    ana.messages.add(ana.sessions.start(), "user", "before the drop")
    pid = pg.db.conn.info.backend_pid
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.2)
    assert [i.text for i in ana.list_items("message")] == ["before the drop"]  # a read: connected again
    ana.messages.add(ana.sessions.start(), "user", "after the drop")  # and a write
    assert pg.db.conn.info.backend_pid != pid


@pytest.mark.postgres
def test_a_forget_vacuums_so_the_text_leaves_the_tables_file(pg, postgres_server, postgres_url):
    import os

    import psycopg

    if getattr(postgres_server, "directory", None) is None:
        pytest.skip("needs the throwaway server's files (not a COOP_TEST_DATABASE_URL server)")
    ana = pg.user("ana")
    session = ana.sessions.start()
    for i in range(40):
        ana.messages.add(session, "user", f"an ordinary message, number {i}")
    marked = ana.messages.add(session, "user", "the marker ZQXWVU-4417 is here")
    for i in range(40):
        ana.messages.add(session, "user", f"a later message, number {i}")
    admin_url = postgres_server.url(postgres_url.rsplit("/", 1)[1])

    def in_messages_file() -> bool:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute("CHECKPOINT")
            relative = admin.execute("SELECT pg_relation_filepath('messages')").fetchone()[0]
        path = next(os.path.join(root, relative) for root, dirs, _ in os.walk(postgres_server.directory)
                    if os.path.exists(os.path.join(root, relative)))
        with open(path, "rb") as handle:
            return b"ZQXWVU" in handle.read()

    assert in_messages_file()
    ana.forget("message", marked)
    assert not in_messages_file(), "VACUUM after the forget removed the dead row from the table's pages"


@pytest.mark.postgres
def test_a_database_without_pgvector_is_one_line_with_the_statement_to_run(postgres_server, postgres_url, run_cli,
                                                                            monkeypatch):
    import psycopg
    from psycopg import sql

    name = postgres_url.rsplit("/", 1)[1] + "_bare"
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:  # no extension, owned by coop_app
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER coop_app").format(sql.Identifier(name)))
    try:
        monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
        monkeypatch.setenv("COOP_DATABASE_URL", postgres_url.rsplit("/", 1)[0] + "/" + name)
        result = run_cli("memory", "list")
        assert result.exit_code == 5
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert "cannot enable pgvector" in lines[0] and "CREATE EXTENSION vector" in result.stderr
        assert len(lines) <= 2  # the error and its hint
    finally:
        postgres_server.drop_database(name)


@pytest.mark.postgres
def test_a_search_does_not_wait_for_another_devices_write(pg, monkeypatch, postgres_url_owner):
    from coop.memory.storage.postgres import vector_index
    from coop.memory.storage.postgres.store import PgStore

    monkeypatch.setattr(vector_index, "EXACT_BELOW", 10)
    ana = pg.user("ana")
    ids, matrix = _stored_vectors(ana, 40, seed=3)
    assert _owner_builds_the_indexes(postgres_url_owner) == 1
    assert ana.vectors.has_index("test-16")  # the graph path, which sets its own search settings
    other = PgStore.open(pg.url)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with ana.transaction():
            ana.facts.add("Lives in Porto", category="location", key="city")
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        hits = other.user("ana").vectors.nearest("test-16", 16, matrix[0], k=5)
        assert time.monotonic() - started < 2 and hits[0].item_id == ids[0]
    finally:
        release.set()
        holder.join(10)
        other.close()


@pytest.mark.postgres
def test_a_float32_index_of_an_older_coop_is_searched_until_the_owner_replaces_it(pg, monkeypatch,
                                                                                 postgres_url_owner):
    """Indexes made before halfvec points are kept and searched as they are; `coop admin index` builds the halfvec
    one beside it, records it, drops the old one, and the search finds the same items."""
    from coop.memory.storage.postgres import vector_index
    from coop.memory.storage.postgres.store import PgStore

    monkeypatch.setattr(vector_index, "EXACT_BELOW", 10)
    ana = pg.user("ana")
    ids, matrix = _stored_vectors(ana, 80, seed=5)
    owner = PgStore.open(postgres_url_owner)
    try:
        old = "embedding_points_hnsw_" + "0" * 20  # as the older coop named and built it
        owner.db.run(f"CREATE INDEX {old} ON embedding_points USING hnsw ((point::vector(16)) vector_cosine_ops) "
                     "WHERE embedder = 'test-16' AND user_id = 'ana'")
        owner.db.run("INSERT INTO user_vector_indexes (embedder, user_id, name, dims) VALUES ('test-16', 'ana', %s, "
                     "16)", (old,))
        before = [h.item_id for h in ana.vectors.nearest("test-16", 16, matrix[3], k=5)]
        assert before[0] == ids[3]
        assert owner.build_vector_indexes() == 1
        names = [r[0] for r in owner.db.run("SELECT indexname FROM pg_indexes WHERE tablename = 'embedding_points' "
                                            "AND indexname LIKE 'embedding_points_hnsw%'")]
        assert names == [vector_index.user_index_name("test-16", "ana")]
        assert vector_index.index_form(names[0]) == "halfvec"
        assert owner.build_vector_indexes() == 0  # nothing left to do
    finally:
        owner.close()
    assert [h.item_id for h in ana.vectors.nearest("test-16", 16, matrix[3], k=5)][:1] == before[:1]
