"""Migration 003, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

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
