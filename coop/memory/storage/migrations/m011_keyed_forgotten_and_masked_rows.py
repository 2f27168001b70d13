"""Migration 011, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M011_FORGOTTEN_AND_SECRETS = Migration("m011_keyed_forgotten_and_masked_rows", why="""\
Two leaks closed in rows an older coop wrote. The `forgotten` table kept a plain SHA-256 of each forgotten text,
which can be turned back by trying candidates (a PIN: ten thousand hashes); coop now keeps a keyed hash whose key
never enters the database (`forget_key.py`), and the plain ones, which no key can be put on afterwards, are
dropped (those items lose only the guard against being learned again). And secrets of shapes coop did not know
before (`privacy.secret_shapes`: pplx-, r8_, JWTs, private keys, passwords in URLs, a random token after a key word,
...) are masked in every text column now, through `coop_mask()`, which runs the current masker (so the migration
masks what the coop that runs it knows); a fact's content hash follows its masked value, the full-text indexes
follow through their update triggers.""", sql="""
UPDATE forgotten SET content_hash = NULL WHERE content_hash IS NOT NULL;
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
""")
