"""Migration 014, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

# The Postgres form. Kept readable as one script; `postgres/text_index.py` describes what the tables hold and how
# a search reads them.
POSTGRES = r"""
DROP TRIGGER messages_inserted ON messages;
DROP TRIGGER messages_updated ON messages;
DROP TRIGGER facts_inserted ON facts;
DROP TRIGGER facts_updated ON facts;
DROP TRIGGER summaries_inserted ON summaries;
DROP TRIGGER summaries_updated ON summaries;
DROP FUNCTION coop_item_written();
DROP TABLE fulltext_postings;
DROP TABLE fulltext_docs;
DROP TABLE fulltext_pending;

CREATE OR REPLACE FUNCTION coop_item_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  item_kind TEXT := TG_ARGV[0];
BEGIN
  DELETE FROM embeddings WHERE kind = item_kind AND item_id = OLD.id;
  IF item_kind = 'fact' THEN
    DELETE FROM fact_sources WHERE fact_id = OLD.id;
  ELSIF item_kind = 'message' THEN
    DELETE FROM fact_sources WHERE message_id = OLD.id;
    DELETE FROM memory_jobs WHERE message_id = OLD.id OR reply_id = OLD.id;
  END IF;
  RETURN OLD;
END $$;

-- How text becomes terms, on the server: Snowball's English stemmer (as FTS5's porter stems every language) with
-- no stop words, over the default parser's words and numbers.
CREATE TEXT SEARCH DICTIONARY coop_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION coop_text (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION coop_text ADD MAPPING FOR asciiword, word, numword WITH coop_stem;
ALTER TEXT SEARCH CONFIGURATION coop_text ADD MAPPING FOR uint, int, float, sfloat, version WITH simple;

-- Text as the parser is given it: compatibility forms folded (NFKC: full-width Latin, half-width katakana),
-- diacritics removed, ASCII punctuation a space (so "node.js", "e-mail", "4.5" are words apart, as FTS5's
-- unicode61 splits them), and each character of a script written without spaces a word of its own. ASCII text
-- needs only the punctuation (normalizing it would change nothing, at ten times the cost).
CREATE FUNCTION coop_fts_text(body TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN body ~ '[^\x01-\x7f]' THEN
    regexp_replace(regexp_replace(
      normalize(regexp_replace(normalize(body, NFKD), '[\u0300-\u036f]+', '', 'g'), NFC), '[!-/:-@[-`{-~]+', ' ', 'g'),
      '([\u0e00-\u0eff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])', ' \1 ', 'g')
  ELSE regexp_replace(body, '[!-/:-@[-`{-~]+', ' ', 'g') END
$$;

-- An item's terms: its own words weighted A, the words around it (a message's context) B. Its first 100,000
-- characters: a tsvector holds at most 1 MB.
CREATE FUNCTION coop_fts_words(body TEXT, around TEXT) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT setweight(to_tsvector('coop_text', coalesce(coop_fts_text(left(body, 100000)), '')), 'A')
      || setweight(to_tsvector('coop_text', coalesce(coop_fts_text(around), '')), 'B')
$$;

-- BM25's length of an item: its tokens.
CREATE FUNCTION coop_fts_size(words tsvector) RETURNS INTEGER LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(sum(cardinality(positions)), 0)::INTEGER FROM unnest(words)
$$;

-- A message's context: the two messages before it in its session (each cut at 300 characters) and the day it was
-- written ("Monday 8 May 2023", in the session's time zone).
CREATE FUNCTION coop_message_context(owner TEXT, in_session BIGINT, message BIGINT, written DOUBLE PRECISION)
RETURNS TEXT LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT concat_ws(' ',
    (SELECT string_agg(b.body, ' ' ORDER BY b.id) FROM (
       SELECT p.id, substr(p.content, 1, 300) AS body FROM messages p
       WHERE p.user_id = owner AND p.session_id = in_session AND p.id < message ORDER BY p.id DESC LIMIT 2) b),
    to_char(to_timestamp(written), 'FMDay FMDD FMMonth YYYY'))
$$;

CREATE FUNCTION coop_without(elements ANYARRAY, place INTEGER) RETURNS ANYARRAY LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT elements[:place - 1] || elements[place + 1:]
$$;

CREATE TABLE fulltext_items (
  kind TEXT NOT NULL,
  item_id BIGINT NOT NULL,
  user_id TEXT NOT NULL,
  terms INTEGER NOT NULL,
  words tsvector NOT NULL,
  PRIMARY KEY (kind, item_id)
);
CREATE TABLE fulltext_terms (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  docs INTEGER NOT NULL,
  PRIMARY KEY (user_id, kind, term)
);
CREATE SEQUENCE fulltext_postings_chunk;
CREATE TABLE fulltext_postings (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  chunk BIGINT NOT NULL,
  items BIGINT[] NOT NULL,
  own SMALLINT[] NOT NULL,
  context SMALLINT[] NOT NULL,
  terms INTEGER[] NOT NULL,
  PRIMARY KEY (user_id, kind, term, chunk)
);

CREATE FUNCTION coop_fulltext_add(item_kind TEXT, item BIGINT, owner TEXT, body TEXT, around TEXT) RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $$
DECLARE
  indexed tsvector := coop_fts_words(body, around);
  size INTEGER := coop_fts_size(indexed);
BEGIN
  INSERT INTO fulltext_items (kind, item_id, user_id, terms, words) VALUES (item_kind, item, owner, size, indexed);
  INSERT INTO fulltext_terms AS t (user_id, kind, term, docs)
    SELECT owner, item_kind, u.lexeme, 1 FROM unnest(indexed) u ORDER BY u.lexeme
    ON CONFLICT (user_id, kind, term) DO UPDATE SET docs = t.docs + 1;
  INSERT INTO fulltext_postings AS p (user_id, kind, term, chunk, items, own, context, terms)
    SELECT owner, item_kind, u.lexeme, 0, ARRAY[item], ARRAY[cardinality(array_positions(u.weights, 'A'))::SMALLINT],
           ARRAY[cardinality(array_positions(u.weights, 'B'))::SMALLINT], ARRAY[size]
    FROM unnest(indexed) u ORDER BY u.lexeme
    ON CONFLICT (user_id, kind, term, chunk) DO UPDATE SET items = p.items || EXCLUDED.items,
      own = p.own || EXCLUDED.own, context = p.context || EXCLUDED.context, terms = p.terms || EXCLUDED.terms;
  UPDATE fulltext_postings SET chunk = nextval('fulltext_postings_chunk')
    WHERE user_id = owner AND kind = item_kind AND term = ANY(tsvector_to_array(indexed)) AND chunk = 0
      AND cardinality(items) >= 64;
  INSERT INTO fulltext_stats AS s (user_id, kind, docs, terms) VALUES (owner, item_kind, 1, size)
    ON CONFLICT (user_id, kind) DO UPDATE SET docs = s.docs + 1, terms = s.terms + size;
END $$;

CREATE FUNCTION coop_fulltext_drop(item_kind TEXT, item BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  gone RECORD;
  held TEXT[];
BEGIN
  DELETE FROM fulltext_items WHERE kind = item_kind AND item_id = item RETURNING user_id, terms, words INTO gone;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  held := tsvector_to_array(gone.words);
  UPDATE fulltext_terms SET docs = docs - 1 WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held);
  DELETE FROM fulltext_terms WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND docs <= 0;
  UPDATE fulltext_postings
    SET own = coop_without(own, array_position(items, item)),
        context = coop_without(context, array_position(items, item)),
        terms = coop_without(terms, array_position(items, item)),
        items = coop_without(items, array_position(items, item))
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND item = ANY(items);
  DELETE FROM fulltext_postings
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND cardinality(items) = 0;
  UPDATE fulltext_stats SET docs = docs - 1, terms = terms - gone.terms WHERE user_id = gone.user_id AND kind = item_kind;
END $$;

CREATE FUNCTION coop_fulltext_reindex(item_kind TEXT, item BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM coop_fulltext_drop(item_kind, item);
  IF item_kind = 'message' THEN
    PERFORM coop_fulltext_add(item_kind, m.id, m.user_id, m.content,
                              coop_message_context(m.user_id, m.session_id, m.id, m.created_at))
      FROM messages m WHERE m.id = item;
  ELSIF item_kind = 'fact' THEN
    PERFORM coop_fulltext_add(item_kind, f.id, f.user_id, concat_ws(' ', f.key, f.value), NULL)
      FROM facts f WHERE f.id = item;
  ELSE
    PERFORM coop_fulltext_add(item_kind, s.id, s.user_id, s.text, NULL) FROM summaries s WHERE s.id = item;
  END IF;
END $$;

-- The two messages after `message` in its session hold its words as context: indexed again.
CREATE FUNCTION coop_fulltext_reindex_next(owner TEXT, in_session BIGINT, message BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM coop_fulltext_reindex('message', n.id) FROM (
    SELECT p.id FROM messages p WHERE p.user_id = owner AND p.session_id = in_session AND p.id > message
    ORDER BY p.id LIMIT 2) n;
END $$;

CREATE FUNCTION coop_fulltext_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM coop_fulltext_drop(TG_ARGV[0], OLD.id);
  ELSE
    PERFORM coop_fulltext_reindex(TG_ARGV[0], NEW.id);
  END IF;
  IF TG_ARGV[0] = 'message' THEN
    IF TG_OP = 'DELETE' THEN
      PERFORM coop_fulltext_reindex_next(OLD.user_id, OLD.session_id, OLD.id);
    ELSE
      IF TG_OP = 'UPDATE' THEN
        IF OLD.session_id IS DISTINCT FROM NEW.session_id THEN
          PERFORM coop_fulltext_reindex_next(OLD.user_id, OLD.session_id, OLD.id);
        END IF;
      END IF;
      PERFORM coop_fulltext_reindex_next(NEW.user_id, NEW.session_id, NEW.id);
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_fulltext AFTER INSERT OR DELETE ON messages FOR EACH ROW
  EXECUTE FUNCTION coop_fulltext_follow('message');
CREATE TRIGGER messages_fulltext_changed AFTER UPDATE OF content, session_id, created_at ON messages FOR EACH ROW
  WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.session_id IS DISTINCT FROM NEW.session_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at)
  EXECUTE FUNCTION coop_fulltext_follow('message');
CREATE TRIGGER facts_fulltext AFTER INSERT OR DELETE ON facts FOR EACH ROW EXECUTE FUNCTION coop_fulltext_follow('fact');
CREATE TRIGGER facts_fulltext_changed AFTER UPDATE OF key, value ON facts FOR EACH ROW
  WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.value IS DISTINCT FROM NEW.value)
  EXECUTE FUNCTION coop_fulltext_follow('fact');
CREATE TRIGGER summaries_fulltext AFTER INSERT OR DELETE ON summaries FOR EACH ROW
  EXECUTE FUNCTION coop_fulltext_follow('summary');
CREATE TRIGGER summaries_fulltext_changed AFTER UPDATE OF text ON summaries FOR EACH ROW
  WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION coop_fulltext_follow('summary');

-- Every item of `owner` (NULL: of every user, one after the other) indexed again from its stored text, in bulk;
-- returns how many. A term's postings are gathered whole, then cut into rows of 64.
CREATE FUNCTION coop_fulltext_rebuild(owner TEXT) RETURNS BIGINT LANGUAGE plpgsql SET client_min_messages = warning
AS $$
DECLARE
  made BIGINT := 0;
  each_user TEXT;
BEGIN
  IF owner IS NULL THEN
    FOR each_user IN SELECT id FROM users ORDER BY id LOOP
      made := made + coop_fulltext_rebuild(each_user);
    END LOOP;
    RETURN made;
  END IF;
  DELETE FROM fulltext_postings WHERE user_id = owner;
  DELETE FROM fulltext_terms WHERE user_id = owner;
  DELETE FROM fulltext_items WHERE user_id = owner;
  DELETE FROM fulltext_stats WHERE user_id = owner;
  INSERT INTO fulltext_items (kind, item_id, user_id, terms, words)
    SELECT 'message', m.id, m.user_id, coop_fts_size(w.said), w.said FROM messages m CROSS JOIN LATERAL
      coop_fts_words(m.content, coop_message_context(m.user_id, m.session_id, m.id, m.created_at)) AS w(said)
    WHERE m.user_id = owner
    UNION ALL
    SELECT 'fact', f.id, f.user_id, coop_fts_size(w.said), w.said FROM facts f
      CROSS JOIN LATERAL coop_fts_words(concat_ws(' ', f.key, f.value), NULL) AS w(said)
    WHERE f.user_id = owner
    UNION ALL
    SELECT 'summary', s.id, s.user_id, coop_fts_size(w.said), w.said FROM summaries s
      CROSS JOIN LATERAL coop_fts_words(s.text, NULL) AS w(said)
    WHERE s.user_id = owner;
  GET DIAGNOSTICS made = ROW_COUNT;
  INSERT INTO fulltext_postings (user_id, kind, term, chunk, items, own, context, terms)
    SELECT owner, t.kind, t.lexeme, nextval('fulltext_postings_chunk'), t.items[c * 64 + 1:c * 64 + 64],
           t.own[c * 64 + 1:c * 64 + 64], t.context[c * 64 + 1:c * 64 + 64], t.terms[c * 64 + 1:c * 64 + 64]
    FROM (SELECT i.kind, u.lexeme, array_agg(i.item_id) AS items,
                 array_agg(cardinality(array_positions(u.weights, 'A'))::SMALLINT) AS own,
                 array_agg(cardinality(array_positions(u.weights, 'B'))::SMALLINT) AS context,
                 array_agg(i.terms) AS terms
          FROM fulltext_items i CROSS JOIN LATERAL unnest(i.words) u WHERE i.user_id = owner
          GROUP BY i.kind, u.lexeme) t
    CROSS JOIN LATERAL generate_series(0, (cardinality(t.items) - 1) / 64) AS c;
  INSERT INTO fulltext_terms (user_id, kind, term, docs)
    SELECT owner, kind, term, sum(cardinality(items)) FROM fulltext_postings WHERE user_id = owner
    GROUP BY kind, term;
  INSERT INTO fulltext_stats (user_id, kind, docs, terms)
    SELECT owner, kind, count(*), sum(terms) FROM fulltext_items WHERE user_id = owner GROUP BY kind;
  RETURN made;
END $$;

ALTER TABLE fulltext_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_items FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_items USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_terms USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');
ALTER TABLE fulltext_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulltext_postings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON fulltext_postings USING (user_id = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*');

SELECT coop_fulltext_rebuild(NULL);
ANALYZE fulltext_items, fulltext_terms, fulltext_postings, fulltext_stats;
"""

M014_POSTGRES_FULLTEXT_IN_THE_WRITE = Migration("m014_postgres_fulltext_in_the_write", why="""\
On Postgres, a search wrote: a write only queued its item and the next search of that user tokenized the queue
(FTS5's tokenizer run by apsw in the client) into a B-tree row per term and item, so a role with only SELECT
rights (a read replica) could not search, a forgotten word lived until then, and the postings were most of the
database. Now the write's own transaction indexes it, by trigger, with a Postgres text search configuration
(`coop_text`), and the postings are one row per term and 64 items (`fulltext_postings`: arrays of ids, counts and
lengths), beside each item's terms (`fulltext_items`) and each user's document frequencies (`fulltext_terms`).
Nothing changes on SQLite, whose FTS5 indexes are written by its triggers already.""", sql="", postgres=POSTGRES)
