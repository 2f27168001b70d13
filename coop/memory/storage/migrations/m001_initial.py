"""Migration 001, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.m001_initial_postgres import M001_POSTGRES
from coop.memory.storage.migrations.migration import Migration

M001_INITIAL = Migration("m001_initial", why="""\
The tables, their indexes, the external-content full-text indexes over messages, facts and summaries with
the triggers that keep them in step, and the triggers that drop an item's vectors with it. On Postgres, the
schema SQLite reached at m013, where Postgres began (`m001_initial_postgres.py`): m002..m013 run nothing there.""",
    postgres=M001_POSTGRES, sql="""
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  created_at REAL NOT NULL
);
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  title TEXT,
  started_at REAL NOT NULL,
  ended_at REAL,
  last_activity_at REAL NOT NULL,
  external_id TEXT,
  UNIQUE (user_id, external_id)
);
CREATE INDEX sessions_user ON sessions(user_id, last_activity_at);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  session_id INTEGER REFERENCES sessions(id),
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  content TEXT NOT NULL,
  tool_name TEXT,
  tool_call_id TEXT,
  tool_calls TEXT,
  created_at REAL NOT NULL,
  importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
  token_count INTEGER NOT NULL DEFAULT 0,
  embedder TEXT,
  embedding_error TEXT,
  consolidated_at REAL,
  external_id TEXT,
  UNIQUE (user_id, external_id)
);
CREATE INDEX messages_user_session ON messages(user_id, session_id, id);
CREATE INDEX messages_user_importance ON messages(user_id, importance);
CREATE INDEX messages_unembedded ON messages(user_id, id) WHERE embedder IS NULL;
CREATE TABLE facts (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  category TEXT NOT NULL DEFAULT 'general',
  key TEXT,
  value TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('user', 'model', 'extraction', 'consolidation', 'import')),
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
CREATE UNIQUE INDEX facts_one_active_key ON facts(user_id, category, key)
  WHERE key IS NOT NULL AND superseded_at IS NULL AND archived_at IS NULL;
CREATE INDEX facts_user_hash ON facts(user_id, category, content_hash);
CREATE INDEX facts_user_active ON facts(user_id, superseded_at, archived_at);
CREATE TABLE fact_history (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  fact_id INTEGER NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('ADD', 'UPDATE', 'SUPERSEDE', 'MERGE', 'FORGET', 'ARCHIVE', 'RESTORE')),
  old_value TEXT,
  new_value TEXT,
  related_fact_id INTEGER,
  reason TEXT,
  created_at REAL NOT NULL
);
CREATE INDEX fact_history_fact ON fact_history(user_id, fact_id, id);
CREATE TABLE summaries (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  session_id INTEGER REFERENCES sessions(id),
  span_start_id INTEGER,
  span_end_id INTEGER,
  text TEXT NOT NULL,
  created_at REAL NOT NULL,
  embedder TEXT,
  embedding_error TEXT
);
CREATE INDEX summaries_user ON summaries(user_id, created_at);
CREATE TABLE forgotten (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  kind TEXT NOT NULL,
  item_id INTEGER NOT NULL,
  content_hash TEXT,
  forgotten_at REAL NOT NULL
);
CREATE INDEX forgotten_user_hash ON forgotten(user_id, content_hash);

-- The canonical store of vectors (float32, unit length), one row per item and embedder; readable without
-- sqlite-vec. vec0 tables (one per embedder, see vectors.py) are an index over it.
CREATE TABLE embeddings (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  kind TEXT NOT NULL CHECK (kind IN ('message', 'fact', 'summary')),
  item_id INTEGER NOT NULL,
  embedder TEXT NOT NULL,
  vector BLOB NOT NULL,
  UNIQUE (kind, item_id, embedder)
);
CREATE INDEX embeddings_user ON embeddings(user_id, embedder, kind);
CREATE TABLE vector_indexes (
  embedder TEXT PRIMARY KEY,
  table_name TEXT NOT NULL UNIQUE,
  dims INTEGER NOT NULL,
  dirty INTEGER NOT NULL DEFAULT 0
);

CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id', tokenize = "porter unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE facts_fts USING fts5(key, value, content='facts', content_rowid='id', tokenize = "porter unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='summaries', content_rowid='id', tokenize = "porter unicode61 remove_diacritics 2");

CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, coop_fts(new.content));
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, coop_fts(old.content));
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, coop_fts(old.content));
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, coop_fts(new.content));
END;

CREATE TRIGGER facts_fts_ai AFTER INSERT ON facts BEGIN
  INSERT INTO facts_fts(rowid, key, value) VALUES (new.id, coop_fts(new.key), coop_fts(new.value));
END;
CREATE TRIGGER facts_fts_ad AFTER DELETE ON facts BEGIN
  INSERT INTO facts_fts(facts_fts, rowid, key, value) VALUES ('delete', old.id, coop_fts(old.key), coop_fts(old.value));
END;
CREATE TRIGGER facts_fts_au AFTER UPDATE OF key, value ON facts BEGIN
  INSERT INTO facts_fts(facts_fts, rowid, key, value) VALUES ('delete', old.id, coop_fts(old.key), coop_fts(old.value));
  INSERT INTO facts_fts(rowid, key, value) VALUES (new.id, coop_fts(new.key), coop_fts(new.value));
END;

CREATE TRIGGER summaries_fts_ai AFTER INSERT ON summaries BEGIN
  INSERT INTO summaries_fts(rowid, text) VALUES (new.id, coop_fts(new.text));
END;
CREATE TRIGGER summaries_fts_ad AFTER DELETE ON summaries BEGIN
  INSERT INTO summaries_fts(summaries_fts, rowid, text) VALUES ('delete', old.id, coop_fts(old.text));
END;
CREATE TRIGGER summaries_fts_au AFTER UPDATE OF text ON summaries BEGIN
  INSERT INTO summaries_fts(summaries_fts, rowid, text) VALUES ('delete', old.id, coop_fts(old.text));
  INSERT INTO summaries_fts(rowid, text) VALUES (new.id, coop_fts(new.text));
END;

-- Deleting an item deletes its vectors; the vec0 index rows are removed by vectors.py.
CREATE TRIGGER messages_vectors_ad AFTER DELETE ON messages BEGIN
  DELETE FROM embeddings WHERE kind = 'message' AND item_id = old.id;
END;
CREATE TRIGGER facts_vectors_ad AFTER DELETE ON facts BEGIN
  DELETE FROM embeddings WHERE kind = 'fact' AND item_id = old.id;
END;
CREATE TRIGGER summaries_vectors_ad AFTER DELETE ON summaries BEGIN
  DELETE FROM embeddings WHERE kind = 'summary' AND item_id = old.id;
END;

""")
