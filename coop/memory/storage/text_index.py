"""The SQLite text index: FTS5 over one user's messages, facts and summaries, behind `interface.TextIndex`.

Retrieval hands it a query already split into phrases and word terms (`retrieval/terms.py`) and gets back
`(kind, id, relevance)`, best first, relevance in BM25 units and higher for better matches. What is FTS5's own
stays here: the MATCH syntax (every phrase double-quoted, so user text is never FTS syntax), `bm25()` (smaller
for better: negated at this boundary), its porter tokenizer and `fts5vocab` counts for the postings budget
(`affordable_terms`), the over-fetch that filters one user's messages out of an index shared by all users
(`_message_matches`), and the length re-weighting that undoes FTS5's fixed b = 0.75 (`lengths.py`): the leg
reads `POOL_FACTOR` times as many of FTS5's matches as it keeps, re-weights, and cuts after.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import apsw

from coop.memory.kinds import MESSAGE, REGISTRY, active_fact
from coop.memory.storage import fulltext
from coop.memory.storage.lengths import with_message_lengths

if TYPE_CHECKING:
    from coop.memory.storage.connection import Database
    from coop.memory.storage.scope import Scope

# Most postings (term, message) the message full-text leg reads for one query; see `affordable_terms`.
POSTINGS_BUDGET = 12_000
# How many of FTS5's own best matches are read for each candidate kept. FTS5 ranks with BM25's strong length
# normalisation, which `lengths.py` weakens, so the cut is made after re-weighting: in a large memory, a long
# message that answers can sit at FTS5's rank 600 behind hundreds of one-liners and still be among the 400 best
# once lengths are weighed fairly. Reading the extra matches costs little (FTS5 scores every match before it
# sorts anyway; the extra cost is joining them to their rows for user and length: 12-13 ms instead of 8-10 for
# the leg at 100,000 messages), and only the candidates kept get an exact cosine.
POOL_FACTOR = 2.5
# Below a few hundred rows BM25 says little (FTS5 gives a word found in half the rows an IDF of ~0): no
# rare-word score there, so no BM25 floor applies (the cosine floor still does).
MIN_ROWS_FOR_BM25_FLOOR = 200


def within_budget(terms: list[str], cost: dict[str, int], budget: int) -> list[str]:
    """`terms` (in their order) without the most costly ones once the rest would pass `budget` postings; the
    cheapest (rarest) term is always kept. Both backends' `affordable_terms` choose with it."""
    if sum(cost.values()) <= budget:
        return terms
    kept: list[str] = []
    spent = 0
    for term in sorted(terms, key=lambda t: cost[t]):
        if kept and spent + cost[term] > budget:
            break
        kept.append(term)
        spent += cost[term]
    return [term for term in terms if term in kept]


def match_expression(phrases: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression: the phrases quoted (quotes inside doubled) and OR-ed together; None for none.
    `"`, `*`, `-`, `:`, `(`, AND and NEAR inside a phrase are just text."""
    if not phrases:
        return None
    return " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)


class SqliteTextIndex:
    """FTS5 full text over one user's items (`UserMemory.text` on SQLite)."""

    def __init__(self, scope: "Scope[Database]") -> None:
        self.scope = scope

    def matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                include_inactive: bool = False, context_weight: float = 1.0) -> list[tuple[str, int, float]]:
        """The best `limit` matches over `kinds` as (kind, id, relevance), best first; messages ranked with the
        weaker length normalisation of `lengths.py` among `POOL_FACTOR` times as many of FTS5's matches."""
        lengths: dict[int, int] = {}
        raw = self.fts5_matches(phrases, terms, kinds=kinds, limit=round(limit * POOL_FACTOR),
                                include_inactive=include_inactive, context_weight=context_weight, lengths=lengths)
        return [(kind, item_id, -bm25)
                for kind, item_id, bm25 in with_message_lengths(self.scope, raw, lengths=lengths)[:limit]]

    def fts5_matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                     include_inactive: bool = False, context_weight: float = 1.0,
                     lengths: dict[int, int] | None = None) -> list[tuple[str, int, float]]:
        """(kind, id, bm25) as FTS5 ranks them (bm25 negative, best = lowest first). A message's neighbours'
        words count `context_weight` of its own. `lengths`, when given, receives each matched message's length
        in characters, read with it."""
        match = match_expression([*phrases, *terms])
        if match is None:
            return []
        db, user_id = self.scope.db, self.scope.user_id
        found: list[tuple[str, int, float]] = []
        for kind in kinds:
            if kind == "message":
                matches = self._message_matches(match_expression([*phrases, *self.affordable_terms(terms)]),
                                                context_weight, limit)
                found += [("message", item_id, bm25) for item_id, bm25, _ in matches]
                if lengths is not None:
                    lengths.update((item_id, length) for item_id, _, length in matches)
                continue
            if kind == "fact":
                active = "" if include_inactive else f"AND {active_fact('f')}"
                sql = ("SELECT f.id, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid "
                       f"WHERE facts_fts MATCH ? AND f.user_id = ? {active} ORDER BY s LIMIT ?")
            else:
                sql = ("SELECT s.id, bm25(summaries_fts) AS s FROM summaries_fts JOIN summaries s "
                       "ON s.id = summaries_fts.rowid WHERE summaries_fts MATCH ? AND s.user_id = ? ORDER BY 2 LIMIT ?")
            found += [(kind, row[0], row[1]) for row in db.execute(sql, (match, user_id, limit))]
        found.sort(key=lambda hit: hit[2])
        return found[:limit]

    def _message_matches(self, match: str | None, context_weight: float, limit: int) -> list[tuple[int, float, int]]:
        """The user's best `limit` messages for `match` as (id, bm25, length in characters), best first.

        The index holds every user's messages, so the user filter needs a join. Joining every match before
        sorting costs a lookup per match; instead the best `2 * limit + 100` matches of all users are taken first
        and then filtered (in a database of one user, the usual case, the best `limit`: they are all the user's).
        When at least `limit` of them are this user's, they are exactly the user's best `limit` (any of the
        user's messages outside that set scores below all of them); otherwise (others' messages crowd the top:
        the user holds less than about half of what matches) the query runs again with the join before the cut,
        so nothing of this user's ever goes missing. `CROSS JOIN` and `+user_id` hold the planner to a lookup by
        id per match: left to itself it read every message of the user through `messages_user_importance`
        (100,000 of them, 10 ms)."""
        if match is None:
            return []
        db, user_id = self.scope.db, self.scope.user_id
        weight = float(context_weight)
        overfetch = limit if db.scalar("SELECT count(*) FROM users") <= 1 else 2 * limit + 100
        rows = list(db.execute(
            "SELECT f.id, f.s, length(m.content) FROM (SELECT rowid AS id, bm25(message_context_fts, 1.0, ?) AS s "
            "FROM message_context_fts WHERE message_context_fts MATCH ? ORDER BY s LIMIT ?) f "
            "CROSS JOIN messages m ON m.id = f.id WHERE +m.user_id = ? ORDER BY f.s",
            (weight, match, overfetch, user_id)))
        if len(rows) < limit and db.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM message_context_fts WHERE message_context_fts MATCH ? LIMIT ?)",
                (match, overfetch)) >= overfetch:
            rows = list(db.execute(
                "SELECT m.id, bm25(message_context_fts, 1.0, ?) AS s, length(m.content) FROM message_context_fts "
                "JOIN messages m ON m.id = message_context_fts.rowid "
                "WHERE message_context_fts MATCH ? AND +m.user_id = ? ORDER BY s LIMIT ?",
                (weight, match, user_id, limit)))
        return [(row[0], row[1], row[2]) for row in rows[:limit]]

    def affordable_terms(self, terms: Sequence[str], budget: int | None = None) -> list[str]:
        """The query's word terms, without its most common ones when matching them all would read more than
        `budget` postings of the message index.

        FTS5 scores every message that holds any query term before it can sort, so one common word ("years",
        "friend", a month name, which every message of that month holds in its context) makes a query over a
        large memory slow. A term held by many messages also weighs little in BM25 (its IDF is small), so the
        most common terms are dropped first until the rest fit the budget; the rarest term is always kept. Small
        memories (up to tens of thousands of messages) stay under the budget and are searched with every term.
        Counts come from `message_context_vocab` (all users together: they bound the work, which is over the
        whole index)."""
        budget = POSTINGS_BUDGET if budget is None else budget
        terms = list(terms)
        if len(terms) <= 1:
            return terms
        db = self.scope.db
        tokenizer = db.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
        stems: dict[str, list[str]] = {}
        for term in terms:
            # Each token is (start, end, text, *colocated): offsets and colocated tokens are on by default.
            stems[term] = [token[2] for token in tokenizer(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
                           if isinstance(token, tuple) and len(token) > 2]
        wanted = sorted({stem for each in stems.values() for stem in each})
        if not wanted:
            return terms
        counts = dict(db.execute(f"SELECT term, doc FROM message_context_vocab WHERE term IN "
                                 f"({','.join('?' * len(wanted))})", wanted))
        return within_budget(terms, {term: sum(counts.get(stem, 0) for stem in each)
                                     for term, each in stems.items()}, budget)

    def purge(self, kind: str) -> None:
        """After a forget of an item of `kind`: merge its index and the message index (a message's words also
        sit in the context column of the two after it), so no posting of the text lingers in an old segment."""
        fulltext.purge(self.scope.db, sorted({REGISTRY[kind].fulltext, MESSAGE.fulltext}))

    def rare_word_score(self, kind: str) -> float:
        """About the relevance one match of a word found in a single row of `kind` gets: its IDF,
        ln(N / 1.5 + 1) for N rows in that kind's index (the largest id stands in for N: one index lookup, not a
        count); 0 below `MIN_ROWS_FOR_BM25_FLOOR` rows. BM25 grows with the index, so a floor in these units
        means the same for a new memory and a large one."""
        rows = self.scope.db.scalar(f"SELECT max(id) FROM {REGISTRY[kind].table}") or 1
        return math.log(rows / 1.5 + 1.0) if rows >= MIN_ROWS_FOR_BM25_FLOOR else 0.0
