"""The frozen texts of coop's schema migrations (see `migrations.py` for how they run): each is the SQL it ran
when it was released, never edited since; a change is a new one appended here and to `MIGRATIONS`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str
    why: str


M001_INITIAL = Migration("m001_initial", why="""\
The tables, their indexes, the external-content full-text indexes over messages, facts and summaries with
the triggers that keep them in step, and the triggers that drop an item's vectors with it.""", sql="""
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

M002_MESSAGE_CONTEXT_FTS = Migration("m002_message_context_fts", why="""\
The full-text index the message leg of search reads (see `fulltext.py`): each message's own words and, in a
second column `context`, the words of the two messages before it in its session (each cut at 300 characters)
and the day it was written. Contentless with contentless_delete; `message_context_vocab` gives each term's
document count. Deleting or editing a message indexes the two after it again.""", sql="""
CREATE VIRTUAL TABLE message_context_fts USING fts5(content, context, content='', contentless_delete=1,
  tokenize = "porter unicode61 remove_diacritics 2");
-- How many messages hold each term: search drops a query's most common terms when matching them all would
-- cost too much (search.POSTINGS_BUDGET).
CREATE VIRTUAL TABLE message_context_vocab USING fts5vocab(message_context_fts, 'row');
INSERT INTO message_context_fts (rowid, content, context) SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
  ' ' ||
  coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
  ' ' ||
  coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
  ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
  CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
  ' ' || strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m;
CREATE TRIGGER messages_context_fts_ai AFTER INSERT ON messages BEGIN
  INSERT INTO message_context_fts (rowid, content, context)
    VALUES (new.id, coop_fts(new.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', new.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', new.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', new.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' || strftime('%Y', new.created_at, 'unixepoch', 'localtime'), '')));
END;
CREATE TRIGGER messages_context_fts_ad AFTER DELETE ON messages BEGIN
  DELETE FROM message_context_fts WHERE rowid = old.id;
  DELETE FROM message_context_fts WHERE rowid IN (SELECT id FROM messages WHERE user_id = old.user_id AND session_id = old.session_id AND id > old.id ORDER BY id LIMIT 2);
  INSERT INTO message_context_fts (rowid, content, context)
    SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' ||
      strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE user_id = old.user_id AND session_id = old.session_id AND id > old.id ORDER BY id LIMIT 2);
END;
CREATE TRIGGER messages_context_fts_au AFTER UPDATE OF content ON messages BEGIN
  DELETE FROM message_context_fts WHERE rowid = old.id;
  INSERT INTO message_context_fts (rowid, content, context)
    VALUES (new.id, coop_fts(new.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = new.user_id AND p.session_id = new.session_id AND p.id < new.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', new.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', new.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', new.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' || strftime('%Y', new.created_at, 'unixepoch', 'localtime'), '')));
  DELETE FROM message_context_fts WHERE rowid IN (SELECT id FROM messages WHERE user_id = new.user_id AND session_id = new.session_id AND id > new.id ORDER BY id LIMIT 2);
  INSERT INTO message_context_fts (rowid, content, context)
    SELECT m.id, coop_fts(m.content), coop_fts(coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '') ||
      ' ' ||
      coalesce((SELECT substr(p.content, 1, 300) FROM messages p WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id ORDER BY p.id DESC LIMIT 1 OFFSET 0), '') ||
      ' ' ||
      coalesce(CASE strftime('%w', m.created_at, 'unixepoch', 'localtime') WHEN '0' THEN 'Sunday' WHEN '1' THEN 'Monday' WHEN '2' THEN 'Tuesday' WHEN '3' THEN 'Wednesday' WHEN '4' THEN 'Thursday' WHEN '5' THEN 'Friday' WHEN '6' THEN 'Saturday' ELSE '' END ||
      ' ' || CAST(strftime('%d', m.created_at, 'unixepoch', 'localtime') AS INTEGER) || ' ' ||
      CASE strftime('%m', m.created_at, 'unixepoch', 'localtime') WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March' WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June' WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September' WHEN '10' THEN 'October' WHEN '11' THEN 'November' WHEN '12' THEN 'December' ELSE '' END ||
      ' ' ||
      strftime('%Y', m.created_at, 'unixepoch', 'localtime'), '')) FROM messages m WHERE m.id IN (SELECT id FROM messages WHERE user_id = new.user_id AND session_id = new.session_id AND id > new.id ORDER BY id LIMIT 2);
END;

""")

M003_EMBEDDING_COUNTS = Migration("m003_embedding_counts", why="""\
How many vectors each user has from each embedder, kept by triggers: the vector leg sizes its sqlite-vec
pre-selection by it (a count(*) over a million rows would cost more than the search).""", sql="""
CREATE TABLE embedding_counts (
  user_id TEXT NOT NULL,
  embedder TEXT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (user_id, embedder)
) WITHOUT ROWID;
INSERT INTO embedding_counts (user_id, embedder, count)
  SELECT user_id, embedder, count(*) FROM embeddings GROUP BY user_id, embedder;
CREATE TRIGGER embeddings_count_ai AFTER INSERT ON embeddings BEGIN
  INSERT INTO embedding_counts (user_id, embedder, count) VALUES (new.user_id, new.embedder, 1)
    ON CONFLICT (user_id, embedder) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER embeddings_count_ad AFTER DELETE ON embeddings BEGIN
  UPDATE embedding_counts SET count = count - 1 WHERE user_id = old.user_id AND embedder = old.embedder;
END;

""")

M004_DROP_MESSAGES_FTS = Migration("m004_drop_messages_fts", why="""\
m001's full-text index over messages: m002's `message_context_fts` serves every search of messages since,
so keeping both indexed every message's words twice (8.9 MB of a 353 MB database of 100,000 messages, and
work on every write).""", sql="""
DROP TRIGGER IF EXISTS messages_fts_ai;
DROP TRIGGER IF EXISTS messages_fts_ad;
DROP TRIGGER IF EXISTS messages_fts_au;
DROP TABLE IF EXISTS messages_fts;

""")

M005_FORGOTTEN_IDS_INDEX = Migration("m005_forgotten_ids_index", why="""\
Every new message, fact and summary takes an id above the forgotten ones (`store.fresh_id_sql`): with this
index that is one index lookup, not a scan of `forgotten` on every write of a chat turn.""", sql="""
CREATE INDEX forgotten_kind_item ON forgotten(kind, item_id)
""")


M006_PRIVATE_FULLTEXT = Migration("m006_private_fulltext", why="""\
Forgotten text must leave the file. The fact and summary indexes become contentless (like the message index):
they were external-content indexes of the raw text while the triggers indexed `coop_fts(text)`, so FTS5's
integrity check and 'rebuild' saw the raw text and a Chinese fact made `coop check` fail and `coop memory
reindex` lose it. Every full-text index gets FTS5's secure-delete option, so a delete removes its postings at
once instead of leaving them in old segments.""", sql="""
DROP TRIGGER facts_fts_ai;
DROP TRIGGER facts_fts_ad;
DROP TRIGGER facts_fts_au;
DROP TRIGGER summaries_fts_ai;
DROP TRIGGER summaries_fts_ad;
DROP TRIGGER summaries_fts_au;
DROP TABLE facts_fts;
DROP TABLE summaries_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5(key, value, content='', contentless_delete=1, tokenize = "porter unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='', contentless_delete=1, tokenize = "porter unicode61 remove_diacritics 2");
INSERT INTO facts_fts(rowid, key, value) SELECT id, coop_fts(key), coop_fts(value) FROM facts;
INSERT INTO summaries_fts(rowid, text) SELECT id, coop_fts(text) FROM summaries;
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
CREATE TRIGGER summaries_fts_ai AFTER INSERT ON summaries BEGIN
  INSERT INTO summaries_fts(rowid, text) VALUES (new.id, coop_fts(new.text));
END;
CREATE TRIGGER summaries_fts_ad AFTER DELETE ON summaries BEGIN
  DELETE FROM summaries_fts WHERE rowid = old.id;
END;
CREATE TRIGGER summaries_fts_au AFTER UPDATE OF text ON summaries BEGIN
  DELETE FROM summaries_fts WHERE rowid = old.id;
  INSERT INTO summaries_fts(rowid, text) VALUES (new.id, coop_fts(new.text));
END;
INSERT INTO facts_fts(facts_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO summaries_fts(summaries_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO message_context_fts(message_context_fts, rank) VALUES ('secure-delete', 1);
""")

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


M008_SIGN_BITS = Migration("m008_sign_bits_and_parts", why="""\
The vector leg pre-selects candidates by the sign bits of each vector (`bit_index.py`), held in memory. `bits`
keeps them (48 bytes for 384 dimensions) beside the float vector; `parts` holds the float16 vectors of an item's
sentences when it has two or more (`text.sentence_parts`), `parts_bits` their sign bits. The covering index
`embeddings_bits` lets a process load a user's bits without reading a float vector (1.5 KB each: 1.5 GB at a
million). `embedding_counts.changes` counts every insert and delete, so a loaded copy knows when it is stale.
`coop_sign_bits()` (`sign_bits.sign_bits_blob`) is registered on every connection.""", sql="""
ALTER TABLE embeddings ADD COLUMN bits BLOB;
ALTER TABLE embeddings ADD COLUMN parts BLOB;
ALTER TABLE embeddings ADD COLUMN parts_bits BLOB;
UPDATE embeddings SET bits = coop_sign_bits(vector);
CREATE INDEX embeddings_bits ON embeddings(user_id, embedder, id, kind, bits, parts_bits);
ALTER TABLE embedding_counts ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER embeddings_count_ai;
DROP TRIGGER embeddings_count_ad;
CREATE TRIGGER embeddings_count_ai AFTER INSERT ON embeddings BEGIN
  INSERT INTO embedding_counts (user_id, embedder, count, changes) VALUES (new.user_id, new.embedder, 1, 1)
    ON CONFLICT (user_id, embedder) DO UPDATE SET count = count + 1, changes = changes + 1;
END;
CREATE TRIGGER embeddings_count_ad AFTER DELETE ON embeddings BEGIN
  UPDATE embedding_counts SET count = count - 1, changes = changes + 1
    WHERE user_id = old.user_id AND embedder = old.embedder;
END;
""")


M009_REEMBED_FOR_PARTS = Migration("m009_reembed_for_sentence_parts", why="""\
Items embedded before m008 have no sentence vectors (`parts`): a long one is found only by its diluted whole.
Those of two or more sentences (`coop_sentence_parts()`: `text.sentence_parts`) go back to the embedding backlog
(`embedder = NULL`, as `coop memory reembed` does); their old vector serves until the new one replaces it.""", sql="""
UPDATE messages SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(content) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'message' AND e.item_id = messages.id AND e.parts IS NULL);
UPDATE facts SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(value) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'fact' AND e.item_id = facts.id AND e.parts IS NULL);
UPDATE summaries SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(text) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'summary' AND e.item_id = summaries.id AND e.parts IS NULL);
""")

