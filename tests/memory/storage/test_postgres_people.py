"""People on a Postgres server are who the server says they are (issue 42, migration m015, `postgres/people.py`):
a person's login role reaches the memory the tables' owner mapped it to and nothing else, whatever it sets, names
or asks for; it cannot switch the wall off or remap itself; coop will not chat as the owner; `coop check` says
which is which. Two people, Ana and Bob, each with a role of their own, made by `coop admin` as the owner."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from coop.errors import NotFoundError, StoreError, UsageError

MARKER = "heronkeeper"  # a word only Ana's memory holds
# Every table that holds a user's rows (m015's `_OWN_ROWS`), and the column naming the user.
OWN_ROWS = {"users": "id", "sessions": "user_id", "messages": "user_id", "facts": "user_id",
            "fact_history": "user_id", "fact_sources": "user_id", "summaries": "user_id", "forgotten": "user_id",
            "memory_jobs": "user_id", "embeddings": "user_id", "embedding_points": "user_id",
            "embedding_counts": "user_id", "user_vector_indexes": "user_id", "fulltext_items": "user_id",
            "fulltext_terms": "user_id", "fulltext_postings": "user_id", "fulltext_stats": "user_id",
            "refusals": "user_id", "id_aliases": "user_id"}


@pytest.fixture
def people(postgres_server: Any, postgres_owner_url: str, run_cli, monkeypatch, hash_embedder) -> Iterator[dict]:
    """A server with coop's tables made by the owner, and two people's roles mapped by `coop admin person add`;
    Ana's memory holds a fact, a message (embedded, so every table has her rows) and a summary."""
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.storage.items import Refusal
    from coop.memory.storage.postgres.store import PgStore

    database = postgres_owner_url.rsplit("/", 1)[1]
    suffix = uuid.uuid4().hex[:8]
    roles = {"ana": f"ana_{suffix}", "bob": f"bob_{suffix}"}
    PgStore.open(postgres_owner_url).close()  # the owner makes the schema
    for user, role in roles.items():
        postgres_server.create_role(role)
        added = run_cli("admin", "person", "add", user, "--role", role, "--url", postgres_owner_url)
        assert added.exit_code == 0, added.stderr
    urls = {user: postgres_server.role_url(role, database) for user, role in roles.items()}
    store = PgStore.open(urls["ana"])
    ana = store.user("ana")
    session = ana.sessions.start(f"{MARKER} notes")
    ana.messages.add(session, "user", f"my {MARKER} password is in the blue box")
    fact = ana.facts.add(f"Is a {MARKER}", category="hobby", key="birds").fact_id
    ana.summaries.add(f"Ana talked about being a {MARKER}", session_id=session)
    ana.refusals.keep([Refusal(reason="mood", what="the user did not state it", source="extraction")])
    embed_pending(ana, hash_embedder)
    store.close()
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    yield {"urls": urls, "roles": roles, "owner": postgres_owner_url, "fact": fact}


def _raw(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


@pytest.mark.postgres
@pytest.mark.parametrize("setting", ["ana", "*", "", "bob"])
def test_another_role_reads_and_changes_nothing_of_anas_whatever_it_sets(people, setting):
    """Bob's role, with ordinary table rights, sets `coop.user_id` to anything: Ana's rows are not there."""
    import psycopg

    with _raw(people["urls"]["bob"]) as conn:
        conn.execute("SELECT set_config('coop.user_id', %s, false)", (setting,))
        for table, column in OWN_ROWS.items():
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = 'ana'").fetchone()[0] == 0, table
        assert conn.execute("SELECT count(*) FROM messages WHERE content LIKE %s", (f"%{MARKER}%",)).fetchone()[0] \
            == 0
        assert conn.execute("UPDATE facts SET value = 'changed' WHERE user_id = 'ana'").rowcount == 0
        assert conn.execute("DELETE FROM messages WHERE user_id = 'ana'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # a row of Ana's is refused by the policy
            conn.execute("INSERT INTO users (id, created_at) VALUES ('ana2', 0)")
    with _raw(people["owner"]) as owner:  # and Ana's rows are all still there
        assert owner.execute("SELECT count(*) FROM facts WHERE user_id = 'ana' AND value LIKE %s",
                             (f"%{MARKER}%",)).fetchone()[0] == 1


@pytest.mark.postgres
def test_every_table_that_names_a_user_is_behind_the_wall(people):
    """A table a later migration adds with a user column is listed above and has the reach policy: the list the
    test before reads cannot fall behind the schema."""
    with _raw(people["owner"]) as owner:
        named = {table for (table,) in owner.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
            "WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND a.attname = 'user_id' "
            "AND NOT a.attisdropped")} | {"users"}
        named.discard("coop_people")  # the mapping: no person's role reads it at all (the test below)
        assert named == set(OWN_ROWS)
        for table in named:
            secured, policy = owner.execute(
                "SELECT c.relrowsecurity, p.polqual IS NOT NULL AND pg_get_expr(p.polqual, p.polrelid) LIKE "
                "'%%coop_reachable()%%' FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid "
                "WHERE c.oid = %s::regclass", (table,)).fetchone()
            assert secured and policy, table


@pytest.mark.postgres
@pytest.mark.parametrize("statement", [
    "ALTER TABLE facts DISABLE ROW LEVEL SECURITY",
    "DROP POLICY own_rows ON facts",
    "INSERT INTO coop_people (role_name, user_id) VALUES (session_user, 'ana')",
    "UPDATE coop_people SET user_id = '*'",
    "SELECT * FROM coop_people",
    "SET ROLE coop_owner",
    "CREATE INDEX mine ON facts (value)",
])
def test_a_persons_role_cannot_take_the_wall_down_or_remap_itself(people, statement):
    import psycopg

    with _raw(people["urls"]["bob"]) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
        conn.execute("SELECT set_config('coop.user_id', '*', false)")
        assert conn.execute("SELECT coop_reachable()").fetchone()[0] == ["bob"]
        assert conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0


@pytest.mark.postgres
@pytest.mark.parametrize("named", ["ana", "*", "ANA", "ana "])
def test_any_user_named_from_bobs_role_is_refused_with_a_hint(people, run_cli, monkeypatch, named):
    monkeypatch.setenv("COOP_DATABASE_URL", people["urls"]["bob"])
    for command in (["memory", "list"], ["memory", "search", MARKER], ["memory", "add", "Likes herons"]):
        result = run_cli("--user", named, *command)
        assert result.exit_code != 0
        assert MARKER not in result.stdout
        assert "error:" in result.stderr and "hint:" in result.stderr
    own = run_cli("memory", "list")  # no --user: the one person the role serves
    assert own.exit_code == 0 and MARKER not in own.stdout


@pytest.mark.postgres
def test_the_store_refuses_a_handle_on_a_user_the_role_does_not_reach(people):
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(people["urls"]["bob"])
    try:
        assert store.sole_user() == "bob" and store.user_ids() == []
        for user in ("ana", "*", "mallory"):
            with pytest.raises(UsageError, match="may reach only the memory of bob"):
                store.user(user)
        bob = store.user("bob")
        with pytest.raises(NotFoundError):  # Ana's fact id, asked for by Bob's handle
            bob.get("fact", people["fact"])
        assert not bob.exists("fact", people["fact"])
    finally:
        store.close()


@pytest.mark.postgres
def test_crafted_mcp_ids_from_bobs_role_reach_nothing_of_anas(people):
    from coop.memory.storage.postgres.store import PgStore
    from tests.mcp.test_mcp import call, make_server, text

    store = PgStore.open(people["urls"]["bob"])
    try:
        server, _ = make_server(store.user("bob"), allow_writes=True)
        fact = f"f{people['fact']}"
        for name, arguments in (("memory_get", {"id": fact}), ("memory_search", {"query": MARKER}),
                                ("memory_forget", {"id": fact, "reason": "test"}),
                                ("memory_profile", {}), ("memory_timeline", {"id": "m1"})):
            assert MARKER not in text(call(server, name, arguments)), name
    finally:
        store.close()
    with _raw(people["owner"]) as owner:
        assert owner.execute("SELECT count(*) FROM facts WHERE id = %s", (people["fact"],)).fetchone()[0] == 1


@pytest.mark.postgres
def test_coop_will_not_chat_or_remember_as_the_owner_and_check_says_why(people, run_cli, monkeypatch):
    monkeypatch.setenv("COOP_DATABASE_URL", people["owner"])
    for command in (["memory", "list"], ["memory", "add", "Likes herons"], ["memory", "search", MARKER]):
        result = run_cli(*command)
        assert result.exit_code == 2, (command, result.stderr)
        assert "owns coop's tables" in result.stderr and "coop admin person add" in result.stderr
    checked = run_cli("check", "--json")
    assert checked.exit_code != 0
    assert "owns coop's tables" in checked.stdout
    monkeypatch.setenv("COOP_DATABASE_URL", people["urls"]["ana"])
    mine = run_cli("memory", "list")
    assert mine.exit_code == 0 and MARKER in mine.stdout


@pytest.mark.postgres
def test_coop_check_says_whose_memory_the_role_reaches(people, postgres_server, run_cli, monkeypatch):
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(people["urls"]["ana"])
    try:
        wall = {f.name: f for f in store.check()}["row-level security"]
        assert wall.severity == "ok" and wall.message.endswith("reaches only the memory of ana")
    finally:
        store.close()
    stranger = f"stranger_{uuid.uuid4().hex[:8]}"
    postgres_server.create_role(stranger)
    with _raw(people["owner"]) as owner:  # table rights, as a careless grant gives them, but no mapping
        owner.execute(f"GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {stranger}")
    database = people["owner"].rsplit("/", 1)[1]
    store = PgStore.open(postgres_server.role_url(stranger, database), migrate=False)
    try:
        wall = {f.name: f for f in store.check()}["row-level security"]
        assert wall.severity == "error" and "mapped to no one" in wall.message
        with pytest.raises(UsageError, match="mapped to no one"):
            store.user("ana")
    finally:
        store.close()


@pytest.mark.postgres
def test_the_owner_maps_lists_and_unmaps_people_and_an_unmapped_role_loses_its_rights(people, run_cli):
    listed = run_cli("admin", "person", "list", "--url", people["owner"])
    assert listed.exit_code == 0
    assert [line.split() for line in listed.stdout.splitlines()] == sorted(
        [[role, user] for user, role in people["roles"].items()])
    assert run_cli("admin", "person", "remove", "bob", "--url", people["owner"]).exit_code == 0
    import psycopg

    with _raw(people["urls"]["bob"]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT count(*) FROM facts")
    again = run_cli("admin", "person", "remove", "bob", "--url", people["owner"])
    assert again.exit_code == 2 and "no role is mapped" in again.stderr
    not_owner = run_cli("admin", "person", "add", "carol", "--role", people["roles"]["ana"], "--url",
                        people["urls"]["ana"])
    assert not_owner.exit_code != 0 and "does not own coop's tables" in not_owner.stderr
    owner_role = run_cli("admin", "person", "add", "carol", "--role", "coop_owner", "--url", people["owner"])
    assert owner_role.exit_code == 2 and "owns coop's tables" in owner_role.stderr


@pytest.mark.postgres
def test_a_persons_role_on_an_older_schema_is_told_who_upgrades_it(people):
    from coop.memory.storage.migrations import SCHEMA_VERSION
    from coop.memory.storage.postgres.store import PgStore

    with _raw(people["owner"]) as owner:
        owner.execute("DELETE FROM _migrations WHERE id = %s", (SCHEMA_VERSION,))  # as if a newer coop came out
    with pytest.raises(StoreError, match="this coop needs") as refused:
        PgStore.open(people["urls"]["bob"])
    assert "coop admin migrate" in (refused.value.hint or "")


@pytest.mark.postgres
def test_admin_migrate_grants_a_table_made_since_and_admin_can_create_a_login_role(people, postgres_server, run_cli):
    """`coop admin migrate` gives every mapped role its rights on a table a later migration made (one made here
    by the owner stands for it); `person add --create-role --password-stdin` makes the login role (as a role that
    may: the superuser here), and `coop admin index` runs as the owner."""
    with _raw(people["owner"]) as owner:
        owner.execute("CREATE TABLE later_notes (user_id TEXT NOT NULL, note TEXT)")
        owner.execute("ALTER TABLE later_notes ENABLE ROW LEVEL SECURITY")
        owner.execute("CREATE POLICY own_rows ON later_notes USING (ARRAY[user_id, '*'] && (SELECT coop_reachable()))")
    assert run_cli("admin", "migrate", "--url", people["owner"]).exit_code == 0
    with _raw(people["urls"]["bob"]) as conn:
        conn.execute("INSERT INTO later_notes VALUES ('bob', 'granted')")
        assert conn.execute("SELECT note FROM later_notes").fetchall() == [("granted",)]
    database = people["owner"].rsplit("/", 1)[1]
    carol = f"carol_{uuid.uuid4().hex[:8]}"
    made = run_cli("admin", "person", "add", "carol", "--role", carol, "--create-role", "--password-stdin",
                   "--url", postgres_server.url(database), input="s3cret-pass\n")
    assert made.exit_code == 0, made.stderr
    with _raw(postgres_server.admin_url) as admin:
        assert admin.execute("SELECT rolcanlogin, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = %s",
                             (carol,)).fetchone() == (True, True)
    with _raw(postgres_server.role_url(carol, database)) as conn:
        assert conn.execute("SELECT coop_reachable()").fetchone()[0] == ["carol"]
    built = run_cli("admin", "index", "--url", people["owner"])
    assert built.exit_code == 0 and "vector indexes built" in built.stderr


@pytest.mark.postgres
def test_the_planner_counts_a_persons_rows_through_the_wall(people):
    """The policy says "reachable" in a form the planner estimates (m020): through Ana's role, her rows are
    counted near what they are, not one in two hundred. A plan made for a handful of rows reads a large memory's
    vectors in order of distance, one by one, instead of walking the HNSW graph."""
    import json

    rows = 3000
    with _raw(people["owner"]) as owner:
        owner.execute("INSERT INTO messages (user_id, role, content, created_at) "
                      "SELECT 'ana', 'user', 'note ' || n, n FROM generate_series(1, %s) AS n", (rows,))
        owner.execute("ANALYZE messages")
    with _raw(people["urls"]["ana"]) as conn:
        conn.execute("SELECT set_config('coop.user_id', 'ana', false)")
        assert conn.execute("SELECT count(*) FROM messages WHERE user_id = 'ana'").fetchone()[0] == rows + 1
        [plan] = conn.execute("EXPLAIN (FORMAT JSON) SELECT id FROM messages WHERE user_id = 'ana'").fetchone()[0]
        estimated = (plan if isinstance(plan, dict) else json.loads(plan))["Plan"]["Plan Rows"]
        assert estimated >= rows / 10, estimated
