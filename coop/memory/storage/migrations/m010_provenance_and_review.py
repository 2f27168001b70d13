"""Migration 010, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

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
