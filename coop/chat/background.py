"""A chat session's background work and what it has to say: jobs go to the worker (its own connection), or run
inline on an in-memory database, which another connection cannot see; what they finish with, and failures, come
back as notices shown before the next prompt. Failures are logged, never raised into the chat."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from coop.memory.growth.worker import FailureNotices
from coop.memory.text import plural

if TYPE_CHECKING:
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.growth.worker import BackgroundWorker
    from coop.memory.storage.interface import UserStore

log = logging.getLogger(__name__)


class Background:
    """The session's jobs and notices."""

    def __init__(self, memory: "UserStore", jobs: "MemoryJobs", worker: "BackgroundWorker | None") -> None:
        self.memory = memory
        self.jobs = jobs
        self.worker = worker
        self.inline_notices: list[str] = []
        self._told_unusable = False
        self._failed = FailureNotices()

    def run(self, name: str, job: Any) -> None:
        """Run a job on the worker, or inline when there is none."""
        if self.worker is not None:
            self.worker.submit(name, job)
            return
        try:
            notice = job(self.memory.backend)
            if notice:
                self.inline_notices.append(notice)
        except Exception as exc:
            log.warning("%s failed: %s", name, exc)
            told = self._failed.notice(name, exc)
            if told:
                self.inline_notices.append(told)

    def note(self, notice: str) -> None:
        self.inline_notices.append(notice)

    def take_notices(self) -> list[str]:
        """What background jobs finished with since the last prompt; and, once a session, that the fast model
        gave replies with no usable JSON (counted by the model client: coop/model/json_modes.py), so a local model
        that cannot extract is never silent."""
        notices, self.inline_notices = self.inline_notices, []
        notices += self.worker.take_notices() if self.worker is not None else []
        unusable = getattr(self.jobs.complete, "unusable", 0)
        if unusable and not self._told_unusable:
            self._told_unusable = True
            notices.append(f"memory: the fast model returned no usable JSON {plural(unusable, 'time')}; facts from "
                           "those exchanges were not learned; see coop.log")
        return notices
