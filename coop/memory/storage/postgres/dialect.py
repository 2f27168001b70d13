"""The SQLite statements of the shared parts (sessions, messages, facts, sources, jobs, forgetting), as Postgres
runs them.

The parts (`storage/messages.py`, `facts.py`, ...) hold coop's rules for rows, and there is one copy of them: they
write SQL that both engines take where it can (RETURNING, ON CONFLICT, coalesce, CAST), and the few SQLite forms
left are rewritten here, once per statement (cached), by a fixed list of rules, each tested
(`tests/memory/storage/test_postgres_dialect.py`):

- `?` and `?NNN` placeholders become psycopg's `%s` (numbered ones repeat their value in order); a literal `%`
  becomes `%%`;
- `+column` (SQLite's "do not use an index for this term") and `INDEXED BY name` are dropped;
- `INSERT OR IGNORE` becomes `INSERT ... ON CONFLICT DO NOTHING`;
- `x IS ?` / `x IS NOT ?` become `IS NOT DISTINCT FROM` / `IS DISTINCT FROM`;
- the scalar `max(a, b)` / `min(a, b)` become `greatest` / `least`, `instr` becomes `strpos`;
- the id a new row gets (`scope.fresh_id_sql`, SQLite's guard against reusing a forgotten row's id) becomes the
  table's sequence, which never hands an id out twice.

Statements written for one engine only (full text, vectors, health) are not passed through here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from coop.memory.kinds import REGISTRY
from coop.memory.storage.scope import fresh_id_sql

_PLACEHOLDER = re.compile(r"\?(\d*)")
_NO_INDEX = re.compile(r"(?<=[\s(,=])\+(?=[A-Za-z_])")
_INDEXED_BY = re.compile(r"\s+INDEXED BY \w+", re.IGNORECASE)
_IS_PARAM = re.compile(r"\bIS\s+(NOT\s+)?(?=\?)", re.IGNORECASE)
_INSERT_OR_IGNORE = re.compile(r"\bINSERT OR IGNORE INTO\b", re.IGNORECASE)
_RETURNING = re.compile(r"\s+RETURNING\s", re.IGNORECASE)
_SCALAR_MINMAX = re.compile(r"\b(max|min)\(", re.IGNORECASE)
_INSTR = re.compile(r"\binstr\(", re.IGNORECASE)


def _two_argument(sql: str, start: int) -> bool:
    """True when the call whose '(' is at `start` has a comma at its own level (a scalar max/min of two)."""
    depth = 0
    for index in range(start, len(sql)):
        char = sql[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return False
        elif char == "," and depth == 1:
            return True
    return False


def _scalar_minmax(sql: str) -> str:
    out, last = [], 0
    for match in _SCALAR_MINMAX.finditer(sql):
        if _two_argument(sql, match.end() - 1):
            out.append(sql[last:match.start()])
            out.append("greatest(" if match.group(1).lower() == "max" else "least(")
            last = match.end()
    out.append(sql[last:])
    return "".join(out)


@lru_cache(maxsize=1024)
def _fresh_ids() -> tuple[tuple[str, str], ...]:
    return tuple((fresh_id_sql(name), f"nextval('{spec.table}_id_seq')") for name, spec in REGISTRY.items())


@lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """The statement for Postgres, and for numbered placeholders the index of the value each `%s` takes (None
    when the values go in as given)."""
    for sqlite_form, postgres_form in _fresh_ids():
        sql = sql.replace(sqlite_form, postgres_form)
    sql = sql.replace("%", "%%")
    sql = _INDEXED_BY.sub("", _NO_INDEX.sub("", sql))
    sql = _IS_PARAM.sub(lambda m: "IS DISTINCT FROM " if m.group(1) else "IS NOT DISTINCT FROM ", sql)
    if _INSERT_OR_IGNORE.search(sql):
        sql = _INSERT_OR_IGNORE.sub("INSERT INTO", sql)
        returning = _RETURNING.search(sql)
        at = returning.start() if returning else len(sql.rstrip().rstrip(";"))
        sql = sql[:at] + " ON CONFLICT DO NOTHING" + sql[at:]
    sql = _INSTR.sub("strpos(", _scalar_minmax(sql))
    order: list[int] = []
    numbered = False
    largest = 0

    def placeholder(match: re.Match[str]) -> str:
        """SQLite's numbering: `?N` is value N, a bare `?` the one after the largest number so far."""
        nonlocal numbered, largest
        if match.group(1):
            numbered = True
            number = int(match.group(1))
        else:
            number = largest + 1
        largest = max(largest, number)
        order.append(number - 1)
        return "%s"

    sql = _PLACEHOLDER.sub(placeholder, sql)
    return sql, tuple(order) if numbered else None


def arguments(params: Any, order: tuple[int, ...] | None) -> Sequence[Any] | None:
    """The values in the order the translated statement takes them; booleans as the integers SQLite stores."""
    if params is None:
        return None
    values = [int(v) if isinstance(v, bool) else v for v in params]
    return values if order is None else [values[i] for i in order]
