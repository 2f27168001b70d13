"""The Postgres vector index: pgvector scores on the server, as SQLite's index scores in memory.

`embeddings` keeps each item's float32 vector and float16 sentence parts exactly as SQLite does (what `read` and
`migrate` copy); `embedding_points` holds the same vectors once more as pgvector values, the whole and each part
a row. An item scores as SQLite scores it: the inner product of the query with its whole vector or its nearest
sentence part, computed by the server, so only (kind, id, score) cross the wire.

- A user with fewer than `EXACT_BELOW` vectors is searched exactly (a few milliseconds on the server).
- Past that, the user gets an HNSW index of their own (`ensure_index`: a partial index on embedder and user),
  and a search asks it for `candidates(k)` nearest points with `hnsw.iterative_scan = relaxed_order`, so the
  kind filter never leaves fewer than k while the user has them. The index holds the points as `halfvec` (16-bit
  floats, pgvector's half-precision indexing): half the pages of a graph of float32 points, so a heavy user's
  graph stays in the server's buffers where the float32 one was read back from the OS at every search; it only
  orders the candidates, which are scored on their float32 points. An index made before (float32) is searched
  as it is (`index_form`) until `rebuild_index` replaces it. A shared index under a per-user filter walked
  every user's graph: slow and less exact once one user is a tenth of the points (docs/benchmarks.md).
- Within a turn (`reading_once`) the scores `nearest` found are kept and `similarities` asks only for the others;
  `beside()` gives a twin of the index on the handle's second connection, whose `nearest` runs in another thread
  while this index's connection reads (a search's legs at once) and whose finds join the same turn cache.
- Many heavy users mean many partial indexes on one table; the planner checks each one's predicate, which is
  cheap for tens of users and worth partitioning `embedding_points` by user beyond a few thousand.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from coop.errors import EmbedderError, StoreError
from coop.memory.kinds import KINDS, REGISTRY, inactive_facts
from coop.memory.storage.items import VectorHit
from coop.memory.storage.postgres.connection import PgDatabase
from coop.memory.storage.postgres.text_index import PgTextIndex
from coop.memory.storage.user_memory import UserMemory
from coop.memory.storage.vector_index import StoredVectorIndex

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.storage.scope import Scope

log = logging.getLogger(__name__)
EXACT_BELOW = 3000  # a user with fewer vectors than this is searched exactly (on the server: a few ms)
HNSW_CANDIDATES_PER_RESULT, HNSW_CANDIDATES_MIN, HNSW_CANDIDATES_MAX = 10, 200, 1000
HNSW_OPTIONS = "m = 24, ef_construction = 128"  # a denser graph than pgvector's default (16, 64): docs/benchmarks.md


def candidates(k: int) -> int:
    """The points HNSW is asked for (and its ef_search) for `k` results: a graph walk's candidates are near in
    fact, unlike the bit scan's (`vectors.bit_candidates`), so fewer hold recall: 200 for k = 10 gave 0.968 of the
    exact top 10 at 100,000 real vectors (docs/benchmarks.md)."""
    return max(HNSW_CANDIDATES_MIN, min(HNSW_CANDIDATES_MAX, k * HNSW_CANDIDATES_PER_RESULT))


def index_name(embedder_id: str) -> str:
    return "embedding_points_hnsw_" + hashlib.sha256(embedder_id.encode()).hexdigest()[:12]


HALF_PREFIX = "embedding_points_hnswh_"  # a user's index of halfvec points; "embedding_points_hnsw_": float32


def user_index_name(embedder_id: str, user_id: str) -> str:
    return HALF_PREFIX + hashlib.sha256(f"{embedder_id}\0{user_id}".encode()).hexdigest()[:20]


def index_form(name: str) -> str:
    """The type a user's index holds its points as, from its name: what a search must cast to for the planner to
    use it."""
    return "halfvec" if name.startswith(HALF_PREFIX) else "vector"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class PgVectorIndex(StoredVectorIndex[PgDatabase]):
    """The vectors of one user on a Postgres server (`UserMemory.vectors` there); the stored rows, their backlog
    and the read-once cache are `StoredVectorIndex`'s."""

    def __init__(self, scope: "Scope[PgDatabase]") -> None:
        super().__init__(scope)
        # within a turn, per (embedder, query): the scores `nearest` found, and those `similarities` computed; kept
        # apart so that a twin's `nearest` (`beside`, another thread) and `similarities` never write one dict
        self._found: dict[tuple[str, bytes], dict[tuple[str, int], float]] = {}
        self._exact: dict[tuple[str, bytes], dict[tuple[str, int], float | None]] = {}
        self._sizes: dict[tuple[str, str | None], int] = {}  # within a turn, each count `size` read

    @property
    def db(self) -> PgDatabase:
        return self.scope.db

    def _turn_over(self) -> None:
        self._found, self._exact, self._sizes = {}, {}, {}

    def size(self, embedder_id: str, kind: str | None = None) -> int:
        """How many vectors this user has from this embedder (of `kind`, when given); within `reading_once`, each
        count is read once: a turn's searches (the search's, the profile's) ask for the same ones."""
        if self._rows is None:
            return super().size(embedder_id, kind)
        known = self._sizes.get((embedder_id, kind))
        if known is None:
            known = self._sizes[(embedder_id, kind)] = super().size(embedder_id, kind)
        return known

    def beside(self) -> "PgVectorIndex | None":
        """A twin of this index on the handle's second connection (`PgDatabase.beside`), sharing this turn's
        cache: its `nearest` may run in another thread while this index's connection reads, and what it finds is
        known to this index's `similarities` as if this index had found it. Only within `reading_once` (outside a
        turn there is no cache to share, and a search runs its legs in turn); None when no second connection can
        be had (a transaction open, a full server)."""
        db = self.db.beside() if self._rows is not None else None
        if db is None:
            return None
        twin = PgVectorIndex(UserMemory(db, self.scope.user_id, backend=self.scope.backend, text=PgTextIndex,
                                        vectors=PgVectorIndex))
        twin._rows, twin._found, twin._exact, twin._sizes = self._rows, self._found, self._exact, self._sizes
        return twin

    # -- writes ---------------------------------------------------------------------------------------------
    def record_embedder(self, embedder_id: str, dims: int) -> None:
        """Note the embedder and its dimensions (`coop check` lists them), the first time one of its vectors is
        stored."""
        db = self.db
        known = db.caches.setdefault("pg_embedders", set())
        if embedder_id not in known:
            db.run("INSERT INTO vector_indexes (embedder, table_name, dims) VALUES (%s, %s, %s) "
                   "ON CONFLICT DO NOTHING", (embedder_id, index_name(embedder_id), int(dims)))
            known.add(embedder_id)

    def has_index(self, embedder_id: str) -> bool:
        """Whether this user has an HNSW index of this embedder's points (`ensure_index`)."""
        return self._index(embedder_id) is not None

    def _index(self, embedder_id: str) -> str | None:
        """The name of this user's HNSW index of this embedder's points, or None. A float32 one is asked for again
        at each search: `rebuild_index`, in another process, may have replaced it."""
        db = self.db
        known = db.caches.setdefault("pg_user_indexes", {})
        key = (embedder_id, self.scope.user_id)
        if key not in known:
            found = db.run("SELECT name FROM user_vector_indexes WHERE embedder = %s AND user_id = %s", key)
            if not found:
                return None
            if index_form(str(found[0][0])) == "vector":
                return str(found[0][0])
            known[key] = str(found[0][0])
        return str(known[key])

    def ensure_index(self, embedder_id: str, dims: int) -> bool:
        """This user's own HNSW index over this embedder's points, made once the user has `EXACT_BELOW` vectors
        (below, an exact scan is faster). One index per user, a partial index on (embedder, user): a search walks
        only the user's graph, where a shared index under the user's filter walked every user's (at a million
        points and ten users: a vector leg of 94 ms median and 91 of 100 needles, docs/benchmarks.md). Built with
        CONCURRENTLY, so writers are not held up; outside a transaction only (else left for the next call).
        True when the index is there."""
        if self.size(embedder_id) < EXACT_BELOW:  # the usual case at a write: one count, no index lookup
            return False
        if self.has_index(embedder_id):
            return True
        db = self.db
        if db.in_transaction or not self._may_build(db):
            return False
        name = user_index_name(embedder_id, self.scope.user_id)
        if not self._build(name, embedder_id, dims):
            return False
        db.run("INSERT INTO user_vector_indexes (embedder, user_id, name, dims) VALUES (%s, %s, %s, %s) "
               "ON CONFLICT DO NOTHING", (embedder_id, self.scope.user_id, name, int(dims)))
        return self.has_index(embedder_id)

    def rebuild_index(self, embedder_id: str, dims: int) -> bool:
        """This user's index of float32 points (made before `HALF_PREFIX`) replaced by one of halfvec points: built
        beside it (CONCURRENTLY: searches go on through the old one), recorded, then the old one dropped; the
        table's owner only (`coop admin index`), outside a transaction. True when it was replaced."""
        old = self._index(embedder_id)
        db = self.db
        if old is None or index_form(old) == "halfvec" or db.in_transaction or not self._may_build(db):
            return False
        name = user_index_name(embedder_id, self.scope.user_id)
        if not self._build(name, embedder_id, dims):
            return False
        db.run("UPDATE user_vector_indexes SET name = %s WHERE embedder = %s AND user_id = %s",
               (name, embedder_id, self.scope.user_id))
        db.run(f"DROP INDEX CONCURRENTLY IF EXISTS {old}")
        return self.has_index(embedder_id)

    def _build(self, name: str, embedder_id: str, dims: int) -> bool:
        """Build the user's HNSW index of halfvec points under `name`; False when it could not be (another client
        building it, a build that failed: the next call tries again)."""
        db = self.db
        try:
            db.run(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embedding_points USING hnsw "
                   f"((point::halfvec({int(dims)})) halfvec_cosine_ops) WITH ({HNSW_OPTIONS}) "
                   f"WHERE embedder = {_literal(embedder_id)} AND user_id = {_literal(self.scope.user_id)}")
        except StoreError:
            raise
        except Exception as exc:
            log.warning("the vector index of %s could not be built: %s", self.scope.user_id, exc)
            return False
        if not db.run("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (name,))[0][0]:
            db.run(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # a build cut short leaves an invalid index
            return False
        return True

    @staticmethod
    def _may_build(db: PgDatabase) -> bool:
        """Whether this role may add an index to the table: only its owner may, so a person's role leaves it to
        `coop admin index` (its searches stay exact until then), asked once per connection."""
        known = db.caches.get("pg_may_index")
        if known is None:
            known = db.caches["pg_may_index"] = bool(db.run(
                "SELECT pg_has_role(session_user, relowner, 'USAGE') FROM pg_class "
                "WHERE oid = to_regclass('embedding_points')")[0][0])
        return bool(known)

    def store(self, kind: str, item_ids: Sequence[int], embedder_id: str, wholes: "np.ndarray",
              parts: Sequence["np.ndarray | None"] | None = None) -> None:
        import numpy as np

        if len(item_ids) != len(wholes) or (parts is not None and len(parts) != len(item_ids)):
            raise EmbedderError(f"{len(wholes)} vectors for {len(item_ids)} items", hint="report this as a bug")
        if not len(item_ids):
            return
        wholes = np.ascontiguousarray(wholes, dtype=np.float32)
        dims = int(wholes.shape[1])
        self.record_embedder(embedder_id, dims)
        db, user_id = self.db, self.scope.user_id
        each_parts = list(parts) if parts is not None else [None] * len(item_ids)
        table = REGISTRY[kind].table
        blobs = [None if part is None or not len(part) else np.asarray(part, dtype=np.float16) for part in each_parts]
        ids = [int(i) for i in item_ids]
        with db.atomic():
            db.run("DELETE FROM embeddings WHERE kind = %s AND embedder = %s AND user_id = %s AND item_id = ANY(%s)",
                   (kind, embedder_id, user_id, ids))
            made = dict((int(r[1]), int(r[0])) for r in db.run(
                "INSERT INTO embeddings (user_id, kind, item_id, embedder, vector, parts) "
                "SELECT %s, %s, t.item_id, %s, t.vector, t.parts "
                "FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[]) AS t(item_id, vector, parts) "
                "RETURNING id, item_id",
                (user_id, kind, embedder_id, ids, [whole.tobytes() for whole in wholes],
                 [None if blob is None else blob.tobytes() for blob in blobs])))
            owners, points = [], []
            for item_id, whole, blob in zip(ids, wholes, blobs):
                for point in [whole] + ([] if blob is None else list(blob.astype(np.float32))):
                    owners.append(made[item_id])
                    points.append(point)
            # one statement for every point, sent in binary by pgvector's adapter (`connection.connect`)
            db.run("INSERT INTO embedding_points (embedding_id, user_id, embedder, kind, point) "
                   "SELECT t.embedding_id, %s, %s, %s, t.point FROM unnest(%s::bigint[], %s::vector[]) "
                   "AS t(embedding_id, point)", (user_id, embedder_id, kind, owners, points))
            db.run(f"UPDATE {table} SET embedder = %s, embedding_error = NULL WHERE user_id = %s AND id = ANY(%s)",
                   (embedder_id, user_id, ids))
        self._sizes.clear()  # (a store within a turn: the counts it read are no longer)
        self.ensure_index(embedder_id, dims)  # once the user has enough vectors for one to pay

    def warm(self, embedder_id: str) -> bool:
        """Nothing to load (the server keeps its index): the handle's second connection is made now, while the
        person types, rather than by the first search (`beside`); True when it was made here."""
        link = self.db.link
        return link.second is None and not link.refused and link.beside() is not None

    # -- reads ----------------------------------------------------------------------------------------------
    def nearest(self, embedder_id: str, dims: int, query: "np.ndarray", *, k: int, kinds: Sequence[str] = KINDS,
                floor: float | None = None, exact: bool = False, include_inactive: bool = False) -> list[VectorHit]:
        """The `k` items nearest `query`, scored on the server as SQLite scores them (the inner product with the
        whole vector or the nearest sentence part): every vector of the user below `EXACT_BELOW` or when `exact`,
        else HNSW's `candidates(k)` nearest points. Only (kind, id, score) cross the wire."""
        import numpy as np

        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if query.shape[0] != dims:
            raise EmbedderError(f"query vector has {query.shape[0]} dimensions, the index {dims}",
                                hint="run `coop memory reembed` after changing the embedder")
        db = self.db
        active = "" if include_inactive else (
            f" AND NOT (e.kind = 'fact' AND e.item_id IN ({inactive_facts('%(user)s')}))")
        params = {"user": self.scope.user_id, "kinds": list(kinds), "query": query, "k": int(k)}
        embedder = _literal(embedder_id)  # a literal: the planner matches it to the partial index's predicate
        # even in a generic plan (a prepared statement's), which a parameter would not let it do
        few = self.size(embedder_id) < EXACT_BELOW or ("message" not in kinds and sum(
            self.size(embedder_id, kind) for kind in kinds) < EXACT_BELOW)  # a rare kind: its own vectors, exactly
        if exact or few or not (self.has_index(embedder_id) or self.ensure_index(embedder_id, dims)):
            rows = db.run(
                "SELECT e.kind, e.item_id, max(-(p.point <#> %(query)s::vector)) AS s FROM embedding_points p "
                "JOIN embeddings e ON e.id = p.embedding_id WHERE p.user_id = %(user)s "
                f"AND p.embedder = {embedder} AND p.kind = ANY(%(kinds)s){active} "
                "GROUP BY e.kind, e.item_id ORDER BY s DESC, e.item_id LIMIT %(k)s", params)
        else:
            want, form = candidates(k), index_form(self._index(embedder_id) or HALF_PREFIX)
            db.configure({"hnsw.ef_search": str(want), "hnsw.iterative_scan": "relaxed_order",
                          "hnsw.max_scan_tuples": str(max(20_000, want * 40))})
            rows = db.run(
                f"SELECT e.kind, e.item_id, max(-(c.point <#> %(query)s::vector)) AS s FROM "
                f"(SELECT embedding_id, point FROM embedding_points WHERE embedder = {embedder} "
                f"AND user_id = {_literal(self.scope.user_id)} AND kind = ANY(%(kinds)s) "
                f"ORDER BY point::{form}({int(dims)}) <=> %(query)s::{form}({int(dims)}) LIMIT %(want)s) c "
                f"JOIN embeddings e ON e.id = c.embedding_id WHERE e.user_id = %(user)s{active} "
                "GROUP BY e.kind, e.item_id ORDER BY s DESC, e.item_id LIMIT %(k)s", {**params, "want": want})
        hits = [VectorHit(row[0], int(row[1]), float(row[2])) for row in rows]
        if self._rows is not None:  # their scores for this query are known now: `similarities` asks no more
            self._found.setdefault((embedder_id, query.tobytes()), {}).update(
                {(h.kind, h.item_id): h.similarity for h in hits})
        return [h for h in hits if floor is None or h.similarity >= floor]

    def similarities(self, embedder_id: str, dims: int, query: "np.ndarray",
                     items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
        """The exact score of each of these items (its whole vector or nearest part, as `nearest` scores),
        computed on the server; within `reading_once`, each item's score for a query is asked for once, and an
        item `nearest` found keeps the score it found it with (whichever came first)."""
        import numpy as np

        query = np.asarray(query, dtype=np.float32).reshape(-1)
        wanted = list(dict.fromkeys(items))
        if self._rows is None:
            scores = self._scored(embedder_id, query, wanted)
            return {item: score for item in wanted if (score := scores.get(item)) is not None}
        key = (embedder_id, query.tobytes())
        found, exact = self._found.setdefault(key, {}), self._exact.setdefault(key, {})
        missing = [item for item in wanted if item not in found and item not in exact]
        if missing:
            exact.update(self._scored(embedder_id, query, missing))
        return {item: score for item in wanted
                if (score := found[item] if item in found else exact.get(item)) is not None}

    def _scored(self, embedder_id: str, query: "np.ndarray",
                items: list[tuple[str, int]]) -> dict[tuple[str, int], float | None]:
        """The exact score of each item, None for one without a vector: one statement."""
        if not items:
            return {}
        rows = self.db.run(
            "SELECT e.kind, e.item_id, max(-(p.point <#> %s::vector)) FROM embeddings e "
            "JOIN unnest(%s::text[], %s::bigint[]) AS w(kind, item_id) "
            "ON e.kind = w.kind AND e.item_id = w.item_id "
            "JOIN embedding_points p ON p.embedding_id = e.id "
            "WHERE e.embedder = %s AND e.user_id = %s GROUP BY e.kind, e.item_id",
            (query, [kind for kind, _ in items], [int(i) for _, i in items], embedder_id, self.scope.user_id))
        self.reads += len(rows)
        scores: dict[tuple[str, int], float | None] = {item: None for item in items}
        scores.update(((row[0], int(row[1])), float(row[2])) for row in rows)
        return scores
