"""`coop memory migrate`: a SQLite memory copied to a Postgres server and back, with its vectors, verified, and
rerunnable without doubling anything; export and import on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from coop.memory.growth.embedding import embed_pending
from coop.memory.storage.copying import Copying
from coop.memory.storage.facts import FactFields
from coop.memory.storage.postgres.store import PgStore
from coop.memory.storage.store import MemoryStore, UserMemory

pytestmark = pytest.mark.postgres

T = 1_732_000_000.0
TABLES = ("sessions", "messages", "facts", "fact_history", "fact_sources", "summaries", "forgotten", "embeddings")


def _fill(memory: UserMemory, embedder, word: str) -> None:
    """Two sessions of messages (tool fields, an origin, a source id, consolidated ones), a fact superseded by a
    newer one (history), a source with its quote, a summary, a forgotten item, the review mark, and vectors."""
    trip = memory.sessions.start("Trip planning", started_at=T)
    said = memory.messages.add(trip, "user", f"I moved to Lyon last spring. The {word} market is great.",
                               created_at=T + 1, consolidated_at=T + 50)
    memory.messages.add(trip, "assistant", "", created_at=T + 2, tool_calls='[{"id": "c1", "name": "search"}]')
    memory.messages.add(trip, "tool", "results: three markets", created_at=T + 3, tool_name="search",
                        tool_call_id="c1")
    reply = memory.messages.add(trip, "assistant", "Lyon has fine markets.", created_at=T + 4, origin="host",
                                external_id=f"chatgpt:{word}-4")
    other = memory.sessions.start("Bank", started_at=T + 100)
    secret = memory.messages.add(other, "user", "my bank pin is 4321", created_at=T + 101)
    memory.messages.add(other, "user", "What should I cook tonight?", created_at=T + 102)
    paris = memory.facts.add("lives in Paris", category="location", key="city").fact_id
    lyon = memory.facts.supersede(paris, FactFields.checked("lives in Lyon", category="location", key="city"),
                                  reason="moved").fact_id
    memory.sources.link(lyon, [said], quote="I moved to Lyon")
    memory.facts.add(f"likes the {word} market", category="preferences")
    memory.summaries.add(f"They moved to Lyon and like its {word} market.", session_id=trip, span=(said, reply),
                         created_at=T + 60)
    memory.forget("message", secret)
    memory.sources.mark_reviewed(T + 70)
    embed_pending(memory, embedder)


def _local(coop_home: Path) -> MemoryStore:
    return MemoryStore.open(str(coop_home / "coop.db"))


def _counts(memory: UserMemory) -> dict[str, int]:
    return {table: int(memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = $1", (memory.user_id,)))
            for table in TABLES}


def _by_text(memory: UserMemory, kind: str) -> dict[str, int]:
    table, column = {"message": ("messages", "content"), "fact": ("facts", "value"),
                     "summary": ("summaries", "text")}[kind]
    return {row[1]: int(row[0]) for row in memory.db.execute(
        f"SELECT id, {column} FROM {table} WHERE user_id = $1", (memory.user_id,))}


def _vectors(memory: UserMemory) -> dict[tuple[str, str, str], tuple[bytes, bytes | None]]:
    """Every vector of the user by (embedder, kind, item text), as stored (wholes and parts)."""
    texts = {kind: {item_id: text for text, item_id in _by_text(memory, kind).items()}
             for kind in ("message", "fact", "summary")}
    return {(embedder, kind, texts[kind][item_id]): (vector, parts)
            for _, kind, item_id, embedder, vector, parts in memory.copying.vector_rows(after_id=0, limit=10_000)}


@pytest.fixture
def filled(coop_home: Path, hash_embedder) -> MemoryStore:
    store = _local(coop_home)
    _fill(store.user("ana"), hash_embedder, "zucchini")
    _fill(store.user("bob"), hash_embedder, "artichoke")
    yield store
    store.close()


@pytest.fixture
def server(postgres_url: str):
    opened: list[PgStore] = []

    def open_() -> PgStore:
        opened.append(PgStore.open(postgres_url))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


def test_migrating_to_postgres_copies_everything_and_verifies(filled, server, postgres_url, run_cli, hash_embedder):
    result = run_cli("memory", "migrate", "--to", postgres_url, "--json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["verified"] and [user["user"] for user in report["users"]] == ["ana", "bob"]
    ana_report = report["users"][0]
    assert ana_report["counts"]["messages"] == {"source": 5, "target": 5}
    assert ana_report["counts"]["vectors"]["source"] == ana_report["counts"]["vectors"]["target"] > 0
    # the forget keys differ (one per store), so the forgotten record's hash could not come along: said
    assert ana_report["left_behind"] == {"forgotten_hashes": 1}
    pg = server()
    assert pg.user_ids() == ["ana", "bob"]
    for user in ("ana", "bob"):
        source, target = filled.user(user), pg.user(user)
        assert _counts(target) == _counts(source)
        assert target.sources.reviewed_at() == T + 70
        # the superseded fact points at the new row of its successor, and the history came with both
        facts = _by_text(target, "fact")
        (replaced,) = target.facts.replaced(facts["lives in Lyon"])
        assert replaced.item_id == facts["lives in Paris"]
        old = {entry.action: entry for entry in source.facts.history(_by_text(source, "fact")["lives in Paris"])}
        new = {entry.action: entry for entry in target.facts.history(facts["lives in Paris"])}
        assert {a: (e.old_value, e.new_value, e.reason, e.created_at) for a, e in new.items()} == \
               {a: (e.old_value, e.new_value, e.reason, e.created_at) for a, e in old.items()}
        assert new["SUPERSEDE"].related_fact_id == facts["lives in Lyon"]
        (source_link,) = target.sources.provenance(facts["lives in Lyon"])
        assert source_link.quote == "I moved to Lyon" and source_link.text.startswith("I moved to Lyon")
        # vectors as they were, wholes and sentence parts, by item
        assert _vectors(target) == _vectors(source)
    ana = pg.user("ana")
    messages = _by_text(ana, "message")
    row = ana.db.one("SELECT tool_name, tool_call_id, origin, external_id, consolidated_at FROM messages "
                     "WHERE id = $1", (messages["results: three markets"],))
    assert row[:2] == ("search", "c1")
    assert ana.db.one("SELECT origin, external_id FROM messages WHERE id = $1",
                      (messages["Lyon has fine markets."],)) == ("host", "chatgpt:zucchini-4")
    said = messages["I moved to Lyon last spring. The zucchini market is great."]
    assert ana.db.scalar("SELECT consolidated_at FROM messages WHERE id = $1", (said,)) == T + 50
    assert ana.summaries.span(_by_text(ana, "summary")["They moved to Lyon and like its zucchini market."]) == \
        (said, messages["Lyon has fine markets."])
    assert ana.db.scalar("SELECT content_hash FROM forgotten WHERE user_id = 'ana'") is None
    # searchable on the server: by vector and by full text, and each user sees only their own
    query = hash_embedder.embed_query("zucchini market")
    hits = ana.vectors.nearest(hash_embedder.id, hash_embedder.dims, query, k=3, kinds=["message"])
    assert hits[0].item_id == said
    assert ana.text.matches([], ["zucchini"], kinds=["message"], limit=5)[0][1] == said  # (the next ones by context)
    assert pg.user("bob").text.matches([], ["zucchini"], kinds=["message"], limit=5) == []


def test_human_output_gives_counts_per_user_and_says_verified(filled, postgres_url, run_cli):
    result = run_cli("memory", "migrate", "--to", postgres_url)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ana: 2 sessions, 5 messages, 3 facts, 4 history entries, 1 fact source, "
                               "1 summary, 1 forgotten record, ") and lines[0].endswith(": verified")
    assert lines[1].startswith("bob: ") and lines[1].endswith(": verified")
    assert lines[2].startswith("migrated 2 users from ") and "postgresql://" in lines[2]
    assert "ana: the keyed hashes of 1 forgotten record did not come along" in result.stderr


def test_running_it_again_doubles_nothing(filled, server, postgres_url, run_cli):
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    pg = server()
    first = {user: _counts(pg.user(user)) for user in ("ana", "bob")}
    vectors = _vectors(pg.user("ana"))
    again = run_cli("memory", "migrate", "--to", postgres_url, "--json")
    assert again.exit_code == 0, again.stderr
    report = again.json()
    assert report["verified"]
    assert all(set(user["added"].values()) == {0} for user in report["users"])
    assert {user: _counts(pg.user(user)) for user in ("ana", "bob")} == first
    assert _vectors(pg.user("ana")) == vectors


def test_a_rerun_adds_only_what_is_new(filled, server, postgres_url, run_cli, hash_embedder):
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    ana = filled.user("ana")
    session = ana.sessions.start("Later", started_at=T + 500)
    ana.messages.add(session, "user", "A new question about fennel.", created_at=T + 501)
    embed_pending(ana, hash_embedder)
    report = run_cli("memory", "migrate", "--to", postgres_url, "--json").json()
    assert report["verified"]
    assert report["users"][0]["added"] == {"sessions": 1, "messages": 1, "facts": 0, "summaries": 0,
                                           "forgotten": 0, "vectors": 1, "forgotten_on_target": 0,
                                           "forgotten_on_source": 0}
    assert _counts(server().user("ana")) == _counts(ana)


def test_migrating_back_into_an_empty_home_gives_the_same_memory(filled, postgres_url, run_cli, tmp_path,
                                                                  monkeypatch):
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    before = {user: (_counts(filled.user(user)), _vectors(filled.user(user))) for user in ("ana", "bob")}
    fresh = tmp_path / "fresh-home"
    monkeypatch.setenv("COOP_HOME", str(fresh))
    result = run_cli("memory", "migrate", "--from", postgres_url, "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["verified"]
    back = _local(fresh)
    try:
        assert {user: (_counts(back.user(user)), _vectors(back.user(user))) for user in ("ana", "bob")} == before
        ana = back.user("ana")
        said = _by_text(ana, "message")["I moved to Lyon last spring. The zucchini market is great."]
        assert ana.text.matches([], ["zucchini"], kinds=["message"], limit=5)[0][1] == said
    finally:
        back.close()
    again = run_cli("memory", "migrate", "--from", postgres_url, "--json").json()
    assert again["verified"] and all(set(user["added"].values()) == {0} for user in again["users"])


def test_migrating_back_into_the_file_it_came_from_adds_nothing(filled, postgres_url, run_cli):
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    before = {user: (_counts(filled.user(user)), _vectors(filled.user(user))) for user in ("ana", "bob")}
    report = run_cli("memory", "migrate", "--from", postgres_url, "--json").json()
    assert report["verified"] and all(set(user["added"].values()) == {0} for user in report["users"])
    assert {user: (_counts(filled.user(user)), _vectors(filled.user(user))) for user in ("ana", "bob")} == before


def _texts_on(memory: UserMemory) -> set[str]:
    return {text for kind in ("message", "fact", "summary") for text in _by_text(memory, kind)}


def test_a_forget_on_either_side_is_honoured_and_a_round_trip_never_restores_it(filled, server, postgres_url, run_cli,
                                                                               tmp_path, monkeypatch):
    """Forgotten locally after a migration: the next migration removes it from the server; forgotten on the server:
    the next migration removes it locally and does not copy it back; migrating back into a new home restores
    neither. Each store keeps its own forget key (none is shared)."""
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    local = filled.user("ana")
    here = {"message": "I moved to Lyon last spring. The zucchini market is great.", "fact": "lives in Lyon"}
    gone = run_cli("memory", "forget", "--only", f"f{_by_text(local, 'fact')[here['fact']]}",
                   f"m{_by_text(local, 'message')[here['message']]}", "--yes", "--user", "ana")
    assert gone.exit_code == 0, gone.stderr
    remote = server().user("ana")
    there = "likes the zucchini market"
    remote.forget("fact", _by_text(remote, "fact")[there])
    report = run_cli("memory", "migrate", "--to", postgres_url, "--json")
    assert report.exit_code == 0, report.stderr
    ana = next(user for user in report.json()["users"] if user["user"] == "ana")
    assert ana["verified"] and ana["forgotten_held_elsewhere"] == 0
    assert ana["added"]["forgotten_on_target"] == 2 and ana["added"]["forgotten_on_source"] == 1
    assert not {*here.values(), there} & _texts_on(server().user("ana"))
    assert not {*here.values(), there} & _texts_on(filled.user("ana"))
    monkeypatch.setenv("COOP_HOME", str(tmp_path / "fresh-home"))
    back = run_cli("memory", "migrate", "--from", postgres_url, "--json")
    assert back.exit_code == 0 and back.json()["verified"]
    fresh = _local(tmp_path / "fresh-home")
    try:
        assert not {*here.values(), there} & _texts_on(fresh.user("ana"))
        assert "lives in Lyon" not in _texts_on(fresh.user("ana"))
    finally:
        fresh.close()


def test_user_restricts_the_migration(filled, server, postgres_url, run_cli):
    report = run_cli("memory", "migrate", "--to", postgres_url, "--user", "bob", "--json").json()
    assert [user["user"] for user in report["users"]] == ["bob"]
    assert server().user_ids() == ["bob"]
    both = run_cli("memory", "migrate", "--to", postgres_url, "--user", "bob", "--user", "ana", "--json").json()
    assert [user["user"] for user in both["users"]] == ["bob", "ana"] and both["verified"]


def test_the_readme_way_with_the_server_configured_already(filled, server, postgres_url, run_cli):
    on_server = {"COOP_MEMORY_BACKEND": "postgres", "COOP_DATABASE_URL": postgres_url}
    report = run_cli("--user", "bob", "memory", "migrate", "--to", postgres_url, "--json", env=on_server).json()
    assert report["verified"] and [user["user"] for user in report["users"]] == ["bob"]
    assert report["from"].endswith("coop.db")
    listed = run_cli("memory", "search", "artichoke", "--user", "bob", "--json", env=on_server)
    assert listed.exit_code == 0 and "artichoke" in listed.stdout


def test_rows_other_users_and_devices_have_on_the_server_are_left_alone(filled, server, postgres_url, run_cli):
    pg = server()
    other = pg.user("ana")  # the same user, from another device: a fact and a session of its own
    other.facts.add("has a bicycle", category="possessions")
    session = other.sessions.start("Phone chat", started_at=T + 900)
    other.messages.add(session, "user", "Typed on my phone.", created_at=T + 901)
    report = run_cli("memory", "migrate", "--to", postgres_url, "--json").json()
    assert report["verified"]
    counts = _counts(pg.user("ana"))
    source = _counts(filled.user("ana"))
    assert (counts["facts"], counts["messages"], counts["sessions"]) == \
           (source["facts"] + 1, source["messages"] + 1, source["sessions"] + 1)


def test_a_mismatch_is_reported_and_fails(filled, postgres_url, run_cli, monkeypatch):
    real = Copying.existing_ids

    def one_short(part, table, ids):
        found = real(part, table, ids)
        return set(sorted(found)[1:]) if table == "messages" else found

    monkeypatch.setattr(Copying, "existing_ids", one_short)
    result = run_cli("memory", "migrate", "--to", postgres_url, "--user", "ana")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].endswith(": 1 mismatch")
    assert "ana: messages: 5 in the source, 4 on the target" in result.stderr
    assert "run the same command again" in result.stderr


@pytest.mark.parametrize("args, message", [
    ((), "give one of --to URL or --from URL"),
    (("--to", "postgresql://a@b/c", "--from", "postgresql://a@b/c"), "give --to or --from, not both"),
    (("--to", "sqlite:///tmp/coop.db"), "--to takes a Postgres URL, not 'sqlite:///tmp/coop.db'"),
    (("--from", "mysql://me:secret@host/db"), "--from takes a Postgres URL, not 'mysql://me@host/db'"),
    (("--to", "postgresql://a@b/c", "--user", " "), "the user id is empty"),
])
def test_bad_flags_are_a_one_line_usage_error(run_cli, args, message):
    result = run_cli("memory", "migrate", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: {message}" and lines[1].startswith("hint: ") and len(lines) == 2
    assert "secret" not in result.stderr


def test_an_unknown_user_and_an_unreachable_server_are_one_line_errors(filled, postgres_url, run_cli):
    unknown = run_cli("memory", "migrate", "--to", postgres_url, "--user", "zed")
    assert unknown.exit_code == 2
    assert unknown.stderr.splitlines() == [f"error: no user 'zed' in the memory at {filled.location}",
                                           "hint: users there: ana, bob"]
    gone = run_cli("memory", "migrate", "--to", "postgresql://coop@127.0.0.1:1/nowhere")
    assert gone.exit_code == 5
    assert gone.stderr.startswith("error: cannot reach the Postgres server at postgresql://coop@127.0.0.1:1/nowhere")
    assert len(gone.stderr.splitlines()) == 2


def test_migrating_from_a_server_without_coop_tables_says_so_and_makes_nothing(postgres_owner_url, run_cli, coop_home):
    result = run_cli("memory", "migrate", "--from", postgres_owner_url)
    assert result.exit_code == 5
    assert "holds no coop memory" in result.stderr.splitlines()[0]
    assert not (coop_home / "coop.db").exists()
    nothing = run_cli("memory", "migrate", "--to", postgres_owner_url)
    assert nothing.exit_code == 2
    assert nothing.stderr.startswith(f"error: there is no SQLite memory at {coop_home / 'coop.db'} to copy")


def test_export_from_postgres_imports_into_sqlite(postgres_url, run_cli, tmp_path, coop_home, hash_embedder):
    pg = PgStore.open(postgres_url)
    try:
        _fill(pg.user("ana"), hash_embedder, "zucchini")
        expected = _counts(pg.user("ana"))
    finally:
        pg.close()
    on_server = {"COOP_MEMORY_BACKEND": "postgres", "COOP_DATABASE_URL": postgres_url}
    path = tmp_path / "ana.jsonl"
    exported = run_cli("memory", "export", "--user", "ana", "-o", str(path), env=on_server)
    assert exported.exit_code == 0, exported.stderr
    assert json.loads(path.read_text().splitlines()[0])["format"] == "coop"
    imported = run_cli("memory", "import", str(path), "--user", "ana", "--json")
    assert imported.exit_code == 0, imported.stderr
    local = _local(coop_home)
    try:
        counts = _counts(local.user("ana"))
        # the export carries no vectors (the import embeds again) and no forgotten hash; all else arrives
        assert {k: v for k, v in counts.items() if k != "embeddings"} == \
               {k: v for k, v in expected.items() if k != "embeddings"}
        assert counts["embeddings"] == expected["embeddings"]
        facts = _by_text(local.user("ana"), "fact")
        (replaced,) = local.user("ana").facts.replaced(facts["lives in Lyon"])
        assert replaced.item_id == facts["lives in Paris"]
        # and back the other way: the SQLite export imports on the server, adding nothing that is there
        back = tmp_path / "back.jsonl"
        assert run_cli("memory", "export", "--user", "ana", "-o", str(back)).exit_code == 0
        again = run_cli("memory", "import", str(back), "--user", "ana", "--json", "--no-embed", env=on_server)
        assert again.exit_code == 0, again.stderr
        assert again.json()["messages_added"] == 0 and again.json()["facts_added"] == 0
    finally:
        local.close()


def test_the_vectors_are_the_same_floats(filled, server, postgres_url, run_cli, hash_embedder):
    assert run_cli("memory", "migrate", "--to", postgres_url).exit_code == 0
    source, target = filled.user("bob"), server().user("bob")
    old, new = _by_text(source, "fact"), _by_text(target, "fact")
    items = [("fact", old[text]) for text in old]
    read = source.vectors.read(hash_embedder.id, hash_embedder.dims, items)
    landed = target.vectors.read(hash_embedder.id, hash_embedder.dims, [("fact", new[text]) for text in old])
    for text in old:
        assert np.array_equal(read[("fact", old[text])], landed[("fact", new[text])])


def test_what_cannot_come_along_is_said_and_the_rest_verifies(filled, server, postgres_url, run_cli):
    bob = filled.user("bob")
    bob.forget("fact", _by_text(bob, "fact")["likes the artichoke market"])  # its history rows stay, without text
    bob.sessions.start("Opened and left", started_at=T + 300)  # holds nothing
    result = run_cli("memory", "migrate", "--to", postgres_url, "--user", "bob")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].endswith(": verified")
    assert "bob: 1 empty session (no message, no summary) not copied" in result.stderr
    assert "bob: 2 history entries of forgotten facts not copied" in result.stderr
    assert "bob: the keyed hashes of 2 forgotten records did not come along" in result.stderr
    assert _counts(server().user("bob"))["forgotten"] == 2


def test_with_the_forget_key_shared_the_forgotten_hashes_come_along(filled, server, postgres_url, coop_home,
                                                                      run_cli):
    import shutil

    from coop.memory.storage.forget_key import key_path

    pg = server()
    shutil.copy(key_path(str(coop_home / "coop.db")), key_path(pg.db.key_location))  # shared, as the README says
    report = run_cli("memory", "migrate", "--to", postgres_url, "--json").json()
    assert report["verified"] and report["users"][0]["left_behind"] == {}
    ana = pg.user("ana")
    assert ana.forgotten.was_forgotten("my bank pin is 4321")
    assert not ana.forgotten.was_forgotten("my bank pin is 1234")


def test_a_migration_stopped_half_way_goes_on_where_it_stopped(filled, server, postgres_url, run_cli, monkeypatch):
    from coop.memory.transfer import batches
    from coop.memory.transfer.coop_format import CoopImport

    monkeypatch.setattr(batches, "BATCH_ROWS", 1)  # every record its own transaction, so some are committed
    real, calls = CoopImport.message, []

    def stop_at_the_third(self, record):
        calls.append(record["id"])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, record)

    monkeypatch.setattr(CoopImport, "message", stop_at_the_third)
    stopped = run_cli("memory", "migrate", "--to", postgres_url)
    assert stopped.exit_code == 130
    assert "stopped: what was copied so far is kept" in stopped.stderr
    assert _counts(server().user("ana"))["messages"] == 2
    monkeypatch.setattr(CoopImport, "message", real)
    report = run_cli("memory", "migrate", "--to", postgres_url, "--json").json()
    assert report["verified"] and report["users"][0]["added"]["messages"] == 3
    for user in ("ana", "bob"):
        assert _counts(server().user(user)) == _counts(filled.user(user))
