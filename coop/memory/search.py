"""Retrieval over one user's messages, facts and summaries: a vector leg and a full-text leg, fused by score.

- Vector leg: cosine similarity between the query and stored vectors of the loaded embedder; nothing below
  the similarity floor counts, so an unrelated memory is never retrieved just because it is the nearest one.
- Full-text leg: FTS5 over the same items. Every query token is quoted (user text can never be FTS syntax),
  common English function words are dropped when anything else is left, tokens are OR-ed so one shared rare
  word is enough, and BM25 orders them: SQLite's `bm25()` is *smaller* for better matches, so we sort
  ascending (the flaw of ranking it the wrong way round is one the seed systems had). Messages are matched in
  `message_context_fts` (migration m002): their own words, plus the words of the two messages before them in
  their session and the day they were written, weighed at `context_weight` (0.5) of their own. A reply is then
  found by the words of the question it answers. Only earlier messages are context, so an entry never changes
  when later messages arrive; forgetting a message re-indexes the two after it. In a large memory, a query's
  most common words are left out of the match when matching them all would read more than `POSTINGS_BUDGET`
  postings (`affordable_terms`): they weigh little in BM25 and cost the most.
- Fusion (`fusion = "score"`, the default): every candidate of either leg gets
  `bm25 / best bm25 of the query` (0..1; 0 when the words did not match) `+ vector_weight * cosine`, where the
  cosine is computed exactly for every candidate, including those only the full-text leg found. Unlike
  reciprocal ranks it keeps how *much* better one match is than the next, and lets meaning re-order the word
  matches. A candidate only the vector leg found must still clear the floor. `fusion = "rrf"` is reciprocal
  rank (score = sum of 1 / (rrf_k + rank)). On LoCoMo (bench/locomo.py) the context column and score fusion
  together lift R_any@5 from 0.60 to 0.75; see the README's Benchmarks section.

Vectors are made from a message's own text only (not its neighbours'), so embedding stays one model call per
message, and no vector has to be redone when a later message arrives or an earlier one is forgotten.

Filters (user, kind, active facts) are applied inside each leg's query, before its limit is cut (the message
leg takes an over-fetched best set of all users first and falls back to filtering first when that set holds too
few of this user's; see `_message_matches`).
`explain=True` keeps each leg's rank and raw score on every hit. The recency and salience legs of a chat
turn are `UserMemory.recent_messages` and `UserMemory.salient`; the chat turn combines them with this search.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import apsw

from coop.errors import UsageError
from coop.memory.db import UNSPACED_CHARS
from coop.memory.store import KINDS, Item, UserMemory, make_ref
from coop.memory.vectors import nearest, similarities

if TYPE_CHECKING:
    import numpy as np

    from coop.config import MemoryConfig
    from coop.memory.embed import Embedder

MAX_QUERY_CHARS = 20_000
MAX_QUERY_TERMS = 48
FUSIONS = ("score", "rrf")
# The defaults of `[memory]` (coop.config keeps the same values, with their help text): one place for the engine.
DEFAULT_FUSION = "score"
DEFAULT_VECTOR_WEIGHT = 1.0
DEFAULT_CONTEXT_WEIGHT = 0.5
# Most postings (term, message) the message full-text leg reads for one query; see `affordable_terms`.
POSTINGS_BUDGET = 12_000

STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on
once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves ever did does
""".split())

_TOKEN = re.compile(r"\w+", re.UNICODE)
UNSPACED_RUN = re.compile(f"[{UNSPACED_CHARS}]+")


@dataclass(frozen=True)
class LegScore:
    """An item's place in one leg: its rank (1 = best) and the leg's own score (cosine, or BM25 negated)."""

    rank: int
    score: float


@dataclass(frozen=True)
class Hit:
    item: Item
    score: float
    legs: dict[str, LegScore] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return self.item.ref

    @property
    def kind(self) -> str:
        return self.item.kind


@dataclass(frozen=True)
class SearchResult:
    hits: list[Hit]
    legs: dict[str, int]          # candidates each leg produced
    timings_ms: dict[str, float]  # time per stage
    vector_used: bool             # False when no embedder was available: full-text only


def query_terms(text: str) -> list[str]:
    """The word terms of a query (outside unspaced scripts): case-folded, function words dropped unless nothing
    else is left."""
    tokens = [t.casefold() for t in _TOKEN.findall(UNSPACED_RUN.sub(" ", text))]
    content = [t for t in tokens if t not in STOP_WORDS]
    return list(dict.fromkeys(content or tokens))[:MAX_QUERY_TERMS]


def unspaced_phrases(text: str) -> list[str]:
    """Runs of Chinese, Japanese, Thai... as phrases of their characters. A run of one or two characters is one
    phrase; a longer run (a whole clause, since these scripts have no spaces) becomes its overlapping bigrams,
    so a document sharing any two-character word with the query matches and BM25 ranks by how many it shares."""
    phrases: list[str] = []
    for run in UNSPACED_RUN.findall(text):
        if len(run) <= 2:
            phrases.append(" ".join(run))
        else:
            phrases += [f"{run[i]} {run[i + 1]}" for i in range(len(run) - 1)]
    return list(dict.fromkeys(phrases))[:MAX_QUERY_TERMS]


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for user text, safe whatever it contains; None when it has no word at all.
    Every term is double-quoted (quotes inside doubled), so `"`, `*`, `-`, `:`, `(`, AND, NEAR are just text."""
    return match_expression(unspaced_phrases(text) + query_terms(text))


def match_expression(phrases: Sequence[str]) -> str | None:
    """Quoted phrases OR-ed together; None for none."""
    if not phrases:
        return None
    return " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)


def affordable_terms(memory: UserMemory, terms: list[str], budget: int | None = None) -> list[str]:
    """The query's word terms, without its most common ones when matching them all would read more than `budget`
    postings of the message index.

    FTS5 scores every message that holds any query term before it can sort, so one common word ("years",
    "friend", a month name, which every message of that month holds in its context) makes a query over a large
    memory slow. A term held by many messages also weighs little in BM25 (its IDF is small), so the most common
    terms are dropped first until the rest fit the budget; the rarest term is always kept. Small memories (up to
    tens of thousands of messages) stay under the budget and are searched with every term. Counts come from
    `message_context_vocab` (all users together: they bound the work, which is over the whole index)."""
    budget = POSTINGS_BUDGET if budget is None else budget
    if len(terms) <= 1:
        return terms
    tokenizer = memory.db.conn.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
    stems: dict[str, list[str]] = {}
    for term in terms:
        stems[term] = [token[2] for token in tokenizer(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)]
    wanted = sorted({stem for each in stems.values() for stem in each})
    if not wanted:
        return terms
    counts = dict(memory.db.execute(f"SELECT term, doc FROM message_context_vocab WHERE term IN "
                                    f"({','.join('?' * len(wanted))})", wanted))
    cost = {term: sum(counts.get(stem, 0) for stem in each) for term, each in stems.items()}
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


def _check_query(query: str) -> str:
    if not isinstance(query, str):
        raise UsageError("the query must be text", hint="pass a search phrase")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the query is not valid UTF-8", hint="convert the input to UTF-8") from None
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is too long ({len(query):,} characters; the limit is {MAX_QUERY_CHARS:,})",
                         hint="search with a few words or sentences")
    return query.replace("\x00", " ")


def fts_leg(memory: UserMemory, query: str, *, kinds: Sequence[str] = KINDS, limit: int = 50,
            include_inactive: bool = False, context_weight: float = DEFAULT_CONTEXT_WEIGHT
            ) -> list[tuple[str, int, float]]:
    """(kind, id, bm25) for the best full-text matches of each kind, best (lowest bm25) first. A message's
    neighbours' words count `context_weight` of its own."""
    phrases, terms = unspaced_phrases(query), query_terms(query)
    match = match_expression(phrases + terms)
    if match is None:
        return []
    found: list[tuple[str, int, float]] = []
    for kind in kinds:
        params: tuple[object, ...] = (match, memory.user_id, limit)
        if kind == "message":
            found += _message_matches(memory, match_expression(phrases + affordable_terms(memory, terms)),
                                      context_weight, limit)
            continue
        if kind == "fact":
            active = "" if include_inactive else "AND f.superseded_at IS NULL AND f.archived_at IS NULL"
            sql = ("SELECT f.id, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid "
                   f"WHERE facts_fts MATCH ? AND f.user_id = ? {active} ORDER BY s LIMIT ?")
        else:
            sql = ("SELECT s.id, bm25(summaries_fts) AS s FROM summaries_fts JOIN summaries s "
                   "ON s.id = summaries_fts.rowid WHERE summaries_fts MATCH ? AND s.user_id = ? ORDER BY 2 LIMIT ?")
        found += [(kind, row[0], row[1]) for row in memory.db.execute(sql, params)]
    found.sort(key=lambda hit: hit[2])
    return found[:limit]


def _message_matches(memory: UserMemory, match: str | None, context_weight: float,
                     limit: int) -> list[tuple[str, int, float]]:
    """The user's best `limit` messages for `match`, best first.

    The index holds every user's messages, so the user filter needs a join. Joining every match before sorting
    costs a lookup per match; instead the best `4 * limit + 100` matches of all users are taken first and then
    filtered. When at least `limit` of them are this user's, they are exactly the user's best `limit` (any of
    the user's messages outside that set scores below all of them); otherwise (others' messages crowd the top)
    the query runs again with the join before the cut, so nothing of this user's ever goes missing."""
    if match is None:
        return []
    weight = float(context_weight)
    overfetch = 4 * limit + 100
    rows = list(memory.db.execute(
        "SELECT f.id, f.s FROM (SELECT rowid AS id, bm25(message_context_fts, 1.0, ?) AS s FROM message_context_fts "
        "WHERE message_context_fts MATCH ? ORDER BY s LIMIT ?) f JOIN messages m ON m.id = f.id "
        "WHERE m.user_id = ? ORDER BY f.s", (weight, match, overfetch, memory.user_id)))
    if len(rows) < limit and memory.db.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM message_context_fts WHERE message_context_fts MATCH ? LIMIT ?)",
            (match, overfetch)) >= overfetch:
        rows = list(memory.db.execute(
            "SELECT m.id, bm25(message_context_fts, 1.0, ?) AS s FROM message_context_fts "
            "JOIN messages m ON m.id = message_context_fts.rowid "
            "WHERE message_context_fts MATCH ? AND m.user_id = ? ORDER BY s LIMIT ?",
            (weight, match, memory.user_id, limit)))
    return [("message", row[0], row[1]) for row in rows[:limit]]


def vector_leg(memory: UserMemory, embedder: "Embedder", query: str, *, kinds: Sequence[str] = KINDS,
               limit: int = 50, floor: float | None = None, include_inactive: bool = False,
               vector: "np.ndarray | None" = None) -> list[tuple[str, int, float]]:
    """(kind, id, cosine) for the nearest items at or above `floor`, best first. `vector`: the query's vector,
    when the caller already has it."""
    if vector is None:
        vector = embedder.embed_query(query)
    hits = nearest(memory, embedder.id, embedder.dims, vector, k=limit, kinds=kinds, floor=floor,
                   include_inactive=include_inactive)
    return [(h.kind, h.item_id, h.similarity) for h in hits]


def rrf(legs: dict[str, list[tuple[str, int, float]]], k: int) -> dict[tuple[str, int], tuple[float, dict[str, LegScore]]]:
    """Reciprocal-rank fusion: each leg adds 1 / (k + rank) for every item it ranked."""
    fused: dict[tuple[str, int], tuple[float, dict[str, LegScore]]] = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            score, detail = fused.get((kind, item_id), (0.0, {}))
            detail = {**detail, leg: LegScore(rank, raw if leg != "fts" else -raw)}
            fused[(kind, item_id)] = (score + 1.0 / (k + rank), detail)
    return fused


def score_fusion(legs: dict[str, list[tuple[str, int, float]]], cosines: dict[tuple[str, int], float],
                 vector_weight: float) -> dict[tuple[str, int], tuple[float, dict[str, LegScore]]]:
    """Score-aware fusion: normalised BM25 (the query's best match = 1) plus `vector_weight` times the cosine.

    `cosines` holds the exact cosine of every candidate that has a vector (from either leg); a candidate
    without one (not embedded yet, or no embedder) is ranked on its words alone."""
    fts = legs.get("fts", [])
    best = max((-raw for _, _, raw in fts), default=0.0)
    scale = best if best > 0 else 1.0
    fused: dict[tuple[str, int], tuple[float, dict[str, LegScore]]] = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            _, detail = fused.get((kind, item_id), (0.0, {}))
            fused[(kind, item_id)] = (0.0, {**detail, leg: LegScore(rank, raw if leg != "fts" else -raw)})
    for key, (_, detail) in fused.items():
        words = detail["fts"].score / scale if "fts" in detail else 0.0
        fused[key] = (words + vector_weight * cosines.get(key, 0.0), detail)
    return fused


def retrieval_options(config: "MemoryConfig") -> dict[str, object]:
    """The keyword arguments of `search` that `[memory]` sets: what chat, `coop memory search` and the
    benchmarks pass, so all three retrieve alike."""
    return {"floor": config.similarity_floor, "rrf_k": config.rrf_k, "fusion": config.fusion,
            "vector_weight": config.vector_weight, "context_weight": config.context_weight}


def search(memory: UserMemory, query: str, *, embedder: "Embedder | None" = None, limit: int = 10,
           kinds: Sequence[str] = KINDS, floor: float | None = 0.655, rrf_k: int = 60,
           include_inactive: bool = False, candidates: int | None = None, fusion: str = DEFAULT_FUSION,
           vector_weight: float = DEFAULT_VECTOR_WEIGHT, context_weight: float = DEFAULT_CONTEXT_WEIGHT
           ) -> SearchResult:
    """The fused top `limit` items for `query`, over the kinds asked for. Without an embedder: full text only."""
    query = _check_query(query)
    for kind in kinds:
        if kind not in KINDS:
            raise UsageError(f"unknown kind {kind!r}", hint="use fact, message or summary")
    if fusion not in FUSIONS:
        raise UsageError(f"unknown fusion {fusion!r}", hint="use " + " or ".join(FUSIONS))
    per_leg = candidates or max(limit * 5, 50)
    timings: dict[str, float] = {}
    legs: dict[str, list[tuple[str, int, float]]] = {}
    if not query.strip():
        return SearchResult([], {}, {}, embedder is not None)
    started = time.perf_counter()
    vector = None
    if embedder is not None:
        vector = embedder.embed_query(query)
        timings["embed"] = (time.perf_counter() - started) * 1000
        mark = time.perf_counter()
        # The vector leg needs no more than `limit` of its own: deeper vector candidates would not make the top
        # `limit`, and every full-text candidate gets its exact cosine from `similarities` anyway.
        legs["vector"] = vector_leg(memory, embedder, query, kinds=kinds, limit=min(per_leg, max(limit, 10)),
                                    floor=floor, include_inactive=include_inactive, vector=vector)
        timings["vector"] = (time.perf_counter() - mark) * 1000
    mark = time.perf_counter()
    legs["fts"] = fts_leg(memory, query, kinds=kinds, limit=per_leg, include_inactive=include_inactive,
                          context_weight=context_weight)
    timings["fts"] = (time.perf_counter() - mark) * 1000
    mark = time.perf_counter()
    if fusion == "rrf":
        fused = rrf(legs, rrf_k)
    else:
        cosines: dict[tuple[str, int], float] = {}
        if embedder is not None and vector is not None:
            cosines = {(kind, item_id): cos for kind, item_id, cos in legs["vector"]}
            missing = [(kind, item_id) for kind, item_id, _ in legs["fts"] if (kind, item_id) not in cosines]
            cosines.update(similarities(memory, embedder.id, embedder.dims, vector, missing))
        fused = score_fusion(legs, cosines, vector_weight)
    ranked = sorted(fused.items(), key=lambda kv: kv[1][0], reverse=True)[:limit]
    by_kind: dict[str, list[int]] = {}
    for (kind, item_id), _ in ranked:
        by_kind.setdefault(kind, []).append(item_id)
    items = {(kind, item.item_id): item for kind, ids in by_kind.items()
             for item in memory.get_many(kind, ids).values()}
    hits = [Hit(items[key], score, detail) for key, (score, detail) in ranked if key in items]
    timings["fuse"] = (time.perf_counter() - mark) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(hits, {leg: len(found) for leg, found in legs.items()}, timings, embedder is not None)


def describe(hit: Hit) -> str:
    """A compact 'vector #2 0.71, fts #1 3.20' line for people."""
    parts = [f"{leg} #{score.rank} {score.score:.3f}" for leg, score in hit.legs.items()]
    return ", ".join(parts) if parts else "-"


__all__ = ["Hit", "LegScore", "SearchResult", "search", "fts_query", "query_terms", "describe", "make_ref",
           "retrieval_options", "score_fusion"]
