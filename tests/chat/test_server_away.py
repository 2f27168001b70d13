"""A chat whose Postgres server goes away (issue 42): the turns go on without memory, what is said waits on this
machine, the user is told once, and when the server is back every message is written in order with the time it
was said; a session that ends while the server is away writes them at the next start. A server of the test's own,
stopped and started again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from coop.memory.storage.postgres.store import PgStore
from tests.chat.test_chat_session import make_session
from tests.throwaway_postgres import ThrowawayServer


@pytest.fixture
def away(postgres_server: Any) -> Iterator[tuple[ThrowawayServer, str]]:
    """A server of this test's own (the shared one must stay up), with a person's database."""
    from tests.postgres import require_postgres

    require_postgres()
    with ThrowawayServer() as server:
        yield server, server.create_app_database()


def _contents(url: str, user: str = "ana") -> list[tuple[str, str]]:
    store = PgStore.open(url)
    try:
        memory = store.user(user)
        return [(str(r[0]), str(r[1])) for r in memory.db.execute(
            "SELECT role, content FROM messages WHERE user_id = $1 ORDER BY created_at, id", (user,))]
    finally:
        store.close()


@pytest.mark.postgres
def test_what_is_said_while_the_server_is_away_is_kept_and_written_when_it_is_back(away, scripted):
    server, url = away
    store = PgStore.open(url)
    try:
        session = make_session(store.user("ana"), scripted)
        scripted.replies = ["Hello Ana.", "Lisbon is lovely in May.", "Noted, the train.", "Welcome back."]
        assert session.turn("hi there").error is None
        server.pause()
        offline = [session.turn("we plan a trip to Lisbon"), session.turn("we will take the train")]
        assert [r.reply for r in offline] == ["Lisbon is lovely in May.", "Noted, the train."]
        assert all(r.error is None and r.user_message_id is None for r in offline)
        told = session.take_notices()
        assert len([n for n in told if "kept on this machine" in n]) == 1  # told once, not at every turn
        assert len(session.unsent.pending()) == 4
        assert "Lisbon" in scripted.chat_requests()[-1]["messages"][-3]["content"]  # the session's own history
        server.resume()
        assert session.turn("I am back").error is None
        back = session.take_notices()
        assert any("the memory server is back: 2 exchanges" in n for n in back), back
        assert session.unsent.pending() == [] and not session.unsent.path.exists()
    finally:
        store.close()
    said = _contents(url)
    assert said == [("user", "hi there"), ("assistant", "Hello Ana."), ("user", "we plan a trip to Lisbon"),
                    ("assistant", "Lisbon is lovely in May."), ("user", "we will take the train"),
                    ("assistant", "Noted, the train."), ("user", "I am back"), ("assistant", "Welcome back.")]


@pytest.mark.postgres
def test_a_session_that_ends_while_the_server_is_away_writes_its_messages_at_the_next_start(away, scripted):
    server, url = away
    store = PgStore.open(url)
    try:
        first = make_session(store.user("ana"), scripted)
        scripted.replies = ["First.", "Said while away.", "Next start."]
        first.turn("before")
        server.pause()
        first.turn("my locker code is 4417")
        first.end()  # the server is away: nothing is lost, nothing fails
        server.resume()
        second = make_session(store.user("ana"), scripted)
        second.catch_up()
        assert second.unsent.pending() == []
    finally:
        store.close()
    assert [text for _, text in _contents(url)] == ["before", "First.", "my locker code is 4417", "Said while away."]
