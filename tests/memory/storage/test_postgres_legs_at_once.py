"""A turn's search on Postgres runs its vector leg on the handle's second connection while the first reads the
full-text leg (`search._legs_at_once`, `PgVectorIndex.beside`): the same hits, scores and legs as when the legs
run in turn; the second connection keeps to the user's rows, is offered neither inside a transaction nor outside
a turn, and closes with the store."""

from __future__ import annotations

import time

import pytest

from coop.errors import EmbedderError, StoreUnreachable

WORDS = "heron kettle violin harbour lantern orchard pebble saddle thistle walnut".split()
QUERIES = ["heron by the harbour", "a kettle and a lantern", "walnut orchard", "violin pebble saddle", "thistle"]


@pytest.fixture
def pg(postgres_url):
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(postgres_url)
    yield store
    store.close()


def _filled(memory, embedder, count: int = 120) -> list[int]:
    """`count` messages in sessions of ten, each of three of `WORDS` and a word of its own (no two vectors equal:
    between points at one distance, pgvector's graph may return either, on one connection as on another),
    embedded (with sentence parts for some)."""
    ids, texts = [], []
    for n in range(count):
        if n % 10 == 0:
            session = memory.sessions.start()
        text = " ".join(WORDS[(n * k + n // 7) % len(WORDS)] for k in (1, 3, 7)) + f" item{n}"
        if n % 4 == 0:
            text += ". Then the " + WORDS[(n + 5) % len(WORDS)] + " again."
        ids.append(memory.messages.add(session, "user", text))
        texts.append(text)
    parts = [embedder.embed(t.split(". ")) if ". " in t else None for t in texts]
    memory.vectors.store("message", ids, embedder.id, embedder.embed(texts), parts)
    return ids


def _searched(memory, embedder, settings, ids: list[int]) -> list:
    """What a turn's search finds for each query (as `turn_context` searches: within `reading_once`), every
    score exactly, then the cosines a turn asks for after it (the profile's, the neighbours')."""
    from coop.memory.retrieval.search import search

    found = []
    for query in QUERIES:
        with memory.vectors.reading_once():
            result = search(memory, query, embedder=embedder, limit=20, settings=settings)
            later = memory.vectors.similarities(
                embedder.id, embedder.dims, embedder.embed_query(query), [("message", i) for i in ids]
            )
        found.append(
            (
                [(h.ref, h.score, h.cosine, {k: (v.rank, v.score) for k, v in h.legs.items()}) for h in result.hits],
                result.legs,
                sorted(later.items()),
            )
        )
    return found


def _found_scores_lowered(monkeypatch) -> None:
    """As a graph's candidates can leave it: an item the vector leg finds scored below its exact score (its
    nearest point not among the candidates), so which of the two scores a turn keeps for it shows."""
    from coop.memory.storage.postgres.connection import PgDatabase, Rows

    run = PgDatabase.run

    def lowered(self, sql, params=None):
        rows = run(self, sql, params)
        if "ORDER BY s DESC" in sql:  # `nearest`'s statements
            return Rows([(kind, item_id, score - 0.01) for kind, item_id, score in rows])
        return rows

    monkeypatch.setattr(PgDatabase, "run", lowered)


def _analyzed(url: str) -> None:
    """The tables' statistics taken now, once: an autovacuum ANALYZE between the two runs compared below could
    switch a plan, and a sum of BM25 terms added in another order differs in its last bits."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as owner:
        owner.execute("ANALYZE")


def _backends(url: str) -> int:
    """How many of coop's connections are open on the database of `url` (a probe of its own, not counted)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, application_name="probe") as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'coop'"
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.postgres
@pytest.mark.parametrize(("floor", "graph"), [(None, False), (0.0, False), (0.5, False), (None, True), (0.0, True)])
def test_the_legs_at_once_find_what_the_legs_in_turn_find(
    pg, hash_embedder, monkeypatch, postgres_url_owner, floor, graph
):
    """Exactly: an item the vector leg found keeps the score it found it with (on the graph, its nearest point
    among the candidates), every other the exact one, whichever thread asked first."""
    from coop.memory.retrieval import search
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.postgres import vector_index
    from coop.memory.storage.postgres.store import PgStore
    from coop.memory.storage.postgres.vector_index import PgVectorIndex

    memory = pg.user("ana")
    if graph:  # more points than the graph's candidates: a found item's score can be of its candidate points only
        monkeypatch.setattr(vector_index, "EXACT_BELOW", 10)
    ids = _filled(memory, hash_embedder, count=400 if graph else 120)
    _analyzed(postgres_url_owner)
    if graph:
        owner = PgStore.open(postgres_url_owner)
        try:
            assert owner.build_vector_indexes() == 1
        finally:
            owner.close()
    settings = RetrievalSettings.defaults().but(floor=floor) if floor is not None else RetrievalSettings.defaults()
    _found_scores_lowered(monkeypatch)
    at_once = []
    real = search._legs_at_once
    monkeypatch.setattr(search, "_legs_at_once", lambda *a, **k: at_once.append(1) or real(*a, **k))
    together = _searched(memory, hash_embedder, settings, ids)
    assert len(at_once) == len(QUERIES)  # every search ran its legs at once
    monkeypatch.setattr(PgVectorIndex, "beside", lambda self: None)
    in_turn = _searched(memory, hash_embedder, settings, ids)
    assert len(at_once) == len(QUERIES)
    assert together == in_turn and any(hits for hits, _, _ in together)


@pytest.mark.postgres
def test_the_second_connection_keeps_to_the_users_rows_and_closes_with_the_store(postgres_url, hash_embedder):
    from coop.memory.storage.postgres.store import PgStore

    store = PgStore.open(postgres_url)
    try:
        ana, bob = store.user("ana"), store.user("bob")
        ana.messages.add(ana.sessions.start(), "user", "ana's heron")
        bob.messages.add(bob.sessions.start(), "user", "bob's heron")
        with ana.vectors.reading_once():
            twin = ana.vectors.beside()
        assert twin is not None and twin.db.link is not ana.db.link and twin.db.link is ana.db.link.second
        # a statement that forgets its user filter still sees only the user's rows, on the second connection too
        assert [r[0] for r in twin.db.execute("SELECT content FROM messages")] == ["ana's heron"]
        with bob.vectors.reading_once():
            other = bob.vectors.beside()
        assert other is not None and other.db.link is twin.db.link  # one second connection per handle
        assert [r[0] for r in other.db.execute("SELECT content FROM messages")] == ["bob's heron"]
        assert _backends(postgres_url) == 2
    finally:
        store.close()
    deadline = time.monotonic() + 5
    while _backends(postgres_url) and time.monotonic() < deadline:  # a backend leaves just after its client
        time.sleep(0.05)
    assert _backends(postgres_url) == 0


@pytest.mark.postgres
def test_no_second_connection_inside_a_transaction_or_outside_a_turn(pg):
    ana = pg.user("ana")
    assert ana.vectors.beside() is None  # no turn cache to share: a search runs its legs in turn
    with ana.vectors.reading_once():
        with ana.transaction():
            assert ana.vectors.beside() is None  # the second connection could not see this transaction's writes
        assert ana.vectors.beside() is not None


@pytest.mark.postgres
def test_an_embedder_that_fails_in_the_legs_thread_falls_back_to_full_text(pg, hash_embedder):
    from coop.memory.retrieval.search import search_or_full_text

    memory = pg.user("ana")
    _filled(memory, hash_embedder, count=30)

    class Failing:
        id, dims = hash_embedder.id, hash_embedder.dims

        def embed_query(self, text: str):
            raise EmbedderError("the embedding API is down")

    with memory.vectors.reading_once():
        result, failure = search_or_full_text(memory, "heron harbour", embedder=Failing())
        assert failure == "the embedding API is down" and result.hits and not result.vector_used
        again, failure = search_or_full_text(memory, "heron harbour", embedder=hash_embedder)
    assert failure is None and again.hits and "vector" in again.legs


@pytest.mark.postgres
def test_a_server_that_refuses_a_second_connection_gets_the_legs_in_turn(pg, hash_embedder, monkeypatch):
    from coop.memory.retrieval.search import search
    from coop.memory.storage.postgres import connection

    memory = pg.user("ana")
    _filled(memory, hash_embedder, count=30)
    asked = []

    def refused(url: str):
        asked.append(url)
        raise StoreUnreachable("too many clients already")

    monkeypatch.setattr(connection, "connect", refused)
    for _ in range(2):
        with memory.vectors.reading_once():
            assert memory.vectors.beside() is None
            assert search(memory, "heron harbour", embedder=hash_embedder).hits
    assert len(asked) == 1  # asked once, not at every turn


@pytest.mark.postgres
def test_warm_makes_the_second_connection_while_the_person_types(pg, postgres_url):
    ana = pg.user("ana")
    assert ana.vectors.warm("any") is True
    assert ana.vectors.warm("any") is False  # made once
    assert _backends(postgres_url) == 2


def test_sqlites_index_offers_no_second_connection(store):
    """SQLite's legs stay in turn: its index has no twin (`search.Beside`)."""
    from coop.memory.retrieval.search import Beside

    assert isinstance(store.user("ana").vectors, Beside) == (type(store).__name__ == "PgStore")


@pytest.mark.postgres
def test_a_turn_reads_each_vector_count_once(pg, hash_embedder, monkeypatch):
    """The search's vector leg and the profile's ask for the same counts: within a turn each is read once (a store
    within it reads them again)."""
    from coop.memory.storage.postgres.connection import PgDatabase

    memory = pg.user("ana")
    _filled(memory, hash_embedder, count=20)
    counted: list[str] = []
    execute = PgDatabase.execute

    def counting(self, sql, params=None):
        if "embedding_counts" in sql or "count(*) FROM embeddings" in sql:
            counted.append(sql)
        return execute(self, sql, params)

    monkeypatch.setattr(PgDatabase, "execute", counting)
    assert [memory.vectors.size(hash_embedder.id) for _ in range(2)] == [20, 20] and len(counted) == 2
    with memory.vectors.reading_once():
        sizes = [memory.vectors.size(hash_embedder.id, kind) for kind in (None, "fact", None, "fact")]
        assert sizes == [20, 0, 20, 0] and len(counted) == 4
        _filled(memory, hash_embedder, count=10)
        assert memory.vectors.size(hash_embedder.id) == 30
