"""Migration 021, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

# The Postgres form: m014's add, drop and rebuild functions as they were, but for the span of each sealed row.
POSTGRES = r"""
ALTER TABLE fulltext_postings ADD COLUMN lowest BIGINT, ADD COLUMN highest BIGINT;
UPDATE fulltext_postings SET lowest = (SELECT min(i) FROM unnest(items) AS i),
    highest = (SELECT max(i) FROM unnest(items) AS i)
  WHERE chunk <> 0;
-- Only sealed rows are in it: the open row of a term (chunk 0) grows with every write, and an index on what it
-- changes would cost every write an index entry more (no HOT update).
CREATE INDEX fulltext_postings_span ON fulltext_postings (user_id, kind, term, highest, lowest) WHERE chunk <> 0;

CREATE OR REPLACE FUNCTION coop_fulltext_add(item_kind TEXT, item BIGINT, owner TEXT, body TEXT, around TEXT)
RETURNS void LANGUAGE plpgsql SET client_min_messages = warning AS $$
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
  UPDATE fulltext_postings SET chunk = nextval('fulltext_postings_chunk'),
      lowest = (SELECT min(i) FROM unnest(items) AS i), highest = (SELECT max(i) FROM unnest(items) AS i)
    WHERE user_id = owner AND kind = item_kind AND term = ANY(tsvector_to_array(indexed)) AND chunk = 0
      AND cardinality(items) >= 64;
  INSERT INTO fulltext_stats AS s (user_id, kind, docs, terms) VALUES (owner, item_kind, 1, size)
    ON CONFLICT (user_id, kind) DO UPDATE SET docs = s.docs + 1, terms = s.terms + size;
END $$;

-- An item is in the open row of each of its terms or in a sealed row whose span holds its id: the rows of a
-- common term that cannot hold it are passed over in the index, never read.
CREATE OR REPLACE FUNCTION coop_fulltext_drop(item_kind TEXT, item BIGINT) RETURNS void LANGUAGE plpgsql AS $$
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
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND chunk = 0 AND item = ANY(items);
  UPDATE fulltext_postings
    SET own = coop_without(own, array_position(items, item)),
        context = coop_without(context, array_position(items, item)),
        terms = coop_without(terms, array_position(items, item)),
        items = coop_without(items, array_position(items, item))
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND chunk <> 0
      AND highest >= item AND lowest <= item AND item = ANY(items);
  DELETE FROM fulltext_postings
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND chunk = 0 AND cardinality(items) = 0;
  DELETE FROM fulltext_postings
    WHERE user_id = gone.user_id AND kind = item_kind AND term = ANY(held) AND chunk <> 0
      AND highest >= item AND lowest <= item AND cardinality(items) = 0;
  UPDATE fulltext_stats SET docs = docs - 1, terms = terms - gone.terms WHERE user_id = gone.user_id AND kind = item_kind;
END $$;

CREATE OR REPLACE FUNCTION coop_fulltext_rebuild(owner TEXT) RETURNS BIGINT LANGUAGE plpgsql
SET client_min_messages = warning AS $$
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
  INSERT INTO fulltext_postings (user_id, kind, term, chunk, items, own, context, terms, lowest, highest)
    SELECT owner, r.kind, r.lexeme, nextval('fulltext_postings_chunk'), r.items, r.own, r.context, r.terms,
           r.items[1], r.items[cardinality(r.items)]
    FROM (SELECT t.kind, t.lexeme, t.items[c * 64 + 1:c * 64 + 64] AS items, t.own[c * 64 + 1:c * 64 + 64] AS own,
                 t.context[c * 64 + 1:c * 64 + 64] AS context, t.terms[c * 64 + 1:c * 64 + 64] AS terms
          FROM (SELECT i.kind, u.lexeme, array_agg(i.item_id ORDER BY i.item_id) AS items,
                       array_agg(cardinality(array_positions(u.weights, 'A'))::SMALLINT ORDER BY i.item_id) AS own,
                       array_agg(cardinality(array_positions(u.weights, 'B'))::SMALLINT ORDER BY i.item_id)
                         AS context,
                       array_agg(i.terms ORDER BY i.item_id) AS terms
                FROM fulltext_items i CROSS JOIN LATERAL unnest(i.words) u WHERE i.user_id = owner
                GROUP BY i.kind, u.lexeme) t
          CROSS JOIN LATERAL generate_series(0, (cardinality(t.items) - 1) / 64) AS c) r;
  INSERT INTO fulltext_terms (user_id, kind, term, docs)
    SELECT owner, kind, term, sum(cardinality(items)) FROM fulltext_postings WHERE user_id = owner
    GROUP BY kind, term;
  INSERT INTO fulltext_stats (user_id, kind, docs, terms)
    SELECT owner, kind, count(*), sum(terms) FROM fulltext_items WHERE user_id = owner GROUP BY kind;
  RETURN made;
END $$;

ANALYZE fulltext_postings;
"""

M021_POSTINGS_FOUND_BY_THEIR_SPAN = Migration("m021_postings_found_by_their_span", why="""\
On Postgres, forgetting an item read every postings row of each of its terms to find the few that hold it: a
common word of a user with 100,000 messages is in about 1,500 rows of 64, and a forgotten message is dropped
three times (it and the two messages whose context held it). Each sealed row (one that reached 64 items) now
keeps the lowest and highest id it holds, in an index of sealed rows only, so the drop reads the term's open row
and the sealed rows whose span holds the id. A rebuild cuts each term's items in id order, so its rows' spans do
not overlap. Nothing changes on SQLite, whose FTS5 index finds a row by its id.""", sql="", postgres=POSTGRES)
