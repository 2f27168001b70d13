"""A background thread with its own database connection, running jobs so the chat never waits on them.

apsw connections cannot be shared across threads, so the worker opens its own. Jobs are callables that take
that connection; one that fails is logged and dropped (a background failure never raises into the REPL, which
shows a one-line notice at the next prompt; the rows it would have changed stay as they were, to be retried
later). `stop()` waits at most `timeout` seconds:
a job still running then is abandoned with the thread (a daemon), and its transaction is rolled back by
SQLite (or by the Postgres server, when the connection drops) when the process exits. An abandoned job that has
an `abandoned(store)` method (`jobs.ClaimingJob`: it holds extraction claims, which outlive the process) is told
so, on a handle of its own opened for that, so it can give back what it holds.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter
from collections.abc import Callable

from coop.memory.storage.interface import Backend

log = logging.getLogger(__name__)

Job = Callable[[Backend], "str | None"]  # returns a notice for the user, or None


def failure_notice(name: str, exc: BaseException) -> str:
    """What the user is told of a failed background job: which, why in a few words, and that nothing was lost. A
    coop error says it in words; only an unexpected exception is named by its class."""
    reason = (str(getattr(exc, "message", "") or exc).strip().splitlines() or [""])[0][:120]
    what = reason if getattr(exc, "message", None) else f"{type(exc).__name__}{': ' + reason if reason else ''}"
    return f"memory: {name} failed ({what}); nothing was lost"


class FailureNotices:
    """One line per kind of failure and session: a job that fails at every turn (a fast model that is down) is
    told once, saying where the rest go; the later ones are logged only, and counted."""

    AGAIN = "; if it fails again this session, coop.log says so (`coop check` tests the model)"

    def __init__(self) -> None:
        self.told: Counter[str] = Counter()

    def notice(self, name: str, exc: BaseException) -> str | None:
        self.told[name] += 1
        return failure_notice(name, exc) + self.AGAIN if self.told[name] == 1 else None


class BackgroundWorker:
    def __init__(self, open_store: Callable[[], Backend], *, name: str = "coop-worker") -> None:
        """`open_store` opens a handle of the worker's own on the store (called in the worker's thread)."""
        self._open_store = open_store
        self._jobs: queue.Queue[tuple[str, Job] | None] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._current: Job | None = None  # the job running now
        self.failures: list[str] = []
        self._notices: list[str] = []
        self._failed = FailureNotices()
        self.on_notice: Callable[[], None] | None = None  # told (from this thread) when a notice is ready
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, name: str, job: Job) -> None:
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self._jobs.put((name, job))

    def take_notices(self) -> list[str]:
        """Notices from finished jobs, for the REPL to show at the next prompt (never printed from here)."""
        with self._lock:
            notices, self._notices = self._notices, []
        return notices

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every submitted job has run (for tests and for a clean exit)."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 2.0) -> None:
        self._jobs.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._abandon()

    def _abandon(self) -> None:
        """The job still running is left behind: let it give back what it holds (best effort)."""
        with self._lock:
            job = self._current
        abandoned = getattr(job, "abandoned", None)
        if abandoned is None:
            return
        try:
            store = self._open_store()
        except Exception as exc:
            log.warning("giving back an abandoned job's claims failed: %s", exc)
            return
        try:
            abandoned(store)
        except Exception as exc:
            log.warning("giving back an abandoned job's claims failed: %s", exc)
        finally:
            store.close()

    def _tell(self, notice: str) -> None:
        with self._lock:
            self._notices.append(notice)
        if self.on_notice is not None:
            try:  # the REPL shows it now if the person is at the prompt, else before the next one
                self.on_notice()
            except Exception as exc:
                log.warning("showing a notice failed: %s", exc)

    @property
    def alive(self) -> bool:
        """Still inside a job after `stop` gave up waiting for it."""
        return self._thread.is_alive()

    def _run(self) -> None:
        store: Backend | None = None
        try:
            while True:
                entry = self._jobs.get()
                if entry is None:
                    return
                name, job = entry
                with self._lock:
                    self._current = job
                try:
                    if store is None:
                        store = self._open_store()
                    notice = job(store)
                except Exception as exc:  # logged, never raised: the REPL must not die of a background job
                    message = f"{name} failed: {type(exc).__name__}: {exc}"
                    log.warning(message)
                    self.failures.append(message)
                    notice = self._failed.notice(name, exc)
                finally:
                    with self._lock:
                        self._current = None
                        self._pending -= 1
                        if self._pending == 0:
                            self._idle.set()
                if notice:
                    self._tell(notice)
        finally:
            if store is not None:
                store.close()


class Timer:
    """Calls `action` every `interval` seconds on its own thread until stopped (stops within its wait)."""

    def __init__(self, interval: float, action: Callable[[], None], name: str = "coop-timer") -> None:
        self.interval = interval
        self.action = action
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.action()
            except Exception as exc:  # a timer never dies of its action
                log.warning("timer action failed: %s", exc)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
