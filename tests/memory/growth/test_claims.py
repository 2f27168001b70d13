"""Several clients of one store (issue: many clients at once): an extraction job runs only once claimed, a job
another client holds is skipped, a failed or abandoned run gives its claim back; two clients consolidating the
same spans at once write one summary. On both backends (tests/memory/conftest.py)."""

from __future__ import annotations

import threading
import time

from coop.config.loading import load_config
from coop.memory.growth.consolidate import consolidate
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.jobs import MemoryJobs
from coop.memory.growth.reconcile import FactWriter
from coop.memory.growth.worker import BackgroundWorker
from coop.memory.storage.links import JOB_LEASE_SECONDS
from tests.notes import note, notes

EMBEDDER = HashEmbedder(64)
SAID = "I keep bees on my balcony"
FACTS = notes(note("Keeps bees", SAID, topic="hobby"))
SUMMARY = notes(note("Is going to Kyoto", "I am going to Kyoto", topic="plan"),
                summary="The user talked about a trip to Kyoto.")


def recorded_job(memory) -> int:
    session = memory.sessions.start()
    message = memory.messages.add(session, "user", SAID)
    reply = memory.messages.add(session, "assistant", "Lovely")
    return memory.jobs.record("extraction", session_id=session, message_id=message, reply_id=reply)


def jobs_with(complete) -> MemoryJobs:
    return MemoryJobs(load_config(), complete, lambda: EMBEDDER)


def test_a_job_another_client_holds_is_skipped_and_one_it_gave_up_is_run(memory):
    job_id = recorded_job(memory)
    other = memory.backend.reopen()  # another client of the same store
    try:
        held = other.user(memory.user_id).jobs.claim(job_id)
        assert held is not None and held.attempts == 1
        calls = []
        jobs = jobs_with(lambda messages: calls.append(1) or FACTS(messages))
        assert jobs.extraction(memory.user_id, job_id)(memory.backend) is None
        assert jobs.pending(memory.user_id)(memory.backend) is None
        assert calls == [] and memory.list_items("fact") == []  # never ran: the other client holds it
        assert memory.jobs.pending(unclaimed=True) == [] and len(memory.jobs.pending()) == 1
        other.user(memory.user_id).jobs.release(held)  # the other client gives it back
        notice = jobs.pending(memory.user_id)(memory.backend)
        assert notice is not None and "Keeps bees" in notice and calls == [1]
        assert memory.jobs.pending() == [] and [f.text for f in memory.list_items("fact")] == ["Keeps bees"]
    finally:
        other.close()


def test_a_claim_runs_out_after_the_lease(memory):
    job_id = recorded_job(memory)
    first = memory.jobs.claim(job_id)
    assert first is not None and memory.jobs.claim(job_id) is None
    later = first.claimed_at + JOB_LEASE_SECONDS + 1  # the first claimer died without a word
    second = memory.jobs.claim(job_id, now=later)
    assert second is not None and second.attempts == 2
    memory.jobs.release(first)  # the late first claimer's release does not free the second one's claim
    assert memory.jobs.claim(job_id, now=later + 1) is None


def test_a_failed_extraction_gives_its_claim_back(memory):
    job_id = recorded_job(memory)

    def broken(messages):
        raise RuntimeError("the model is gone")

    try:
        jobs_with(broken).extraction(memory.user_id, job_id)(memory.backend)
    except RuntimeError:
        pass
    [job] = memory.jobs.pending(unclaimed=True)  # free at once for the next start, with the attempt counted
    assert job.job_id == job_id and job.attempts == 1 and job.claimed_at is None


def test_an_extraction_abandoned_at_exit_gives_its_claim_back(memory):
    job_id = recorded_job(memory)
    inside, leave = threading.Event(), threading.Event()

    def slow(messages):
        inside.set()
        leave.wait(30)
        return FACTS(messages)

    worker = BackgroundWorker(memory.backend.reopen)
    jobs = jobs_with(slow)
    worker.submit("extract facts", jobs.extraction(memory.user_id, job_id))
    try:
        assert inside.wait(30)
        assert memory.jobs.pending(unclaimed=True) == []  # held while the model thinks
        worker.stop(timeout=0.2)  # the process leaves: the worker is abandoned inside the model call
        assert worker.alive
        assert [j.job_id for j in memory.jobs.pending(unclaimed=True)] == [job_id]  # the next start takes it
    finally:
        leave.set()
        worker.stop(timeout=10)


def ended_session(memory, words: str) -> None:
    session = memory.sessions.start()
    memory.messages.add(session, "user", f"I am going to Kyoto {words}")
    memory.messages.add(session, "assistant", "Sounds lovely")
    memory.sessions.end(session)


def test_two_clients_consolidating_the_same_spans_at_once_write_them_once(memory):
    ended_session(memory, "in April")
    ended_session(memory, "with Mia")
    config = load_config()
    other = memory.backend.reopen()
    other_memory = other.user(memory.user_id)
    reports = []

    def meanwhile(messages):
        """While this client's model writes the first summary, the other client consolidates everything."""
        if not reports:
            reports.append(consolidate(other_memory, config, lambda m: SUMMARY(m),
                                       FactWriter(other_memory, config.memory.extraction, embedder=EMBEDDER)))
        calls.append(time.time())
        return SUMMARY(messages)

    calls: list[float] = []
    try:
        mine = consolidate(memory, config, meanwhile, FactWriter(memory, config.memory.extraction, embedder=EMBEDDER))
    finally:
        other.close()
    assert reports[0].spans == 2 and not reports[0].errors
    assert mine.spans == 0 and not mine.errors and mine.notice() is None  # its span was taken: nothing written
    assert len(calls) == 1  # and it left the rest to the other client: no model call for the second span
    assert len(memory.list_items("summary")) == 2
    assert [f.text for f in memory.facts.active()] == ["Is going to Kyoto"]
    assert memory.messages.unconsolidated(written_before=time.time() + 60) == []
