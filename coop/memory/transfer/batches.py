"""Bounded write transactions for imports, so an import never keeps other coop processes from writing.

An import writes in transactions of at most `BATCH_ROWS` rows and `BATCH_SECONDS` seconds (a 60,000-message
conversation is many transactions, not one that holds the write lock for minutes), each record in a savepoint
of its own (a record that fails leaves nothing behind, and the batch goes on). SQLite has no queue for its
write lock: a process that waits for it retries after sleeps that grow to 100 ms, and would keep missing the
instants between two of our transactions. So after each `SLICE_SECONDS` of holding the lock the import pauses
for `PAUSE_SECONDS`, longer than that longest sleep, and a waiting `coop memory add` or chat gets its turn
within about 1.5 s, far under `memory.busy_timeout_ms` (5 s by default). The pauses cost an import about 9% of
its writing time.

A transaction that committed stays: an import that is stopped (Ctrl-C, a full disk, a kill) and run again skips
what is already there by its source ids and goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from coop.memory.storage.interface import UserStore

BATCH_ROWS = 200
BATCH_SECONDS = 0.25
SLICE_SECONDS = 1.5
PAUSE_SECONDS = 0.15


class Batches:
    """Write transactions of bounded size for one import; use as a context manager around the whole import."""

    def __init__(self, memory: UserStore, *, rows: int | None = None, seconds: float | None = None,
                 on_commit: Callable[[], None] | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.memory = memory
        self._clock = clock
        self.rows = rows or BATCH_ROWS
        self.seconds = seconds or BATCH_SECONDS
        self.on_commit = on_commit
        self._sleep = sleep
        self._open: AbstractContextManager[None] | None = None
        self._count = 0
        self._began = 0.0
        self._held = 0.0  # seconds the lock was held since the last pause
        self.commits = 0

    def __enter__(self) -> "Batches":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is None:
            self.commit()
        elif self._open is not None:
            opened, self._open = self._open, None
            opened.__exit__(kind, exc, tb)  # type: ignore[arg-type]  # rolls back; the error goes on

    @contextmanager
    def record(self, *, savepoint: bool = True) -> Iterator[None]:
        """One record's writes, in a savepoint inside the current batch (opened if need be); the batch is
        committed after it when it is full. `savepoint=False` for a record that is one atomic call already."""
        if self._open is None:
            opening = self.memory.transaction()
            opening.__enter__()  # BEGIN IMMEDIATE: waits for the lock up to the busy timeout
            self._open = opening
            self._began = self._clock()
            self._count = 0
        if savepoint:
            with self.memory.transaction():
                yield
        else:
            yield
        self._count += 1
        if self._count >= self.rows or self._clock() - self._began >= self.seconds:
            self.commit()

    def commit(self) -> None:
        """Commit the batch now (if one is open); pause when the lock was held for a slice."""
        if self._open is None:
            return
        opened, self._open = self._open, None
        opened.__exit__(None, None, None)
        self.commits += 1
        self._held += self._clock() - self._began
        if self.on_commit is not None:
            self.on_commit()
        if self._held >= SLICE_SECONDS:
            self._held = 0.0
            self._sleep(PAUSE_SECONDS)
