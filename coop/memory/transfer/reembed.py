"""Re-embedding after a change of embedder: every item gets a vector from the new model, then the old model's
vectors go.

Resumable: an item's `embedder` column says which model its current vector is from, so an interrupted run
leaves the finished items marked and the next run takes up the rest. The old vectors stay until every item has a
new one, so an interruption never leaves an item with neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coop.memory.embedder import Embedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.kinds import KINDS
from coop.memory.storage.interface import UserStore


@dataclass
class ReembedReport:
    embedded: int
    failed: int
    dropped_vectors: int
    embedders_dropped: list[str]


def reembed(memory: UserStore, embedder: Embedder, *, batch_size: int = 64,
            progress: Callable[[int], None] | None = None) -> ReembedReport:
    """Give every item of this user a vector from `embedder`; then drop the vectors of other embedders."""
    embedded = 0
    for kind in KINDS:
        while True:
            # Hand the next slice of stale items to the ordinary backlog path: it embeds `embedder IS NULL` rows.
            left = memory.vectors.hand_back(kind, embedder.id, batch_size * 4)
            done = embed_pending(memory, embedder, batch_size=batch_size, kinds=(kind,))
            embedded += done
            if progress is not None and done:
                progress(done)
            if not left:
                break
    failed = memory.stale_count(embedder.id)
    dropped = 0
    gone: list[str] = []
    if failed == 0:
        dropped, gone = memory.vectors.drop_other_embedders(embedder.id)
    return ReembedReport(embedded, failed, dropped, gone)
