"""Migration 007, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M007_PROVENANCE_AND_JOBS = Migration("m007_provenance_and_jobs", why="""\
`fact_sources` links an extracted fact to its source messages (one item in the prompt; forget reaches them).
`memory_jobs` records an exchange's extraction before it runs, deleted when done: the next start finishes it.""", sql="""
CREATE TABLE fact_sources (
  user_id TEXT NOT NULL,
  fact_id INTEGER NOT NULL,
  message_id INTEGER NOT NULL,
  PRIMARY KEY (fact_id, message_id)
) WITHOUT ROWID;
CREATE INDEX fact_sources_message ON fact_sources(message_id);
CREATE TABLE memory_jobs (
  id INTEGER PRIMARY KEY,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('extraction')),
  session_id INTEGER,
  message_id INTEGER NOT NULL,
  reply_id INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL
);
CREATE INDEX memory_jobs_user ON memory_jobs(user_id, id);
CREATE TRIGGER fact_sources_fact_ad AFTER DELETE ON facts BEGIN
  DELETE FROM fact_sources WHERE fact_id = old.id;
END;
CREATE TRIGGER fact_sources_message_ad AFTER DELETE ON messages BEGIN
  DELETE FROM fact_sources WHERE message_id = old.id;
  DELETE FROM memory_jobs WHERE message_id = old.id OR reply_id = old.id;
END;
""")
