"""The SQL both engines run: how the parts (sessions, messages, facts, sources, jobs, forgetting, summaries) write
a statement once for SQLite and Postgres, with nothing translated when it runs.

- Parameters are `$1` .. `$n`: Postgres's own, sent as written (`postgres/connection.py`); to SQLite they are
  parameters named "1" .. "n", bound by name (`connection.numbered`), so a value may be used twice.
- Standard forms both engines know: `INSERT ... ON CONFLICT DO NOTHING`, `IS NOT DISTINCT FROM`, `RETURNING`,
  `coalesce`, `CAST`. An `INSERT ... SELECT` with an `ON CONFLICT` clause needs a `WHERE` in its SELECT (SQLite
  would read the `ON` as a join's).
- Where the engines differ, the statement asks its engine's `Dialect` for the piece (below): the two-value
  greatest, a substring's position, SQLite's planner hints ("no index for this term", "this index"), and the id a new
  row gets.

Statements for one engine only (full text, vectors, health, the Postgres indexes) keep that engine's own form.

`SqlDatabase` is the connection the parts are typed against: what SQLite's `connection.Database` and Postgres's
`postgres.connection.PgDatabase` both offer, so either is handed to the parts as it is (mypy checks each against it
where its backend builds a user's memory).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from coop.memory.kinds import REGISTRY


class HasDialect(Protocol):
    @property
    def dialect(self) -> str: ...


class Rows(Protocol):
    """A statement's rows: an apsw cursor, or the rows psycopg read whole."""

    def __iter__(self) -> Iterator[Any]: ...

    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...


class SqlDatabase(HasDialect, Protocol):
    """One engine's connection as the shared statements use it; `$1` .. `$n` parameters, values as a sequence."""

    @property
    def path(self) -> str:
        """Where the store is, for people (a file path, or a server URL without its password)."""
        ...

    @property
    def read_only(self) -> bool: ...

    @property
    def key_location(self) -> str:
        """Where the key of forgotten texts' hashes is kept (`forget_key.py`)."""
        ...

    @property
    def caches(self) -> dict[str, Any]:
        """Copies derived from the database, kept with the connection (checked before each use)."""
        ...

    def execute(self, sql: str, params: Any = None) -> Rows: ...

    def executemany(self, sql: str, rows: Any) -> None: ...

    def one(self, sql: str, params: Any = None) -> Any: ...

    def scalar(self, sql: str, params: Any = None) -> Any: ...

    def stream(self, sql: str, params: Any = None) -> Iterator[tuple[Any, ...]]:
        """The rows of a query one at a time (inside `snapshot`)."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """A transaction that nests; on an error everything inside it is rolled back."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one state of the database."""
        ...

    def checkpoint(self) -> None: ...

    def compact(self) -> str | None:
        """Rewrite the files that held deleted rows (`coop memory forget --compact`): None, or why it could not."""
        ...

    def close(self) -> None: ...


def marks(count: int, first: int = 1) -> str:
    """`$first, ..., $(first + count - 1)`: the parameters of an `IN (...)` list."""
    return ",".join(f"${number}" for number in range(first, first + count))


def _sqlite_fresh_id(kind: str, above: int = 0) -> str:
    """The id a new row of `kind` gets on SQLite: above every id its table has *and* every id it had before a
    forget. SQLite reuses the highest rowid once that row is deleted, so without this a new fact could take the id
    of one just forgotten, inherit its history and answer to references (f12 in an old tool result) that meant the
    forgotten one. Used inside the write transaction, so two writers cannot pick the same id. `above`: an
    import's source's highest id, which the rows it renumbers stay above (`aliases.py`)."""
    table = REGISTRY[kind].table
    return (f"(SELECT max(coalesce((SELECT max(id) FROM {table}), 0), "
            f"coalesce((SELECT max(item_id) FROM forgotten WHERE kind = '{kind}'), 0), {int(above)}) + 1)")


def _postgres_fresh_id(kind: str) -> str:
    """On Postgres, the table's sequence, which never hands an id out twice."""
    return f"nextval('{REGISTRY[kind].table}_id_seq')"


@dataclass(frozen=True)
class Dialect:
    """The pieces of a shared statement that differ between the engines."""

    name: str
    greatest: str  # the larger of two values (SQLite's scalar max, Postgres's greatest)
    position: str  # where a substring starts, 0 when absent: (haystack, needle)
    no_index: str  # prefixed to a column: SQLite's "do not use an index for this term"; Postgres has no such hint

    def indexed_by(self, index: str) -> str:
        """SQLite's "use this index" (where its statistics mislead the planner), after a table's name."""
        return f" INDEXED BY {index}" if self.name == "sqlite" else ""

    def fresh_id(self, kind: str, above: int = 0) -> str:
        """The id of a new row of `kind`, as SQL (on Postgres the sequence is above `above` already: `aliases.py`)."""
        return _sqlite_fresh_id(kind, above) if self.name == "sqlite" else _postgres_fresh_id(kind)


SQLITE = Dialect("sqlite", greatest="max", position="instr", no_index="+")
POSTGRES = Dialect("postgres", greatest="greatest", position="strpos", no_index="")
_DIALECTS = {dialect.name: dialect for dialect in (SQLITE, POSTGRES)}


def dialect_of(db: HasDialect) -> Dialect:
    return _DIALECTS[db.dialect]
