"""Vector storage and nearest-neighbour search for one user's items.

Two layers, so that vector search works with or without sqlite-vec:
- `embeddings` (a plain table) holds every vector as float32 bytes, with the embedder's id. It is the truth,
  readable by any SQLite, and what exact re-ranking reads.
- one sqlite-vec `vec0` table per embedder holds the sign bits of each vector (`bit[dims]`), partitioned by
  user, with the item kind as a metadata column. A Hamming KNN inside the user's partition pre-selects
  candidates (the user filter is applied inside the KNN, before its k is cut, so no match silently vanishes),
  and the float vectors of those candidates are then re-ranked by exact cosine. At 100k rows that is several
  times faster than a float KNN; `bench/latency.py` reports its recall against exact search. How many
  candidates are kept depends on the size of the user's partition (`preselect_size`), so the time stays bounded.

Without sqlite-vec, search reads the user's float vectors and ranks them with numpy: slower, same answers. A
connection without sqlite-vec cannot touch a vec0 table, so when it changes vectors it marks the index dirty,
and the next connection that has sqlite-vec rebuilds it from `embeddings` before searching.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coop.errors import EmbedderError
from coop.memory.kinds import KINDS, REGISTRY, active_fact
from coop.memory.storage.bit_index import loaded_bits
from coop.memory.storage.connection import Database
from coop.memory.storage.scope import UserScope
from coop.memory.storage.sign_bits import sign_bits
from coop.secrets import mask

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# How many Hamming-nearest candidates are re-ranked exactly, per requested result (and at least this many)...
OVERFETCH_FACTOR = 5
MIN_CANDIDATES = 200
# ...within a time budget. sqlite-vec's Hamming KNN reads every vector of the user's partition and keeps a sorted
# list of the best k, so its cost grows with both: about 27 ns per vector plus 0.95 ns per vector and candidate
# kept, measured on these 2-core machines (100k vectors: 3 ms for 10 candidates, 11 ms for 100; 1M: 35 and
# 110 ms). A large memory therefore gets fewer candidates (never fewer than the results asked for): recall against
# exact search drops a little there, and the time stays bounded; `bench/latency.py` reports both.
PRESELECT_BUDGET_MS = 10.0
SQLITE_VEC_MAX_K = 4096  # sqlite-vec refuses a KNN query with a larger k
_NS_PER_VECTOR, _NS_PER_VECTOR_AND_CANDIDATE = 27.0, 0.95
# From this many vectors of a user on, the pre-selection is the in-memory bit scan of `bit_index.py` instead: it
# costs the same for any number of candidates, where sqlite-vec's grows with them (see there).
BIT_INDEX_FROM = 20_000
BIT_CANDIDATES, BIT_CANDIDATES_PER_RESULT = 1000, 50


@dataclass(frozen=True)
class VectorHit:
    kind: str
    item_id: int
    similarity: float


def _index_name(embedder_id: str) -> str:
    return "vec_" + hashlib.sha1(embedder_id.encode("utf-8")).hexdigest()[:12]


def index_table(db: Database, embedder_id: str, dims: int, *, create: bool = True) -> str | None:
    """The vec0 table for this embedder (created on first use), or None when sqlite-vec is unavailable."""
    if not db.has_vec or dims % 8:
        return None
    row = db.one("SELECT table_name, dirty FROM vector_indexes WHERE embedder = ?", (embedder_id,))
    if row is None:
        if not create:
            return None
        name = _index_name(embedder_id)
        with db.atomic():
            # Looked for again inside the write transaction: another process may have made (and filled) the
            # index since the look above, and filling it twice would break its primary key.
            made = db.scalar("SELECT table_name FROM vector_indexes WHERE embedder = ?", (embedder_id,))
            if made is not None:
                return str(made)
            db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0(embedding_id INTEGER PRIMARY KEY, "
                       f"user_id TEXT PARTITION KEY, kind TEXT, embedding bit[{dims}])")
            db.execute("INSERT INTO vector_indexes (embedder, table_name, dims) VALUES (?, ?, ?)",
                       (embedder_id, name, dims))
            _fill_index(db, name, embedder_id)
        return name
    name, dirty = row
    if dirty:
        rebuild_index(db, embedder_id)
    return str(name)


def _fill_index(db: Database, name: str, embedder_id: str) -> None:
    db.execute(f"INSERT INTO {name} (embedding_id, user_id, kind, embedding) SELECT id, user_id, kind, "
               "vec_quantize_binary(vector) FROM embeddings WHERE embedder = ?", (embedder_id,))


def rebuild_index(db: Database, embedder_id: str) -> None:
    """Make the vec0 index hold exactly the rows of `embeddings` for this embedder."""
    name = db.scalar("SELECT table_name FROM vector_indexes WHERE embedder = ?", (embedder_id,))
    if name is None or not db.has_vec:
        return
    with db.atomic():
        db.execute(f"DELETE FROM {name}")
        _fill_index(db, name, embedder_id)
        db.execute("UPDATE vector_indexes SET dirty = 0 WHERE embedder = ?", (embedder_id,))


def _index_rows_changed(db: Database, embedder_ids: Iterable[str], deleted_ids: Sequence[int] = (),
                        added: Sequence[tuple[int, str, str, bytes]] = ()) -> None:
    """Apply changes to the vec0 indexes, or mark them dirty when this connection cannot reach them."""
    for embedder_id in set(embedder_ids):
        row = db.one("SELECT table_name FROM vector_indexes WHERE embedder = ?", (embedder_id,))
        if row is None:
            continue
        if not db.has_vec:
            db.execute("UPDATE vector_indexes SET dirty = 1 WHERE embedder = ?", (embedder_id,))
            continue
        name = row[0]
        for embedding_id in deleted_ids:
            db.execute(f"DELETE FROM {name} WHERE embedding_id = ?", (embedding_id,))
        if added:
            db.conn.executemany(f"INSERT INTO {name} (embedding_id, user_id, kind, embedding) "
                                "VALUES (?, ?, ?, vec_quantize_binary(?))", added)


def store_vectors(memory: UserScope, kind: str, item_ids: Sequence[int], embedder_id: str,
                  matrix: "np.ndarray") -> None:
    """Write one vector per item (replacing that embedder's old one) and mark the items as embedded by it."""
    import numpy as np

    if len(item_ids) != len(matrix):
        raise EmbedderError(f"{len(matrix)} vectors for {len(item_ids)} items", hint="report this as a bug")
    db = memory.db
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    table = REGISTRY[kind].table
    index_table(db, embedder_id, int(matrix.shape[1]))  # create this embedder's index on its first vectors
    with db.atomic():
        old = [row[0] for row in db.execute(
            f"SELECT id FROM embeddings WHERE kind = ? AND embedder = ? AND user_id = ? "
            f"AND item_id IN ({','.join('?' * len(item_ids))})", (kind, embedder_id, memory.user_id, *item_ids))]
        if old:
            db.execute(f"DELETE FROM embeddings WHERE id IN ({','.join('?' * len(old))})", old)
        added = []
        for item_id, vector, bits in zip(item_ids, matrix, sign_bits(matrix)):
            blob = vector.tobytes()
            embedding_id = db.scalar("INSERT INTO embeddings (user_id, kind, item_id, embedder, vector, bits) "
                                      "VALUES (?,?,?,?,?,?) RETURNING id",
                                      (memory.user_id, kind, item_id, embedder_id, blob, bits.tobytes()))
            added.append((embedding_id, memory.user_id, kind, blob))
        _index_rows_changed(db, [embedder_id], old, added)
        db.conn.executemany(f"UPDATE {table} SET embedder = ?, embedding_error = NULL WHERE id = ? AND user_id = ?",
                            [(embedder_id, item_id, memory.user_id) for item_id in item_ids])


def delete_item_vectors(memory: UserScope, kind: str, item_id: int) -> None:
    """Remove an item's vectors (every embedder's) from `embeddings` and from the vec0 indexes."""
    db = memory.db
    rows = list(db.execute("SELECT id, embedder FROM embeddings WHERE kind = ? AND item_id = ? AND user_id = ?",
                           (kind, item_id, memory.user_id)))
    with db.atomic():
        for embedding_id, embedder_id in rows:
            _index_rows_changed(db, [embedder_id], [embedding_id])
        db.execute("DELETE FROM embeddings WHERE kind = ? AND item_id = ? AND user_id = ?",
                   (kind, item_id, memory.user_id))


def pending_items(memory: UserScope, kind: str, *, after_id: int, limit: int) -> list[tuple[int, str]]:
    """(id, text) of this user's items of `kind` that have no vector yet, in id order after `after_id`."""
    spec = REGISTRY[kind]
    return [(int(row[0]), row[1]) for row in memory.db.execute(
        f"SELECT id, {spec.text} FROM {spec.table} WHERE user_id = ? AND embedder IS NULL AND id > ? "
        f"ORDER BY id LIMIT ?", (memory.user_id, after_id, limit))]


def record_embedding_error(memory: UserScope, kind: str, item_id: int, message: str) -> None:
    """Keep why an item could not be embedded; it is tried again later (the error is overwritten then)."""
    memory.db.execute(f"UPDATE {REGISTRY[kind].table} SET embedding_error = ? WHERE id = ? AND user_id = ?",
                      (mask(message), item_id, memory.user_id))


def hand_back_for_embedding(memory: UserScope, kind: str, keep_embedder: str, limit: int) -> int:
    """Mark up to `limit` of this user's items of `kind` embedded by another model than `keep_embedder` as not
    embedded, so the ordinary backlog path gives them a vector from it (their old vectors stay until
    `drop_other_embedders`); returns how many are still to hand back after these."""
    table = REGISTRY[kind].table
    with memory.db.atomic():
        memory.db.execute(f"UPDATE {table} SET embedder = NULL WHERE id IN (SELECT id FROM {table} WHERE user_id = ? "
                          "AND embedder IS NOT NULL AND embedder != ? ORDER BY id LIMIT ?)",
                          (memory.user_id, keep_embedder, limit))
    return int(memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = ? AND embedder IS NOT NULL "
                                "AND embedder != ?", (memory.user_id, keep_embedder)))


def drop_other_embedders(memory: UserScope, keep: str) -> tuple[int, list[str]]:
    """Delete this user's vectors from every embedder but `keep`, from the canonical table and the indexes."""
    db = memory.db
    others = [row[0] for row in db.execute("SELECT DISTINCT embedder FROM embeddings WHERE user_id = ? "
                                           "AND embedder != ?", (memory.user_id, keep))]
    dropped = 0
    for embedder_id in others:
        with db.atomic():
            ids = [row[0] for row in db.execute("SELECT id FROM embeddings WHERE user_id = ? AND embedder = ?",
                                                (memory.user_id, embedder_id))]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                _index_rows_changed(db, [embedder_id], chunk)
                db.execute(f"DELETE FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            dropped += len(ids)
    return dropped, others


def nearest(memory: UserScope, embedder_id: str, dims: int, query: "np.ndarray", *, k: int,
            kinds: Sequence[str] = KINDS, floor: float | None = None, exact: bool = False,
            include_inactive: bool = False) -> list[VectorHit]:
    """The `k` items most similar to `query` among this user's vectors from this embedder, best first.

    Only vectors made by `embedder_id` are read, so two models' vectors are never compared. Items below
    `floor` (cosine) are dropped after ranking. `exact=True` skips the bit pre-selection (for measuring it).
    Superseded and archived facts are excluded before ranking unless `include_inactive`.
    """
    import numpy as np

    query = np.asarray(query, dtype=np.float32).reshape(-1)
    if query.shape[0] != dims:
        raise EmbedderError(f"query vector has {query.shape[0]} dimensions, the index {dims}",
                            hint="run `coop memory reembed` after changing the embedder")
    active = "" if include_inactive else (
        f" AND NOT (kind = 'fact' AND item_id IN (SELECT f.id FROM facts f WHERE f.user_id = ?1 "
        f"AND NOT ({active_fact('f')})))")
    size = 0 if exact else partition_size(memory, embedder_id)
    candidates: list[int] | None = None
    if size >= BIT_INDEX_FROM and k <= size // 4:
        candidates = loaded_bits(memory.db, memory.user_id, embedder_id).nearest(query, bit_candidates(k, size),
                                                                                  kinds)
    elif not exact and k <= SQLITE_VEC_MAX_K:
        # sqlite-vec answers at most SQLITE_VEC_MAX_K nearest; a larger request is served exactly, with numpy.
        name = index_table(memory.db, embedder_id, dims, create=False)
        if name is not None:
            candidates = _prefilter(memory, name, query, k, kinds, embedder_id)
    if candidates is not None:
        rows = []
        for start in range(0, len(candidates), 2000):
            chunk = candidates[start:start + 2000]
            rows += list(memory.db.execute(
                f"SELECT kind, item_id, vector FROM embeddings WHERE user_id = ?1 AND embedder = ?2 "
                f"AND id IN ({','.join('?' * len(chunk))}){active}", (memory.user_id, embedder_id, *chunk)))
    else:
        sql = (f"SELECT kind, item_id, vector FROM embeddings WHERE user_id = ?1 AND embedder = ?2 "
               f"AND kind IN ({','.join('?' * len(kinds))}){active}")
        rows = list(memory.db.execute(sql, (memory.user_id, embedder_id, *kinds)))
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), dims)
    scores = matrix @ query
    order = np.argsort(-scores)[:k] if len(rows) > k else np.argsort(-scores)
    hits = [VectorHit(rows[i][0], rows[i][1], float(scores[i])) for i in order]
    return [h for h in hits if floor is None or h.similarity >= floor]


def item_vectors(memory: UserScope, embedder_id: str, dims: int,
                 items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], "np.ndarray"]:
    """The stored vectors from `embedder_id` of these items (items without one are left out)."""
    import numpy as np

    out: dict[tuple[str, int], np.ndarray] = {}
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in items:
        by_kind.setdefault(kind, []).append(item_id)
    for kind, ids in by_kind.items():
        rows = list(memory.db.execute(
            f"SELECT item_id, vector FROM embeddings WHERE kind = ? AND embedder = ? AND user_id = ? "
            f"AND item_id IN ({','.join('?' * len(ids))})", (kind, embedder_id, memory.user_id, *ids)))
        if not rows:
            continue
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), dims)
        for (item_id, _), vector in zip(rows, matrix):
            out[(kind, item_id)] = vector
    return out


def similarities(memory: UserScope, embedder_id: str, dims: int, query: "np.ndarray",
                 items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """The exact cosine between `query` and each of these items' vectors from `embedder_id` (items without one
    are left out). Score fusion uses it to give full-text candidates their similarity too."""
    import numpy as np

    query = np.asarray(query, dtype=np.float32).reshape(-1)
    return {ref: float(vector @ query) for ref, vector in item_vectors(memory, embedder_id, dims, items).items()}


def partition_size(memory: UserScope, embedder_id: str) -> int:
    """How many vectors this user has from this embedder (kept by triggers in `embedding_counts`)."""
    return int(memory.db.scalar("SELECT count FROM embedding_counts WHERE user_id = ? AND embedder = ?",
                                (memory.user_id, embedder_id)) or 0)


def preselect_size(k: int, vectors: int) -> int:
    """Candidates the Hamming pre-selection keeps for `k` results among `vectors`: MIN_CANDIDATES or
    OVERFETCH_FACTOR per result, fewer when that would exceed PRESELECT_BUDGET_MS, never fewer than `k`, and
    never more than sqlite-vec's limit."""
    wanted = max(MIN_CANDIDATES, k * OVERFETCH_FACTOR)
    per_vector_ns = PRESELECT_BUDGET_MS * 1e6 / max(vectors, 1)
    affordable = int((per_vector_ns - _NS_PER_VECTOR) / _NS_PER_VECTOR_AND_CANDIDATE)
    return min(SQLITE_VEC_MAX_K, max(k, min(wanted, affordable)))


def bit_candidates(k: int, vectors: int) -> int:
    """Candidates the in-memory bit scan keeps for `k` results among `vectors` (at least BIT_INDEX_FROM). Each
    costs one float vector read in the re-rank (about 30 us at a million), so no more than recall needs: 1,000
    hold 0.998 of the exact top 10 among 100,000 real vectors and 0.978 at a million (`bench/vectorleg.py`)."""
    return max(BIT_CANDIDATES, k * BIT_CANDIDATES_PER_RESULT)


def _prefilter(memory: UserScope, name: str, query: "np.ndarray", k: int, kinds: Sequence[str],
               embedder_id: str) -> list[int]:
    want = preselect_size(k, partition_size(memory, embedder_id))
    blob = query.tobytes()
    if set(kinds) >= set(KINDS):
        rows = memory.db.execute(f"SELECT embedding_id FROM {name} WHERE embedding MATCH vec_quantize_binary(?) "
                                 "AND k = ? AND user_id = ?", (blob, want, memory.user_id))
        return [row[0] for row in rows]
    ids: list[int] = []
    for kind in kinds:
        rows = memory.db.execute(f"SELECT embedding_id FROM {name} WHERE embedding MATCH vec_quantize_binary(?) "
                                 "AND k = ? AND user_id = ? AND kind = ?", (blob, want, memory.user_id, kind))
        ids += [row[0] for row in rows]
    return ids


def index_status(db: Database) -> list[dict[str, object]]:
    """Per embedder: vectors stored, rows in its vec0 index (None without sqlite-vec), dirty flag."""
    out = []
    for embedder_id, name, dims, dirty in db.execute("SELECT embedder, table_name, dims, dirty FROM vector_indexes"):
        stored = db.scalar("SELECT count(*) FROM embeddings WHERE embedder = ?", (embedder_id,))
        indexed = db.scalar(f"SELECT count(*) FROM {name}") if db.has_vec else None
        out.append({"embedder": embedder_id, "dims": dims, "stored": stored, "indexed": indexed, "dirty": bool(dirty)})
    return out


def stored_embedders(db: Database) -> dict[str, int]:
    """Every embedder id that has vectors in the database, with its count (any user)."""
    return {row[0]: row[1] for row in db.execute("SELECT embedder, count(*) FROM embeddings GROUP BY embedder")}

