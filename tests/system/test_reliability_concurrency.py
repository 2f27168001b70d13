"""Concurrency: several coop processes and the consolidation thread write one database at once. No "database is
locked" (or any other error) reaches the user, and N writes give exactly N rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.consolidate import consolidate
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.reconcile import FactWriter
from coop.memory.growth.worker import BackgroundWorker
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore
from tests._integrity import consistency_problems
from tests.notes import note, notes
from tests.scripted_model import said_in

EMBEDDER = HashEmbedder(64)


def background_model(body):
    """The fast model for every background job: summaries for consolidation, the notes of each chat message."""
    system = body["messages"][0]["content"]
    text = body["messages"][-1]["content"]
    if "consolidate a user's conversation history" in system:
        return notes(note("Chats about the weather", "about the weather"),
                     summary="The user chatted about numbered things.")(body)
    said = said_in(text)
    if said is not None and "chat message " in said:
        number = said.split("chat message ")[-1].split()[0]
        return notes(note(f"Sent chat message {number} about the weather", said))(body)
    return json.dumps({"notes": []})


def claude_export(conversations: int, per: int) -> list[dict]:
    return [{"uuid": f"conv-{c}", "name": f"Imported {c}", "created_at": "2024-03-01T10:00:00Z",
             "updated_at": "2024-03-01T11:00:00Z",
             "chat_messages": [{"uuid": f"imp-{c}-{i}", "sender": "human" if i % 2 == 0 else "assistant",
                                "text": f"imported message {c}-{i} about sailing and knots",
                                "created_at": "2024-03-01T10:00:00Z"} for i in range(per)]}
            for c in range(conversations)]


BAD_WORDS = ("locked", "busy", "failed", "Traceback", "error:", "unexpected")


@pytest.mark.slow
def test_a_chat_an_import_an_add_loop_and_consolidation_write_at_once(coop_home, tmp_path, openai_server):
    env = {**os.environ, "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash",
           "COOP_MEMORY_EMBEDDER_DIMS": "64", "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base}
    coop = [sys.executable, "-m", "coop"]
    # an existing database with its vector index (see test_the_first_vectors_of_two_processes_at_once below)
    first = subprocess.run([*coop, "memory", "add", "I have used coop before", "--user", "sam"], env=env,
                           capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr.decode()
    openai_server.default_reply = "ok, noted"
    openai_server.background_default = background_model
    turns = 12
    lines = []
    for i in range(turns):
        lines.append(f"chat message {i} about the weather")
        if i % 4 == 3:
            lines.append("/end")  # the session ends: the worker thread consolidates it while the others write
    export = tmp_path / "conversations.json"
    conversations, per = 20, 30
    export.write_text(json.dumps(claude_export(conversations, per)), encoding="utf-8")
    adds = 4

    chat = subprocess.Popen([*coop, "chat", "--user", "sam", "--commands-from-pipe"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    importer = subprocess.Popen([*coop, "memory", "import", str(export), "--user", "sam", "--json"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    add_results: list[subprocess.CompletedProcess] = []

    def add_loop() -> None:
        for i in range(adds):
            add_results.append(subprocess.run([*coop, "memory", "add", f"added fact number {i} about owls",
                                               "--user", "sam"], env=env, capture_output=True, timeout=120))

    adder = threading.Thread(target=add_loop)
    adder.start()
    chat_out, chat_err = chat.communicate(("\n".join(lines) + "\n").encode(), timeout=300)
    import_out, import_err = importer.communicate(timeout=300)
    adder.join(300)

    assert chat.returncode == 0, chat_err.decode()
    assert importer.returncode == 0, import_err.decode()
    assert [r.returncode for r in add_results] == [0] * adds, [r.stderr.decode() for r in add_results]
    for err in [chat_err, import_err, *(r.stderr for r in add_results)]:
        text = err.decode()
        assert not [w for w in BAD_WORDS if w in text], text
    assert chat_out.decode().count("ok, noted") == turns
    report = json.loads(import_out)
    assert report["messages_added"] == conversations * per and report["problems"] == []

    db = open_database(str(coop_home / "coop.db"))
    try:
        memory = MemoryStore(db).user("sam")
        for i in range(turns):
            assert db.scalar("SELECT count(*) FROM messages WHERE user_id = 'sam' AND role = 'user' "
                             "AND content = ?", (f"chat message {i} about the weather",)) == 1
        assert db.scalar("SELECT count(*) FROM messages WHERE user_id = 'sam' AND role = 'assistant' "
                         "AND content = 'ok, noted'") == turns
        assert db.scalar("SELECT count(*) FROM messages WHERE user_id = 'sam' AND external_id LIKE 'claude:imp-%'") \
            == conversations * per
        assert db.scalar("SELECT count(*) FROM sessions WHERE user_id = 'sam' AND external_id LIKE 'claude:conv-%'") \
            == conversations
        for i in range(adds):
            assert memory.facts.find_exact(f"added fact number {i} about owls", "general") is not None
        assert db.scalar("SELECT count(*) FROM summaries WHERE user_id = 'sam'") >= 1  # consolidation ran too
    finally:
        db.close()
    assert consistency_problems(str(coop_home / "coop.db")) == []


def test_threads_with_their_own_connections_and_the_consolidation_worker(coop_home, openai_server):
    """N writers (as many connections) and the worker's consolidation runs at once: exact counts, no error."""
    path = str(coop_home / "coop.db")
    setup = open_database(path)
    config = apply_overrides(load_config(), {"memory.consolidation.span_messages": 10})
    summary = notes(note("Writes notes", "note"), summary="A span of numbered notes.")
    worker = BackgroundWorker(lambda: MemoryStore.open(path))
    writers, per_writer = 3, 120
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)

    def write(number: int) -> None:
        db = open_database(path)
        try:
            memory = MemoryStore(db).user("ana")
            fact_writer = FactWriter(memory, config.memory.extraction, embedder=EMBEDDER)
            session = memory.sessions.start()
            barrier.wait()
            for i in range(per_writer):
                memory.messages.add(session, "user", f"writer {number} note {i}")
                if i % 10 == 9:
                    memory.sessions.end(session)  # a finished span for consolidation
                    session = memory.sessions.start()
                if i % 4 == 0:
                    from coop.memory.growth.reconcile import Candidate

                    fact_writer.write(Candidate(f"writer {number} likes number {i}", source="user"))
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    def consolidation_job(store) -> None:
        memory = store.user("ana")
        report = consolidate(memory, config, summary,
                             FactWriter(memory, config.memory.extraction, embedder=EMBEDDER), ended=True)
        assert not report.errors, report.errors

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        worker.submit("consolidate", consolidation_job)
        worker.wait_idle(30)
    for thread in threads:
        thread.join(60)
    unconsolidated = ("SELECT count(*) FROM messages WHERE consolidated_at IS NULL AND session_id IN "
                      "(SELECT id FROM sessions WHERE ended_at IS NOT NULL)")
    for _ in range(20):  # each run is bounded (max_spans_per_run): after the writers stop, runs finish the rest
        worker.submit("consolidate", consolidation_job)
        assert worker.wait_idle(60)
        if setup.scalar(unconsolidated) == 0:
            break
    worker.stop()
    assert errors == []
    assert worker.failures == []
    memory = MemoryStore(setup).user("ana")
    for number in range(writers):
        for i in range(per_writer):
            assert setup.scalar("SELECT count(*) FROM messages WHERE content = ?", (f"writer {number} note {i}",)) == 1
        for i in range(0, per_writer, 4):
            assert memory.facts.find_exact(f"writer {number} likes number {i}", "general") is not None
    assert setup.scalar("SELECT count(*) FROM summaries") >= writers * per_writer // 10 - writers
    assert setup.scalar("SELECT count(*) FROM messages WHERE consolidated_at IS NULL AND session_id IN "
                        "(SELECT id FROM sessions WHERE ended_at IS NOT NULL)") == 0
    setup.close()
    assert consistency_problems(path) == []


def test_the_first_vectors_of_two_processes_at_once(coop_home, monkeypatch):
    """Two connections store the first vectors of an embedder at the same moment (each waits for the other's
    write lock, none fails), and every vector is there with its sign bits."""
    from coop.memory.growth import embedding
    from coop.memory.storage import vectors

    path = str(coop_home / "coop.db")
    setup = open_database(path)
    for user in ("ana", "bo"):
        memory = MemoryStore(setup).user(user)
        for i in range(20):
            memory.facts.add(f"{user} fact {i}")
    setup.close()
    original = vectors.store_vectors
    barrier = threading.Barrier(2)

    def in_step(*args, **kwargs):
        barrier.wait(10)  # both are about to write before either has: the race, made certain
        return original(*args, **kwargs)

    monkeypatch.setattr(vectors, "store_vectors", in_step)
    errors: list[BaseException] = []

    def embed(user: str) -> None:
        db = open_database(path)
        try:
            embedding.embed_pending(MemoryStore(db).user(user), EMBEDDER)
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=embed, args=(user,)) for user in ("ana", "bo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert consistency_problems(path) == []
    check = open_database(path)
    assert check.scalar("SELECT count(*) FROM embeddings") == 40
    check.close()
