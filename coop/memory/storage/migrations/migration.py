"""What a migration is: a name recorded in `_migrations`, the SQL it ran when it was released (frozen text), why it
exists, and for the few that cannot be plain SQL a Python step run before the SQL in the same transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str
    why: str
    step: "Callable[[Database], None] | None" = None
