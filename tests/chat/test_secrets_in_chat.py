"""What a chat turn holds of a secret (issue 42): a card number, an IBAN or a key the user types is masked before
the turn's own request, is never stored, exported, or sent to the background model, and is never sent again in a
later request of the session (the working memory keeps the masked text); the user is told once a session. The
model is the in-process scripted one, the database a real SQLite file that is read byte by byte."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from coop.chat.repl import Repl
from coop.chat.session import MASKED_NOTICE
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore, UserMemory
from coop.memory.transfer.export import export_user
from tests.privacy.test_card_and_iban import CARD, IBAN, card_numbers, digits_of, ibans

EMBEDDER = HashEmbedder(64)
KEY = "sk-proj-" + "Zq8LmN3bV7cX1pR4tY6uW9aS2dF5gH0jK"
# each property example runs two turns, an extraction and two exports: half the profile's examples
EXAMPLES = settings(deadline=None, max_examples=max(5, settings().max_examples // 2),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def session_on(scripted, memory, **kwargs):
    config = apply_overrides(load_config(), {"model.name": "openai/test-model"})
    return scripted.session(memory, config, embedder=lambda: EMBEDDER, **kwargs)


def everything_written(coop_home, exports) -> list[bytes]:
    """The database and its journal files, the history, coop.log: every file under COOP_HOME; and the exports."""
    return [path.read_bytes() for path in [*coop_home.rglob("*"), *exports] if path.is_file()]


def sent(scripted) -> list[str]:
    """Every request body the chat model and the background (fast) model received."""
    return [json.dumps(body, ensure_ascii=False) for body in scripted.chat_requests() + scripted.background_requests()]


@contextlib.contextmanager
def fresh_home(parent: Path, monkeypatch) -> Iterator[tuple[Path, UserMemory]]:
    """A home and a database of one property example's own: an earlier example's kept number may hold this
    one's card as its digits (222100000000002 holds 2221000000000), and bytes are read whole."""
    home = Path(tempfile.mkdtemp(dir=parent))
    monkeypatch.setenv("COOP_HOME", str(home))
    database = open_database(str(home / "coop.db"))
    try:
        yield home, MemoryStore(database).user("ana")
    finally:
        database.close()


@pytest.mark.sqlite_only  # the database file is read byte by byte
@EXAMPLES
@given(card=card_numbers(), iban=ibans(), kept=card_numbers(valid=False, most=16))
def test_a_card_and_an_iban_never_reach_the_database_an_export_or_any_model_request(
        coop_home, scripted, monkeypatch, tmp_path, card, iban, kept):
    with fresh_home(tmp_path, monkeypatch) as (home, memory):
        check_one_exchange(scripted, memory, home, card, iban, kept)


def check_one_exchange(scripted, memory, coop_home, card, iban, kept) -> None:
    scripted.requests.clear()
    scripted.completion_requests.clear()
    scripted.replies = [f"Noted: card {card}, IBAN {iban}.", "ok"]  # the model echoes them: masked the same
    session = session_on(scripted, memory)
    session.turn(f"my card is {card} and my IBAN is {iban}; order {kept} is late")
    session.turn("thanks, bill it")
    exports = [coop_home / "export.jsonl", coop_home / "export.md"]
    export_user(memory, "coop", exports[0], io.StringIO())
    export_user(memory, "markdown", exports[1], io.StringIO())
    assert scripted.background_requests()  # the exchange reached the background model (extraction)
    for secret in (card, iban):
        for form in {secret, digits_of(secret)}:
            assert not [body for body in sent(scripted) if form in body], form
            assert not [data for data in everything_written(coop_home, exports) if form.encode() in data], form
    first = scripted.chat_requests()[0]["messages"][-1]["content"]
    assert first == f"my card is [secret] and my IBAN is [secret]; order {kept} is late"  # the turn's own request
    assert any(kept in item.text for item in memory.list_items("message"))  # a number that fails its check is kept


@pytest.mark.parametrize("incognito", [False, True])
def test_a_key_typed_in_turn_one_is_sent_to_the_model_in_no_request_and_the_user_is_told_once(
        memory, scripted, incognito):
    scripted.replies = [f"Got it: {KEY}.", "ok", "ok", "ok"]
    session = session_on(scripted, memory, incognito=incognito)
    session.turn(f"my OpenAI key is {KEY}, keep it safe")
    session.turn(f"and my card is {CARD}")
    session.turn("what did I just tell you?")
    bodies = [json.dumps(request["messages"]) for request in scripted.chat_requests()]
    assert len(bodies) == 3 and not [b for b in bodies if KEY in b or CARD in b]
    last = scripted.chat_requests()[-1]["messages"]
    assert [m["content"] for m in last if m["role"] != "system"] == [
        "my OpenAI key is [secret], keep it safe", "Got it: [secret].", "and my card is [secret]", "ok",
        "what did I just tell you?"]
    assert session.take_notices().count(MASKED_NOTICE) == 1  # once a session, not once a turn
    session.turn("nothing secret here")
    assert MASKED_NOTICE not in session.take_notices()
    session.new_session()
    session.turn(f"IBAN {IBAN}")
    assert session.take_notices().count(MASKED_NOTICE) == 1  # a new session is told again
    assert scripted.chat_requests()[-1]["messages"][-1]["content"] == "IBAN [secret]"


@pytest.mark.sqlite_only
def test_a_card_typed_at_the_prompt_is_masked_in_the_history_file_and_everywhere_else(memory, scripted, coop_home):
    session = session_on(scripted, memory)
    screen = io.StringIO()
    coop_home.mkdir(parents=True, exist_ok=True)
    repl = Repl(session, console=Console(file=screen, width=200, color_system=None),
                history_path=str(coop_home / "history"))
    with create_pipe_input() as pipe:
        pipe.send_text(f"pay with {CARD}\r/remember my IBAN is {IBAN}\r\x04")
        assert repl.run_terminal(repl.make_prompt_session(input=pipe, output=DummyOutput())) == 0
    history = (coop_home / "history").read_text(encoding="utf-8")
    assert "pay with [secret]" in history and "/remember my IBAN is [secret]" in history
    assert screen.getvalue().count(MASKED_NOTICE) == 1
    for secret in (CARD, IBAN):
        assert not [data for data in everything_written(coop_home, []) if secret.encode() in data]
        assert not [body for body in sent(scripted) if secret in body]
