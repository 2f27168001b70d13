"""Where a tool may use the database, and where it must not hold it.

The MCP server answers calls on several threads over one apsw connection, which must not be used by two threads at
once: `Guard.database()` takes the server's lock around each stretch of database work. An embedding or a model call
can take seconds (a remote API, a local model loading), so none runs while the lock is held: the query or the fact
is embedded before (`Prepared`), and a model call made in the middle of a stretch (the fast model reconciling a
fact) releases the lock while it runs (`Guard.outside()`). The chat has one thread and needs no lock (`NO_GUARD`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from coop.memory.embedder import Embedder

T = TypeVar("T")


class Guard:
    """Serialises a connection's use across threads; `lock=None` serialises nothing (one thread)."""

    def __init__(self, lock: threading.Lock | None = None) -> None:
        self.lock = lock

    @contextmanager
    def database(self) -> Iterator[None]:
        if self.lock is None:
            yield
            return
        with self.lock:
            yield

    @contextmanager
    def outside(self) -> Iterator[None]:
        """Inside `database()`: the lock let go for a slow call that touches no database, then taken back."""
        if self.lock is None:
            yield
            return
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()

    def unlocked(self, call: Callable[..., T]) -> Callable[..., T]:
        """`call`, run outside the lock whenever it is called inside `database()`."""
        def run(*args: Any, **kwargs: Any) -> T:
            with self.outside():
                return call(*args, **kwargs)

        return run


NO_GUARD = Guard()


class Prepared:
    """An embedder whose vectors for the given query and texts were made before the database was taken: inside
    it, asking for them costs nothing. An embedder that failed fails again where the vector is used, so search
    falls back to full text as it would have. Anything not prepared goes to the embedder itself."""

    def __init__(self, inner: "Embedder", *, queries: Sequence[str] = (), texts: Sequence[str] = ()) -> None:
        self.inner = inner
        self.id, self.dims = inner.id, inner.dims
        self._queries = {query: _attempt(inner.embed_query, query) for query in dict.fromkeys(queries)}
        self._texts = {text: _attempt(lambda t: inner.embed([t])[0], text) for text in dict.fromkeys(texts)}

    def embed_query(self, text: str) -> "np.ndarray":
        if text in self._queries:
            return _result(self._queries[text])
        return self.inner.embed_query(text)

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        if texts and all(text in self._texts for text in texts):
            import numpy as np

            return np.stack([_result(self._texts[text]) for text in texts])
        return self.inner.embed(texts)


def _attempt(call: Callable[[str], "np.ndarray"], text: str) -> "np.ndarray | BaseException":
    try:
        return call(text)
    except Exception as exc:  # raised again where the vector is used (`_result`), as the embedder would there
        return exc


def _result(value: "np.ndarray | BaseException") -> "np.ndarray":
    if isinstance(value, BaseException):
        raise value
    return value
