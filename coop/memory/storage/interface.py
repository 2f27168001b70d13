"""The storage seam: what the engine asks of a store, as typing Protocols. Retrieval, growth, transfer, the chat,
MCP and the CLI speak to these; only `coop/memory/storage/` knows the database behind them (SQLite today:
`store.py`, `text_index.py`, `vector_index.py`; a second backend implements the same four and slots in without
touching retrieval's fusion, floors or prompt).

- `Backend`: the store as a whole. Opens (and migrates) on creation, checks itself, hands out a user's memory,
  and a second handle of its own for a background thread.
- `UserStore`: one user's memory: its rows (sessions, messages, facts and their history and sources,
  summaries, durable jobs, forgotten records), a unit of work (`transaction`), its text index and its vector
  index. Every read and write binds the user: an id of another user's item is simply "not found".
- `TextIndex`: full text over the user's items. Takes a query already split into phrases and word terms and
  returns (kind, id, relevance), best first, relevance in BM25 units, higher for better (a floor is set in
  units of `rare_word_score`, what one match of a word found in a single row gets, so it means the same in a
  small memory and a large one). How a backend ranks (FTS5's BM25 with its length normalisation undone, or
  Postgres's own ranking) is its own; the leg's figures are what it is tuned to.
- `VectorIndex`: stores, deletes and reads the user's vectors per embedder, finds the nearest `k` above a floor
  (never fewer than k when k exist), and gives the exact cosine of any items (`similarities`); within
  `reading_once()` each item's vector is read once (a turn asks for the same items several times).

The item and fact types that cross the seam are plain dataclasses (`items.py`, `facts.py`, `links.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.storage.health import Finding
    from coop.memory.storage.vectors import VectorHit


class TextIndex(Protocol):
    def matches(self, phrases: Sequence[str], terms: Sequence[str], *, kinds: Sequence[str], limit: int,
                include_inactive: bool = False, context_weight: float = 1.0) -> list[tuple[str, int, float]]:
        """The best `limit` matches over `kinds` as (kind, id, relevance), best (highest) first."""
        ...

    def purge(self, kind: str) -> None:
        """After a forget of an item of `kind`: leave no trace of its words in the index (best effort)."""
        ...

    def rare_word_score(self, kind: str) -> float:
        """The relevance one match of a word found in a single row of `kind` gets (0 when too few rows to say)."""
        ...


class VectorIndex(Protocol):
    def reading_once(self) -> AbstractContextManager[None]:
        """Within the block, each item's vector is read from the store at most once."""
        ...

    def store(self, kind: str, item_ids: Sequence[int], embedder_id: str, wholes: "np.ndarray",
              parts: Sequence["np.ndarray | None"] | None = None) -> None: ...

    def delete(self, kind: str, item_id: int) -> None: ...

    def pending(self, kind: str, *, after_id: int, limit: int) -> list[tuple[int, str]]: ...

    def record_error(self, kind: str, item_id: int, message: str) -> None: ...

    def hand_back(self, kind: str, keep_embedder: str, limit: int) -> int: ...

    def drop_other_embedders(self, keep: str) -> tuple[int, list[str]]: ...

    def nearest(self, embedder_id: str, dims: int, query: "np.ndarray", *, k: int, kinds: Sequence[str] = ...,
                floor: float | None = None, exact: bool = False,
                include_inactive: bool = False) -> "list[VectorHit]": ...

    def read(self, embedder_id: str, dims: int,
                items: Sequence[tuple[str, int]]) -> "dict[tuple[str, int], np.ndarray]": ...

    def similarities(self, embedder_id: str, dims: int, query: "np.ndarray",
                     items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], float]: ...

    def size(self, embedder_id: str, kind: str | None = None) -> int: ...

    def warm(self, embedder_id: str) -> bool:
        """Ready the index for a first search, from another thread (best effort)."""
        ...


class UserStore(Protocol):
    """One user's memory. The row-level reads and writes are the parts' (see `store.UserMemory`)."""

    user_id: str

    @property
    def text(self) -> TextIndex: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def read_only(self) -> bool: ...

    def transaction(self) -> AbstractContextManager[None]:
        """A unit of work: all of it is written, or (on any error) none. Nests."""
        ...

    def checkpoint(self) -> None:
        """Make what was just deleted leave the store's files promptly (after a forget); best effort."""
        ...


class Backend(Protocol):
    @property
    def location(self) -> str:
        """Where the store is, for people (a path, or a server URL without its password)."""
        ...

    @property
    def read_only(self) -> bool: ...

    def user(self, user_id: str) -> UserStore: ...

    def user_ids(self) -> list[str]: ...

    def reopen(self) -> "Backend":
        """A handle of its own on the same store, for another thread."""
        ...

    def check(self) -> "list[Finding]":
        """How the store is (engine, schema, integrity, indexes, writable, vectors), for `coop check`."""
        ...

    def embedders(self) -> dict[str, int]:
        """Every embedder that has vectors in the store, with its count."""
        ...

    def rebuild_fulltext(self) -> dict[str, int]:
        """Build the full-text index again from the stored text; rows indexed per index."""
        ...

    def close(self) -> None: ...
