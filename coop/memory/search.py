"""Retrieval over one user's messages, facts and summaries: a vector leg and a full-text leg, fused by rank.

- Vector leg: cosine similarity between the query and stored vectors of the loaded embedder; nothing below
  the similarity floor counts, so an unrelated memory is never retrieved just because it is the nearest one.
- Full-text leg: FTS5 over the same items. Every query token is quoted (user text can never be FTS syntax),
  common English function words are dropped when anything else is left, tokens are OR-ed so one shared rare
  word is enough, and BM25 orders them: SQLite's `bm25()` is *smaller* for better matches, so we sort
  ascending (the flaw of ranking it the wrong way round is one the seed systems had).
- Fusion: reciprocal rank (score = sum of 1 / (rrf_k + rank)) over the legs an item appears in.

Filters (user, kind, active facts) are applied inside each leg's query, before its limit is cut.
`explain=True` keeps each leg's rank and raw score on every hit. The recency and salience legs of a chat
turn are `UserMemory.recent_messages` and `UserMemory.salient`; the chat turn combines them with this search.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from coop.errors import UsageError
from coop.memory.db import UNSPACED_CHARS
from coop.memory.store import KINDS, Item, UserMemory, make_ref
from coop.memory.vectors import nearest

if TYPE_CHECKING:
    from coop.memory.embed import Embedder

MAX_QUERY_CHARS = 20_000
MAX_QUERY_TERMS = 48

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
    phrases = unspaced_phrases(text) + query_terms(text)
    if not phrases:
        return None
    return " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)


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
            include_inactive: bool = False) -> list[tuple[str, int, float]]:
    """(kind, id, bm25) for the best full-text matches of each kind, best (lowest bm25) first."""
    match = fts_query(query)
    if match is None:
        return []
    found: list[tuple[str, int, float]] = []
    for kind in kinds:
        if kind == "message":
            sql = ("SELECT m.id, bm25(messages_fts) AS s FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                   "WHERE messages_fts MATCH ? AND m.user_id = ? ORDER BY s LIMIT ?")
        elif kind == "fact":
            active = "" if include_inactive else "AND f.superseded_at IS NULL AND f.archived_at IS NULL"
            sql = ("SELECT f.id, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid "
                   f"WHERE facts_fts MATCH ? AND f.user_id = ? {active} ORDER BY s LIMIT ?")
        else:
            sql = ("SELECT s.id, bm25(summaries_fts) AS s FROM summaries_fts JOIN summaries s "
                   "ON s.id = summaries_fts.rowid WHERE summaries_fts MATCH ? AND s.user_id = ? ORDER BY 2 LIMIT ?")
        found += [(kind, row[0], row[1]) for row in memory.db.execute(sql, (match, memory.user_id, limit))]
    found.sort(key=lambda hit: hit[2])
    return found[:limit]


def vector_leg(memory: UserMemory, embedder: "Embedder", query: str, *, kinds: Sequence[str] = KINDS,
               limit: int = 50, floor: float | None = None, include_inactive: bool = False) -> list[tuple[str, int, float]]:
    """(kind, id, cosine) for the nearest items at or above `floor`, best first."""
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


def search(memory: UserMemory, query: str, *, embedder: "Embedder | None" = None, limit: int = 10,
           kinds: Sequence[str] = KINDS, floor: float | None = 0.655, rrf_k: int = 60,
           include_inactive: bool = False, candidates: int | None = None) -> SearchResult:
    """The fused top `limit` items for `query`, over the kinds asked for. Without an embedder: full text only."""
    query = _check_query(query)
    for kind in kinds:
        if kind not in KINDS:
            raise UsageError(f"unknown kind {kind!r}", hint="use fact, message or summary")
    per_leg = candidates or max(limit * 5, 50)
    timings: dict[str, float] = {}
    legs: dict[str, list[tuple[str, int, float]]] = {}
    if not query.strip():
        return SearchResult([], {}, {}, embedder is not None)
    started = time.perf_counter()
    if embedder is not None:
        legs["vector"] = vector_leg(memory, embedder, query, kinds=kinds, limit=per_leg, floor=floor,
                                    include_inactive=include_inactive)
        timings["vector"] = (time.perf_counter() - started) * 1000
    mark = time.perf_counter()
    legs["fts"] = fts_leg(memory, query, kinds=kinds, limit=per_leg, include_inactive=include_inactive)
    timings["fts"] = (time.perf_counter() - mark) * 1000
    mark = time.perf_counter()
    fused = rrf(legs, rrf_k)
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


__all__ = ["Hit", "LegScore", "SearchResult", "search", "fts_query", "query_terms", "describe", "make_ref"]
