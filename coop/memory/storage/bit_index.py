"""The vector leg's pre-selection in a large memory: the sign bits of every vector of a user, held in memory and
scanned whole by Hamming distance.

Why not sqlite-vec's own `bit[]` KNN (whose `vec0` table coop wrote until m012 and never read): it keeps a
sorted list of its `k` best, so its cost grows with vectors x candidates (a million vectors: 35 ms for 10
candidates, about a second for 1,000). Recall against exact search needs many candidates as memory grows
(`bench/vectorleg.py`: about 1,000 at 100,000 vectors), and a numpy scan costs the same for any number of them:
XOR and popcount over the packed bits (48 bytes a vector for 384 dimensions), then a counting selection of the
nearest. The float vectors of those
candidates are then re-ranked exactly by `vectors.nearest`.

The truth stays in `embeddings`: each row keeps its bits in `embeddings.bits` (written with the vector, m008),
and the covering index `embeddings_bits` lets a process load a user's bits without reading a float vector. A
loaded copy belongs to one connection (`Database.caches`) and is never trusted blindly: before each use it is
checked against `embedding_counts.changes`, which triggers bump on every insert and delete. Unchanged: used as it
is. Only inserts since: the rows above the loaded largest id are added. Anything else (a forget, a re-embed): the
id list is compared and the copy patched when the difference explains every change, else it is loaded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coop.memory.kinds import KINDS
from coop.memory.storage.connection import THROWAWAY, connect
from coop.memory.storage.scope import in_chunks
from coop.memory.storage.sign_bits import sign_bits

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.storage.connection import Database

_KIND_CODES = {kind: code for code, kind in enumerate(KINDS)}
_KIND_CODE_SQL = "CASE kind " + " ".join(f"WHEN '{kind}' THEN {code}" for kind, code in _KIND_CODES.items()) + \
    " ELSE 255 END"
_CHUNK = 65_536  # rows read into numpy at a time


@dataclass
class LoadedBits:
    """One user's bits from one embedder, a row per vector: an item's whole vector and each of its parts (its
    sentences' vectors) are rows of the same embedding id. `ids` ascending, each row's kind code, and the bits as
    uint64 columns (`words[j]` is word j of every row: each scan step runs over one contiguous array)."""

    ids: "np.ndarray"
    kinds: "np.ndarray"
    words: "np.ndarray"
    count: int
    changes: int

    def nearest(self, query: "np.ndarray", want: int, kinds: Sequence[str]) -> list[int]:
        """The embedding ids of the `want` rows nearest `query` by Hamming distance among `kinds` (fewer ids
        when several of an item's rows are among them)."""
        import numpy as np

        if not len(self.ids):
            return []
        packed = np.zeros(self.words.shape[0] * 8, dtype=np.uint8)
        bits = sign_bits(np.asarray(query, dtype=np.float32).reshape(-1))
        packed[:len(bits)] = bits
        q = packed.view(np.uint64)
        distance = np.bitwise_count(self.words[0] ^ q[0]).astype(np.uint16)
        for j in range(1, self.words.shape[0]):
            distance += np.bitwise_count(self.words[j] ^ q[j])
        if set(kinds) < set(KINDS):
            allowed = np.isin(self.kinds, [_KIND_CODES[k] for k in kinds if k in _KIND_CODES])
            distance[~allowed] = np.iinfo(np.uint16).max
            rows = int(allowed.sum())
        else:
            rows = len(distance)
        want = min(want, rows)
        if want <= 0:
            return []
        chosen = np.argpartition(distance, want - 1)[:want] if want < len(distance) else np.arange(len(distance))
        return [int(i) for i in np.unique(self.ids[chosen])]


def _rows(db: "Database", user_id: str, embedder_id: str, *, after_id: int = 0,
          ids: Sequence[int] | None = None) -> tuple["np.ndarray", "np.ndarray", "np.ndarray"]:
    """(ids, kind codes, words) of this user's rows from this embedder: those above `after_id`, or exactly `ids`.
    Read in chunks into numpy, so a million rows never exist as Python objects at once."""
    import numpy as np

    if ids is None:
        cursors = [db.execute(f"SELECT id, {_KIND_CODE_SQL}, bits, parts_bits FROM embeddings "
                              "INDEXED BY embeddings_bits "
                              "WHERE user_id = ? AND embedder = ? AND id > ? ORDER BY id",
                              (user_id, embedder_id, after_id))]
    else:
        cursors = [db.execute(f"SELECT id, {_KIND_CODE_SQL}, bits, parts_bits "
                              f"FROM embeddings WHERE id IN ({','.join('?' * len(chunk))}) ORDER BY id", chunk)
                   for chunk in in_chunks(ids)]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    width = 0
    for cursor in cursors:
        while True:
            rows = [row for _, row in zip(range(_CHUNK), cursor)]
            if not rows:
                break
            width = width or len(rows[0][2])
            if any(row[3] for row in rows):  # an item's parts follow its whole vector, as rows of the same id
                rows = [(row[0], row[1], bits) for row in rows
                        for bits in [row[2]] + [row[3][at:at + width] for at in range(0, len(row[3] or b""), width)]]
            parts.append((np.array([row[0] for row in rows], dtype=np.int64),
                          np.array([row[1] for row in rows], dtype=np.uint8),
                          np.frombuffer(b"".join(row[2] for row in rows), dtype=np.uint8).reshape(len(rows), width)))
    words = max(1, -(-width // 8))
    packed = np.zeros((sum(len(p[0]) for p in parts), words * 8), dtype=np.uint8)
    at = 0
    for _, _, bits in parts:
        packed[at:at + len(bits), :width] = bits
        at += len(bits)
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate([p[0] for p in parts]) if parts else empty,
            np.concatenate([p[1] for p in parts]) if parts else empty.astype(np.uint8),
            np.ascontiguousarray(packed.view(np.uint64).T))


def _state(db: "Database", user_id: str, embedder_id: str) -> tuple[int, int]:
    row = db.one("SELECT count, changes FROM embedding_counts WHERE user_id = ? AND embedder = ?",
                 (user_id, embedder_id))
    return (int(row[0]), int(row[1])) if row else (0, 0)


def _refreshed(db: "Database", old: LoadedBits | None, user_id: str, embedder_id: str) -> LoadedBits:
    import numpy as np

    count, changes = _state(db, user_id, embedder_id)
    if old is not None and old.changes == changes:
        return old
    if old is not None and len(old.ids) and count - old.count == changes - old.changes:
        # Only inserts since: each new row has an id above every row that was already there.
        return _merged(old, np.ones(len(old.ids), dtype=bool),
                       _rows(db, user_id, embedder_id, after_id=int(old.ids[-1])), count, changes)
    if old is not None and len(old.ids):
        now = np.fromiter((row[0] for row in db.execute(
            "SELECT id FROM embeddings INDEXED BY embeddings_bits WHERE user_id = ? AND embedder = ? ORDER BY id",
            (user_id, embedder_id))), dtype=np.int64)
        removed = np.setdiff1d(old.ids, now)
        added = np.setdiff1d(now, old.ids)
        # A delete and an insert that reused its id leave no trace in the id lists: then the counts differ.
        if len(removed) + len(added) == changes - old.changes and len(added) <= 10_000:
            return _merged(old, ~np.isin(old.ids, removed), _rows(db, user_id, embedder_id, ids=added.tolist()),
                           count, changes)
    ids, kinds, words = _rows(db, user_id, embedder_id)
    return LoadedBits(ids, kinds, words, count, changes)


def _merged(old: LoadedBits, keep: "np.ndarray", new: tuple["np.ndarray", "np.ndarray", "np.ndarray"],
            count: int, changes: int) -> LoadedBits:
    """`old`'s rows where `keep`, with the `new` rows (ids, kinds, words), in id order."""
    import numpy as np

    ids, kinds, words = new
    if not len(ids):
        return LoadedBits(old.ids[keep], old.kinds[keep], np.ascontiguousarray(old.words[:, keep]), count, changes)
    merged = np.concatenate([old.ids[keep], ids])
    order = np.argsort(merged, kind="stable")
    return LoadedBits(merged[order], np.concatenate([old.kinds[keep], kinds])[order],
                      np.ascontiguousarray(np.concatenate([old.words[:, keep], words], axis=1)[:, order]),
                      count, changes)


def _key(user_id: str, embedder_id: str) -> str:
    return f"bits:{user_id}\x00{embedder_id}"


def load_beside(target: "Database", user_id: str, embedder_id: str) -> bool:
    """Load this user's bits on a connection of its own and give the copy to `target`'s cache, so that the first
    search on `target` does not pay for loading them (0.1 s at 100,000 vectors, 0.9 s at a million). Meant for
    another thread than `target`'s: `target`'s connection is never used (it may be in the middle of a write),
    and the copy is checked against the database before its first use, like any other. False when there was
    nothing to do: a copy is there already, or the database lives in memory (no second connection sees it)."""
    key = _key(user_id, embedder_id)
    if key in target.caches or target.path == THROWAWAY:
        return False
    source = connect(target.path)
    try:
        copy = loaded_bits(source, user_id, embedder_id)
    finally:
        source.close()
    target.caches.setdefault(key, copy)
    return True


def loaded_bits(db: "Database", user_id: str, embedder_id: str) -> LoadedBits:
    """This user's bits from this embedder, up to date with the database (see the module's docstring)."""
    key = _key(user_id, embedder_id)
    old = db.caches.get(key)
    if db.conn.in_transaction:
        # Inside a write that may yet roll back: read what this transaction sees, keep nothing of it.
        return _refreshed(db, old, user_id, embedder_id)
    db.execute("BEGIN")  # one read snapshot for the counters and the rows
    try:
        fresh = _refreshed(db, old, user_id, embedder_id)
    finally:
        db.execute("COMMIT")
    db.caches[key] = fresh
    return fresh
