"""Vector storage and nearest-neighbour search for one user's items.

- `embeddings` (a plain table) holds every vector as float32 bytes, with the embedder's id, its sign bits, and
  for an item of several sentences the float16 vectors of each (`parts`, see `text.sentence_parts`). It is the
  truth, readable by any SQLite, and what exact re-ranking reads.
- Search pre-selects candidates by Hamming distance on the sign bits of every vector and part of the user, held
  in memory (`bit_index.py`: loaded once per connection, checked against a change counter before each use), and
  re-ranks them by exact cosine; an item scores as its whole vector or its nearest part, whichever is nearer.
  `bench/vectorleg.py` reports recall against exact search (0.998 at 100,000 vectors) and the time.
- No other index: sqlite-vec's `vec0` bit KNN, measured beside the scan in `bench/vectorleg.py`, needs as many
  candidates for the same recall and costs about vectors x k (a vec0 table was written here until m012 dropped
  it, never read by search).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coop.errors import EmbedderError
from coop.memory.kinds import KINDS, REGISTRY, inactive_facts
from coop.memory.storage.bit_index import loaded_bits
from coop.memory.storage.connection import Database
from coop.memory.storage.items import VectorHit
from coop.memory.storage.scope import Scope, UserScope, in_chunks
from coop.memory.storage.sign_bits import sign_bits
from coop.memory.storage.sql import dialect_of, marks
from coop.privacy.secrets import mask

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Candidates of the in-memory bit scan (`bit_index.py`) re-ranked exactly: one per BIT_CANDIDATES_SHARE vectors,
# within these bounds. sqlite-vec's own Hamming KNN is not used for it: it keeps a sorted list of its k best, so its
# cost grows with vectors x candidates (a million vectors: 35 ms for 10 candidates, about a second for 1,000).
BIT_CANDIDATES_MIN, BIT_CANDIDATES_MAX, BIT_CANDIDATES_SHARE, BIT_CANDIDATES_PER_RESULT = 200, 1000, 20, 20


def store_vectors(memory: UserScope, kind: str, item_ids: Sequence[int], embedder_id: str,
                  matrix: "np.ndarray", parts: "Sequence[np.ndarray | None] | None" = None) -> None:
    """Write one vector per item (replacing that embedder's old one) and mark the items as embedded by it.
    `parts`: per item, the vectors of its sentences (`text.sentence_parts`), or None; kept as float16 (the
    re-rank needs no more precision: cosines move by about 0.001)."""
    import numpy as np

    if len(item_ids) != len(matrix) or (parts is not None and len(parts) != len(item_ids)):
        raise EmbedderError(f"{len(matrix)} vectors for {len(item_ids)} items", hint="report this as a bug")
    part_blobs = [(None, None) if p is None or not len(p) else
                  (np.asarray(p, dtype=np.float16).tobytes(), sign_bits(np.asarray(p, dtype=np.float32)).tobytes())
                  for p in (parts if parts is not None else [None] * len(item_ids))]
    db = memory.db
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    table = REGISTRY[kind].table
    with db.atomic():
        old = [row[0] for row in db.execute(
            f"SELECT id FROM embeddings WHERE kind = $1 AND embedder = $2 AND {dialect_of(db).no_index}user_id = $3 "
            f"AND item_id IN ({marks(len(item_ids), first=4)})", (kind, embedder_id, memory.user_id, *item_ids))]
        if old:
            db.execute(f"DELETE FROM embeddings WHERE id IN ({marks(len(old))})", old)
        for item_id, vector, bits, (part_vectors, part_bits) in zip(item_ids, matrix, sign_bits(matrix), part_blobs):
            db.execute("INSERT INTO embeddings (user_id, kind, item_id, embedder, vector, bits, parts, parts_bits) "
                       "VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
                       (memory.user_id, kind, item_id, embedder_id, vector.tobytes(), bits.tobytes(), part_vectors,
                        part_bits))
        db.executemany(f"UPDATE {table} SET embedder = $1, embedding_error = NULL WHERE id = $2 AND user_id = $3",
                            [(embedder_id, item_id, memory.user_id) for item_id in item_ids])


def delete_item_vectors(memory: UserScope, kind: str, item_id: int) -> None:
    """Remove an item's vectors (every embedder's)."""
    memory.db.execute("DELETE FROM embeddings WHERE kind = $1 AND item_id = $2 AND user_id = $3",
                      (kind, item_id, memory.user_id))


def pending_items(memory: UserScope, kind: str, *, after_id: int, limit: int) -> list[tuple[int, str]]:
    """(id, text) of this user's items of `kind` that have no vector yet, in id order after `after_id`."""
    spec = REGISTRY[kind]
    return [(int(row[0]), row[1]) for row in memory.db.execute(
        f"SELECT id, {spec.text} FROM {spec.table} WHERE user_id = $1 AND embedder IS NULL AND id > $2 "
        f"ORDER BY id LIMIT $3", (memory.user_id, after_id, limit))]


def record_embedding_error(memory: UserScope, kind: str, item_id: int, message: str) -> None:
    """Keep why an item could not be embedded; it is tried again later (the error is overwritten then)."""
    memory.db.execute(f"UPDATE {REGISTRY[kind].table} SET embedding_error = $1 WHERE id = $2 AND user_id = $3",
                      (mask(message), item_id, memory.user_id))


def hand_back_for_embedding(memory: UserScope, kind: str, keep_embedder: str, limit: int) -> int:
    """Mark up to `limit` of this user's items of `kind` embedded by another model than `keep_embedder` as not
    embedded, so the ordinary backlog path gives them a vector from it (their old vectors stay until
    `drop_other_embedders`); returns how many are still to hand back after these."""
    table = REGISTRY[kind].table
    with memory.db.atomic():
        memory.db.execute(f"UPDATE {table} SET embedder = NULL WHERE id IN (SELECT id FROM {table} WHERE user_id = $1 "
                          "AND embedder IS NOT NULL AND embedder != $2 ORDER BY id LIMIT $3)",
                          (memory.user_id, keep_embedder, limit))
    return int(memory.db.scalar(f"SELECT count(*) FROM {table} WHERE user_id = $1 AND embedder IS NOT NULL "
                                "AND embedder != $2", (memory.user_id, keep_embedder)))


def drop_other_embedders(memory: UserScope, keep: str) -> tuple[int, list[str]]:
    """Delete this user's vectors from every embedder but `keep`."""
    db = memory.db
    others = [row[0] for row in db.execute("SELECT DISTINCT embedder FROM embeddings WHERE user_id = $1 "
                                           "AND embedder != $2", (memory.user_id, keep))]
    dropped = 0
    for embedder_id in others:
        with db.atomic():
            ids = [row[0] for row in db.execute("SELECT id FROM embeddings WHERE user_id = $1 AND embedder = $2",
                                                (memory.user_id, embedder_id))]
            for chunk in in_chunks(ids):
                db.execute(f"DELETE FROM embeddings WHERE id IN ({marks(len(chunk))})", chunk)
            dropped += len(ids)
    return dropped, others


def nearest(memory: Scope[Database], embedder_id: str, dims: int, query: "np.ndarray", *, k: int,
            kinds: Sequence[str] = KINDS, floor: float | None = None, exact: bool = False,
            include_inactive: bool = False,
            keep: dict[tuple[str, int], tuple[Any, ...]] | None = None) -> list[VectorHit]:
    """The `k` items most similar to `query` among this user's vectors from this embedder, best first.

    Only vectors made by `embedder_id` are read, so two models' vectors are never compared. Items below
    `floor` (cosine) are dropped after ranking. `exact=True` skips the bit pre-selection (for measuring it).
    Superseded and archived facts are excluded before ranking unless `include_inactive`. `keep`, when given,
    receives every row read, by (kind, id), so the turn does not read them again (`vector_index.reading_once`).
    """
    import numpy as np

    query = np.asarray(query, dtype=np.float32).reshape(-1)
    if query.shape[0] != dims:
        raise EmbedderError(f"query vector has {query.shape[0]} dimensions, the index {dims}",
                            hint="run `coop memory reembed` after changing the embedder")
    active = "" if include_inactive else (
        f" AND NOT (kind = 'fact' AND item_id IN ({inactive_facts('$1')}))")
    dialect = dialect_of(memory.db)
    hint = dialect.no_index
    candidates = None
    if not exact:
        bits = loaded_bits(memory.db, memory.user_id, embedder_id)
        candidates = bits.nearest(query, bit_candidates(k, len(bits.ids)), kinds)
        if not candidates:
            return []
    rows = []
    if candidates is not None:
        for chunk in in_chunks(candidates, 2000):
            # `+`: each row is found by its id alone; through `embeddings_bits` it cost an index step more
            # (1,000 candidates at 100,000 vectors: 9.5 -> 3.4 ms)
            rows += list(memory.db.execute(
                f"SELECT kind, item_id, vector, parts FROM embeddings WHERE {hint}user_id = $1 AND {hint}embedder = $2 "
                f"AND id IN ({marks(len(chunk), first=3)}){active}", (memory.user_id, embedder_id, *chunk)))
    else:
        rows = list(memory.db.execute(
            # INDEXED BY: with ANALYZE's statistics (`pragma optimize` writes them) the planner judged a kind
            # that is rare or absent ("fact" beside 100,000 messages) not worth the index and scanned every
            # vector of the database: 92 ms to find no fact, against an index lookup's microseconds.
            f"SELECT kind, item_id, vector, parts FROM embeddings{dialect.indexed_by('embeddings_user')} "
            f"WHERE user_id = $1 AND embedder = $2 AND kind IN ({marks(len(kinds), first=3)}){active}",
            (memory.user_id, embedder_id, *kinds)))
    if not rows:
        return []
    if keep is not None:
        keep.update(((row[0], row[1]), row) for row in rows)
    scores = best_cosines(rows, query, dims)
    order = np.argsort(-scores)[:k] if len(rows) > k else np.argsort(-scores)
    hits = [VectorHit(rows[i][0], rows[i][1], float(scores[i])) for i in order]
    return [h for h in hits if floor is None or h.similarity >= floor]


def best_cosines(rows: Sequence[tuple[Any, ...]], query: "np.ndarray", dims: int) -> "np.ndarray":
    """Per row (`..., vector, parts`), the cosine of the query with the whole vector or the best of its parts
    (float16 sentence vectors, when the item has them): an item is as near as its nearest sentence."""
    import numpy as np

    scores: np.ndarray = np.frombuffer(b"".join(row[2] for row in rows),
                                       dtype=np.float32).reshape(len(rows), dims) @ query
    with_parts = [(i, row[3]) for i, row in enumerate(rows) if row[3]]
    if with_parts:
        parts = np.frombuffer(b"".join(blob for _, blob in with_parts), dtype=np.float16).reshape(-1, dims)
        owners = np.repeat([i for i, _ in with_parts], [len(blob) // (2 * dims) for _, blob in with_parts])
        np.maximum.at(scores, owners, parts.astype(np.float32) @ query)
    return scores


def item_rows(memory: UserScope, embedder_id: str, items: Sequence[tuple[str, int]]) -> list[tuple[Any, ...]]:
    """(kind, item_id, vector, parts) of these items' vectors from `embedder_id` (items without one are left out),
    each looked up by (kind, item_id, embedder): `+user_id` keeps the planner off `embeddings_user`, which would
    scan every vector of the user."""
    by_kind: dict[str, list[int]] = {}
    for kind, item_id in items:
        by_kind.setdefault(kind, []).append(item_id)
    rows: list[tuple[Any, ...]] = []
    for kind, ids in by_kind.items():
        for chunk in in_chunks(ids):
            rows += memory.db.execute(
                f"SELECT kind, item_id, vector, parts FROM embeddings WHERE kind = $1 AND embedder = $2 "
                f"AND {dialect_of(memory.db).no_index}user_id = $3 AND item_id IN ({marks(len(chunk), first=4)})",
                (kind, embedder_id, memory.user_id, *chunk))
    return rows


def item_vectors(memory: UserScope, embedder_id: str, dims: int,
                 items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], "np.ndarray"]:
    """The stored (whole) vectors from `embedder_id` of these items (items without one are left out)."""
    import numpy as np

    rows = item_rows(memory, embedder_id, items)
    if not rows:
        return {}
    matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), dims)
    return {(row[0], row[1]): vector for row, vector in zip(rows, matrix)}


def similarities(memory: UserScope, embedder_id: str, dims: int, query: "np.ndarray",
                 items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
    """The exact cosine between `query` and each of these items from `embedder_id`: with its whole vector or its
    nearest part, as `nearest` ranks them (items without a vector are left out). Score fusion uses it to give
    full-text candidates their similarity too."""
    import numpy as np

    rows = item_rows(memory, embedder_id, items)
    if not rows:
        return {}
    scores = best_cosines(rows, np.asarray(query, dtype=np.float32).reshape(-1), dims)
    return {(row[0], row[1]): float(score) for row, score in zip(rows, scores)}


def partition_size(memory: UserScope, embedder_id: str) -> int:
    """How many vectors this user has from this embedder (kept by triggers in `embedding_counts`)."""
    return int(memory.db.scalar("SELECT count FROM embedding_counts WHERE user_id = $1 AND embedder = $2",
                                (memory.user_id, embedder_id)) or 0)


def kind_size(memory: UserScope, embedder_id: str, kind: str) -> int:
    """How many of this user's items of `kind` have a vector from this embedder (a count over `embeddings_user`)."""
    index = dialect_of(memory.db).indexed_by("embeddings_user")
    return int(memory.db.scalar(f"SELECT count(*) FROM embeddings{index} WHERE user_id = $1 AND embedder = $2 "
                                "AND kind = $3", (memory.user_id, embedder_id, kind)) or 0)


def bit_candidates(k: int, rows: int) -> int:
    """Candidates the bit scan keeps for `k` results among `rows` vectors (wholes and parts): one in
    BIT_CANDIDATES_SHARE, within BIT_CANDIDATES_MIN and BIT_CANDIDATES_MAX, and never fewer than
    BIT_CANDIDATES_PER_RESULT per result. Each costs a float read in the re-rank (about 30 us at a million), so no
    more than recall needs: 1,000 hold 0.998 of the exact top 10 among 100,000 real vectors and 0.990 at a million
    (`bench/vectorleg.py`)."""
    return max(k * BIT_CANDIDATES_PER_RESULT, min(BIT_CANDIDATES_MAX, max(BIT_CANDIDATES_MIN,
                                                                          rows // BIT_CANDIDATES_SHARE)))


def index_status(db: Database) -> list[dict[str, object]]:
    """Per embedder, what the vector leg can search: vectors stored (`embeddings`, any user), their dimensions,
    and how many carry sign bits of the right length (`indexed`: what the in-memory bit scan reads, `bit_index.py`;
    a vector without them is found by no search but an exact one). There is no separate index to fall out of step
    or rebuild: `dirty` is always False (kept for `coop check`, which read it from the vec0 index m012 dropped)."""
    return [{"embedder": embedder_id, "dims": dims, "stored": stored, "indexed": indexed, "dirty": False}
            for embedder_id, dims, stored, indexed in db.execute(
                "SELECT embedder, max(length(vector)) / 4, count(*), sum(length(bits) * 8 = length(vector) / 4) "
                "FROM embeddings GROUP BY embedder ORDER BY embedder")]


def stored_embedders(db: Database) -> dict[str, int]:
    """Every embedder id that has vectors in the database, with its count (any user)."""
    return {row[0]: row[1] for row in db.execute("SELECT embedder, count(*) FROM embeddings GROUP BY embedder")}

