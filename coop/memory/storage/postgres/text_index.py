"""The Postgres text index: BM25 as SQLite's FTS5 computes it, over postings the write's own transaction keeps.

Postgres's own ranking (`ts_rank_cd`) has no inverse document frequency: a word in every message counts as much as a
name found once, and no BM25 extension can be installed on a plain server. So the scores are FTS5's, computed in
SQL, over tables that triggers keep in step with every write (`migrations/m014_postgres_fulltext_in_the_write.py`):

- `fulltext_items`: each item's terms as a `tsvector` made by the text search configuration `coop_text` (Snowball's
  English stemmer over every language, as FTS5's porter; no stop words; diacritics removed; each character of an
  unspaced script a word), its own words weighted A and a message's context (the two messages before it and its
  date, as `fulltext.py` says) weighted B, and its length in tokens.
- `fulltext_postings`: for each user, kind and term, the items holding it, 64 to a row, as parallel arrays of ids,
  own and context counts and lengths: what a search reads, a row per 64 postings instead of one per posting.
- `fulltext_terms`: each user's document frequency per kind and term; `fulltext_stats`: items and tokens per kind.

A write (insert, a change of text, a delete) updates all four in its own transaction, and a message's change or
delete re-indexes the two messages after it, whose context held its words; so a search only reads (a role with
SELECT rights alone, a read replica, can search) and a forgotten word is in no row once the forget commits.

A query's words are turned into terms by the same configuration on the server. BM25 is FTS5's `bm25()`: k1 = 1.2,
b = 0.75, IDF ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, the context's counts weighted by `context_weight`,
over the user's own N, n and average length; then the length re-weighting (`lengths.py`) and cut of SQLite's leg.
A phrase of several tokens (characters of an unspaced script) matches an item holding them side by side (the
`tsvector`'s positions), as FTS5's phrases do; its counts are those of its rarest token.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coop.memory.kinds import KINDS, REGISTRY, inactive_facts
from coop.memory.storage import text_index as shared
from coop.memory.storage.items import Finding
from coop.memory.storage.lengths import FTS5_B, FTS5_K1, with_message_lengths
from coop.memory.storage.postgres.connection import PgDatabase

if TYPE_CHECKING:
    from coop.memory.storage.scope import Scope

CONFIGURATION = "coop_text"  # the text search configuration m014 made


@dataclass(frozen=True)
class _Counts:
    """One kind of a user's items: how many (N), their tokens, and how many hold each stem asked about (n)."""

    docs: int = 0
    tokens: int = 0
    holding: dict[str, int] = field(default_factory=dict)

    def idf(self, stem: str) -> float:
        """FTS5's IDF, floored (a count above N, which the one transaction that writes both rules out, as N)."""
        held = self.holding.get(stem, 0)
        return max(math.log((max(self.docs - held, 0) + 0.5) / (held + 0.5)), 1e-6)


def _within_budget(terms: Sequence[str], tokens: dict[str, list[str]], holding: dict[str, int],
                   budget: int | None = None) -> list[str]:
    """`terms` without the most common ones once matching them all would read more than `budget` postings
    (`text_index.within_budget`); a term costs the items holding each of its stems."""
    terms = list(terms)
    if len(terms) <= 1:
        return terms
    cost = {term: sum(holding.get(token, 0) for token in tokens[term]) for term in terms}
    return shared.within_budget(terms, cost, shared.POSTINGS_BUDGET if budget is None else budget)


def _said_and_counted(rows: Sequence[tuple[Any, ...]], words: Sequence[str],
                      kinds: Sequence[str]) -> tuple[list[list[str]], dict[str, _Counts]]:
    """`_WORDS_AND_COUNTS`'s rows as each of `words`' terms, in the order they are said (a word that makes none:
    []), and the user's counts per kind."""
    said = sorted((int(at), int(place or 0), str(term)) for tag, _, term, at, place in rows if tag == "said")
    terms: list[list[str]] = [[] for _ in words]
    for at, _, term in said:
        terms[at - 1].append(term)
    holding: dict[str, dict[str, int]] = {kind: {} for kind in kinds}
    for tag, kind, term, docs, _ in rows:
        if tag == "term":
            holding[kind][term] = int(docs)
    counts = {kind: _Counts(int(docs), int(tokens), holding[kind])
              for tag, kind, _, docs, tokens in rows if tag == "kind"}
    return terms, counts


class PgTextIndex:
    """BM25 full text over one user's items (`UserMemory.text` on Postgres); reads only."""

    def __init__(self, scope: "Scope[PgDatabase]") -> None:
        self.scope = scope

    @property
    def db(self) -> PgDatabase:
        return self.scope.db

    # -- upkeep ---------------------------------------------------------------------------------------------
    def rebuild(self) -> int:
        """Index every item of this user again from its stored text (`coop memory reindex`); returns how many."""
        with self.db.atomic():
            return int(self.db.run("SELECT coop_fulltext_rebuild(%s)", (self.scope.user_id,))[0][0])

    def purge(self, kind: str) -> None:
        """Nothing left to do: the forget's own transaction took the item's terms out of every row (the triggers),
        and `PgDatabase.checkpoint`, run after a forget, vacuums the dead row versions."""

    # -- reads ----------------------------------------------------------------------------------------------
    def matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                include_inactive: bool = False, context_weight: float = 1.0) -> list[tuple[str, int, float]]:
        """The best `limit` matches over `kinds` as (kind, id, relevance), best first: BM25 as FTS5 computes it,
        messages then re-weighted for length as SQLite's leg does (`lengths.py`)."""
        words = list(dict.fromkeys([*phrases, *terms]))
        if not words:
            return []
        made, known = self._said_and_counted(words, kinds)
        tokens = dict(zip(words, made))
        pool = round(limit * shared.POOL_FACTOR)
        lengths: dict[int, int] = {}
        found: list[tuple[str, int, float]] = []
        for kind in kinds:
            counts = known.get(kind, _Counts())
            said = terms if kind != "message" else _within_budget(terms, tokens, counts.holding)
            groups = [(word, tokens[word]) for word in dict.fromkeys([*phrases, *said]) if tokens[word]]
            if not (counts.docs and groups):
                continue
            for item_id, score, length in self._scored(kind, groups, counts, pool, include_inactive, context_weight):
                found.append((kind, item_id, -score))
                if length is not None:
                    lengths[item_id] = length
        found.sort(key=lambda hit: hit[2])
        return [(kind, item_id, -bm25) for kind, item_id, bm25
                in with_message_lengths(self.scope, found[:pool], lengths=lengths)[:limit]]

    def _said_and_counted(self, words: Sequence[str],
                          kinds: Sequence[str]) -> tuple[list[list[str]], dict[str, _Counts]]:
        """Each of `words` as the index's terms, and the user's counts per kind for BM25 (N, the average length,
        each term's n) and the postings budget: one statement (`_WORDS_AND_COUNTS`)."""
        values = {"user": self.scope.user_id, "kinds": list(kinds), "words": list(words)}
        return _said_and_counted(self.db.run(_WORDS_AND_COUNTS, values), words, kinds)

    def affordable_terms(self, terms: Sequence[str], budget: int | None = None) -> list[str]:
        """The query's word terms, without its most common ones when matching them all would read more than
        `budget` postings (as SQLite's leg: `text_index.SqliteTextIndex.affordable_terms`); counts are the
        user's."""
        if len(terms) <= 1:
            return list(terms)
        made, known = self._said_and_counted(terms, ["message"])
        tokens = dict(zip(terms, made))
        counts = known.get("message", _Counts())
        return _within_budget(terms, tokens, counts.holding, budget)

    def _scored(self, kind: str, groups: list[tuple[str, list[str]]], counts: _Counts, limit: int,
                include_inactive: bool, context_weight: float) -> list[tuple[int, float, int | None]]:
        """(id, BM25, message length or None) of the best `limit` items of `kind` for these groups of terms (a
        word and its stems, or a phrase and its tokens)."""
        values: dict[str, Any] = {
            "user": self.scope.user_id, "kind": kind, "weight": float(context_weight), "limit": limit,
            # BM25's term for one posting, as idf * tf / (tf + c1 + c2 * length) with idf holding (k1 + 1)
            "c1": FTS5_K1 * (1 - FTS5_B), "c2": FTS5_K1 * FTS5_B / max(counts.tokens / counts.docs, 1e-9)}
        if all(len(group) == 1 for _, group in groups):
            stems = [group[0] for _, group in groups]
            values.update(token=stems, idf=[(FTS5_K1 + 1) * counts.idf(stem) for stem in stems])
            best = _BEST_WORDS
        else:
            values.update(group=[at for at, (_, group) in enumerate(groups) for _ in group],
                          token=[token for _, group in groups for token in group],
                          need=[len(group) for _, group in groups], text=[word for word, _ in groups],
                          docs=float(counts.docs), k=FTS5_K1 + 1)
            best = _BEST_PHRASES
        active = ""
        if kind == "fact" and not include_inactive:
            active = f"WHERE item_id NOT IN ({inactive_facts('%(user)s')})"  # see `inactive_facts` for why
        best = best.format(active=active, configuration=CONFIGURATION)
        if kind == "message":
            sql = (f"SELECT b.item_id, b.score, length(m.content) FROM ({best}) b "
                   "JOIN messages m ON m.id = b.item_id ORDER BY b.score DESC, b.item_id")
        else:
            sql = f"SELECT item_id, score, NULL FROM ({best}) b ORDER BY score DESC, item_id"
        rows = self.db.run(sql, values)
        return [(int(r[0]), float(r[1]), None if r[2] is None else int(r[2])) for r in rows]

    def rare_word_score(self, kind: str) -> float:
        """The relevance one match of a word found in a single row of `kind` gets (as SQLite's: ln(N / 1.5 + 1)
        for N rows, 0 below `text_index.MIN_ROWS_FOR_BM25_FLOOR`); N is the user's indexed rows of that kind."""
        rows = self.db.scalar("SELECT docs FROM fulltext_stats WHERE user_id = $1 AND kind = $2",
                              (self.scope.user_id, kind)) or 1
        return math.log(rows / 1.5 + 1.0) if rows >= shared.MIN_ROWS_FOR_BM25_FLOOR else 0.0


# A query's words as the index's terms (tagged 'said': the word's place in the query, the term's in the word), with
# the user's document frequency of each term per kind ('term') and the kind's items and tokens ('kind'): what a
# search needs before it reads any postings, in one round trip. The terms are handed to the index as one array
# (`= ANY(ARRAY(...))`): joined to the query's rows, the planner read and hashed all of the user's terms instead.
_WORDS_AND_COUNTS = f"""
  WITH said AS (
    SELECT w.at, t.lexeme AS term, t.positions[1] AS place FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, at)
    CROSS JOIN LATERAL unnest(to_tsvector('{CONFIGURATION}', coop_fts_text(w.word))) AS t)
  SELECT 'said', NULL, term, at, place FROM said
  UNION ALL
  SELECT 'term', kind, term, docs, NULL FROM fulltext_terms
  WHERE user_id = %(user)s AND kind = ANY(%(kinds)s) AND term = ANY(ARRAY(SELECT term FROM said))
  UNION ALL
  SELECT 'kind', kind, NULL, docs, terms FROM fulltext_stats WHERE user_id = %(user)s AND kind = ANY(%(kinds)s)"""

# The best items for words of one token each (nearly every query): each term's postings unrolled, one BM25 term
# per posting, summed per item.
_BEST_WORDS = """
  SELECT item_id, sum(idf * tf / (tf + %(c1)s + %(c2)s * terms)) AS score FROM (
    SELECT w.idf, unnest(p.items) AS item_id, unnest(p.own) + %(weight)s * unnest(p.context) AS tf,
           unnest(p.terms) AS terms
    FROM unnest(%(token)s::text[], %(idf)s::float8[]) AS w(term, idf)
    JOIN fulltext_postings p ON p.user_id = %(user)s AND p.kind = %(kind)s AND p.term = w.term) postings
  {active} GROUP BY item_id ORDER BY score DESC, item_id LIMIT %(limit)s"""

# The same when a group has several tokens (a phrase): an item matches a group when it holds all of its tokens side
# by side (checked on its `tsvector`); the group's counts are those of its rarest token, its IDF from how many items
# match it.
_BEST_PHRASES = """
  WITH q AS (SELECT * FROM unnest(%(group)s::int[], %(token)s::text[]) AS q(grp, term)),
  postings AS (
    SELECT q.grp, unnest(p.items) AS item_id, unnest(p.own) AS own, unnest(p.context) AS context,
           unnest(p.terms) AS terms
    FROM q JOIN fulltext_postings p ON p.user_id = %(user)s AND p.kind = %(kind)s AND p.term = q.term),
  hits AS (
    SELECT item_id, grp, min(own) AS own, min(context) AS context, max(terms) AS terms FROM postings
    GROUP BY item_id, grp HAVING count(*) = (%(need)s::int[])[grp + 1]),
  phrases AS (
    SELECT at - 1 AS grp, phraseto_tsquery('{configuration}', coop_fts_text(word)) AS query
    FROM unnest(%(text)s::text[]) WITH ORDINALITY AS t(word, at)),
  matched AS (
    SELECT h.item_id, h.grp, h.terms, h.own + %(weight)s * h.context AS tf FROM hits h
    WHERE (%(need)s::int[])[h.grp + 1] = 1 OR EXISTS (
      SELECT 1 FROM fulltext_items i JOIN phrases ph ON ph.grp = h.grp
      WHERE i.kind = %(kind)s AND i.item_id = h.item_id AND i.words @@ ph.query)),
  scored AS (SELECT *, count(*) OVER (PARTITION BY grp) AS n FROM matched)
  SELECT item_id, sum(greatest(ln((greatest(%(docs)s - n, 0) + 0.5) / (n + 0.5)), 1e-6) * %(k)s
                      * tf / (tf + %(c1)s + %(c2)s * terms)) AS score
  FROM scored {active} GROUP BY item_id ORDER BY score DESC, item_id LIMIT %(limit)s"""


def findings(db: PgDatabase) -> list[Finding]:
    """For `coop check`: the full-text index against the tables (every item indexed once, by its write), and
    whether the database's locale reads letters beyond ASCII (a database made with LC_CTYPE C does not: such
    words are not lower-cased and Unicode punctuation sticks to them)."""
    missing = 0
    for kind in KINDS:
        table = REGISTRY[kind].table
        missing += int(db.run(f"SELECT (SELECT count(*) FROM {table}) - "
                              "(SELECT count(*) FROM fulltext_items WHERE kind = %s)", (kind,))[0][0] != 0)
    indexed = int(db.run("SELECT count(*) FROM fulltext_items")[0][0])
    found = [Finding("full text", "ok", f"{indexed:,} items indexed, each by its own write") if not missing else
             Finding("full text", "warning", "the full-text index is out of step with the stored items",
                     "run `coop memory reindex`")]
    reads = db.run(f"SELECT array_length(tsvector_to_array(to_tsvector('{CONFIGURATION}', "
                   "coop_fts_text('Ωmega—Ärger'))), 1) = 2 AND lower('Ω') = 'ω'")[0][0]
    if not reads:
        found.append(Finding("full-text locale", "warning", "the database's LC_CTYPE does not read letters beyond "
                             "ASCII: such words are not lower-cased, and punctuation beyond ASCII is read as part "
                             "of a word", "make coop's database with a UTF-8 locale (LC_CTYPE C.UTF-8), "
                             "then `coop memory migrate` into it"))
    return found
