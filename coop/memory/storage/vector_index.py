"""The SQLite vector index: one user's vectors in `embeddings`, searched by the in-memory bit scan with an exact
re-rank (`vectors.py`, `bit_index.py`), behind `interface.VectorIndex`.

Within a turn (`reading_once()`), each item's stored vector is read from the database once: the turn asks for the
cosines of search's candidates, then of their neighbours, then of the profile's facts and of what it dedups, and
the same items come up again and again."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from coop.memory.kinds import KINDS
from coop.memory.storage import vectors
from coop.memory.storage.bit_index import load_beside
from coop.memory.storage.connection import Database
from coop.memory.storage.items import VectorHit
from coop.memory.storage.scope import Scope
from coop.memory.storage.sql import SqlDatabase

if TYPE_CHECKING:
    import numpy as np

DB = TypeVar("DB", bound=SqlDatabase)

Row = tuple[Any, ...]  # (kind, item_id, vector, parts) as stored


class StoredVectorIndex(Generic[DB]):
    """What both backends' vector indexes share: the stored vectors (`embeddings`, the same table and bytes in
    either engine, through `vectors.py`'s portable statements), their backlog, and the turn's read-once cache.
    The search itself (`store`, `nearest`, `similarities`, `warm`) is each backend's, on its own connection
    (`DB`)."""

    def __init__(self, scope: Scope[DB]) -> None:
        self.scope = scope
        self._rows: dict[tuple[str, str, int], Row | None] | None = None  # (embedder, kind, id) -> row; None: off
        self.reads = 0  # rows read from the database by `vectors`/`similarities` (for tests and traces)

    @contextmanager
    def reading_once(self) -> Iterator[None]:
        """Within the block each item's vector is read at most once (items without one: looked up once)."""
        outer = self._rows is not None
        if not outer:
            self._rows = {}
        try:
            yield
        finally:
            if not outer:
                self._rows = None
                self._turn_over()

    def _turn_over(self) -> None:
        """What else a backend keeps for the length of `reading_once` is dropped here."""

    # -- writes ---------------------------------------------------------------------------------------------
    def delete(self, kind: str, item_id: int) -> None:
        vectors.delete_item_vectors(self.scope, kind, item_id)

    def pending(self, kind: str, *, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Items of `kind` still to embed (id, text), in id order after `after_id`."""
        return vectors.pending_items(self.scope, kind, after_id=after_id, limit=limit)

    def record_error(self, kind: str, item_id: int, message: str) -> None:
        vectors.record_embedding_error(self.scope, kind, item_id, message)

    def hand_back(self, kind: str, keep_embedder: str, limit: int) -> int:
        return vectors.hand_back_for_embedding(self.scope, kind, keep_embedder, limit)

    def drop_other_embedders(self, keep: str) -> tuple[int, list[str]]:
        return vectors.drop_other_embedders(self.scope, keep)

    # -- reads ----------------------------------------------------------------------------------------------
    def read(self, embedder_id: str, dims: int,
                items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], "np.ndarray"]:
        """The stored (whole) vectors from `embedder_id` of these items (items without one are left out)."""
        import numpy as np

        rows = self._item_rows(embedder_id, items)
        if not rows:
            return {}
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), dims)
        return {(row[0], row[1]): vector for row, vector in zip(rows, matrix)}

    def size(self, embedder_id: str, kind: str | None = None) -> int:
        """How many vectors this user has from this embedder (of `kind`, when given)."""
        if kind is None:
            return vectors.partition_size(self.scope, embedder_id)
        return vectors.kind_size(self.scope, embedder_id, kind)

    def _item_rows(self, embedder_id: str, items: Sequence[tuple[str, int]]) -> list[Row]:
        wanted = list(dict.fromkeys(items))
        if self._rows is None:
            rows = vectors.item_rows(self.scope, embedder_id, wanted)
            self.reads += len(rows)
            return rows
        missing = [item for item in wanted if (embedder_id, *item) not in self._rows]
        if missing:
            read = vectors.item_rows(self.scope, embedder_id, missing)
            self.reads += len(read)
            for item in missing:
                self._rows[(embedder_id, *item)] = None
            for row in read:
                self._rows[(embedder_id, row[0], row[1])] = row
        found = (self._rows[(embedder_id, *item)] for item in wanted)
        return [row for row in found if row is not None]


class SqliteVectorIndex(StoredVectorIndex[Database]):
    """The vectors of one user in a SQLite file (`UserMemory.vectors`): the in-memory bit scan and exact re-rank."""

    def store(self, kind: str, item_ids: Sequence[int], embedder_id: str, wholes: "np.ndarray",
              parts: Sequence["np.ndarray | None"] | None = None) -> None:
        vectors.store_vectors(self.scope, kind, item_ids, embedder_id, wholes, parts)

    def warm(self, embedder_id: str) -> bool:
        """Load this user's sign bits for `embedder_id` on a connection of its own (from another thread, while
        the user types), so the first search does not pay for it; False when there was nothing to do."""
        return load_beside(self.scope.db, self.scope.user_id, embedder_id)

    def nearest(self, embedder_id: str, dims: int, query: "np.ndarray", *, k: int, kinds: Sequence[str] = KINDS,
                floor: float | None = None, exact: bool = False, include_inactive: bool = False) -> list[VectorHit]:
        seen: dict[tuple[str, int], Row] | None = {} if self._rows is not None else None
        hits = vectors.nearest(self.scope, embedder_id, dims, query, k=k, kinds=kinds, floor=floor, exact=exact,
                               include_inactive=include_inactive, keep=seen)
        if seen and self._rows is not None:
            self.reads += len(seen)
            self._rows.update(((embedder_id, *item), row) for item, row in seen.items())
        return hits

    def similarities(self, embedder_id: str, dims: int, query: "np.ndarray",
                     items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
        """The exact cosine between `query` and each of these items: with its whole vector or its nearest part,
        as `nearest` ranks them (items without a vector are left out)."""
        import numpy as np

        rows = self._item_rows(embedder_id, items)
        if not rows:
            return {}
        scores = vectors.best_cosines(rows, np.asarray(query, dtype=np.float32).reshape(-1), dims)
        return {(row[0], row[1]): float(score) for row, score in zip(rows, scores)}
