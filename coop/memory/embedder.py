"""The `Embedder` protocol: what retrieval, growth and transfer need of an embedding model.

An embedder's id is `provider/model/dims` and is stored beside every vector it makes, so vectors from two models
(or two sizes of one model) are never compared. Every embedder returns float32 rows of unit length, so a dot
product is the cosine. The implementations (fastembed, a remote API, the hash embedder for tests) live in
`growth/embedders.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of `dims` dimensions."""

    id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Vectors for stored items (messages, facts, summaries), one row per text."""
        ...

    def embed_query(self, text: str) -> "np.ndarray":
        """The vector of one search query."""
        ...


def embedder_id(provider: str, model: str, dims: int) -> str:
    return f"{provider}/{model}/{dims}"
