"""Which salient past messages a turn shows, and in what order.

A salient message (importance at or above `memory.salience_threshold`: the user asked to keep it, or corrected
something) is a candidate in every turn, but it must earn its place: each is scored by its similarity to the
turn's message times a decay with age (halving every `memory.retention.half_life_days`), messages with the
same text count once, and together they take at most `SALIENCE_SHARE` of the memory budget (`build_prompt`).
A ChatGPT import with 39 "Remember that I get motion sick..." lines then costs one line, not the whole budget.
Facts the user pinned are not ranked here: they are facts, and stay in every prompt.
"""

from __future__ import annotations

import time

from coop.memory.embedder import Embedder
from coop.memory.kinds import decayed
from coop.memory.retrieval.context import Recalled
from coop.memory.storage.interface import UserStore
from coop.memory.storage.items import Item
from coop.memory.text import content_hash

SALIENCE_SHARE = 0.25


def rank_salient(memory: UserStore, items: list[Item], query: str, embedder: Embedder | None,
                 half_life_days: float, now: float | None = None) -> list[Recalled]:
    """The salient messages, de-duplicated, best first: similarity to `query` (1 without an embedder) times a
    decay with age."""
    if not items:
        return []
    now = time.time() if now is None else now
    cosines: dict[tuple[str, int], float] = {}
    if embedder is not None:
        try:
            vector = embedder.embed_query(query)
            cosines = memory.vectors.similarities(embedder.id, embedder.dims, vector,
                                                  [("message", i.item_id) for i in items])
        except Exception:  # an embedder failure costs the ordering, never the turn
            cosines = {}
    best: dict[str, Recalled] = {}
    for item in items:
        relevance = max(0.0, cosines.get(("message", item.item_id), 1.0 if not cosines else 0.0))
        score = decayed(relevance, (now - item.created_at) / 86400, half_life_days)
        key = content_hash(item.text)
        if key not in best or best[key].score < score:
            best[key] = Recalled(item, "salience", score)
    return sorted(best.values(), key=lambda r: -r.score)
