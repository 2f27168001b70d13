"""The schema's history, one for both engines: numbered migrations, one module each (`mNNN_<name>.py`), each
what it ran when it was released on SQLite and on Postgres (`migration.py`), frozen as text, and this runner.

A migration is never edited once released (a database made by an older coop ran the old text; editing it would
make new databases differ from upgraded ones); a change is a new module appended to `MIGRATIONS`, with its SQL for
each engine, and `tests/memory/storage/test_schema_history.py` runs it on both. Each runs in one transaction with
its record in `_migrations` (its number is its place in `MIGRATIONS`, from 1), under a lock that makes two
clients starting at once migrate once (`engines.py`). Postgres began at m013's schema: m001's Postgres form makes
it, m002..m013 are recorded without running anything there, and a database made before Postgres had this history
(`coop_schema` version 1) is recorded as at m013 and keeps every row.

SQLite's SQL calls `coop_fts()`, which `connection.py` registers on every connection (`text.fts_text`),
`coop_sign_bits()` (`sign_bits.sign_bits_blob`) and `coop_sentence_parts()` (the number of
`text.sentence_parts`), `coop_mask()` (`coop.privacy.secrets.mask`) and `coop_content_hash()`
(`text.content_hash`). A migration that SQL cannot express (m012 drops tables named in a table) has a Python
step for its engine, run just before its SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from coop.errors import StoreError
from coop.memory.storage.migrations.engines import PostgresHistory, SQLiteHistory
from coop.memory.storage.migrations.m001_initial import M001_INITIAL
from coop.memory.storage.migrations.m002_message_context_fts import M002_MESSAGE_CONTEXT_FTS
from coop.memory.storage.migrations.m003_embedding_counts import M003_EMBEDDING_COUNTS
from coop.memory.storage.migrations.m004_drop_messages_fts import M004_DROP_MESSAGES_FTS
from coop.memory.storage.migrations.m005_forgotten_ids_index import M005_FORGOTTEN_IDS_INDEX
from coop.memory.storage.migrations.m006_private_fulltext import M006_PRIVATE_FULLTEXT
from coop.memory.storage.migrations.m007_provenance_and_jobs import M007_PROVENANCE_AND_JOBS
from coop.memory.storage.migrations.m008_sign_bits_and_parts import M008_SIGN_BITS
from coop.memory.storage.migrations.m009_reembed_for_sentence_parts import M009_REEMBED_FOR_PARTS
from coop.memory.storage.migrations.m010_provenance_and_review import M010_PROVENANCE
from coop.memory.storage.migrations.m011_keyed_forgotten_and_masked_rows import M011_FORGOTTEN_AND_SECRETS
from coop.memory.storage.migrations.m012_drop_vec0_indexes import M012_DROP_VEC0_INDEXES
from coop.memory.storage.migrations.m013_job_claims import M013_JOB_CLAIMS
from coop.memory.storage.migrations.m014_postgres_fulltext_in_the_write import M014_POSTGRES_FULLTEXT_IN_THE_WRITE
from coop.memory.storage.migrations.m015_people_on_a_server import M015_PEOPLE_ON_A_SERVER
from coop.memory.storage.migrations.m016_mask_cards_and_ibans import M016_MASK_CARDS_AND_IBANS
from coop.memory.storage.migrations.m017_refusals import M017_REFUSALS
from coop.memory.storage.migrations.m018_no_statistics_of_text import M018_NO_STATISTICS_OF_TEXT
from coop.memory.storage.migrations.m019_id_aliases import M019_ID_ALIASES
from coop.memory.storage.migrations.m020_policies_the_planner_reads import M020_POLICIES_THE_PLANNER_READS
from coop.memory.storage.migrations.m021_postings_found_by_their_span import M021_POSTINGS_FOUND_BY_THEIR_SPAN
from coop.memory.storage.migrations.migration import Migration

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database
    from coop.memory.storage.postgres.connection import PgDatabase

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "apply_migrations", "schema_version"]

MIGRATIONS: tuple[Migration, ...] = (M001_INITIAL, M002_MESSAGE_CONTEXT_FTS, M003_EMBEDDING_COUNTS,
                                  M004_DROP_MESSAGES_FTS, M005_FORGOTTEN_IDS_INDEX, M006_PRIVATE_FULLTEXT,
                                  M007_PROVENANCE_AND_JOBS, M008_SIGN_BITS, M009_REEMBED_FOR_PARTS,
                                  M010_PROVENANCE, M011_FORGOTTEN_AND_SECRETS, M012_DROP_VEC0_INDEXES,
                                  M013_JOB_CLAIMS, M014_POSTGRES_FULLTEXT_IN_THE_WRITE, M015_PEOPLE_ON_A_SERVER,
                                  M016_MASK_CARDS_AND_IBANS, M017_REFUSALS,
                                  M018_NO_STATISTICS_OF_TEXT, M019_ID_ALIASES,
                                  M020_POLICIES_THE_PLANNER_READS, M021_POSTINGS_FOUND_BY_THEIR_SPAN)
SCHEMA_VERSION = len(MIGRATIONS)  # the version this coop writes, on either engine


def _history(db: "Database | PgDatabase") -> SQLiteHistory | PostgresHistory:
    if db.dialect == "postgres":
        return PostgresHistory(cast("PgDatabase", db))
    return SQLiteHistory(cast("Database", db))


def schema_version(db: "Database | PgDatabase") -> int:
    """The number of the last migration recorded in the database: 0 before the first."""
    return _history(db).recorded()


def _refuse_newer(db: "Database | PgDatabase", current: int, known: int) -> None:
    if current > known:
        raise StoreError(f"the database at {db.path} was written by a newer coop (schema {current}, this one "
                         f"knows {known})",
                         hint="upgrade coop on this machine")


def apply_migrations(db: "Database | PgDatabase", migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Run the migrations of `migrations` not yet recorded, each in the form for the database's engine; returns
    how many ran. A database already up to date is only read (a read-only one opens); one recorded past
    `migrations` is refused."""
    history = _history(db)
    current = history.recorded()
    _refuse_newer(db, current, len(migrations))
    if current >= len(migrations):
        return 0
    with history.locked():
        history.prepare(MIGRATIONS)  # the whole history: a database made before the runner stands at m013
        current = history.recorded()  # another client may have migrated while we waited for the lock
        _refuse_newer(db, current, len(migrations))
        for number, migration in enumerate(migrations[current:], start=current + 1):
            history.run(number, migration)
            history.record(number, migration.name)
    return len(migrations) - current
