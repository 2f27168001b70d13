"""Retrieval over one user's messages, facts and summaries: a vector leg and a full-text leg, fused by score.

- Vector leg: cosine similarity between the query and stored vectors of the loaded embedder; nothing below
  the similarity floor counts, so an unrelated memory is never retrieved just because it is the nearest one.
- Full-text leg: the store's text index over the same items (`storage/text_index.py`: FTS5 in SQLite). The
  query becomes phrases (runs of unspaced scripts) and word terms (`terms.py`: common English function words
  dropped when anything else is left); they are OR-ed so one shared rare word is enough, and the index ranks by
  BM25 relevance (higher is better; the flaw of ranking SQLite's `bm25()` the wrong way round is one the seed
  systems had). Messages are matched with their own words and, weighed at `context_weight` (1.0), the words of
  the two messages before them in their session and the day they were written: a reply is then found by the
  words of the question it answers (1.0 rather than 0.5: R_any@5 on `bench/scale.py` 0.792 -> 0.801 at 0 and
  0.697 -> 0.708 at 20,000 extra messages). In a large memory the index leaves a query's most common words out
  when they would cost the most and weigh the least, and ranks messages with a weaker length normalisation than
  BM25's usual one (a long message that answers is not buried under one-liners that share a word with the
  question); the leg keeps its best 400.
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
- Who spoke (`speaker.py`): for a question about the user's own life in the first person, an assistant's
  message counts at `assistant_weight` of its score, since the user's own words are what tell it.

Vectors are made from a message's own text only (not its neighbours'), so embedding stays one model call per
message, and no vector has to be redone when a later message arrives or an earlier one is forgotten.

The legs run one after the other, unless the vector index offers a twin on a connection of its own (`beside`:
Postgres within a turn): then the vector leg runs in a thread while this one reads the full-text leg and the
exact cosines of its candidates, with the same candidates, scores and ranking (the server does the work of both;
the client only waits). SQLite's index offers none: its legs stay in turn.

Filters (user, kind, active facts) are applied inside each leg's query, before its limit is cut.
`explain=True` keeps each leg's rank and raw score on every hit. The recency and salience legs of a chat
turn are `memory.messages.recent` and `memory.messages.salient`; the chat turn combines them with this search.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from coop.errors import ModelError, UsageError
from coop.memory.embedder import Embedder
from coop.memory.kinds import KINDS
from coop.memory.retrieval import speaker
from coop.memory.retrieval.passages import Scored, with_neighbour_evidence, with_session_evidence
from coop.memory.retrieval.settings import FUSIONS, RetrievalSettings
from coop.memory.retrieval.terms import check_query, query_terms, unspaced_phrases
from coop.memory.storage.interface import UserStore, VectorIndex
from coop.memory.storage.items import Item

if TYPE_CHECKING:
    import numpy as np

_DEFAULTS = RetrievalSettings.defaults()
# Full-text candidates per query (at least): enough that a message matching a few of the question's words, not its
# rarest, is still among them when thousands of messages share some word with it (`bench/scale.py`: at 100,000
# extra messages per user, 400 instead of 200 lifts R_any@10 from 0.603 to 0.629).
FULL_TEXT_CANDIDATES = 400
# A search about the user (`speaker.py`) weighs who spoke in the best `limit` x SPEAKER_POOL, then keeps `limit`.
SPEAKER_POOL = 4


@dataclass(frozen=True)
class LegScore:
    """An item's place in one leg: its rank (1 = best) and the leg's own score (cosine, or BM25 relevance)."""

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


def fts_leg(memory: UserStore, query: str, *, kinds: Sequence[str] = KINDS, limit: int = 50,
            include_inactive: bool = False,
            context_weight: float = _DEFAULTS.context_weight) -> list[tuple[str, int, float]]:
    """(kind, id, relevance) for the best full-text matches over `kinds`, best (highest) first: the store's text
    index (`storage/text_index.py`) given the query's phrases and word terms. A message's neighbours' words count
    `context_weight` of its own."""
    return memory.text.matches(unspaced_phrases(query), query_terms(query), kinds=kinds, limit=limit,
                               include_inactive=include_inactive, context_weight=context_weight)


def vector_leg(memory: UserStore, embedder: Embedder, query: str, *, kinds: Sequence[str] = KINDS,
               limit: int = 50, floor: float | None = None, include_inactive: bool = False,
               vector: "np.ndarray | None" = None, index: VectorIndex | None = None) -> list[tuple[str, int, float]]:
    """(kind, id, cosine) for the nearest items at or above `floor`, best first. `vector`: the query's vector,
    when the caller already has it; `index`: the memory's vector index on another connection (`beside`)."""
    if vector is None:
        vector = embedder.embed_query(query)
    hits = (index or memory.vectors).nearest(embedder.id, embedder.dims, vector, k=limit, kinds=kinds, floor=floor,
                                             include_inactive=include_inactive)
    return [(h.kind, h.item_id, h.similarity) for h in hits]


Ranked = list[tuple[str, int, float]]  # a leg's (kind, id, score), best first


@runtime_checkable
class Beside(Protocol):
    """A vector index that can hand out a twin on a connection of its own, sharing its turn cache (Postgres's)."""

    def beside(self) -> VectorIndex | None: ...


@cache
def _leg_threads() -> ThreadPoolExecutor:
    """The threads the vector legs run in beside the full-text legs (made once, on first use)."""
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="coop-vector-leg")


def _legs_at_once(memory: UserStore, twin: VectorIndex, embedder: Embedder, query: str, *, kinds: Sequence[str],
                  per_leg: int, nearest_k: int, settings: RetrievalSettings, include_inactive: bool,
                  timings: dict[str, float]) -> tuple[Ranked, "np.ndarray", Ranked]:
    """The full-text leg, the query's vector and the vector leg, as `search` makes them in turn, but with the
    vector leg on `twin` in a thread: meanwhile this thread reads the full-text leg, then (score fusion) the exact
    cosines of its candidates into the turn cache, which `search` then reads without a statement; an item the
    vector leg found keeps the score it found it with, as when the legs run in turn."""
    ready: "Future[np.ndarray]" = Future()

    def embedded_then_nearest() -> Ranked:
        mark = time.perf_counter()
        try:
            vector = embedder.embed_query(query)
        except BaseException as exc:
            ready.set_exception(exc)
            raise
        ready.set_result(vector)
        timings["embed"] = (time.perf_counter() - mark) * 1000
        mark = time.perf_counter()
        found = vector_leg(memory, embedder, query, kinds=kinds, limit=nearest_k, floor=settings.floor,
                           include_inactive=include_inactive, vector=vector, index=twin)
        timings["vector"] = (time.perf_counter() - mark) * 1000
        return found

    nearest = _leg_threads().submit(embedded_then_nearest)
    try:
        mark = time.perf_counter()
        words = fts_leg(memory, query, kinds=kinds, limit=per_leg, include_inactive=include_inactive,
                        context_weight=settings.context_weight)
        timings["fts"] = (time.perf_counter() - mark) * 1000
        vector = ready.result()
        if settings.fusion == "score":
            memory.vectors.similarities(embedder.id, embedder.dims, vector, [(kind, i) for kind, i, _ in words])
        return words, vector, nearest.result()
    finally:
        wait([nearest])  # never leave the twin's connection busy behind an error here


def rrf(legs: dict[str, list[tuple[str, int, float]]], k: int) -> Fused:
    """Reciprocal-rank fusion: each leg adds 1 / (k + rank) for every item it ranked."""
    fused: Fused = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            score, detail = fused.get((kind, item_id), (0.0, {}))
            detail = {**detail, leg: LegScore(rank, raw)}
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
    best = max((raw for _, _, raw in fts), default=0.0)
    scale = best if best > 0 else 1.0
    fused: Fused = {}
    for leg, ranked in legs.items():
        for rank, (kind, item_id, raw) in enumerate(ranked, start=1):
            _, detail = fused.get((kind, item_id), (0.0, {}))
            fused[(kind, item_id)] = (0.0, {**detail, leg: LegScore(rank, raw)})
    for key, (_, detail) in fused.items():
        words = detail["fts"].score / scale if "fts" in detail else 0.0
        cosine = cosines.get(key, 0.0)
        fused[key] = (words + vector_weight * cosine + agreement_weight * words * max(cosine, 0.0), detail)
    return fused


def search(memory: UserStore, query: str, *, embedder: Embedder | None = None, limit: int = 10,
           kinds: Sequence[str] = KINDS, settings: RetrievalSettings | None = None, include_inactive: bool = False,
           candidates: int | None = None) -> SearchResult:
    """The fused top `limit` items for `query`, over the kinds asked for. Without an embedder: full text only."""
    settings = (settings or _DEFAULTS).for_embedder(embedder)  # floors left at default: the embedder's own
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
    # The vector leg needs no more than `limit` of its own: deeper vector candidates would not make the top
    # `limit`, and every full-text candidate gets its exact cosine from `similarities` anyway.
    nearest_k = min(per_leg, max(limit, 10))
    twin = memory.vectors.beside() if embedder is not None and isinstance(memory.vectors, Beside) else None
    vector = None
    if embedder is not None and twin is not None:
        words, vector, legs["vector"] = _legs_at_once(memory, twin, embedder, query, kinds=kinds, per_leg=per_leg,
                                                      nearest_k=nearest_k, settings=settings,
                                                      include_inactive=include_inactive, timings=timings)
    else:
        # Words first: a caller that started the query's embedding in the background (`recall.QueryOnce`) has it
        # made while SQLite reads the full-text matches.
        words = fts_leg(memory, query, kinds=kinds, limit=per_leg, include_inactive=include_inactive,
                        context_weight=settings.context_weight)
        timings["fts"] = (time.perf_counter() - started) * 1000
        if embedder is not None:
            mark = time.perf_counter()
            vector = embedder.embed_query(query)
            timings["embed"] = (time.perf_counter() - mark) * 1000
            mark = time.perf_counter()
            legs["vector"] = vector_leg(memory, embedder, query, kinds=kinds, limit=nearest_k,
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
            cosines.update(memory.vectors.similarities(embedder.id, embedder.dims, vector, missing))
        fused = score_fusion(legs, cosines, settings.vector_weight, settings.agreement_weight)
    rare_word = ({kind: memory.text.rare_word_score(kind) for kind in {kind for kind, _ in fused}}
                 if settings.bm25_floor > 0 else {})
    fused = {key: value for key, value in fused.items()
             if "vector" in value[1] or _words_are_enough(value[1], cosines.get(key), settings,
                                                         rare_word.get(key[0], 0.0))}
    if settings.fusion == "score" and settings.neighbour_weight > 0 and embedder is not None and vector is not None:
        def cosines_of(items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]:
            return memory.vectors.similarities(embedder.id, embedder.dims, vector, items)

        fused = with_neighbour_evidence(memory, fused, cosines, settings.neighbour_weight, cosines_of)
    if settings.fusion == "score" and settings.session_weight > 0:
        fused = with_session_evidence(memory, fused, settings.session_weight)
    weighing = settings.assistant_weight < 1.0 and "message" in kinds and speaker.about_the_user(query)
    # a search about the user re-ranks a deeper pool by who spoke: an assistant's message may drop out of it
    ranked = sorted(fused.items(), key=lambda kv: kv[1][0], reverse=True)[:limit * SPEAKER_POOL if weighing else limit]
    by_kind: dict[str, list[int]] = {}
    for (kind, item_id), _ in ranked:
        by_kind.setdefault(kind, []).append(item_id)
    items = {(kind, item.item_id): item for kind, ids in by_kind.items()
             for item in memory.get_many(kind, ids).values()}
    hits = [Hit(items[key], score, detail, cosines.get(key)) for key, (score, detail) in ranked if key in items]
    if weighing:
        hits = sorted((replace(hit, score=hit.score * speaker.weight_of(hit.item, settings.assistant_weight))
                       for hit in hits), key=lambda hit: -hit.score)[:limit]
    timings["fuse"] = (time.perf_counter() - mark) * 1000
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(hits, {leg: len(found) for leg, found in legs.items()}, timings, embedder is not None)


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


def search_or_full_text(memory: UserStore, query: str, *, embedder: Embedder | None, limit: int = 10,
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
