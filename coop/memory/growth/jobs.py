"""The memory jobs that follow a chat turn or an import: embedding, fact extraction, consolidation.

Each job is built from plain values (a user id, the config, the fast model's `complete`, the embedder) and takes
the database connection it runs on, so it can run on the background worker's thread with the worker's own
connection. A job returns a one-line notice for the user (or None); it never prints. `MemoryJobs` holds what
every job needs; `coop.services` builds it with the configured fast model, so the engine never imports litellm.

Other clients may work on the same user's memory at once (another `coop chat`, `coop mcp`, on this machine or, on
a Postgres server, another): an extraction runs only once its job is claimed (`links.Jobs.claim`), and one another
client holds is skipped; consolidation writes a span only if no other client consolidated it first
(`consolidate.consolidate_span`); two clients embedding the same new items at once only waste the work (the
second store of an item's vector replaces the first, in one transaction), so embedding claims nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from coop.memory.embedder import Embedder
from coop.memory.growth.changes import model_asker
from coop.memory.growth.consolidate import consolidate
from coop.memory.growth.embedding import embed_pending
from coop.memory.growth.extract import Complete, ExtractionContext, extract_facts
from coop.memory.growth.reconcile import FactWriter
from coop.memory.growth.refusals import as_kept, gathered
from coop.memory.kinds import INSTRUCTION
from coop.memory.storage.interface import Backend, UserStore
from coop.memory.storage.items import JOB_LEASE_SECONDS, MAX_JOB_ATTEMPTS, FactWrite, JobClaim, PendingJob
from coop.memory.text import plural, shorten

if TYPE_CHECKING:
    from coop.config.loading import Config
    from coop.memory.growth.candidate import Candidate

log = logging.getLogger(__name__)

Job = Callable[[Backend], "str | None"]


@dataclass
class MemoryJobs:
    """Builds the fact writer and the background jobs for one configuration."""

    config: "Config"
    complete: Complete | None                   # the fast model, or None when no model is configured
    embedder: Callable[[], Embedder | None]     # called when a job needs it (it may still be loading)
    stopping: threading.Event = field(default_factory=threading.Event)  # set at exit: jobs stop between batches
    host_may_instruct: bool = False  # an MCP host installed with --allow-instructions (`coop mcp`)
    _held: dict[tuple[str, int], JobClaim] = field(default_factory=dict, repr=False)  # claims a job is running
    _holding: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def writer(self, memory: UserStore, embedder: Embedder | None = None) -> FactWriter:
        """The one fact write pipeline, with the fast model for the one question the table of slots cannot
        answer, when there is a model."""
        return FactWriter(memory, self.config.memory.extraction,
                          embedder=embedder if embedder is not None else self.embedder(),
                          ask=model_asker(self.complete) if self.complete else None,
                          host_may_instruct=self.host_may_instruct)

    def embedding(self, user_id: str) -> Job:
        """Vectors for the user's messages that have none. The embedder is asked for inside the job, on the
        worker, so that submitting never waits for a model that is still loading."""
        batch_size = self.config.memory.embedder.batch_size

        def run(store: Backend) -> str | None:
            embedder = self.embedder()
            if embedder is not None:
                embed_pending(store.user(user_id), embedder, batch_size=batch_size, should_stop=self.stopping.is_set)
            return None

        return run

    def extraction(self, user_id: str, job_id: int) -> Job:
        """The recorded extraction `job_id` (see `UserMemory.record_job`): facts from one exchange, through the
        write pipeline, linked to the user's message. A failure anywhere changes nothing; the row stays for the
        next start (at most `MAX_JOB_ATTEMPTS` tries)."""

        def run(store: Backend) -> str | None:
            memory = store.user(user_id)
            job = memory.jobs.get(job_id)
            return None if job is None or self.complete is None else self._extract(memory, job)

        return ClaimingJob(run, self)

    def pending(self, user_id: str, limit: int = 20) -> Job:
        """At start: the extractions a previous process recorded and did not finish (it exited first), except
        those another client is running now."""

        def run(store: Backend) -> str | None:
            memory = store.user(user_id)
            notices = []
            for job in memory.jobs.pending(limit, unclaimed=True) if self.complete is not None else []:
                if self.stopping.is_set():
                    break
                notice = self._extract(memory, job)
                if notice:
                    notices.append(notice.removeprefix("memory: "))
            return "memory: " + "; ".join(notices) if notices else None

        return ClaimingJob(run, self)

    def release_claims(self, store: Backend) -> int:
        """Give back the jobs this process's extractions hold (called at exit, on a handle of the caller's own,
        when the worker was left inside one): the next start finishes them at once, not after the lease."""
        with self._holding:
            held = list(self._held.items())
        for (user_id, _), claim in held:
            store.user(user_id).jobs.release(claim)
        return len(held)

    def _extract(self, memory: UserStore, job: PendingJob) -> str | None:
        assert self.complete is not None
        claim = memory.jobs.claim(job.job_id)
        if claim is None:  # another client runs it now (or finished it since it was listed)
            log.debug("extraction of m%d is another client's; skipped", job.message_id)
            return None
        if claim.attempts > MAX_JOB_ATTEMPTS:
            log.warning("extraction of m%d failed %d times; given up", job.message_id, MAX_JOB_ATTEMPTS)
            memory.jobs.finish(job.job_id)
            return None
        held = (memory.user_id, job.job_id)
        with self._holding:
            self._held[held] = claim
        try:
            return self._run_extraction(memory, job)
        except BaseException:
            try:  # the next start, or another client, may try again at once
                memory.jobs.release(claim)
            except Exception as exc:
                log.warning("giving back the extraction of m%d failed (another client takes it in %d min): %s",
                            job.message_id, JOB_LEASE_SECONDS // 60, exc)
            raise
        finally:
            with self._holding:
                self._held.pop(held, None)

    def _run_extraction(self, memory: UserStore, job: PendingJob) -> str | None:
        assert self.complete is not None
        texts = memory.get_many("message", [job.message_id])
        if job.message_id not in texts:  # forgotten since: nothing to learn from it
            memory.jobs.finish(job.job_id)
            return None
        user_text = texts[job.message_id].text
        context = ExtractionContext(today=datetime.now().strftime("%A %Y-%m-%d"),
                                    earlier=earlier_turns(memory, job.message_id))
        settings = self.config.memory.extraction
        source = "host" if memory.sources.host_messages([job.message_id]) else "extraction"  # an MCP host's account
        with gathered() as refused:
            done = self._learn(memory, job, user_text, extract_facts(
                self.complete, user_text, settings.max_facts_per_turn, context, source))
        memory.refusals.keep(as_kept(refused, source, [job.message_id], job.session_id))
        memory.jobs.finish(job.job_id)
        return "memory: " + "; ".join(done) if done else None

    def _learn(self, memory: UserStore, job: PendingJob, user_text: str, candidates: list[Candidate]) -> list[str]:
        """Write what the exchange's candidates change, at most `max_changes_per_turn` changes; returns the
        notices."""
        settings = self.config.memory.extraction
        writer = self.writer(memory)
        done: list[str] = []
        changes = 0
        for plan in writer.plan_exchange(candidates, user_text):
            candidate = plan.candidate
            if plan.action in CHANGES and changes >= settings.max_changes_per_turn:
                log.info("extraction: more than %d changes in one exchange; one was not applied",
                         settings.max_changes_per_turn)
                log.debug("extraction: not applied: %r", candidate.value)
                continue
            result = writer.apply(plan)
            if result is None:
                continue
            if result.action != "RETIRE":  # (a retired fact keeps the sources it had)
                memory.sources.link(result.fact_id, [job.message_id], quote=candidate.evidence)
            writer.said_together.add(result.fact_id)
            if result.action == "MERGE":
                continue
            changes += result.action in CHANGES
            done.append(describe_change(memory, result))
        return done

    def consolidation(self, user_id: str, *, session_id: int | None = None, ended: bool = False) -> Job:
        def run(store: Backend) -> str | None:
            memory = store.user(user_id)
            embedder = self.embedder()
            report = consolidate(memory, self.config, self.complete, self.writer(memory, embedder),
                                 session_id=session_id, ended=ended)
            if embedder is not None and report.summaries:
                embed_pending(memory, embedder, kinds=("summary",))
            return report.notice()

        return run

    def end_session(self, user_id: str, session_id: int) -> Job:
        """End a session (after an idle spell) and consolidate it, on the worker's connection."""
        consolidation = self.consolidation(user_id, session_id=session_id, ended=True)

        def run(store: Backend) -> str | None:
            store.user(user_id).sessions.end(session_id)
            return consolidation(store)

        return run


class ClaimingJob:
    """A job that may hold extraction claims while it runs. When the process leaves while the worker is still
    inside it (a slow model at exit), the worker calls `abandoned` from the exiting thread with a handle of its
    own, and the claims are given back: the next start finishes the extraction rather than skipping it, as held
    by another client, for `JOB_LEASE_SECONDS`."""

    def __init__(self, run: Job, jobs: MemoryJobs) -> None:
        self.run = run
        self.jobs = jobs

    def __call__(self, store: Backend) -> str | None:
        return self.run(store)

    def abandoned(self, store: Backend) -> None:
        self.jobs.release_claims(store)


CHANGES = ("UPDATE", "SUPERSEDE", "RETIRE")
EARLIER_TURNS = 6   # messages of the session before the exchange, shown to the extractor to resolve "she"


def earlier_turns(memory: UserStore, message_id: int) -> list[tuple[str, str]]:
    """The conversation just before a message: (role, text) of its session's user and assistant lines."""
    before = memory.messages.around(message_id, before=EARLIER_TURNS, after=0)[:-1]
    return [(m.role or "user", m.text) for m in before if m.role in ("user", "assistant") and m.text.strip()]


HOST_FACTS_SHOWN = 3  # a chat's first notice names this many of an MCP host's facts; review lists them all


def host_facts_notice(memory: UserStore) -> str | None:
    """What MCP hosts wrote since the user last reviewed memory, for the start of a chat: the host's, never the
    user's own words, each with its undo (shown at every start until `coop memory review` looks at them)."""
    from coop.memory.kinds import HOST

    learned = [entry for entry in memory.sources.learned_since(memory.sources.reviewed_at(), (HOST,))
               if entry.item.source == HOST]
    if not learned:
        return None
    shown = "; ".join(f"{e.item.ref} “{shorten(e.item.text, 60)}” (undo: coop memory undo {e.item.ref})"
                      for e in learned[-HOST_FACTS_SHOWN:])
    more = f" and {len(learned) - HOST_FACTS_SHOWN} more" if len(learned) > HOST_FACTS_SHOWN else ""
    return (f"an MCP host wrote {plural(len(learned), 'fact')} since your last review: {shown}{more}; "
            "look them over with coop memory review")


def describe_change(memory: UserStore, result: FactWrite) -> str:
    """One change for the user to see at the next prompt, with how to take it back. A standing instruction that
    replaces another says so in words, old and new: it changes every later reply."""
    fact = memory.get("fact", result.fact_id)
    shown = shorten(fact.text, 80)
    ref = f"f{result.fact_id}"
    if fact.category == INSTRUCTION and result.action == "RETIRE":
        return f"standing instruction dropped: “{shown}” ({ref}; undo: coop memory undo {ref})"
    if fact.category == INSTRUCTION and result.action in CHANGES:
        old = memory.facts.history(result.fact_id)[-1].old_value if result.action == "UPDATE" else \
            memory.get("fact", result.previous_id).text if result.previous_id is not None else None
        was = f"“{shorten(old, 80)}” -> " if old else ""
        return f"standing instruction changed: {was}“{shown}” ({ref}; undo: coop memory undo {ref})"
    what = {"ADD": f"{ref} added", "UPDATE": f"{ref} updated", "RETIRE": f"{ref} no longer holds",
            "SUPERSEDE": f"{ref} replaces f{result.previous_id}"}.get(result.action, f"{ref} {result.action.lower()}")
    return f"{what}: “{shown}” (undo: coop memory undo {ref})"

