"""Migration 006, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

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
