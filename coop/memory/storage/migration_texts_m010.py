"""The frozen texts of coop's schema migrations from m010 on (`migration_texts.py` holds m001-m009; see
`migrations.py` for how they run)."""

from __future__ import annotations

from coop.memory.storage.migration_texts import Migration

M010_PROVENANCE = Migration("m010_provenance_and_review", why="""\
Where a fact came from, so a person can ask "why do you know this?" (`coop memory why`): `fact_sources.quote` keeps
the user's words the extraction quoted as evidence; `messages.origin` marks an exchange an MCP host recorded
(`memory_record`: its words are the host's account of the conversation, not typed into coop), and a fact learned
from one has the source 'host' (the `facts` table is rebuilt for the wider CHECK: SQLite cannot alter one; its
indexes and triggers are made again as m006 and m007 left them); `users.reviewed_at` is when the user last walked
what coop learned (`coop memory review`).""", sql="""
ALTER TABLE fact_sources ADD COLUMN quote TEXT;
ALTER TABLE messages ADD COLUMN origin TEXT CHECK (origin IN ('host'));
ALTER TABLE users ADD COLUMN reviewed_at REAL;

ALTER TABLE facts RENAME TO facts_before_m010;
CREATE TABLE facts (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  category TEXT NOT NULL DEFAULT 'general',
  key TEXT,
  value TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('user', 'model', 'extraction', 'consolidation', 'import', 'host')),
  importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
  mention_count INTEGER NOT NULL DEFAULT 1,
  content_hash TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  last_recalled_at REAL,
  superseded_by INTEGER REFERENCES facts(id) ON DELETE SET NULL,
  superseded_at REAL,
  archived_at REAL,
  embedder TEXT,
  embedding_error TEXT
);
INSERT INTO facts SELECT * FROM facts_before_m010;
DROP TABLE facts_before_m010;
CREATE UNIQUE INDEX facts_one_active_key ON facts(user_id, category, key)
  WHERE key IS NOT NULL AND superseded_at IS NULL AND archived_at IS NULL;
CREATE INDEX facts_user_hash ON facts(user_id, category, content_hash);
CREATE INDEX facts_user_active ON facts(user_id, superseded_at, archived_at);
CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
  INSERT INTO facts_fts(rowid, key, value) VALUES (new.id, coop_fts(new.key), coop_fts(new.value));
END;
CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
  DELETE FROM facts_fts WHERE rowid = old.id;
END;
CREATE TRIGGER facts_fts_au AFTER UPDATE OF key, value ON facts BEGIN
  DELETE FROM facts_fts WHERE rowid = old.id;
  INSERT INTO facts_fts(rowid, key, value) VALUES (new.id, coop_fts(new.key), coop_fts(new.value));
END;
CREATE TRIGGER facts_vectors_ad AFTER DELETE ON facts BEGIN
  DELETE FROM embeddings WHERE kind = 'fact' AND item_id = old.id;
END;
CREATE TRIGGER fact_sources_fact_ad AFTER DELETE ON facts BEGIN
  DELETE FROM fact_sources WHERE fact_id = old.id;
END;
""")

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
