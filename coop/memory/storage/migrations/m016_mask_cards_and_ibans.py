"""Migration 016, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coop.memory.storage.migrations.migration import Migration

if TYPE_CHECKING:
    from coop.memory.storage.postgres.connection import PgDatabase

# Every text column that can hold what a person typed or a model wrote, as (table, column).
_COLUMNS = (("sessions", "title"), ("messages", "content"), ("messages", "tool_calls"),
            ("messages", "embedding_error"), ("facts", "value"), ("facts", "key"), ("facts", "embedding_error"),
            ("fact_history", "old_value"), ("fact_history", "new_value"), ("fact_history", "reason"),
            ("summaries", "text"), ("summaries", "embedding_error"), ("fact_sources", "quote"))


def mask_every_row(db: "PgDatabase") -> None:
    """Postgres has no `coop_mask()`: each column's rows are read, masked here, and the changed ones written back
    by their place (`ctid`: fact_sources has no id; a row is written once); a fact's content hash follows its
    value, and a key that would collide with another active fact's is left."""
    from coop.memory.text import content_hash
    from coop.privacy.secrets import mask

    for table, column in _COLUMNS:
        for row, text in db.run(f"SELECT ctid::text, {column} FROM {table} WHERE {column} IS NOT NULL"):
            masked = mask(text)
            if masked == text:
                continue
            if (table, column) == ("facts", "value"):
                db.run("UPDATE facts SET value = %s, content_hash = %s WHERE ctid = %s::tid",
                       (masked, content_hash(masked), row))
            elif (table, column) == ("facts", "key"):
                db.run("UPDATE facts f SET key = %s WHERE ctid = %s::tid AND NOT EXISTS (SELECT 1 FROM facts o "
                       "WHERE o.user_id = f.user_id AND o.category = f.category AND o.key = %s AND o.id <> f.id)",
                       (masked, row, masked))
            else:
                db.run(f"UPDATE {table} SET {column} = %s WHERE ctid = %s::tid", (masked, row))


M016_MASK_CARDS_AND_IBANS = Migration("m016_mask_cards_and_ibans", why="""\
Card numbers (Luhn-valid) and IBANs (checksum-valid, with spaces, dashes or none, in either case) are masked as
keys are, from now on; rows written before were stored as typed. Every text column is masked again by the
current masker (on SQLite through `coop_mask()`, as m011 did; on Postgres in Python), a fact's content hash
following its value, the full-text indexes through their update triggers.""", sql="""
UPDATE sessions SET title = coop_mask(title) WHERE title IS NOT coop_mask(title);
UPDATE messages SET content = coop_mask(content) WHERE content IS NOT coop_mask(content);
UPDATE messages SET tool_calls = coop_mask(tool_calls) WHERE tool_calls IS NOT coop_mask(tool_calls);
UPDATE messages SET embedding_error = coop_mask(embedding_error)
  WHERE embedding_error IS NOT coop_mask(embedding_error);
UPDATE OR IGNORE facts SET key = coop_mask(key) WHERE key IS NOT coop_mask(key);
UPDATE facts SET value = coop_mask(value), content_hash = coop_content_hash(coop_mask(value))
  WHERE value IS NOT coop_mask(value);
UPDATE facts SET embedding_error = coop_mask(embedding_error) WHERE embedding_error IS NOT coop_mask(embedding_error);
UPDATE fact_history SET old_value = coop_mask(old_value), new_value = coop_mask(new_value), reason = coop_mask(reason)
  WHERE old_value IS NOT coop_mask(old_value) OR new_value IS NOT coop_mask(new_value)
     OR reason IS NOT coop_mask(reason);
UPDATE summaries SET text = coop_mask(text) WHERE text IS NOT coop_mask(text);
UPDATE summaries SET embedding_error = coop_mask(embedding_error)
  WHERE embedding_error IS NOT coop_mask(embedding_error);
UPDATE fact_sources SET quote = coop_mask(quote) WHERE quote IS NOT coop_mask(quote);
""", postgres="", postgres_step=mask_every_row)
