"""What copying one user's memory into another store (`transfer/migrate.py`) reads beyond an export's records
(`dump.py`): the stored vectors with their sentence parts (an export leaves vectors out, a copy carries them so
nothing is embedded again), the keyed hashes of forgotten records (an export leaves them out too), and what the
copy's verification counts on either side.

Plain reads of one user's rows, in SQL both backends run as written (`sql.py`), so the copy
itself stays above storage and writes only through the parts, as an import does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from coop.memory.kinds import REGISTRY
from coop.memory.storage.items import VectorRow
from coop.memory.storage.scope import Part, in_chunks
from coop.memory.storage.sql import marks

_ID_TABLES = ("sessions", "messages", "facts", "summaries")


class Copying(Part):
    """One user's reads for a copy into another store (`memory.copying`)."""

    def vector_rows(self, *, after_id: int, limit: int) -> list[VectorRow]:
        """The next `limit` of this user's stored vectors after row `after_id`, as stored: the whole vector's float32
        bytes and the sentence parts' float16 bytes (None for an item of one sentence)."""
        return [(int(r[0]), r[1], int(r[2]), r[3], bytes(r[4]), None if r[5] is None else bytes(r[5]))
                for r in self.db.execute(
                    "SELECT id, kind, item_id, embedder, vector, parts FROM embeddings WHERE user_id = $1 AND id > $2 "
                    "ORDER BY id LIMIT $3", (self.user_id, after_id, limit))]

    def vector_count(self) -> int:
        """How many vectors this user has, of every embedder."""
        return int(self.db.scalar("SELECT count(*) FROM embeddings WHERE user_id = $1", (self.user_id,)) or 0)

    def vector_items(self) -> set[tuple[str, str, int]]:
        """(embedder, kind, item id) of every vector this user has."""
        return {(r[0], r[1], int(r[2])) for r in self.db.execute(
            "SELECT embedder, kind, item_id FROM embeddings WHERE user_id = $1", (self.user_id,))}

    def texts(self, kind: str) -> Iterable[tuple[int, str]]:
        """(id, stored text) of every item of this user of `kind`, active or not, one at a time (a copy matches
        them against the other store's forgotten records)."""
        spec = REGISTRY[kind]
        with self.db.snapshot():
            for row in self.db.stream(f"SELECT id, {spec.text} FROM {spec.table} WHERE user_id = $1 ORDER BY id",
                                      (self.user_id,)):
                yield int(row[0]), str(row[1])

    def forgotten_hashes(self) -> dict[tuple[str, float], str]:
        """(kind, forgotten at) -> keyed hash of this user's forgotten records that have one."""
        return {(r[0], float(r[1])): r[2] for r in self.db.execute(
            "SELECT kind, forgotten_at, content_hash FROM forgotten WHERE user_id = $1 AND content_hash IS NOT NULL",
            (self.user_id,))}

    def existing_ids(self, table: str, ids: Iterable[int]) -> set[int]:
        """Those of `ids` that are rows of this user's in `table` (sessions, messages, facts or summaries)."""
        if table not in _ID_TABLES:
            raise ValueError(f"not a table of items with ids: {table}")
        found: set[int] = set()
        for chunk in in_chunks(sorted(set(ids))):
            found.update(int(r[0]) for r in self.db.execute(
                f"SELECT id FROM {table} WHERE user_id = $1 AND id IN ({marks(len(chunk), first=2)})",
                (self.user_id, *chunk)))
        return found

    def history_keys(self, fact_ids: Iterable[int]) -> Counter[tuple[int, str, float]]:
        """(fact id, action, written at) of each history row of these facts, counted."""
        found: Counter[tuple[int, str, float]] = Counter()
        for chunk in in_chunks(sorted(set(fact_ids))):
            found.update((int(r[0]), r[1], float(r[2])) for r in self.db.execute(
                f"SELECT fact_id, action, created_at FROM fact_history WHERE user_id = $1 "
                f"AND fact_id IN ({marks(len(chunk), first=2)})", (self.user_id, *chunk)))
        return found

    def summary_ids(self) -> dict[tuple[float, str], int]:
        """(written at, text as stored) -> id of this user's summaries: how a copy finds where each one landed."""
        return {(float(r[1]), r[2]): int(r[0]) for r in self.db.execute(
            "SELECT id, created_at, text FROM summaries WHERE user_id = $1 ORDER BY id DESC", (self.user_id,))}
