"""Provenance and durable memory jobs: what a fact came from, and what memory work is still owed.

`fact_sources` links a fact to the messages it was extracted from. The prompt uses the link to show a fact and
its source message once (the fact wins), and forgetting a fact reaches the messages that said it. `memory_jobs`
records the extraction of an exchange before it runs; the job deletes its row when it is done, so a process
that exits first (Ctrl-D while the fast model is thinking) leaves a row that the next start finishes. Rows hold
ids, never text: a job reads its messages when it runs, so a message forgotten in between is never extracted.

Several clients may share one store (two `coop chat`s, `coop mcp`, on one machine or, on a Postgres server, on
several), and each finishes the jobs it finds at start: a job is claimed before it runs (`Jobs.claim`), by one
conditional UPDATE that both engines run atomically, so exactly one client runs it; no transaction stays open
while the model thinks. A claim is a lease: a claimer that died (killed, its machine asleep) cannot give it
back, so after `JOB_LEASE_SECONDS` the job is free again.

The review mark (`users.reviewed_at`) lives here too: it says which facts a person has already looked over, so
`coop memory review` shows only what memory learned since, with where each fact came from.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from coop.memory.kinds import active_fact
from coop.memory.storage.items import (
    FACT_COLUMNS,
    JOB_LEASE_SECONDS,
    Item,
    JobClaim,
    Learned,
    PendingJob,
    Provenance,
    fact_item,
)
from coop.memory.storage.scope import Part, in_chunks
from coop.memory.storage.sql import marks
from coop.memory.text import grapheme_start
from coop.privacy.secrets import mask

MAX_QUOTE_CHARS = 1000


class Sources(Part):
    """Where one user's facts came from (`memory.sources`): the messages and quotes they were learned from, and
    the review mark."""

    def link(self, fact_id: int, message_ids: Iterable[int], quote: str | None = None) -> None:
        """Record that fact `fact_id` rests on these messages (ids of other users' messages are ignored), with
        the user's words it quoted as evidence (kept on the first link; a later mention does not replace it)."""
        quote = mask(quote[:grapheme_start(quote, MAX_QUOTE_CHARS)]) if quote else None
        for message_id in set(message_ids):
            self.db.execute("INSERT INTO fact_sources (user_id, fact_id, message_id, quote) SELECT $1, $2, id, $3 "
                            "FROM messages WHERE id = $4 AND user_id = $5 ON CONFLICT (fact_id, message_id) DO UPDATE "
                            "SET quote = coalesce(fact_sources.quote, excluded.quote)",
                            (self.user_id, fact_id, quote, message_id, self.user_id))

    def provenance(self, fact_id: int) -> list[Provenance]:
        """The messages a fact was learned from, oldest first, each with the quote it rested on."""
        return [Provenance(int(r[0]), r[1], r[2], r[3], float(r[4]), r[5], r[6]) for r in self.db.execute(
            "SELECT m.id, m.session_id, m.role, m.content, m.created_at, m.origin, s.quote FROM fact_sources s "
            "JOIN messages m ON m.id = s.message_id AND m.user_id = s.user_id "
            "WHERE s.user_id = $1 AND s.fact_id = $2 ORDER BY m.id", (self.user_id, fact_id))]

    def quotes_of(self, fact_ids: Iterable[int]) -> dict[int, list[tuple[int, str | None]]]:
        """Fact id -> (message id, quote) of each source link: what an export carries."""
        ids = sorted(set(fact_ids))
        found: dict[int, list[tuple[int, str | None]]] = {}
        for chunk in in_chunks(ids):
            for fact_id, message_id, quote in self.db.execute(
                    f"SELECT fact_id, message_id, quote FROM fact_sources WHERE user_id = $1 AND fact_id IN "
                    f"({marks(len(chunk), first=2)}) ORDER BY fact_id, message_id", (self.user_id, *chunk)):
                found.setdefault(int(fact_id), []).append((int(message_id), quote))
        return found

    def host_messages(self, message_ids: Iterable[int]) -> set[int]:
        """Those of `message_ids` that an MCP host recorded (`origin` host)."""
        ids = sorted(set(message_ids))
        if not ids:
            return set()
        return {int(r[0]) for r in self.db.execute(
            f"SELECT id FROM messages WHERE {self.sql.no_index}user_id = $1 AND origin = 'host' "
            f"AND id IN ({marks(len(ids), first=2)})",
            (self.user_id, *ids))}

    def of_facts(self, fact_ids: Iterable[int]) -> dict[int, set[int]]:
        """Fact id -> the ids of the messages it was extracted from."""
        ids = sorted(set(fact_ids))
        found: dict[int, set[int]] = {}
        if not ids:
            return found
        for fact_id, message_id in self.db.execute(
                f"SELECT fact_id, message_id FROM fact_sources WHERE user_id = $1 "
                f"AND fact_id IN ({marks(len(ids), first=2)})",
                (self.user_id, *ids)):
            found.setdefault(int(fact_id), set()).add(int(message_id))
        return found

    def facts_from_messages(self, message_ids: Iterable[int]) -> dict[int, list[Item]]:
        """Message id -> the facts (active or not) extracted from it."""
        ids = sorted(set(message_ids))
        found: dict[int, list[Item]] = {}
        if not ids:
            return found
        rows = list(self.db.execute(f"SELECT message_id, fact_id FROM fact_sources WHERE user_id = $1 "
                                    f"AND message_id IN ({marks(len(ids), first=2)})", (self.user_id, *ids)))
        facts = self.memory.get_many("fact", [int(r[1]) for r in rows])
        for message_id, fact_id in rows:
            if int(fact_id) in facts:
                found.setdefault(int(message_id), []).append(facts[int(fact_id)])
        return found

    def reviewed_at(self) -> float | None:
        """When the user's last review (`coop memory review`) reached; None before the first."""
        found = self.db.scalar("SELECT reviewed_at FROM users WHERE id = $1", (self.user_id,))
        return None if found is None else float(found)

    def mark_reviewed(self, at: float) -> None:
        """Record that the user has reviewed what memory learned up to `at`. Never moves the mark back (two
        reviews at once, or one that stopped early, cannot bring back what another one settled)."""
        with self.db.atomic():
            self.ensure_user()
            self.db.execute(f"UPDATE users SET reviewed_at = {self.sql.greatest}(coalesce(reviewed_at, $1), $1) "
                            "WHERE id = $2", (at, self.user_id))

    def learned_since(self, since: float | None, sources: Iterable[str] | None, *,
                      limit: int = 10_000) -> list[Learned]:
        """Active facts whose text changed (ADD or UPDATE in their history) after `since`, oldest change first.
        Only facts with one of `sources`, except that a fact rewritten in place counts whatever its source (the
        fact pipeline may refine a fact the user stated). `since` None: every active fact (`sources` None: any
        source), each dated by its latest change, or its creation when it has no history."""
        wanted = tuple(sorted(set(sources))) if sources is not None else None
        params: list[Any] = [self.user_id, limit]
        after = ""
        if since is not None:
            params.append(since)
            after = f"AND created_at > ${len(params)}"
        join = "JOIN" if since is not None else "LEFT JOIN"
        of_source = ""
        if wanted is not None:
            of_source = f"AND (f.source IN ({marks(len(wanted), first=len(params) + 1)}) OR coalesce(h.updated, 0) = 1)"
            params += wanted
        rows = self.db.execute(
            f"SELECT {FACT_COLUMNS}, coalesce(h.at, f.created_at), coalesce(h.updated, 0), coalesce(h.added, 1) "
            f"FROM facts f {join} (SELECT fact_id, max(created_at) AS at, "
            "max(CASE WHEN action = 'UPDATE' THEN 1 ELSE 0 END) AS updated, "
            "max(CASE WHEN action = 'ADD' THEN 1 ELSE 0 END) AS added FROM fact_history "
            f"WHERE user_id = $1 AND action IN ('ADD', 'UPDATE') {after} GROUP BY fact_id) h ON h.fact_id = f.id "
            f"WHERE f.user_id = $1 AND {active_fact('f')} {of_source} ORDER BY 16, f.id LIMIT $2", params)
        return [Learned(fact_item(r[:15]), float(r[15]), "UPDATE" if r[16] and not r[17] else "ADD") for r in rows]


class Jobs(Part):
    """One user's durable memory jobs (`memory.jobs`): recorded before they run, claimed by the one client that
    runs each (see the module's docstring), deleted when done."""

    _COLUMNS = "id, kind, session_id, message_id, reply_id, attempts, claimed_at"

    def record(self, kind: str, *, session_id: int | None, message_id: int, reply_id: int | None) -> int:
        return int(self.db.scalar(
            "INSERT INTO memory_jobs (user_id, kind, session_id, message_id, reply_id, created_at) "
            "VALUES ($1,$2,$3,$4,$5,$6) RETURNING id",
            (self.user_id, kind, session_id, message_id, reply_id, time.time())))

    def pending(self, limit: int = 100, *, unclaimed: bool = False, now: float | None = None) -> list[PendingJob]:
        """Jobs recorded and not finished, oldest first; `unclaimed`: only those no client holds (never claimed,
        or claimed more than `JOB_LEASE_SECONDS` before `now`)."""
        free = ""
        params: tuple[object, ...] = (self.user_id, limit)
        if unclaimed:
            free = "AND (claimed_at IS NULL OR claimed_at < $3) "
            params = (self.user_id, limit, (time.time() if now is None else now) - JOB_LEASE_SECONDS)
        return [_job(r) for r in self.db.execute(
            f"SELECT {self._COLUMNS} FROM memory_jobs WHERE user_id = $1 {free}ORDER BY id LIMIT $2", params)]

    def get(self, job_id: int) -> PendingJob | None:
        """The job, or None once it is finished (or its message forgotten)."""
        row = self.db.one(f"SELECT {self._COLUMNS} FROM memory_jobs WHERE id = $1 AND user_id = $2",
                          (job_id, self.user_id))
        return None if row is None else _job(row)

    def claim(self, job_id: int, *, now: float | None = None) -> JobClaim | None:
        """Take the job to run it, counting one more attempt (before it runs, so a crash inside it counts too);
        None when another client holds it (claimed less than `JOB_LEASE_SECONDS` ago) or it is gone.

        One statement, no transaction held: SQLite runs it under its write lock, so a second claimer's UPDATE
        reads the first one's claim; in Postgres the second UPDATE waits on the row the first one changed and,
        once that commits, checks its WHERE again against the new row (READ COMMITTED), finds it claimed and
        changes nothing. Either way exactly one claimer gets the row back."""
        now = time.time() if now is None else now
        attempts = self.db.scalar(
            "UPDATE memory_jobs SET attempts = attempts + 1, claimed_at = $1 WHERE id = $2 AND user_id = $3 "
            "AND (claimed_at IS NULL OR claimed_at < $4) RETURNING attempts",
            (now, job_id, self.user_id, now - JOB_LEASE_SECONDS))
        return None if attempts is None else JobClaim(job_id, int(attempts), now)

    def release(self, claim: JobClaim) -> None:
        """Give a claimed job back unfinished (its run failed, or the process is leaving): the next start, here
        or on another client, may run it at once rather than after the lease. A claim that ran out and was taken
        by another client since is that client's, and stays."""
        self.db.execute("UPDATE memory_jobs SET claimed_at = NULL WHERE id = $1 AND user_id = $2 AND claimed_at = $3",
                        (claim.job_id, self.user_id, claim.claimed_at))

    def finish(self, job_id: int) -> None:
        self.db.execute("DELETE FROM memory_jobs WHERE id = $1 AND user_id = $2", (job_id, self.user_id))


def _job(row: Any) -> PendingJob:
    return PendingJob(int(row[0]), row[1], row[2], int(row[3]), row[4], int(row[5]),
                      None if row[6] is None else float(row[6]))
