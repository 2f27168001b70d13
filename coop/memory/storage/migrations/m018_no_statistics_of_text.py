"""Migration 018, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop.memory.storage.migrations.migration import Migration

if TYPE_CHECKING:
    from coop.memory.storage.postgres.connection import PgDatabase

# Every column that holds what a person typed or a model wrote, or words of it, as (table, column).
_COLUMNS = (("sessions", "title"), ("messages", "content"), ("messages", "tool_calls"),
            ("messages", "embedding_error"), ("facts", "value"), ("facts", "key"), ("facts", "embedding_error"),
            ("fact_history", "old_value"), ("fact_history", "new_value"), ("fact_history", "reason"),
            ("summaries", "text"), ("summaries", "embedding_error"), ("fact_sources", "quote"),
            ("fulltext_items", "words"), ("fulltext_terms", "term"), ("fulltext_postings", "term"))

POSTGRES = "".join(f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0;\n" for table, column in _COLUMNS)


def clear_statistics(db: "PgDatabase") -> None:
    """The statistics ANALYZE already took of those columns are dropped (Postgres 18's
    `pg_clear_attribute_stats`, for the tables' owner or MAINTAIN); an older server keeps them until a superuser
    deletes them from `pg_statistic`, which the README says (ANALYZE skips a column without statistics; it does
    not delete what it kept)."""
    if not db.run("SELECT to_regprocedure('pg_clear_attribute_stats(text,text,text,boolean)') IS NOT NULL")[0][0]:
        return
    schema = str(db.run("SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'messages'::regclass")[0][0])
    for table, column in _COLUMNS:
        for inherited in (False, True):
            db.run("SELECT pg_clear_attribute_stats(%s, %s, %s, %s)", (schema, table, column, inherited))


M018_NO_STATISTICS_OF_TEXT = Migration("m018_no_statistics_of_text", why="""\
Postgres's ANALYZE (autovacuum runs it by itself) keeps a sample of each column's most common values in the
catalog (`pg_statistic`): words of messages, facts and their full-text terms, where a forget cannot reach them,
and which `forget --compact` does not rewrite. Those columns now collect no statistics, and what was collected
is cleared (Postgres 18). Their queries filter by user and id, or by term through an index, which needs no
sample of the text. Nothing changes on SQLite, whose statistics (`sqlite_stat1`) hold row counts, not values.""",
                                       sql="", postgres=POSTGRES, postgres_step=clear_statistics)
