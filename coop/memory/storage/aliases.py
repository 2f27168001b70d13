"""Stable references across stores (`memory.aliases`): a row an import or a migration writes keeps the id it had
in the source where this store can give it, and where it cannot, the source's id is recorded as an alias of the
new one (`id_aliases`, m019), so a reference the user saw on the other side (`f12` in an undo hint) still names
the same item here.

Keeping an id (`insert`):
- SQLite: the source's id is kept when no row of the table has it (any user's: ids are the file's) and no
  forgotten record names it (a new row never takes a forgotten item's id: `sql._sqlite_fresh_id`). A row whose
  id is taken gets a fresh one above the table's, the forgotten ids' and every id the import's source has
  (`claim`), so a renumbered row never takes an id a later row of the same import would keep.
- Postgres: ids come from sequences every user shares, and row-level security hides other people's rows, so
  "is this id free" cannot be asked. Instead the import draws the ids itself: `claim` calls the sequence's
  `nextval` (a person's role has USAGE on the sequences, `postgres/people.py`; no other right is needed) until
  it passes the source's highest id, and an id drawn so is this import's alone: a row keeps its source id when
  that id is among those drawn, and is inserted with ON CONFLICT DO NOTHING all the same (a row someone put
  there by hand loses nothing: the row then takes the sequence's next id). The sequence ends above every id
  kept, so nobody's later row collides, and an id the sequence handed out before (another person's, or a
  forgotten one) is never used again. A source whose ids lie more than `MAX_CLAIM` above the sequence keeps
  none of those (no run of a million `nextval`s): they are aliased.
Sessions have no references people type, and keep no id.

Resolving (`resolve`): a typed id that is not a row of this user's but an alias names resolves to the item it
names here, with a one-line note; one that is a row of this user's *and* an alias resolves to the row, with a
note naming the imported item. An alias whose item is forgotten goes with it (a trigger, m019). When two imports
brought the same source id of a kind, the newer one's alias holds (the note names its date).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from coop.memory.kinds import REGISTRY, make_ref
from coop.memory.storage.items import Resolved
from coop.memory.storage.scope import Part
from coop.memory.text import iso_time

MAX_CLAIM = 1_000_000  # sequence values one import draws at most per kind (Postgres)
KEPT_KINDS = ("fact", "message", "summary")


class Aliases(Part):
    """One user's id aliases, and the ids this handle's import claimed (`claim`: held for the handle's life)."""

    def __init__(self, memory: Any) -> None:
        super().__init__(memory)
        self._floor: dict[str, int] = {}  # kind -> the source's highest id (fresh ids go above it on SQLite)
        self._drawn: dict[str, list[tuple[int, int]]] = {}  # kind -> ranges of sequence values drawn (Postgres)

    def claim(self, kind: str, up_to: int) -> None:
        """Before an import of rows of `kind` whose ids go up to `up_to`: make those ids ones its rows may keep
        (Postgres: draw them from the sequence), and new ids go above them."""
        if kind not in KEPT_KINDS or up_to <= 0:
            return
        self._floor[kind] = max(self._floor.get(kind, 0), up_to)
        if self.db.dialect != "postgres":
            return
        sequence = f"{REGISTRY[kind].table}_id_seq"
        last, called = self.db.one(f"SELECT last_value, is_called FROM {sequence}")
        count = up_to - (int(last) if called else int(last) - 1)
        if count <= 0 or count > MAX_CLAIM:
            return
        drawn = sorted(int(row[0]) for row in self.db.execute(
            f"SELECT nextval('{sequence}') FROM generate_series(1, CAST($1 AS BIGINT))", (count,)))
        ranges = self._drawn.setdefault(kind, [])
        for value in drawn:
            if ranges and ranges[-1][1] == value - 1:
                ranges[-1] = (ranges[-1][0], value)
            else:
                ranges.append((value, value))
        ranges.sort()

    def _keepable(self, kind: str, wanted: int) -> int | None:
        """`wanted` when a new row of `kind` may have it as its id, else None."""
        if wanted <= 0:
            return None
        if self.db.dialect == "postgres":
            if wanted > self._floor.get(kind, 0):
                self.claim(kind, wanted)  # an export without its highest ids (older ones): claimed as they come
            ranges = self._drawn.get(kind, [])
            at = bisect_right(ranges, (wanted, float("inf"))) - 1
            return wanted if at >= 0 and ranges[at][0] <= wanted <= ranges[at][1] else None
        self._floor[kind] = max(self._floor.get(kind, 0), wanted)
        taken = self.db.scalar(f"SELECT 1 FROM {REGISTRY[kind].table} WHERE id = $1 UNION ALL "
                               "SELECT 1 FROM forgotten WHERE kind = $2 AND item_id = $1 LIMIT 1", (wanted, kind))
        return None if taken is not None else wanted

    def insert(self, kind: str, source_id: int | None, statement: str, params: Sequence[Any],
               conflict: str = "") -> Any:
        """Run `statement`, an INSERT ... RETURNING id of a row of `kind` whose id is written `{id}` and whose
        ON CONFLICT clause (`conflict`, or none) is written `{conflict}`, with the source's id `source_id` kept
        where it can be (see the module), else a fresh id. Returns the statement's row (None: `conflict` held)."""
        if source_id is not None and (kept := self._keepable(kind, source_id)) is not None:
            row = self.db.one(statement.replace("{id}", str(int(kept))).replace("{conflict}", "ON CONFLICT DO NOTHING"),
                              params)
            if row is not None:
                return row
        fresh = self.sql.fresh_id(kind, above=self._floor.get(kind, 0))
        return self.db.one(statement.replace("{id}", fresh).replace("{conflict}", conflict), params)

    def record(self, kind: str, source_id: int, target_id: int, at: float) -> None:
        """The item the source called `source_id` is `target_id` here (the same id: no alias, and an older one
        for that source id is dropped)."""
        if kind not in KEPT_KINDS:
            return
        if source_id == target_id:
            self.db.execute("DELETE FROM id_aliases WHERE user_id = $1 AND kind = $2 AND source_id = $3",
                            (self.user_id, kind, source_id))
            return
        self.db.execute("INSERT INTO id_aliases (user_id, kind, source_id, target_id, created_at) "
                        "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, kind, source_id) DO UPDATE "
                        "SET target_id = excluded.target_id, created_at = excluded.created_at "
                        "WHERE id_aliases.target_id <> excluded.target_id",
                        (self.user_id, kind, source_id, target_id, at))

    def aliases(self, kind: str | None = None) -> list[tuple[str, int, int, float]]:
        """(kind, source id, id here, recorded at) of this user's aliases (of one kind), by kind and source id."""
        return [(str(r[0]), int(r[1]), int(r[2]), float(r[3])) for r in self.db.execute(
            "SELECT kind, source_id, target_id, created_at FROM id_aliases WHERE user_id = $1 "
            "AND (CAST($2 AS TEXT) IS NULL OR kind = $2) ORDER BY kind, source_id", (self.user_id, kind))]

    def resolve(self, kind: str, number: int) -> Resolved:
        """The item a typed reference names here (see the module), with the note to print when an alias was read."""
        row = self.db.one("SELECT target_id, created_at FROM id_aliases WHERE user_id = $1 AND kind = $2 "
                          "AND source_id = $3", (self.user_id, kind, number))
        if row is None:
            return Resolved(kind, number)
        target, day = int(row[0]), (iso_time(float(row[1])) or "")[:10]
        typed, there = make_ref(kind, number), make_ref(kind, target)
        if self.memory.exists(kind, number):
            return Resolved(kind, number, f"{typed} is this memory's own {typed}; the {typed} of the import of "
                                          f"{day} is {there} here")
        return Resolved(kind, target, f"{typed} is {there} here since the import of {day}")
