"""Provenance and durable memory jobs: what a fact came from, and what memory work is still owed.

`fact_sources` links a fact to the messages it was extracted from. The prompt uses the link to show a fact and
its source message once (the fact wins), and forgetting a fact reaches the messages that said it. `memory_jobs`
records the extraction of an exchange before it runs; the job deletes its row when it is done, so a process
that exits first (Ctrl-D while the fast model is thinking) leaves a row that the next start finishes. Rows hold
ids, never text: a job reads its messages when it runs, so a message forgotten in between is never extracted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from coop.memory.storage.facts import FactRecords
from coop.memory.storage.items import Item

MAX_JOB_ATTEMPTS = 3  # a job that failed this often is dropped (logged), so a poisoned row never blocks start-up


@dataclass(frozen=True)
class PendingJob:
    job_id: int
    kind: str
    session_id: int | None
    message_id: int
    reply_id: int | None
    attempts: int


class Links(FactRecords):
    """Provenance links and the durable job queue of one user."""

    def link_sources(self, fact_id: int, message_ids: Iterable[int]) -> None:
        """Record that fact `fact_id` rests on these messages (ids of other users' messages are ignored)."""
        for message_id in set(message_ids):
            self.db.execute("INSERT OR IGNORE INTO fact_sources (user_id, fact_id, message_id) SELECT ?, ?, id "
                            "FROM messages WHERE id = ? AND user_id = ?", (self.user_id, fact_id, message_id,
                                                                          self.user_id))

    def sources_of(self, fact_ids: Iterable[int]) -> dict[int, set[int]]:
        """Fact id -> the ids of the messages it was extracted from."""
        ids = sorted(set(fact_ids))
        found: dict[int, set[int]] = {}
        if not ids:
            return found
        marks = ",".join("?" * len(ids))
        for fact_id, message_id in self.db.execute(
                f"SELECT fact_id, message_id FROM fact_sources WHERE user_id = ? AND fact_id IN ({marks})",
                (self.user_id, *ids)):
            found.setdefault(int(fact_id), set()).add(int(message_id))
        return found

    def facts_from_messages(self, message_ids: Iterable[int]) -> dict[int, list[Item]]:
        """Message id -> the facts (active or not) extracted from it."""
        ids = sorted(set(message_ids))
        found: dict[int, list[Item]] = {}
        if not ids:
            return found
        rows = list(self.db.execute(f"SELECT message_id, fact_id FROM fact_sources WHERE user_id = ? AND message_id IN "
                                    f"({','.join('?' * len(ids))})", (self.user_id, *ids)))
        facts = self.get_many("fact", [int(r[1]) for r in rows])
        for message_id, fact_id in rows:
            if int(fact_id) in facts:
                found.setdefault(int(message_id), []).append(facts[int(fact_id)])
        return found

    # -- durable jobs -------------------------------------------------------------------------------------

    def record_job(self, kind: str, *, session_id: int | None, message_id: int, reply_id: int | None) -> int:
        return int(self.db.scalar(
            "INSERT INTO memory_jobs (user_id, kind, session_id, message_id, reply_id, created_at) "
            "VALUES (?,?,?,?,?,?) RETURNING id", (self.user_id, kind, session_id, message_id, reply_id, time.time())))

    def pending_jobs(self, limit: int = 100) -> list[PendingJob]:
        """Jobs recorded and not finished, oldest first."""
        return [PendingJob(int(r[0]), r[1], r[2], int(r[3]), r[4], int(r[5])) for r in self.db.execute(
            "SELECT id, kind, session_id, message_id, reply_id, attempts FROM memory_jobs WHERE user_id = ? "
            "ORDER BY id LIMIT ?", (self.user_id, limit))]

    def job_attempted(self, job_id: int) -> int:
        """Count one more attempt (before the job runs, so a crash inside it counts too); returns the count."""
        return int(self.db.scalar("UPDATE memory_jobs SET attempts = attempts + 1 WHERE id = ? AND user_id = ? "
                                  "RETURNING attempts", (job_id, self.user_id)) or 0)

    def finish_job(self, job_id: int) -> None:
        self.db.execute("DELETE FROM memory_jobs WHERE id = ? AND user_id = ?", (job_id, self.user_id))
