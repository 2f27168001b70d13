"""The Postgres text index: the same BM25 as SQLite's FTS5, over postings coop keeps itself.

Postgres's own ranking (`ts_rank_cd`) has no inverse document frequency: a word in every message counts as much as a
name found once, and no BM25 extension can be installed on a plain server. So the index is FTS5's, rebuilt in tables
(`migrations/m001_initial_postgres.py`): each item's text goes through the very tokenizer the SQLite index uses
(FTS5's porter over unicode61 with diacritics removed, run by apsw in memory), and its terms are stored with their
counts (a message's own words and, apart, its context: the two messages before it and its date, as `fulltext.py`
builds them). A query is scored in SQL with FTS5's formula (`bm25()`: k1 = 1.2, b = 0.75, IDF ln((N - n + 0.5) / (n
+ 0.5)) floored at 1e-6, the context's counts weighted by `context_weight`), over the user's own rows (N, n and the
average length are the user's), and then goes through the same length re-weighting (`lengths.py`) and cut as
SQLite's leg. A phrase of several tokens (two characters of an unspaced script) matches a row holding all of its
tokens; FTS5 also wants them adjacent.

Indexing is lazy: a write queues the item (`fulltext_pending`, by trigger) and a search of that user first
indexes what is queued (a turn's two messages: about a millisecond), so the write path does not tokenize and
many clients can write at once.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from coop.memory.kinds import REGISTRY, active_fact
from coop.memory.storage import text_index as shared
from coop.memory.storage.fulltext import CONTEXT_CHARS, CONTEXT_MESSAGES
from coop.memory.storage.lengths import FTS5_B, FTS5_K1, with_message_lengths
from coop.memory.text import fts_text

if TYPE_CHECKING:
    from coop.memory.storage.postgres.connection import PgDatabase
    from coop.memory.storage.postgres.store import PgUserMemory

INDEX_BATCH = 2000  # queued items indexed per statement batch
_local = threading.local()


def tokens(text: str | None) -> list[str]:
    """The terms FTS5's porter tokenizer (unicode61, diacritics removed) makes of `text`, as SQLite indexes it."""
    if not text:
        return []
    tokenizer = getattr(_local, "tokenizer", None)
    if tokenizer is None:
        import apsw

        _local.connection = apsw.Connection(":memory:")
        tokenizer = _local.connection.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        _local.tokenizer = tokenizer
        _local.query_flag = apsw.FTS5_TOKENIZE_DOCUMENT
    found = tokenizer(fts_text(text).encode("utf-8", "surrogatepass"), _local.query_flag, None)
    return [token[2] for token in found if isinstance(token, tuple) and len(token) > 2]


def date_words(created_at: float) -> str:
    """"Monday 8 May 2023" for a message written then (local time), as `fulltext.message_context_sql` says it."""
    when = datetime.fromtimestamp(created_at)
    return f"{when.strftime('%A')} {when.day} {when.strftime('%B')} {when.year}"


class PgTextIndex:
    """BM25 full text over one user's items (`PgUserMemory.text`)."""

    def __init__(self, scope: "PgUserMemory") -> None:
        self.scope = scope
        self._counts: dict[str, dict[str, int]] | None = None  # within `matches`: the terms' counts, read once

    @property
    def db(self) -> "PgDatabase":
        return cast("PgDatabase", self.scope.db)

    # -- upkeep ---------------------------------------------------------------------------------------------
    def catch_up(self, limit: int | None = None) -> int:
        """Index what this user's writes queued; returns how many items were indexed."""
        if not self.db.run("SELECT 1 FROM fulltext_pending WHERE user_id = %s LIMIT 1", (self.scope.user_id,)):
            return 0  # the usual case at a search: one cheap look, no transaction
        done = 0
        while limit is None or done < limit:
            count = self._index_batch(INDEX_BATCH if limit is None else min(INDEX_BATCH, limit - done))
            done += count
            if count == 0:
                break
        return done

    def _index_batch(self, size: int) -> int:
        db, user_id = self.db, self.scope.user_id
        with db.atomic():
            queued = db.run("DELETE FROM fulltext_pending WHERE ctid IN (SELECT ctid FROM fulltext_pending "
                            "WHERE user_id = %s ORDER BY kind, item_id LIMIT %s FOR UPDATE SKIP LOCKED) "
                            "RETURNING kind, item_id", (user_id, size))
            if not queued:
                return 0
            by_kind: dict[str, list[int]] = {}
            for kind, item_id in queued:
                by_kind.setdefault(kind, []).append(int(item_id))
            postings: list[tuple[Any, ...]] = []
            docs: list[tuple[Any, ...]] = []
            for kind, ids in by_kind.items():
                self._drop(kind, ids)
                for item_id, own, context in self._texts(kind, ids):
                    counted = Counter(own)
                    around = Counter(context)
                    length = len(own) + len(context)
                    docs.append((kind, item_id, user_id, length))
                    postings += [(user_id, kind, term, item_id, counted.get(term, 0), around.get(term, 0), length)
                                 for term in counted.keys() | around.keys()]
            if docs:
                # arrays unnested in one statement each: COPY is refused under row-level security
                db.run("INSERT INTO fulltext_docs (kind, item_id, user_id, terms) SELECT * FROM "
                       "unnest(%s::text[], %s::bigint[], %s::text[], %s::int[])", [list(c) for c in zip(*docs)])
                if postings:
                    db.run("INSERT INTO fulltext_postings (user_id, kind, term, item_id, own, context, terms) "
                           "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::real[], "
                           "%s::real[], %s::int[])", [list(c) for c in zip(*postings)])
                totals: dict[str, list[int]] = {}
                for kind, _, _, length in docs:
                    totals.setdefault(kind, [0, 0])
                    totals[kind][0] += 1
                    totals[kind][1] += length
                for kind, (count, length) in totals.items():
                    db.run("INSERT INTO fulltext_stats (user_id, kind, docs, terms) VALUES (%s, %s, %s, %s) "
                           "ON CONFLICT (user_id, kind) DO UPDATE SET docs = fulltext_stats.docs + EXCLUDED.docs, "
                           "terms = fulltext_stats.terms + EXCLUDED.terms", (user_id, kind, count, length))
            return len(queued)

    def _drop(self, kind: str, ids: list[int]) -> None:
        """Remove these items' postings and their share of the totals (before they are indexed again)."""
        db, user_id = self.db, self.scope.user_id
        gone = db.run("DELETE FROM fulltext_docs WHERE kind = %s AND item_id = ANY(%s) RETURNING terms",
                      (kind, ids))
        if gone:
            db.run("UPDATE fulltext_stats SET docs = docs - %s, terms = terms - %s WHERE user_id = %s AND kind = %s",
                   (len(gone), sum(int(row[0]) for row in gone), user_id, kind))
            db.run("DELETE FROM fulltext_postings WHERE kind = %s AND item_id = ANY(%s)", (kind, ids))

    def _texts(self, kind: str, ids: list[int]) -> list[tuple[int, list[str], list[str]]]:
        """(id, own terms, context terms) of the items of `kind` that still exist."""
        db, user_id = self.db, self.scope.user_id
        if kind == "fact":
            rows = db.run("SELECT id, key, value FROM facts WHERE user_id = %s AND id = ANY(%s)", (user_id, ids))
            return [(int(r[0]), tokens(r[1]) + tokens(r[2]), []) for r in rows]
        if kind == "summary":
            rows = db.run("SELECT id, text FROM summaries WHERE user_id = %s AND id = ANY(%s)", (user_id, ids))
            return [(int(r[0]), tokens(r[1]), []) for r in rows]
        rows = db.run(
            "SELECT m.id, m.content, m.created_at, ARRAY(SELECT substr(p.content, 1, %s) FROM messages p "
            "WHERE p.user_id = m.user_id AND p.session_id = m.session_id AND p.id < m.id "
            "ORDER BY p.id DESC LIMIT %s) FROM messages m WHERE m.user_id = %s AND m.id = ANY(%s)",
            (CONTEXT_CHARS, CONTEXT_MESSAGES, user_id, ids))
        return [(int(r[0]), tokens(r[1]), tokens(" ".join([*reversed(r[3] or []), date_words(float(r[2]))])))
                for r in rows]

    def rebuild(self) -> int:
        """Queue every item of this user again and index them all; returns how many were indexed."""
        db, user_id = self.db, self.scope.user_id
        with db.atomic():
            for kind, spec in REGISTRY.items():
                db.run(f"INSERT INTO fulltext_pending (user_id, kind, item_id) SELECT user_id, %s, id "
                       f"FROM {spec.table} WHERE user_id = %s ON CONFLICT DO NOTHING", (kind, user_id))
        return self.catch_up()

    def purge(self, kind: str) -> None:
        """Nothing to merge: a forgotten item's postings were deleted with it (by trigger); VACUUM, run after a
        forget (`PgDatabase.checkpoint`), removes their dead row versions."""

    # -- reads ----------------------------------------------------------------------------------------------
    def matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                include_inactive: bool = False, context_weight: float = 1.0) -> list[tuple[str, int, float]]:
        """The best `limit` matches over `kinds` as (kind, id, relevance), best first: BM25 as FTS5 computes it,
        messages then re-weighted for length as SQLite's leg does (`lengths.py`)."""
        self.catch_up()
        self._counts = {}
        try:
            return self._matches(phrases, terms, kinds=kinds, limit=limit, include_inactive=include_inactive,
                                 context_weight=context_weight)
        finally:
            self._counts = None

    def _matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                 include_inactive: bool, context_weight: float) -> list[tuple[str, int, float]]:
        pool = round(limit * shared.POOL_FACTOR)
        lengths: dict[int, int] = {}
        found: list[tuple[str, int, float]] = []
        for kind in kinds:
            groups = [tokens(p) for p in phrases]
            words = list(terms) if kind != "message" else self.affordable_terms(terms)
            groups += [tokens(t) for t in words]
            groups = [g for g in groups if g]
            if not groups:
                continue
            for item_id, score, length in self._scored(kind, groups, pool, include_inactive, context_weight):
                found.append((kind, item_id, -score))
                if length is not None:
                    lengths[item_id] = length
        found.sort(key=lambda hit: hit[2])
        found = found[:pool]
        return [(kind, item_id, -bm25)
                for kind, item_id, bm25 in with_message_lengths(self.scope, found, lengths=lengths)[:limit]]

    def _scored(self, kind: str, groups: list[list[str]], limit: int, include_inactive: bool,
                context_weight: float) -> list[tuple[int, float, int | None]]:
        db, user_id = self.db, self.scope.user_id
        stats = db.run("SELECT docs, terms FROM fulltext_stats WHERE user_id = %s AND kind = %s", (user_id, kind))
        if not stats or not stats[0][0]:
            return []
        docs, total = int(stats[0][0]), int(stats[0][1])
        average = max(total / docs, 1e-9)
        phrase_of, token_of = [], []
        for index, group in enumerate(groups):
            for token in dict.fromkeys(group):
                phrase_of.append(index)
                token_of.append(token)
        if all(len(set(group)) == 1 for group in groups):
            return self._scored_words(kind, [group[0] for group in groups], docs, average, limit, include_inactive,
                                      context_weight)
        need = [len(set(group)) for group in groups]
        keep = ""
        if kind == "fact" and not include_inactive:
            keep = f"JOIN facts f ON f.id = s.item_id AND f.user_id = %(user)s AND {active_fact('f')}"
        length = "length(m.content)" if kind == "message" else "NULL"
        join_length = "JOIN messages m ON m.id = s.item_id" if kind == "message" else ""
        sql = f"""
            WITH q AS (SELECT * FROM unnest(%(phrase)s::int[], %(token)s::text[]) AS q(phrase, token)),
            hits AS (
              SELECT p.item_id, q.phrase, min(p.own) AS own, min(p.context) AS context, max(p.terms) AS terms
              FROM fulltext_postings p JOIN q ON p.term = q.token
              WHERE p.user_id = %(user)s AND p.kind = %(kind)s
              GROUP BY p.item_id, q.phrase
              HAVING count(*) = (%(need)s::int[])[q.phrase + 1]),
            scored AS (
              SELECT item_id, terms, own + %(weight)s * context AS tf,
                     count(*) OVER (PARTITION BY phrase) AS n FROM hits),
            s AS (
              SELECT item_id, sum(greatest(ln((greatest(%(docs)s - n, 0) + 0.5) / (n + 0.5)), 1e-6)
                     * tf * {FTS5_K1 + 1} / (tf + {FTS5_K1} * (1 - {FTS5_B} + {FTS5_B} * terms / %(average)s)))
                     AS score
              FROM scored GROUP BY item_id)
            SELECT s.item_id, s.score, {length} FROM s {keep} {join_length}
            ORDER BY s.score DESC, s.item_id LIMIT %(limit)s"""
        rows = db.run(sql, {"phrase": phrase_of, "token": token_of, "user": user_id, "kind": kind, "need": need,
                            "weight": float(context_weight), "docs": float(docs), "average": average,
                            "limit": limit})
        return [(int(r[0]), float(r[1]), None if r[2] is None else int(r[2])) for r in rows]

    def _scored_words(self, kind: str, words: list[str], docs: int, average: float, limit: int,
                      include_inactive: bool, context_weight: float) -> list[tuple[int, float, int | None]]:
        """BM25 for a query of single-token phrases (nearly every query): the IDFs from the terms' counts, one
        pass over their postings that keeps the best `limit`, then the lengths of those alone."""
        db, user_id = self.db, self.scope.user_id
        counts = self._term_counts(kind, sorted(set(words)))
        # (a writer may add rows between the two reads: a term's count above `docs` is taken as `docs`)
        idf = [max(math.log((max(docs - counts.get(w, 0), 0) + 0.5) / (counts.get(w, 0) + 0.5)), 1e-6)
               for w in words]
        active = ""
        if kind == "fact" and not include_inactive:
            active = (f"AND p.item_id IN (SELECT f.id FROM facts f WHERE f.user_id = %(user)s "
                      f"AND {active_fact('f')})")
        tf = "(p.own + %(weight)s * p.context)"
        best = (f"SELECT p.item_id, sum(w.idf * {tf} * {FTS5_K1 + 1} / ({tf} + {FTS5_K1} * "
                f"(1 - {FTS5_B} + {FTS5_B} * p.terms / %(average)s))) AS score "
                "FROM fulltext_postings p JOIN unnest(%(token)s::text[], %(idf)s::float8[]) AS w(token, idf) "
                f"ON p.term = w.token WHERE p.user_id = %(user)s AND p.kind = %(kind)s {active} "
                "GROUP BY p.item_id ORDER BY score DESC, p.item_id LIMIT %(limit)s")
        if kind == "message":
            sql = (f"SELECT s.item_id, s.score, length(m.content) FROM ({best}) s JOIN messages m ON m.id = s.item_id "
                   "ORDER BY s.score DESC, s.item_id")
        else:
            sql = f"SELECT s.item_id, s.score, NULL FROM ({best}) s"
        rows = db.run(sql, {"token": words, "idf": idf, "user": user_id, "kind": kind, "weight": float(context_weight),
                            "average": average, "limit": limit})
        return [(int(r[0]), float(r[1]), None if r[2] is None else int(r[2])) for r in rows]

    def _term_counts(self, kind: str, stems: list[str], cap: int | None = None) -> dict[str, int]:
        """How many of the user's items of `kind` hold each stem (each counted no further than `cap`)."""
        if not stems:
            return {}
        memo = {} if self._counts is None else self._counts.setdefault(kind, {})
        if all(stem in memo for stem in stems):
            return {stem: memo[stem] for stem in stems}
        limit = "" if cap is None else "LIMIT %(cap)s"
        rows = self.db.run(
            f"SELECT t, (SELECT count(*) FROM (SELECT 1 FROM fulltext_postings WHERE user_id = %(user)s "
            f"AND kind = %(kind)s AND term = t {limit}) x) FROM unnest(%(stems)s::text[]) AS t",
            {"user": self.scope.user_id, "kind": kind, "stems": stems, "cap": cap})
        counts = {str(r[0]): int(r[1]) for r in rows}
        memo.update((stem, count) for stem, count in counts.items() if cap is None or count < cap)
        return counts

    def affordable_terms(self, terms: Sequence[str], budget: int | None = None) -> list[str]:
        """The query's word terms, without its most common ones when matching them all would read more than
        `budget` postings (as SQLite's leg: `text_index.SqliteTextIndex.affordable_terms`); counts are the
        user's, each read no further than the budget."""
        budget = shared.POSTINGS_BUDGET if budget is None else budget
        terms = list(terms)
        if len(terms) <= 1:
            return terms
        if self._counts is None:  # called on its own (within `matches` the queue was just indexed)
            self.catch_up()
        stems = {term: tokens(term) for term in terms}
        wanted = sorted({stem for each in stems.values() for stem in each})
        if not wanted:
            return terms
        counts = self._term_counts("message", wanted, cap=budget + 1)
        return shared.within_budget(terms, {term: sum(counts.get(stem, 0) for stem in each)
                                            for term, each in stems.items()}, budget)

    def rare_word_score(self, kind: str) -> float:
        """The relevance one match of a word found in a single row of `kind` gets (as SQLite's: ln(N / 1.5 + 1)
        for N rows, 0 below `text_index.MIN_ROWS_FOR_BM25_FLOOR`); N is the user's indexed rows of that kind."""
        rows = self.db.scalar("SELECT docs FROM fulltext_stats WHERE user_id = $1 AND kind = $2",
                                    (self.scope.user_id, kind)) or 1
        return math.log(rows / 1.5 + 1.0) if rows >= shared.MIN_ROWS_FOR_BM25_FLOOR else 0.0
