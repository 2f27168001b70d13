"""Migration 008, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

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
