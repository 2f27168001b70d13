-- Frozen: the whole schema coop's Postgres backend made before it had a schema history (postgres/schema.py's
-- schema_sql(), recorded as version 1 in coop_schema). test_schema_history.py upgrades a database made from it.

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  created_at DOUBLE PRECISION NOT NULL,
  reviewed_at DOUBLE PRECISION
);
CREATE TABLE sessions (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  title TEXT,
  started_at DOUBLE PRECISION NOT NULL,
  ended_at DOUBLE PRECISION,
  last_activity_at DOUBLE PRECISION NOT NULL,
  external_id TEXT,
  UNIQUE (user_id, external_id)
);
CREATE INDEX sessions_user ON sessions(user_id, last_activity_at);
CREATE TABLE messages (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  session_id BIGINT REFERENCES sessions(id),
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  content TEXT NOT NULL,
  tool_name TEXT,
  tool_call_id TEXT,
  tool_calls TEXT,
  created_at DOUBLE PRECISION NOT NULL,
  importance DOUBLE PRECISION NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
  token_count BIGINT NOT NULL DEFAULT 0,
  embedder TEXT,
  embedding_error TEXT,
  consolidated_at DOUBLE PRECISION,
  external_id TEXT,
  origin TEXT CHECK (origin IN ('host')),
  UNIQUE (user_id, external_id)
);
CREATE INDEX messages_user_session ON messages(user_id, session_id, id);
CREATE INDEX messages_user_importance ON messages(user_id, importance);
CREATE INDEX messages_unembedded ON messages(user_id, id) WHERE embedder IS NULL;
CREATE TABLE facts (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  category TEXT NOT NULL DEFAULT 'general',
  key TEXT,
  value TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('user', 'model', 'extraction', 'consolidation', 'import', 'host')),
  importance DOUBLE PRECISION NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
  mention_count BIGINT NOT NULL DEFAULT 1,
  content_hash TEXT NOT NULL,
  created_at DOUBLE PRECISION NOT NULL,
  updated_at DOUBLE PRECISION NOT NULL,
  last_recalled_at DOUBLE PRECISION,
  superseded_by BIGINT REFERENCES facts(id) ON DELETE SET NULL,
  superseded_at DOUBLE PRECISION,
  archived_at DOUBLE PRECISION,
  embedder TEXT,
  embedding_error TEXT
);
CREATE UNIQUE INDEX facts_one_active_key ON facts(user_id, category, key)
  WHERE key IS NOT NULL AND superseded_at IS NULL AND archived_at IS NULL;
CREATE INDEX facts_user_hash ON facts(user_id, category, content_hash);
CREATE INDEX facts_user_active ON facts(user_id, superseded_at, archived_at);
CREATE INDEX facts_unembedded ON facts(user_id, id) WHERE embedder IS NULL;
CREATE TABLE fact_history (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  fact_id BIGINT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('ADD', 'UPDATE', 'SUPERSEDE', 'MERGE', 'FORGET', 'ARCHIVE', 'RESTORE')),
  old_value TEXT,
  new_value TEXT,
  related_fact_id BIGINT,
  reason TEXT,
  created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX fact_history_fact ON fact_history(user_id, fact_id, id);
CREATE TABLE fact_sources (
  user_id TEXT NOT NULL,
  fact_id BIGINT NOT NULL,
  message_id BIGINT NOT NULL,
  quote TEXT,
  PRIMARY KEY (fact_id, message_id)
);
CREATE INDEX fact_sources_message ON fact_sources(message_id);
CREATE TABLE summaries (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  session_id BIGINT REFERENCES sessions(id),
  span_start_id BIGINT,
  span_end_id BIGINT,
  text TEXT NOT NULL,
  created_at DOUBLE PRECISION NOT NULL,
  embedder TEXT,
  embedding_error TEXT
);
CREATE INDEX summaries_user ON summaries(user_id, created_at);
CREATE TABLE forgotten (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  kind TEXT NOT NULL,
  item_id BIGINT NOT NULL,
  content_hash TEXT,
  forgotten_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX forgotten_user_hash ON forgotten(user_id, content_hash);
CREATE INDEX forgotten_kind_item ON forgotten(kind, item_id);
CREATE TABLE memory_jobs (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('extraction')),
  session_id BIGINT,
  message_id BIGINT NOT NULL,
  reply_id BIGINT,
  attempts BIGINT NOT NULL DEFAULT 0,
  created_at DOUBLE PRECISION NOT NULL,
  claimed_at DOUBLE PRECISION
);
CREATE INDEX memory_jobs_user ON memory_jobs(user_id, id);
CREATE TABLE embeddings (
  id BIGSERIAL PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  kind TEXT NOT NULL CHECK (kind IN ('message', 'fact', 'summary')),
  item_id BIGINT NOT NULL,
  embedder TEXT NOT NULL,
  vector BYTEA NOT NULL,
  parts BYTEA,
  UNIQUE (kind, item_id, embedder)
);
CREATE INDEX embeddings_user ON embeddings(user_id, embedder, kind);
CREATE TABLE embedding_points (
  embedding_id BIGINT NOT NULL REFERENCES embeddings(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL,
  embedder TEXT NOT NULL,
  kind TEXT NOT NULL,
  point vector NOT NULL
);
CREATE INDEX embedding_points_owner ON embedding_points(embedding_id);
CREATE INDEX embedding_points_user ON embedding_points(user_id, embedder, kind);
CREATE TABLE embedding_counts (
  user_id TEXT NOT NULL,
  embedder TEXT NOT NULL,
  count BIGINT NOT NULL,
  changes BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, embedder)
);
CREATE TABLE vector_indexes (
  embedder TEXT PRIMARY KEY,
  table_name TEXT NOT NULL UNIQUE,
  dims INTEGER NOT NULL,
  dirty INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE user_vector_indexes (
  embedder TEXT NOT NULL,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL UNIQUE,
  dims INTEGER NOT NULL,
  PRIMARY KEY (embedder, user_id)
);
CREATE TABLE fulltext_postings (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  item_id BIGINT NOT NULL,
  own REAL NOT NULL,
  context REAL NOT NULL DEFAULT 0,
  terms INTEGER NOT NULL,
  -- the counts ride in the index: a search reads a term's postings from the index alone
  PRIMARY KEY (user_id, kind, term, item_id) INCLUDE (own, context, terms)
);
CREATE INDEX fulltext_postings_item ON fulltext_postings(kind, item_id);
CREATE TABLE fulltext_docs (
  kind TEXT NOT NULL,
  item_id BIGINT NOT NULL,
  user_id TEXT NOT NULL,
  terms INTEGER NOT NULL,
  PRIMARY KEY (kind, item_id)
);
CREATE TABLE fulltext_stats (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  docs BIGINT NOT NULL DEFAULT 0,
  terms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, kind)
);
CREATE TABLE fulltext_pending (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  item_id BIGINT NOT NULL,
  PRIMARY KEY (user_id, kind, item_id)
);

CREATE FUNCTION coop_item_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  item_kind TEXT := TG_ARGV[0];
  gone INTEGER;
BEGIN
  DELETE FROM embeddings WHERE kind = item_kind AND item_id = OLD.id;
  DELETE FROM fulltext_postings WHERE kind = item_kind AND item_id = OLD.id;
  DELETE FROM fulltext_pending WHERE user_id = OLD.user_id AND kind = item_kind AND item_id = OLD.id;
  DELETE FROM fulltext_docs WHERE kind = item_kind AND item_id = OLD.id RETURNING terms INTO gone;
  IF gone IS NOT NULL THEN
    UPDATE fulltext_stats SET docs = docs - 1, terms = terms - gone
      WHERE user_id = OLD.user_id AND kind = item_kind;
  END IF;
  IF item_kind = 'fact' THEN
    DELETE FROM fact_sources WHERE fact_id = OLD.id;
  ELSIF item_kind = 'message' THEN
    DELETE FROM fact_sources WHERE message_id = OLD.id;
    DELETE FROM memory_jobs WHERE message_id = OLD.id OR reply_id = OLD.id;
    INSERT INTO fulltext_pending (user_id, kind, item_id)
      SELECT OLD.user_id, 'message', p.id FROM messages p
      WHERE p.user_id = OLD.user_id AND p.session_id IS NOT DISTINCT FROM OLD.session_id AND p.id > OLD.id
      ORDER BY p.id LIMIT 2
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN OLD;
END $$;

CREATE FUNCTION coop_item_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO fulltext_pending (user_id, kind, item_id) VALUES (NEW.user_id, TG_ARGV[0], NEW.id)
    ON CONFLICT DO NOTHING;
  IF TG_ARGV[0] = 'message' AND TG_OP = 'UPDATE' THEN
    INSERT INTO fulltext_pending (user_id, kind, item_id)
      SELECT NEW.user_id, 'message', p.id FROM messages p
      WHERE p.user_id = NEW.user_id AND p.session_id IS NOT DISTINCT FROM NEW.session_id AND p.id > NEW.id
      ORDER BY p.id LIMIT 2
      ON CONFLICT DO NOTHING;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER messages_deleted AFTER DELETE ON messages FOR EACH ROW EXECUTE FUNCTION coop_item_deleted('message');
CREATE TRIGGER facts_deleted AFTER DELETE ON facts FOR EACH ROW EXECUTE FUNCTION coop_item_deleted('fact');
CREATE TRIGGER summaries_deleted AFTER DELETE ON summaries FOR EACH ROW EXECUTE FUNCTION coop_item_deleted('summary');
CREATE TRIGGER messages_inserted AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION coop_item_written('message');
CREATE TRIGGER messages_updated AFTER UPDATE OF content ON messages FOR EACH ROW
  WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION coop_item_written('message');
CREATE TRIGGER facts_inserted AFTER INSERT ON facts FOR EACH ROW EXECUTE FUNCTION coop_item_written('fact');
CREATE TRIGGER facts_updated AFTER UPDATE OF key, value ON facts FOR EACH ROW
  WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.value IS DISTINCT FROM NEW.value)
  EXECUTE FUNCTION coop_item_written('fact');
CREATE TRIGGER summaries_inserted AFTER INSERT ON summaries FOR EACH ROW EXECUTE FUNCTION coop_item_written('summary');
CREATE TRIGGER summaries_updated AFTER UPDATE OF text ON summaries FOR EACH ROW
  WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION coop_item_written('summary');

CREATE FUNCTION coop_embedding_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO embedding_counts (user_id, embedder, count, changes) VALUES (NEW.user_id, NEW.embedder, 1, 1)
      ON CONFLICT (user_id, embedder) DO UPDATE
      SET count = embedding_counts.count + 1, changes = embedding_counts.changes + 1;
    RETURN NEW;
  END IF;
  UPDATE embedding_counts SET count = count - 1, changes = changes + 1
    WHERE user_id = OLD.user_id AND embedder = OLD.embedder;
  RETURN OLD;
END $$;
CREATE TRIGGER embeddings_counted AFTER INSERT OR DELETE ON embeddings FOR EACH ROW
  EXECUTE FUNCTION coop_embedding_counted();
ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON users USING (id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON sessions USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON messages USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE facts FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON facts USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fact_history ENABLE ROW LEVEL SECURITY;
ALTER TABLE fact_history FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fact_history USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fact_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE fact_sources FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fact_sources USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE summaries ENABLE ROW LEVEL SECURITY;
ALTER TABLE summaries FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON summaries USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE forgotten ENABLE ROW LEVEL SECURITY;
ALTER TABLE forgotten FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON forgotten USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE memory_jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON memory_jobs USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE embeddings ENABLE ROW LEVEL SECURITY;
ALTER TABLE embeddings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON embeddings USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE embedding_points ENABLE ROW LEVEL SECURITY;
ALTER TABLE embedding_points FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON embedding_points USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE embedding_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE embedding_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON embedding_counts USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_postings USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_docs FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_docs USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_stats USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_pending ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_pending FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_pending USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE user_vector_indexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_vector_indexes FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON user_vector_indexes USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
CREATE TABLE coop_schema (version INTEGER NOT NULL, applied_at DOUBLE PRECISION NOT NULL);
INSERT INTO coop_schema VALUES (1, extract(epoch FROM now()));
