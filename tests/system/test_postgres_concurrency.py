"""Many clients, one server: several processes for several users (and two "devices" of one user) write sessions,
messages and facts, embed and search, against one Postgres database at once, with no file lock; two claimers race
for the same durable jobs and each job is run once; a client SIGKILLed inside a transaction leaves nothing of it,
and its user's write lock goes with its session.

The clients are processes (multiprocessing with spawn: a fresh interpreter each, as separate `coop` commands are),
started together on an event. They report what they wrote; the database must hold exactly that."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections import Counter
from typing import Any

import pytest

from coop.memory.storage.backends import open_store
from coop.memory.storage.links import JOB_LEASE_SECONDS

SPAWN = multiprocessing.get_context("spawn")
SECONDS = 4.0            # how long the writers run, once all have started
USERS = ("ana", "bob", "cy")
DEVICES = ("laptop", "desktop")  # two clients of each user at once
KEYS = 4                 # keyed facts: both devices write new values for the same keys
START_TIMEOUT = 120.0    # spawned interpreters import coop (and numpy) before they are ready


# -- the clients (module-level: a spawned process imports this module to find them) -----------------------------


def _writer(url: str, user: str, device: str, ready: Any, go: Any, results: Any) -> None:
    """One client of `user`: sessions, messages (some imported under ids the other device imports too), keyed
    facts, embedding and search, until SECONDS have passed; reports what it wrote, and every error."""
    report: dict[str, Any] = {"user": user, "device": device, "counts": Counter(), "shared_sessions": set(),
                              "imported": set(), "errors": [], "foreign_hits": []}
    try:
        from coop.memory.growth.embedders import HashEmbedder
        from coop.memory.growth.embedding import embed_pending
        from coop.memory.retrieval.search import search

        embedder = HashEmbedder(64)
        store = open_store("postgres", url)
        memory = store.user(user)
        ready.set()
        if not go.wait(START_TIMEOUT):
            raise RuntimeError("never told to start")
        deadline = time.monotonic() + SECONDS
        i = 0
        session_id = shared_id = 0
        while time.monotonic() < deadline:
            try:
                if i % 10 == 0:
                    session_id = memory.sessions.start(f"{user} {device} session {i}")
                    report["counts"]["sessions"] += 1
                    shared = f"shared-{i // 10}"  # both devices import this session: one row
                    shared_id = memory.sessions.start(f"{user} shared", external_id=shared)
                    report["shared_sessions"].add(shared)
                if memory.messages.add(session_id, "user", f"{user} on the {device} says line {i} about kites"):
                    report["counts"]["messages"] += 1
                memory.messages.add(shared_id, "user", f"{user} imported line {i} about kites",
                                    external_id=f"imported-{i}")  # the other device imports the same: one row
                report["imported"].add(f"imported-{i}")
                memory.facts.add(f"{user} chose option {device} {i}", category="preference", key=f"choice-{i % KEYS}")
                report["counts"]["facts"] += 1
                if i % 4 == 0:
                    embed_pending(memory, embedder)
                if i % 3 == 0:
                    for hit in search(memory, "kites option", embedder=embedder, limit=8).hits:
                        if not hit.item.text.startswith(f"{user} "):
                            report["foreign_hits"].append(hit.item.text)
            except Exception:
                report["errors"].append(traceback.format_exc())
            i += 1
        store.close()
    except Exception:
        report["errors"].append(traceback.format_exc())
    finally:
        ready.set()
        results.put(report)


def _claimer(backend: str, location: str, user: str, job_ids: list[int], ready: Any, go: Any, results: Any) -> None:
    """Claim every one of `job_ids` (each client in the same order, so they collide on every row); report the
    ones this client got."""
    got: list[int] = []
    errors: list[str] = []
    try:
        store = open_store(backend, location)
        jobs = store.user(user).jobs
        ready.set()
        if not go.wait(START_TIMEOUT):
            raise RuntimeError("never told to start")
        for job_id in job_ids:
            try:
                if jobs.claim(job_id) is not None:
                    got.append(job_id)
            except Exception:
                errors.append(traceback.format_exc())
        store.close()
    except Exception:
        errors.append(traceback.format_exc())
    finally:
        ready.set()
        results.put({"got": got, "errors": errors})


def _killed_in_a_transaction(url: str, user: str, inside: Any) -> None:
    """Open a transaction on `user`'s memory, write several rows, say so, and wait to be killed."""
    store = open_store("postgres", url)
    memory = store.user(user)
    with memory.transaction():
        session_id = memory.sessions.start("never committed")
        for i in range(5):
            memory.messages.add(session_id, "user", f"uncommitted line {i}")
        memory.facts.add("uncommitted fact", category="preference", key="colour")
        memory.jobs.record("extraction", session_id=session_id, message_id=1, reply_id=None)
        inside.set()
        time.sleep(600)  # SIGKILLed long before


# -- helpers --------------------------------------------------------------------------------------------------------


def _start_together(targets: list[tuple[Any, tuple[Any, ...]]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Start one process per (target, args), let them all go at once, and collect one report from each."""
    go, results = SPAWN.Event(), SPAWN.Queue()
    readies, processes = [], []
    for target, args in targets:
        ready = SPAWN.Event()
        process = SPAWN.Process(target=target, args=(*args, ready, go, results), daemon=True)
        process.start()
        readies.append(ready)
        processes.append(process)
    try:
        for ready in readies:
            assert ready.wait(START_TIMEOUT), "a client did not start"
        go.set()
        reports = [results.get(timeout=START_TIMEOUT + SECONDS * 10) for _ in processes]
        for process in processes:
            process.join(30)
            assert process.exitcode == 0, process.exitcode
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
    return processes, reports


def _record_jobs(store: Any, user: str, count: int) -> list[int]:
    memory = store.user(user)
    session_id = memory.sessions.start("jobs")
    ids = []
    for i in range(count):
        message_id = memory.messages.add(session_id, "user", f"message {i} to learn from")
        ids.append(memory.jobs.record("extraction", session_id=session_id, message_id=message_id, reply_id=None))
    return ids


def _claim_race(backend: str, location: str, store: Any, *, claimers: int = 3, jobs: int = 200) -> None:
    job_ids = _record_jobs(store, "ana", jobs)
    _, reports = _start_together([(_claimer, (backend, location, "ana", job_ids))] * claimers)
    assert [r["errors"] for r in reports] == [[]] * claimers, reports
    everything = [job_id for r in reports for job_id in r["got"]]
    assert sorted(everything) == sorted(job_ids)  # every job claimed, and none twice
    assert sum(1 for r in reports if r["got"]) >= 1
    memory = store.user("ana")
    rows = memory.jobs.pending(1000)
    assert [j.attempts for j in rows] == [1] * jobs and all(j.claimed_at is not None for j in rows)
    assert memory.jobs.pending(1000, unclaimed=True) == []  # all held now
    later = time.time() + JOB_LEASE_SECONDS + 1  # every claimer died: after the lease the jobs are free again
    assert len(memory.jobs.pending(1000, unclaimed=True, now=later)) == jobs
    again = memory.jobs.claim(job_ids[0], now=later)
    assert again is not None and again.attempts == 2
    assert memory.jobs.claim(job_ids[0], now=later + 1) is None  # held again, by the new claimer
    memory.jobs.release(again)
    assert memory.jobs.claim(job_ids[0], now=later + 2) is not None  # given back: free at once


# -- the tests ------------------------------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.slow
def test_many_clients_of_many_users_write_one_server_at_once(postgres_url):
    store = open_store("postgres", postgres_url)  # makes the schema before the clients start
    try:
        _, reports = _start_together([(_writer, (postgres_url, user, device))
                                      for user in USERS for device in DEVICES])
        assert [r["errors"] for r in reports] == [[]] * len(reports), "\n".join(
            e for r in reports for e in r["errors"])
        assert [r["foreign_hits"] for r in reports] == [[]] * len(reports)
        db = store.db
        for user in USERS:
            mine = [r for r in reports if r["user"] == user]
            counts = sum((r["counts"] for r in mine), Counter())
            shared = set().union(*(r["shared_sessions"] for r in mine))
            imported = set().union(*(r["imported"] for r in mine))
            assert counts["facts"] >= KEYS * len(DEVICES), counts  # enough turns for every key to collide

            def count(sql: str, *params: Any, user: str = user) -> int:
                return int(db.run(sql, (user, *params))[0][0])

            assert count("SELECT count(*) FROM sessions WHERE user_id = %s AND external_id IS NULL") == \
                counts["sessions"]
            assert count("SELECT count(*) FROM sessions WHERE user_id = %s AND external_id IS NOT NULL") == len(shared)
            assert count("SELECT count(*) FROM messages WHERE user_id = %s AND external_id IS NULL") == \
                counts["messages"]
            assert count("SELECT count(DISTINCT external_id) FROM messages WHERE user_id = %s") == len(imported)
            assert count("SELECT count(*) FROM messages WHERE user_id = %s AND external_id IS NOT NULL") == \
                len(imported)
            assert count("SELECT count(*) FROM facts WHERE user_id = %s") == counts["facts"]
            active = db.run("SELECT key, count(*) FROM facts WHERE user_id = %s AND superseded_at IS NULL "
                            "AND archived_at IS NULL GROUP BY key ORDER BY key", (user,))
            assert [(key, int(n)) for key, n in active] == [(f"choice-{k}", 1) for k in range(KEYS)]
            # each user's rows are that user's alone, and reachable as that user only
            assert count("SELECT count(*) FROM messages WHERE user_id = %s AND content NOT LIKE %s", f"{user} %") == 0
            assert count("SELECT count(*) FROM facts WHERE user_id = %s AND value NOT LIKE %s", f"{user} %") == 0
            assert count("SELECT count(*) FROM sessions WHERE user_id = %s AND title NOT LIKE %s", f"{user} %") == 0
            own = store.user(user)
            seen = {row[0] for row in own.db.execute("SELECT DISTINCT user_id FROM messages")}
            assert seen == {user}  # row-level security: a user's handle sees no one else's rows
            assert own.stats()["facts_active"] == KEYS
        assert sorted(store.user_ids()) == sorted(USERS)
        assert [f for f in store.check() if f.severity == "error"] == []
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_claimers_racing_on_postgres_run_each_job_once(postgres_url):
    store = open_store("postgres", postgres_url)
    try:
        _claim_race("postgres", postgres_url, store)
    finally:
        store.close()


@pytest.mark.slow
def test_claimers_racing_on_sqlite_run_each_job_once(tmp_path):
    location = str(tmp_path / "coop.db")
    store = open_store("sqlite", location)
    try:
        _claim_race("sqlite", location, store)
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_client_killed_inside_a_transaction_leaves_nothing_and_no_lock(postgres_url):
    store = open_store("postgres", postgres_url)
    try:
        memory = store.user("ana")
        memory.facts.add("likes green", category="preference", key="colour")  # committed before
        inside = SPAWN.Event()
        child = SPAWN.Process(target=_killed_in_a_transaction, args=(postgres_url, "ana", inside), daemon=True)
        child.start()
        try:
            assert inside.wait(START_TIMEOUT), "the child never got inside its transaction"
            held = store.db.run("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
            assert held[0][0] >= 1  # the child holds ana's write lock
            assert child.pid is not None
            os.kill(child.pid, signal.SIGKILL)
            child.join(30)
        finally:
            if child.is_alive():
                child.kill()
        assert child.exitcode == -signal.SIGKILL
        # none of the child's rows
        for table, rows in (("sessions", 0), ("messages", 0), ("facts", 1), ("memory_jobs", 0)):
            assert store.db.run(f"SELECT count(*) FROM {table}")[0][0] == rows, table
        assert [f.text for f in memory.facts.active()] == ["likes green"]
        # ana can be written at once: the lock went with the dead session
        store.db.run("SET lock_timeout = '20s'")  # a lock that is never freed fails the test, not hangs it
        started = time.monotonic()
        memory.facts.add("likes blue", category="preference", key="colour")
        assert time.monotonic() - started < 5.0
        assert [f.text for f in memory.facts.active()] == ["likes blue"]
        assert [f for f in store.check() if f.severity == "error"] == []
    finally:
        store.close()
