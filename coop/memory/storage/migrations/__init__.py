"""The schema's history: numbered migrations, one module each (`mNNN_<name>.py`), each the SQL it ran when it was
released, frozen as text, and this runner.

A migration is never edited once released (a database made by an older coop ran the old text; editing it would
make new databases differ from upgraded ones); a change is a new module appended to `MIGRATIONS`. Each runs in one
transaction with its record in `_migrations` (its number is its place in `MIGRATIONS`, from 1). The SQL calls
`coop_fts()`, which `connection.py` registers on every connection (`text.fts_text`), `coop_sign_bits()`
(`sign_bits.sign_bits_blob`) and `coop_sentence_parts()` (the number of `text.sentence_parts`), `coop_mask()`
(`coop.privacy.secrets.mask`) and `coop_content_hash()` (`text.content_hash`). A migration that SQL cannot express
(m012 drops tables named in a table) has a Python `step`, run just before its SQL.
"""

from __future__ import annotations

import time

from coop.errors import StoreError
from coop.memory.storage.connection import Database
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
from coop.memory.storage.migrations.migration import Migration

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "apply_migrations", "schema_version"]

MIGRATIONS: tuple[Migration, ...] = (M001_INITIAL, M002_MESSAGE_CONTEXT_FTS, M003_EMBEDDING_COUNTS,
                                  M004_DROP_MESSAGES_FTS, M005_FORGOTTEN_IDS_INDEX, M006_PRIVATE_FULLTEXT,
                                  M007_PROVENANCE_AND_JOBS, M008_SIGN_BITS, M009_REEMBED_FOR_PARTS,
                                  M010_PROVENANCE, M011_FORGOTTEN_AND_SECRETS, M012_DROP_VEC0_INDEXES,
                                  M013_JOB_CLAIMS)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(db: Database) -> int:
    exists = db.scalar("select count(*) from sqlite_master where type = 'table' and name = '_migrations'")
    if not exists:
        return 0
    return int(db.scalar("select coalesce(max(id), 0) from _migrations"))


def apply_migrations(db: Database, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Run the migrations not yet recorded; returns how many ran. A newer schema than we know is an error."""
    known = len(migrations)
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise StoreError(f"{db.path} was written by a newer coop (schema {current}, this one knows {SCHEMA_VERSION})",
                         hint="upgrade coop")
    if current >= known:
        return 0
    with db.atomic():
        db.conn.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                        "applied_at REAL NOT NULL)")
        current = schema_version(db)  # another process may have migrated while we waited for the lock
        for number, migration in enumerate(migrations[current:], start=current + 1):
            if migration.step is not None:
                migration.step(db)
            db.conn.execute(migration.sql)
            db.conn.execute("INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)",
                            (number, migration.name, time.time()))
    return known - current
