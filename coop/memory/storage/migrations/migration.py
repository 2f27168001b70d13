"""What a migration is: a name recorded in `_migrations`, why it exists, and what it runs on each engine, frozen
as released: SQLite's SQL (`sql`) and Postgres's (`postgres`), each with an optional Python step run just before
it in the same transaction, for what SQL cannot say.

Postgres began at the schema SQLite reached at m013: m001's Postgres form makes all of it, and m002..m013 have no
Postgres form (None: recorded as run, nothing runs). Every later migration has both: the same text when both
engines take it, or "" on an engine where the change means nothing (FTS5's tables have no Postgres counterpart),
with why in `why`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database
    from coop.memory.storage.postgres.connection import PgDatabase


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str
    why: str
    step: "Callable[[Database], None] | None" = None
    postgres: str | None = None
    postgres_step: "Callable[[PgDatabase], None] | None" = None
