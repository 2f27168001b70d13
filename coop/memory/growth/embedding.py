"""Embedding jobs: give stored items their vectors, in batches, after the write that made them.

Vectors are made off the write path (the chat commits a message at once; the worker embeds it a moment later),
so a slow or missing embedder never delays or loses a write. A batch that fails is retried one item at a time,
so one bad text records its own `embedding_error` and does not hold back the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from coop.memory.embedder import Embedder
from coop.memory.kinds import KINDS
from coop.memory.storage.interface import UserStore
from coop.memory.text import sentence_parts

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# A text of several sentences longer than this is not read whole by the model: about the default model's window
# of 256 tokens in English (past it the model sees only the beginning), so its vector is the mean of its sentences'.
WHOLE_MAX_CHARS = 1000


def embed_pending(memory: UserStore, embedder: Embedder, *, batch_size: int = 64,
                  limit: int | None = None, kinds: Sequence[str] = KINDS,
                  should_stop: Callable[[], bool] = lambda: False) -> int:
    """Embed this user's items that have no vector yet, in batches; returns how many were embedded.
    Items with an error are retried on a later call (the error is overwritten). `should_stop` is asked before
    each batch after the first: at exit the chat finishes the batch at hand (a turn's new messages) and stops a
    long backlog between batches, never inside the model (an interpreter
    that exits while onnxruntime runs on another thread aborts with "terminate called", rc 134)."""
    done = 0
    for kind in kinds:
        last_id = 0
        while (limit is None or done < limit) and not (done and should_stop()):  # at least one batch
            take = batch_size if limit is None else min(batch_size, limit - done)
            rows = memory.vectors.pending(kind, after_id=last_id, limit=take)
            if not rows:
                break
            last_id = rows[-1][0]
            done += _embed_batch(memory, kind, rows, embedder)
    return done


def _embed_batch(memory: UserStore, kind: str, rows: list[tuple[int, str]], embedder: Embedder) -> int:
    """Each item's whole text (when the model can read it whole) and, for a text of several sentences, each
    sentence, in one call to the model; a text too long to read whole gets the mean of its sentences."""
    import numpy as np

    texts = [text or "" for _, text in rows]
    split = [sentence_parts(text) for text in texts]
    read_whole = [reads_whole(text, parts) for text, parts in zip(texts, split, strict=True)]
    try:
        matrix = embedder.embed(texts_read(texts, split))
    except Exception as exc:  # fall back to one at a time so a single bad row is isolated
        if len(rows) == 1:
            message = f"{type(exc).__name__}: {exc}"[:500]
            log.warning("embedding %s %d failed: %s", kind, rows[0][0], message)
            memory.vectors.record_error(kind, rows[0][0], message)
            return 0
        return sum(_embed_batch(memory, kind, [row], embedder) for row in rows)
    wholes: list[np.ndarray] = []
    parts: list[np.ndarray | None] = []
    read, at = 0, sum(read_whole)
    for sentences, whole in zip(split, read_whole, strict=True):
        vectors = matrix[at:at + len(sentences)] if sentences else None
        at += len(sentences)
        parts.append(vectors)
        if whole:
            wholes.append(matrix[read])
            read += 1
        else:
            assert vectors is not None
            wholes.append(whole_of(vectors, sentences))
    memory.vectors.store(kind, [item_id for item_id, _ in rows], embedder.id, np.stack(wholes), parts)
    return len(rows)


def texts_read(texts: Sequence[str], split: Sequence[Sequence[str]] | None = None) -> list[str]:
    """What the model is asked for these texts, in the order `_embed_batch` asks it: those it reads whole, then
    every sentence part (`split`: their `sentence_parts`, when the caller has them). A benchmark fetching vectors
    ahead asks for these and no others."""
    split = split if split is not None else [sentence_parts(text) for text in texts]
    return ([text for text, parts in zip(texts, split, strict=True) if reads_whole(text, parts)]
            + [part for parts in split for part in parts])


def reads_whole(text: str, parts: Sequence[str]) -> bool:
    """Whether the model reads `text` whole: a text of one sentence, or one short enough for the model's window."""
    return not parts or len(text) <= WHOLE_MAX_CHARS


def whole_of(vectors: "np.ndarray", sentences: Sequence[str]) -> "np.ndarray":
    """A long text's vector from its sentences' vectors: their mean, each weighted by its length, made unit
    length. The model's own vector of a text is a mean of its tokens' states too, but past its window (256 tokens
    for the default model) it sees only the text's beginning, and it costs a second pass over words the sentences
    were already read in; this one covers every sentence and costs nothing."""
    import numpy as np

    weights = np.array([len(sentence) for sentence in sentences], dtype=np.float64)
    mean = weights @ vectors.astype(np.float64)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)


def embed_backlog(memory: UserStore, embedder: Embedder, *, batch_size: int = 64,
                  progress: Callable[[int], None] | None = None) -> int:
    """Embed everything of this user that has no vector yet, a few batches at a time; returns how many."""
    total = 0
    while True:
        done = embed_pending(memory, embedder, batch_size=batch_size, limit=batch_size * 4)
        if done == 0:
            return total
        total += done
        if progress is not None:
            progress(done)
