"""Consolidation and the background worker: summaries and facts from finished spans, all or nothing (even under
kill -9), bounded runs, session end, idle end, notices, and a chat that never waits for any of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from coop.config.loading import apply_overrides, load_config
from coop.errors import ErrorKind, ModelError
from coop.memory.growth.consolidate import consolidate, find_spans
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.reconcile import FactWriter
from coop.memory.growth.worker import BackgroundWorker
from coop.memory.storage.database import open_database
from coop.memory.storage.fulltext import fulltext_problems
from coop.memory.storage.store import MemoryStore
from tests.notes import note, notes

EMBEDDER = HashEmbedder(64)
SUMMARY = notes(note("Is going to Kyoto in April", "I am going to Kyoto in April", topic="plan"),
                summary="Talked about a trip to Kyoto in April with Mia.")


def make_config(model, **overrides):
    """The config naming `model`: the in-process scripted model (whose api_base is never called) or the server."""
    values = {"model.name": "openai/test-model", "model.api_base": model.api_base, "model.timeout_seconds": 3.0}
    values.update(overrides)
    return apply_overrides(load_config(), values)


def ended_session(memory, texts=("I am going to Kyoto in April", "Sounds lovely", "With my friend Mia", "Nice")):
    session = memory.sessions.start()
    for i, text in enumerate(texts):
        memory.messages.add(session, "user" if i % 2 == 0 else "assistant", text)
    memory.sessions.end(session)
    return session


def run_consolidation(memory, config, model=None):
    """A consolidation run whose fast model is `model` (the in-process scripted one), or the configured one
    through litellm when None."""
    from coop.model.llm import fast_complete

    writer = FactWriter(memory, config.memory.extraction, embedder=EMBEDDER)
    return consolidate(memory, config, model if model is not None else fast_complete(config), writer)


def test_a_finished_span_becomes_a_summary_and_facts(memory, scripted):
    scripted.background_replies = [SUMMARY]
    session = ended_session(memory)
    report = run_consolidation(memory, make_config(scripted), scripted)
    assert report.spans == 1 and report.facts_written == 1 and not report.errors
    [summary] = memory.list_items("summary")
    assert summary.text == "Talked about a trip to Kyoto in April with Mia." and summary.session_id == session
    [fact] = memory.list_items("fact")
    assert fact.text == "Is going to Kyoto in April" and fact.source == "consolidation"
    assert memory.db.scalar("select count(*) from messages where consolidated_at is null") == 0
    sent = scripted.background_requests()[0]["messages"][1]["content"]
    assert "c1: I am going to Kyoto in April" in sent and "Assistant: Sounds lovely" in sent  # who said what
    assert run_consolidation(memory, make_config(scripted), scripted).spans == 0  # nothing left to do


def test_a_refusal_in_a_span_is_kept_under_the_message_its_note_cited(memory, scripted):
    """A span lists several of the user's messages: a note turned down is kept under the one whose clause it
    cited, with the clause's place in that message, as an exchange's refusal is (`coop memory why mN`)."""
    scripted.background_replies = [notes(note("Is married to Mia", "With my friend Mia", topic="partner"),
                                         summary="Talked about a trip to Kyoto in April with Mia.")]
    session = ended_session(memory)
    run_consolidation(memory, make_config(scripted), scripted)
    cited = next(m for m in memory.list_items("message") if m.text == "With my friend Mia")
    [kept] = memory.refusals.recent()
    assert (kept.message_id, kept.session_id, kept.source) == (cited.item_id, session, "consolidation")
    assert [cited.text[start:end] for start, end in kept.spans] == ["With my friend Mia"]


def test_open_recent_spans_wait_and_runs_are_bounded(memory, scripted):
    config = make_config(scripted, **{"memory.consolidation.max_spans_per_run": 2})
    open_session = memory.sessions.start()
    memory.messages.add(open_session, "user", "still talking")
    for _ in range(3):
        ended_session(memory)
    scripted.background_default = SUMMARY
    assert run_consolidation(memory, config, scripted).spans == 2
    assert run_consolidation(memory, config, scripted).spans == 1
    assert run_consolidation(memory, config, scripted).spans == 0
    still = memory.db.scalar("select consolidated_at from messages where session_id = $1", (open_session,))
    assert still is None
    spans = find_spans(memory, min_age_seconds=0, span_messages=3, limit=10, now=time.time() + 1)
    assert [len(s) for s in spans] == [1]


def test_long_sessions_are_split_into_spans(memory):
    ended_session(memory, texts=[f"line {i}" for i in range(7)])
    spans = find_spans(memory, min_age_seconds=0, span_messages=3, limit=10)
    assert [len(s) for s in spans] == [3, 3, 1]


@pytest.mark.parametrize("reply", ["no json here", '{"notes": []}', ModelError("server error: scripted", kind=ErrorKind.SERVER),
                                   '{"summary": 3}'])
def test_a_failed_span_stays_unconsolidated_and_is_redone(memory, scripted, reply):
    ended_session(memory)
    config = make_config(scripted)
    scripted.background_replies = [reply] * 3
    report = run_consolidation(memory, config, scripted)
    assert report.spans == 0 and report.errors
    assert memory.list_items("summary") == [] and memory.list_items("fact") == []
    assert memory.db.scalar("select count(*) from messages where consolidated_at is not null") == 0
    scripted.background_replies = [SUMMARY]
    assert run_consolidation(memory, config, scripted).spans == 1


def test_a_span_with_nothing_worth_summarising_gets_no_summary_and_blocks_nothing(memory, scripted):
    """"hi" / "hello!" comes back with an empty summary: the span is done (not failed, not retried), and the
    next run reaches the spans behind it."""
    trivial = ended_session(memory, texts=["hi", "hello!"])
    ended_session(memory, texts=["I adopted a cat named Miso", "Lovely name!"])
    config = make_config(scripted, **{"memory.consolidation.max_spans_per_run": 1})
    scripted.background_replies = ['{"summary": "", "notes": []}']
    first = run_consolidation(memory, config, scripted)
    assert (first.spans, first.summaries, first.errors) == (1, [], [])
    assert memory.list_items("summary") == []
    assert memory.db.scalar("select count(*) from messages where session_id = $1 and consolidated_at is null",
                            (trivial,)) == 0
    scripted.background_replies = [notes(summary="The user adopted a cat named Miso.")]  # what that span holds
    second = run_consolidation(memory, config, scripted)
    assert second.spans == 1 and len(second.summaries) == 1
    assert len(scripted.background_requests()) == 2  # the trivial span was not asked about again


@pytest.mark.slow  # a crash trial: a process (that imports litellm) killed mid-transaction
def test_kill_9_in_the_middle_of_consolidation_leaves_nothing_half_written(coop_home, openai_server, tmp_path,
                                                                          wait_until):
    db_path = coop_home / "coop.db"
    database = open_database(str(db_path))
    memory = MemoryStore(database).user("ana")
    ended_session(memory)
    memory.facts.add("Has a friend called Mia", source="user")
    database.close()
    openai_server.background_default = notes(note("Is going to Kyoto", "I am going to Kyoto", topic="plan"),
                                             note("Travels with friend Mia", "With my friend Mia", topic="family"),
                                             summary="Kyoto trip.")
    ready = tmp_path / "inside-transaction"
    child = textwrap.dedent(f"""
        import os, time, sys
        from coop.config.loading import apply_overrides, load_config
        from coop.memory.storage.database import open_database
        from coop.memory.storage.store import MemoryStore
        from coop.memory.growth.reconcile import FactWriter
        from coop.memory.growth.consolidate import consolidate
        from coop.model.llm import fast_complete

        original = FactWriter.apply
        calls = []
        def apply_then_stall(self, plan):
            result = original(self, plan)
            calls.append(plan)
            if len(calls) == 1:  # one fact written, summary written, messages not yet marked
                open({str(ready)!r}, "w").close()
                time.sleep(60)
            return result
        FactWriter.apply = apply_then_stall
        config = apply_overrides(load_config(), {{"model.name": "openai/t", "model.api_base": {openai_server.api_base!r},
                                                  "memory.db_path": {str(db_path)!r}}})
        memory = MemoryStore(open_database({str(db_path)!r})).user("ana")
        consolidate(memory, config, fast_complete(config), FactWriter(memory, config.memory.extraction))
    """)
    process = subprocess.Popen([sys.executable, "-c", child], env={**os.environ, "COOP_HOME": str(coop_home)})
    wait_until(lambda: ready.exists() or process.poll() is not None, timeout=60, message="the child")
    assert ready.exists(), "the child never reached the middle of the transaction"
    process.send_signal(signal.SIGKILL)
    process.wait(10)

    database = open_database(str(db_path))
    memory = MemoryStore(database).user("ana")
    assert database.scalar("pragma integrity_check") == "ok"
    assert memory.list_items("summary") == []
    assert [f.text for f in memory.list_items("fact")] == ["Has a friend called Mia"]
    assert database.scalar("select count(*) from messages where consolidated_at is not null") == 0
    assert fulltext_problems(database) == []
    report = run_consolidation(memory, make_config(openai_server))  # the span is redone
    assert report.spans == 1 and len(memory.list_items("summary")) == 1
    assert sorted(f.text for f in memory.list_items("fact")) == [
        "Has a friend called Mia", "Is going to Kyoto", "Travels with friend Mia"]
    database.close()


def test_the_worker_stops_within_its_timeout_even_with_a_job_running(coop_home):
    """`coop chat` gives the worker 2 s at exit (worker.stop(timeout=2.0)); a job that runs longer must not hold
    the exit up. The bound is the same whatever the timeout, so a short one keeps the test quick."""
    worker = BackgroundWorker(lambda: MemoryStore.open(str(coop_home / "coop.db")))
    running, release = threading.Event(), threading.Event()

    def slow_job(db) -> None:
        running.set()
        release.wait(30)

    worker.submit("slow", slow_job)
    try:
        assert running.wait(10), "the job never started"
        started = time.monotonic()
        worker.stop(timeout=0.3)
        assert time.monotonic() - started < 0.8
        assert not worker.wait_idle(0)  # the job was still running when stop returned
    finally:
        release.set()


def test_a_failing_job_is_logged_and_the_worker_goes_on_and_a_repeat_is_told_once(coop_home):
    worker = BackgroundWorker(lambda: MemoryStore.open(str(coop_home / "coop.db")))
    told = []
    worker.on_notice = lambda: told.append(1)
    for _ in range(3):  # a job that fails at every turn: one line for the session, the rest logged
        worker.submit("broken", lambda db: 1 / 0)
    worker.submit("fine", lambda db: "done")
    worker.submit("other", lambda db: {}["missing"])
    assert worker.wait_idle(10)
    assert len(worker.failures) == 4 and "ZeroDivisionError" in worker.failures[0]
    notices = worker.take_notices()
    assert [n.split(";")[0] for n in notices] == ["memory: broken failed (ZeroDivisionError: division by zero)",
                                                  "done", "memory: other failed (KeyError: 'missing')"]
    assert "nothing was lost" in notices[0] and "coop.log" in notices[0]
    assert len(told) == 3  # each notice was announced as it was ready
    worker.stop()


@pytest.fixture
def threaded_session(coop_home, scripted):
    """A chat session with a real background worker on its own connection, as `coop chat` runs it."""
    sessions = []

    def make(**overrides):
        path = str(coop_home / "coop.db")
        database = open_database(path)
        memory = MemoryStore(database).user("ana")
        worker = BackgroundWorker(lambda: MemoryStore.open(path))
        session = scripted.session(memory, make_config(scripted, **overrides), embedder=lambda: EMBEDDER,
                                   worker=worker)
        sessions.append((session, worker, database))
        return session, worker

    yield make
    for _, worker, database in sessions:
        worker.stop(timeout=1)
        database.close()


def test_the_next_reply_is_not_delayed_by_a_slow_extraction(threaded_session, scripted):
    session, worker = threaded_session()
    release = threading.Event()

    def slow_extraction(body):  # answers only once the second reply is done (or after 2.5 s, within the timeout)
        release.wait(2.5)
        return notes(note("Likes slow things", "I like slow things", topic="preference"))(body)

    scripted.background_replies = [slow_extraction]
    scripted.replies = ["first", "second"]
    try:
        session.turn("I like slow things")
        started = time.monotonic()
        second = session.turn("and fast replies")
        elapsed = time.monotonic() - started
        assert second.reply == "second" and elapsed < 1.5
        assert not worker.wait_idle(0)  # the extraction is still running while the reply is done
    finally:
        release.set()
    assert worker.wait_idle(15)
    assert [f.text for f in session.memory.list_items("fact")] == ["Likes slow things"]
    assert session.take_notices() == ["memory: f1 added: “Likes slow things” (undo: coop memory undo f1)"]


def test_the_backlog_is_embedded_at_the_next_start(threaded_session, coop_home):
    database = open_database(str(coop_home / "coop.db"))
    memory = MemoryStore(database).user("ana")
    old = memory.sessions.start()
    for i in range(30):
        memory.messages.add(old, "user", f"written while the embedder was offline {i}")
    database.close()
    session, worker = threaded_session()
    session.catch_up()
    assert worker.wait_idle(20)
    assert session.memory.stats()["unembedded"] == 0


def test_ending_a_session_consolidates_it(threaded_session, scripted):
    session, worker = threaded_session()
    scripted.background_replies = ['{"notes": []}', notes(summary="The user is going to Kyoto in April.")]
    session.turn("I am going to Kyoto in April")
    first = session.session_id
    session.end()
    assert worker.wait_idle(20)
    [summary] = session.memory.list_items("summary")
    assert summary.session_id == first
    assert any(n.startswith("memory consolidated: 1 span summarised") for n in session.take_notices())


def test_an_idle_session_ends_and_the_next_message_starts_a_new_one(threaded_session, scripted):
    session, worker = threaded_session()
    scripted.background_default = SUMMARY
    session.turn("hello")
    first = session.session_id
    assert not session.end_if_idle(3600)
    assert session.end_if_idle(0)
    assert worker.wait_idle(20)
    assert session.memory.sessions.recent()[0]["ended_at"] is not None
    session.turn("back again")
    assert session.session_id != first


def test_summaries_are_a_dated_leg_of_retrieval(memory, scripted):
    session = ended_session(memory)
    scripted.background_replies = [SUMMARY]
    run_consolidation(memory, make_config(scripted), scripted)
    from coop.memory.growth.embedding import embed_pending

    embed_pending(memory, EMBEDDER)
    chat = scripted.session(memory, make_config(scripted), embedder=lambda: EMBEDDER)
    chat.turn("when is the trip to Kyoto with Mia?")
    system = scripted.system_prompt()
    assert f"session {session}] summary: Talked about a trip to Kyoto in April with Mia." in system


def test_background_notices_wait_for_the_next_prompt(memory, scripted):
    import io

    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from coop.chat.repl import Repl

    scripted.background_replies = [notes(note("Collects stamps", "I collect stamps", topic="hobby"))]
    session = scripted.session(memory, make_config(scripted), embedder=lambda: EMBEDDER)
    screen = io.StringIO()
    repl = Repl(session, console=Console(file=screen, width=100, force_terminal=False))
    with create_pipe_input() as pipe:
        pipe.send_text("I collect stamps\r\x04")
        repl.run_terminal(repl.make_prompt_session(input=pipe, output=DummyOutput()))
    shown = screen.getvalue()
    notice = "memory: f1 added: “Collects stamps” (undo: coop memory undo f1)"
    assert notice in shown
    assert shown.index("ok") < shown.index(notice)  # after the reply, never inside it


def test_coop_memory_consolidate_on_demand(run_cli, openai_server, memory):
    ended_session(memory)
    openai_server.background_replies = [SUMMARY]
    env = {"COOP_MODEL_NAME": "openai/t", "COOP_MODEL_API_BASE": openai_server.api_base}
    result = run_cli("memory", "consolidate", "--json", "--user", "ana", env=env)
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["spans"] == 1 and data["summaries"] == ["s1"] and data["facts_written"] == 1
    found = run_cli("memory", "search", "Kyoto", "--kind", "summary", "--json", "--user", "ana").json()
    assert found[0]["id"] == "s1" and found[0]["embedder"] == EMBEDDER.id.replace("64", "384")
