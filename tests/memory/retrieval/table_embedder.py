"""An embedder whose vectors the test chooses, so "close in meaning" is exact: for the retrieval tests."""

from __future__ import annotations

import numpy as np


class TableEmbedder:
    """Each text maps to a unit vector chosen by the test (a text not in the table to a fixed one); records what
    it embedded."""

    dims, id = 4, "table/test/4"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table: dict[str, list[float]] = table
        self.seen: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        v = np.asarray(self.table.get(text, [0, 0, 0, 1]), dtype=np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts):
        self.seen += list(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, 4), np.float32)

    def embed_query(self, text):
        return self._vector(text)
