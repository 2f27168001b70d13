"""Retrieval over one user's messages, facts and summaries: a vector leg and a full-text leg, fused by score.

- Vector leg: cosine similarity between the query and stored vectors of the loaded embedder; nothing below
  the similarity floor counts, so an unrelated memory is never retrieved just because it is the nearest one.
- Full-text leg: FTS5 over the same items. Every query token is quoted (user text can never be FTS syntax),
  common English function words are dropped when anything else is left, tokens are OR-ed so one shared rare
  word is enough, and BM25 orders them: SQLite's `bm25()` is *smaller* for better matches, so we sort
  ascending (the flaw of ranking it the wrong way round is one the seed systems had). Messages are matched in
  `message_context_fts` (migration m002): their own words, plus the words of the two messages before them in
  their session and the day they were written, in a column of their own weighed at `context_weight` (1.0; the
  context column is longer, so BM25's length normalisation still puts a message's own match first). A reply is
  then found by the words of the question it answers (1.0 rather than 0.5: R_any@5 on `bench/scale.py` 0.792 ->
  0.801 at 0 and 0.697 -> 0.708 at 20,000 extra messages). Only earlier messages are context, so an entry never
  changes when later messages arrive; forgetting a message re-indexes the two after it. In a large memory, a query's
  most common words are left out of the match when matching them all would read more than `POSTINGS_BUDGET`
  postings (`affordable_terms`): they weigh little in BM25 and cost the most. Messages' scores are then
  re-weighted to a weaker length normalisation than FTS5's (`lengths.py`), and the leg keeps its best 400 after
  that (it reads 1,000 of FTS5's): a long message that answers is not buried under one-liners that share a word
  with the question.
- Fusion (`fusion = "score"`, the default): every candidate of either leg gets
  `bm25 / best bm25 of the query` (0..1; 0 when the words did not match) `+ vector_weight * cosine` `+
  agreement_weight * (bm25 / best) * cosine` (words and meaning together count more), where the
  cosine is computed exactly for every candidate, including those only the full-text leg found. Unlike
  reciprocal ranks it keeps how *much* better one match is than the next, and lets meaning re-order the word
  matches. A candidate only the vector leg found must still clear the floor. `fusion = "rrf"` is reciprocal
  rank (score = sum of 1 / (rrf_k + rank)). On LoCoMo (bench/locomo.py) the context column and score fusion
  together lift R_any@5 from 0.60 to 0.75; see the README's Benchmarks section.
- Passage evidence (score fusion, `passages.py`): a message gains from the nearer in meaning of the messages just
  before and after it (`neighbour_weight`) and from the other candidates of its session (`session_weight`): the
  answer sits in talk of the question's subject, a stray match among talk of other things.

Vectors are made from a message's own text only (not its neighbours'), so embedding stays one model call per
message, and no vector has to be redone when a later message arrives or an earlier one is forgotten.

Filters (user, kind, active facts) are applied inside each leg's query, before its limit is cut (the message
leg takes an over-fetched best set of all users first and falls back to filtering first when that set holds too
few of this user's; see `_message_matches`).
`explain=True` keeps each leg's rank and raw score on every hit. The recency and salience legs of a chat
turn are `UserMemory.recent_messages` and `UserMemory.salient`; the chat turn combines them with this search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coop.errors import ModelError, UsageError
from coop.memory.embedder import Embedder
from coop.memory.kinds import KINDS, REGISTRY, active_fact
from coop.memory.retrieval.lengths import with_message_lengths
from coop.memory.retrieval.passages import Scored, with_neighbour_evidence, with_session_evidence
from coop.memory.retrieval.settings import FUSIONS, RetrievalSettings
from coop.memory.retrieval.terms import affordable_terms, check_query, match_expression, query_terms, unspaced_phrases
from coop.memory.storage.items import Item
from coop.memory.storage.store import UserMemory
from coop.memory.storage.vectors import nearest, similarities

if TYPE_CHECKING:
    import numpy as np

_DEFAULTS = RetrievalSettings.defaults()
# Full-text candidates per query (at least): enough that a message matching a few of the question's words, not its
# rarest, is still among them when thousands of messages share some word with it (`bench/scale.py`: at 100,000
# extra messages per user, 400 instead of 200 lifts R_any@10 from 0.603 to 0.629).
FULL_TEXT_CANDIDATES = 400
# How many of FTS5's own best matches are read for each candidate kept. FTS5 ranks with BM25's strong length
# normalisation, which `lengths.py` weakens, so the cut is made after re-weighting: in a large memory, a long
# message that answers can sit at FTS5's rank 600 behind hundreds of one-liners and still be among the 400 best
# once lengths are weighed fairly. Reading the extra matches costs little (FTS5 scores every match before it
# sorts anyway; the extra cost is joining them to their rows for user and length: 12-13 ms instead of 8-10 for
# the leg at 100,000 messages), and only the 400 kept get an exact cosine.
FULL_TEXT_POOL_FACTOR = 2.5


@dataclass(frozen=True)
class LegScore:
    """An item's place in one leg: its rank (1 = best) and the leg's own score (cosine, or BM25 negated)."""

    rank: int
    score: float


# Candidates after fusion: (kind, id) -> (score, the legs that found it).
Fused = Scored[dict[str, LegScore]]


@dataclass(frozen=True)
class Hit:
    item: Item
    score: float
    legs: dict[str, LegScore] = field(default_factory=dict)
    cosine: float | None = None  # the exact cosine with the query, whichever leg found it (None: no vector)

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


def fts_leg(memory: UserMemory, query: str, *, kinds: Sequence[str] = KINDS, limit: int = 50,
            include_inactive: bool = False, context_weight: float = _DEFAULTS.context_weight,
            lengths: dict[int, int] | None = None) -> list[tuple[str, int, float]]:
    """(kind, id, bm25) for the best full-text matches of each kind, best (lowest bm25) first. A message's
    neighbours' words count `context_weight` of its own. `lengths`, when given, receives each matched message's
    length in characters, read with it (the length re-weighting then needs no second lookup)."""
    phrases, terms = unspaced_phrases(query), query_terms(query)
    match = match_expression(phrases + terms)
    if match is None:
        return []
    found: list[tuple[str, int, float]] = []
    for kind in kinds:
        params: tuple[object, ...] = (match, memory.user_id, limit)
        if kind == "message":
            matches = _message_matches(memory, match_expression(phrases + affordable_terms(memory, terms)),
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
        found += [(kind, row[0], row[1]) for row in memory.db.execute(sql, params)]
    found.sort(key=lambda hit: hit[2])
    return found[:limit]


def _message_matches(memory: UserMemory, match: str | None, context_weight: float,
                     limit: int) -> list[tuple[int, float, int]]:
    """The user's best `limit` messages for `match` as (id, bm25, length in characters), best first.

    The index holds every user's messages, so the user filter needs a join. Joining every match before sorting
    costs a lookup per match; instead the best `2 * limit + 100` matches of all users are taken first and then
    filtered (in a database of one user, the usual case, the best `limit`: they are all the user's). When at
    least `limit` of them are this user's, they are exactly the user's best `limit` (any of the user's messages
    outside that set scores below all of them); otherwise (others' messages crowd the top: the user holds less
    than about half of what matches) the query runs again with the join before the cut, so nothing of this
    user's ever goes missing. `CROSS JOIN` and `+user_id` hold the planner to a lookup by id per match: left to
    itself it read every message of the user through `messages_user_importance` (100,000 of them, 10 ms)."""
    if match is None:
        return []
    weight = float(context_weight)
    overfetch = limit if memory.db.scalar("SELECT count(*) FROM users") <= 1 else 2 * limit + 100
    rows = list(memory.db.execute(
        "SELECT f.id, f.s, length(m.content) FROM (SELECT rowid AS id, bm25(message_context_fts, 1.0, ?) AS s "
        "FROM message_context_fts WHERE message_context_fts MATCH ? ORDER BY s LIMIT ?) f "
        "CROSS JOIN messages m ON m.id = f.id WHERE +m.user_id = ? ORDER BY f.s",
        (weight, match, overfetch, memory.user_id)))
    if len(rows) < limit and memory.db.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM message_context_fts WHERE message_context_fts MATCH ? LIMIT ?)",
            (match, overfetch)) >= overfetch:
        rows = list(memory.db.execute(
            "SELECT m.id, bm25(message_context_fts, 1.0, ?) AS s, length(m.content) FROM message_context_fts "
            "JOIN messages m ON m.id = message_context_fts.rowid "
            "WHERE message_context_fts MATCH ? AND +m.user_id = ? ORDER BY s LIMIT ?",
            (weight, match, memory.user_id, limit)))
    return [(row[0], row[1], row[2]) for row in rows[:limit]]


def vector_leg(memory: UserMemory, embedder: Embedder, query: str, *, kinds: Sequence[str] = KINDS,
               limit: int = 50, floor: float | None = None, include_inactive: bool = False,
               vector: "np.ndarray | None" = None) -> list[tuple[str, int, float]]:
    """(kind, id, cosine) for the nearest items at or above `floor`, best first. `vector`: the query's vector,
    when the caller already has it."""
    if vector is None:
        vector = embedder.embed_query(query)
    hits = nearest(memory, embedder.id, embedder.dims, vector, k=limit, kinds=kinds, floor=floor,
                   include_inactive=include_inactive)
    return [(h.kind, h.item_id, h.similarity) for h in hits]


def rrf(legs: dict[str, list[tuple[str, int, float]]], k: int) -> Fused:
    """Reciprocal-rank fusion: each leg adds 1 / (k + rank) for every item it ranked."""
    fused: Fused = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            score, detail = fused.get((kind, item_id), (0.0, {}))
            detail = {**detail, leg: LegScore(rank, raw if leg != "fts" else -raw)}
            fused[(kind, item_id)] = (score + 1.0 / (k + rank), detail)
    return fused


def score_fusion(legs: dict[str, list[tuple[str, int, float]]], cosines: dict[tuple[str, int], float],
                 vector_weight: float, agreement_weight: float = 0.0) -> Fused:
    """Score-aware fusion: normalised BM25 (the query's best match = 1) plus `vector_weight` times the cosine,
    plus `agreement_weight` times their product (a negative cosine counts 0).

    The product rewards agreement: among thousands of messages, many match a question's words without its
    meaning (a quotation sharing a word) or its meaning without its words (talk of the same subject), and the
    answer is usually the one that does both moderately well. A sum ranks a strong match on one leg alone
    above it; the product does not. On LoCoMo with 20,000 extra messages per user (`bench/scale.py`) it lifts
    R_any@10 from 0.775 to 0.782, at 100,000 from 0.629 to 0.639, and at 0 changes it by +0.002.

    `cosines` holds the exact cosine of every candidate that has a vector (from either leg); a candidate
    without one (not embedded yet, or no embedder) is ranked on its words alone."""
    fts = legs.get("fts", [])
    best = max((-raw for _, _, raw in fts), default=0.0)
    scale = best if best > 0 else 1.0
    fused: Fused = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            _, detail = fused.get((kind, item_id), (0.0, {}))
            fused[(kind, item_id)] = (0.0, {**detail, leg: LegScore(rank, raw if leg != "fts" else -raw)})
    for key, (_, detail) in fused.items():
        words = detail["fts"].score / scale if "fts" in detail else 0.0
        cosine = cosines.get(key, 0.0)
        fused[key] = (words + vector_weight * cosine + agreement_weight * words * max(cosine, 0.0), detail)
    return fused


def search(memory: UserMemory, query: str, *, embedder: Embedder | None = None, limit: int = 10,
           kinds: Sequence[str] = KINDS, settings: RetrievalSettings | None = None, include_inactive: bool = False,
           candidates: int | None = None) -> SearchResult:
    """The fused top `limit` items for `query`, over the kinds asked for. Without an embedder: full text only."""
    settings = settings or _DEFAULTS
    query = check_query(query)
    for kind in kinds:
        if kind not in KINDS:
            raise UsageError(f"unknown kind {kind!r}", hint="use fact, message or summary")
    if settings.fusion not in FUSIONS:
        raise UsageError(f"unknown fusion {settings.fusion!r}", hint="use " + " or ".join(FUSIONS))
    per_leg = candidates or max(limit * 10, FULL_TEXT_CANDIDATES)
    timings: dict[str, float] = {}
    legs: dict[str, list[tuple[str, int, float]]] = {}
    if not query.strip():
        return SearchResult([], {}, {}, embedder is not None)
    started = time.perf_counter()
    # Words first: a caller that started the query's embedding in the background (`recall.QueryOnce`) has it
    # made while SQLite reads the full-text matches.
    lengths: dict[int, int] = {}
    matches = fts_leg(memory, query, kinds=kinds, limit=round(per_leg * FULL_TEXT_POOL_FACTOR),
                      include_inactive=include_inactive, context_weight=settings.context_weight, lengths=lengths)
    words = with_message_lengths(memory, matches, lengths=lengths)[:per_leg]
    timings["fts"] = (time.perf_counter() - started) * 1000
    vector = None
    if embedder is not None:
        mark = time.perf_counter()
        vector = embedder.embed_query(query)
        timings["embed"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        # The vector leg needs no more than `limit` of its own: deeper vector candidates would not make the top
        # `limit`, and every full-text candidate gets its exact cosine from `similarities` anyway.
        legs["vector"] = vector_leg(memory, embedder, query, kinds=kinds, limit=min(per_leg, max(limit, 10)),
                                    floor=settings.floor, include_inactive=include_inactive, vector=vector)
        timings["vector"] = (time.perf_counter() - mark) * 1000
    legs["fts"] = words
    mark = time.perf_counter()
    cosines: dict[tuple[str, int], float] = {}
    if settings.fusion == "rrf":
        fused = rrf(legs, settings.rrf_k)
    else:
        if embedder is not None and vector is not None:
            cosines = {(kind, item_id): cos for kind, item_id, cos in legs["vector"]}
            missing = [(kind, item_id) for kind, item_id, _ in legs["fts"] if (kind, item_id) not in cosines]
            cosines.update(similarities(memory, embedder.id, embedder.dims, vector, missing))
        fused = score_fusion(legs, cosines, settings.vector_weight, settings.agreement_weight)
    rare_word = _rare_word_scores(memory, {kind for kind, _ in fused}) if settings.bm25_floor > 0 else {}
    fused = {key: value for key, value in fused.items()
             if "vector" in value[1] or _words_are_enough(value[1], cosines.get(key), settings,
                                                         rare_word.get(key[0], 0.0))}
    if settings.fusion == "score" and settings.neighbour_weight > 0 and embedder is not None and vector is not None:
        fused = with_neighbour_evidence(memory, fused, cosines, settings.neighbour_weight,
                                        lambda items: similarities(memory, embedder.id, embedder.dims, vector, items))
    if settings.fusion == "score" and settings.session_weight > 0:
        fused = with_session_evidence(memory, fused, settings.session_weight)
    ranked = sorted(fused.items(), key=lambda kv: kv[1][0], reverse=True)[:limit]
    by_kind: dict[str, list[int]] = {}
    for (kind, item_id), _ in ranked:
        by_kind.setdefault(kind, []).append(item_id)
    items = {(kind, item.item_id): item for kind, ids in by_kind.items()
             for item in memory.get_many(kind, ids).values()}
    hits = [Hit(items[key], score, detail, cosines.get(key)) for key, (score, detail) in ranked if key in items]
    timings["fuse"] = (time.perf_counter() - mark) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(hits, {leg: len(found) for leg, found in legs.items()}, timings, embedder is not None)


MIN_ROWS_FOR_BM25_FLOOR = 200

def _rare_word_scores(memory: UserMemory, kinds: set[str]) -> dict[str, float]:
    """Per kind, about what BM25 gives one match of a word found in a single row: its IDF, ln(N / 1.5 + 1) for
    N rows in that kind's index (the largest id stands in for N: one index lookup, not a count). BM25 grows
    with the index, so a floor in these units means the same for a new memory and a large one."""
    scores = {}
    for kind in kinds:
        rows = memory.db.scalar(f"SELECT max(id) FROM {REGISTRY[kind].table}") or 1
        # Below a few hundred rows BM25 says little (FTS5 gives a word found in half the rows an IDF of ~0):
        # no floor there; the cosine floor still applies.
        scores[kind] = math.log(rows / 1.5 + 1.0) if rows >= MIN_ROWS_FOR_BM25_FLOOR else 0.0
    return scores


def _words_are_enough(legs: dict[str, LegScore], cosine: float | None, settings: RetrievalSettings,
                      rare_word: float) -> bool:
    """A candidate only the full-text leg found (its cosine, if any, is below the vector floor) is kept when its
    words really match (BM25 at least `bm25_floor` of a rare word's score) and, when it has a vector, its
    meaning is near enough (cosine at least `word_floor`). On LoCoMo, word-only matches of real evidence have a
    median cosine of 0.50 and those of questions that need no memory 0.06; see the README's prompt benchmark."""
    words = legs.get("fts")
    if words is None or words.score < settings.bm25_floor * rare_word:
        return False
    return cosine is None or cosine >= settings.word_floor


def search_or_full_text(memory: UserMemory, query: str, *, embedder: Embedder | None, limit: int = 10,
                        kinds: Sequence[str] = KINDS, settings: RetrievalSettings | None = None,
                        include_inactive: bool = False) -> tuple[SearchResult, str | None]:
    """`search()`, falling back to full text alone when the embedder fails on the query (a remote embedding API
    that is down, slow or refuses the key): the chat and the search go on. Returns the result and, after a
    fallback, why (for a one-time notice)."""
    def run(with_embedder: Embedder | None) -> SearchResult:
        return search(memory, query, embedder=with_embedder, limit=limit, kinds=kinds, settings=settings,
                      include_inactive=include_inactive)

    try:
        return run(embedder), None
    except ModelError as exc:  # EmbedderError is one
        if embedder is None:
            raise
        return run(None), exc.message


def describe(hit: Hit) -> str:
    """A compact 'vector #2 0.71, fts #1 3.20' line for people."""
    parts = [f"{leg} #{score.rank} {score.score:.3f}" for leg, score in hit.legs.items()]
    return ", ".join(parts) if parts else "-"
