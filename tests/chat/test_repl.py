"""The REPL driven through prompt_toolkit's pipe input: keys, slash commands, exits, rendering."""

from __future__ import annotations

import io
import os
import re
import stat
import threading
import time

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from coop.chat.repl import Repl
from coop.chat.session import ChatSession
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder

EMBEDDER = HashEmbedder(64)


@pytest.fixture
def repl_factory(memory, openai_server, coop_home):
    def make(**overrides):
        config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                                 "model.api_base": openai_server.api_base, **overrides})
        session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
        screen = io.StringIO()
        console = Console(file=screen, width=100, force_terminal=False, color_system=None)
        coop_home.mkdir(parents=True, exist_ok=True)
        repl = Repl(session, console=console, history_path=str(coop_home / "history"), banner=lambda: "BANNER")
        return repl, screen

    return make


def drive(repl, keys: str) -> int:
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        prompt = repl.make_prompt_session(input=pipe, output=DummyOutput())
        return repl.run_terminal(prompt)


def test_a_turn_streams_markdown_and_is_stored(repl_factory, openai_server, memory):
    repl, screen = repl_factory()
    openai_server.replies = ["# Title\n\nSome **bold** text and a list:\n\n- one\n- two\n"]
    assert drive(repl, "hello there\r\x04") == 0
    shown = screen.getvalue()
    assert "BANNER" in shown and "Title" in shown and "bold" in shown and "**" not in shown
    assert [m.text for m in memory.list_items("message")][::-1][0] == "hello there"
    assert openai_server.chat_requests()[0]["messages"][-1]["content"] == "hello there"


def test_alt_enter_inserts_a_new_line(repl_factory, openai_server):
    repl, _ = repl_factory()
    drive(repl, "first line\x1b\rsecond line\r\x04")
    assert openai_server.chat_requests()[0]["messages"][-1]["content"] == "first line\nsecond line"


def test_unknown_and_ambiguous_commands_are_errors_never_sent(repl_factory, openai_server):
    repl, screen = repl_factory()
    drive(repl, "/bogus stuff\r/h\r\x04")
    shown = screen.getvalue()
    assert "unknown command /bogus" in shown and "ambiguous command /h" in shown
    assert openai_server.chat_requests() == []


def test_slash_commands(repl_factory, openai_server, memory):
    repl, screen = repl_factory()
    openai_server.default_reply = "ok"
    openai_server.models = ["test-model", "other"]  # /model checks the server's list
    drive(repl, "/rem I play the oboe\r/remember\rtell me about music\r/memory\r/memory oboe\r/history\r"
                "/sessions\r/model openai/other\r/new\r/help\r//etc is a folder\r\x04")
    shown = screen.getvalue()
    assert "remembered as f1" in shown
    assert "/remember needs the fact" in shown
    assert "profile: general, importance 0.90" in shown and "I play the oboe" in shown  # /memory: the last recall, why
    assert "user: tell me about music" in shown  # /history
    assert "model: openai/other" in shown
    assert "new session" in shown and "/remember" in shown  # /new and /help
    bodies = openai_server.chat_requests()
    assert [b["messages"][-1]["content"] for b in bodies] == ["tell me about music", "/etc is a folder"]
    assert bodies[-1]["model"] == "other"
    assert len(memory.sessions.recent()) == 2


def test_help_shows_each_commands_whole_description(repl_factory):
    repl, screen = repl_factory()
    drive(repl, "/help\r\x04")
    shown = " ".join(screen.getvalue().split())
    for name, method in repl.commands().items():
        described = " ".join((method.__doc__ or "").split("\n\n")[0].split())
        assert described.endswith(".") and f"/{name}" in shown and described in shown, name


def test_what_the_background_finished_while_leaving_is_shown_at_exit(memory, openai_server, coop_home):
    """A change that finished as the person pressed Ctrl-D (the worker stopping at exit) is shown, not lost with
    the exit."""
    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.api_base": openai_server.api_base})
    session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
    screen = io.StringIO()
    console = Console(file=screen, width=100, force_terminal=False, color_system=None)
    repl = Repl(session, console=console, history_path=str(coop_home / "history"),
                on_exit=lambda: session.background.note("memory: f7 added: “Plays the oboe”"))
    drive(repl, "\x04")
    assert screen.getvalue().count("memory: f7 added: “Plays the oboe”") == 1


def test_ctrl_c_before_the_first_word_says_no_reply_was_kept(repl_factory, memory, monkeypatch):
    from coop.model import llm

    def interrupted(self, *args, **kwargs):  # Ctrl-C while waiting for the model's first token
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(llm.LiteLLMModel, "stream", interrupted)
    repl, screen = repl_factory()
    drive(repl, "are you there?\r\x04")
    shown = screen.getvalue()
    assert "stopped before the reply began; your message was kept" in shown and "partial reply" not in shown
    assert [(m.role, m.text) for m in memory.list_items("message")] == [("user", "are you there?")]


def test_at_40_columns_the_banner_notices_and_errors_wrap_between_words(memory, openai_server, coop_home):
    """On a narrow terminal every line of coop's own is cut between words, never inside one; off a terminal the
    same lines are written whole (a script reads one line per notice or error)."""
    banner = "coop 1.0 · model openai/test-model at http://127.0.0.1 · memory of ana · /help for commands"
    notice = "memory: f12 added: “Has a cat named Mochi” (undo: coop memory undo f12)"
    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.api_base": "http://127.0.0.1:9/v1"})
    for terminal in (True, False):
        screen = io.StringIO()
        console = Console(file=screen, width=40, force_terminal=terminal, color_system=None)
        session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
        repl = Repl(session, console=console, history_path=str(coop_home / "history"), banner=lambda: banner)
        session.background.note(notice)
        drive(repl, "/nosuchcommand\r\x04")
        lines = [line.rstrip() for line in screen.getvalue().splitlines() if line.strip() and "›" not in line]
        if terminal:  # joined with a space, a word cut in two at a line's end would not read back
            written = " ".join(" ".join(lines).split())
            assert all(len(line) <= 40 for line in lines) and banner in written and notice in written, lines
            assert "error: unknown command /nosuchcommand" in written
        else:
            assert banner in lines and notice in lines  # whole, one line each


def test_memory_n_shows_what_any_earlier_reply_recalled_and_why(repl_factory, openai_server, memory):
    memory.facts.add("Lives in Porto", category="location", key="home_city", importance=0.7)
    two_days_ago = time.time() - 2 * 86400  # no continuity into today's session
    past = memory.sessions.start(started_at=two_days_ago, last_activity_at=two_days_ago)
    memory.messages.add(past, "user", "My sourdough starter is called Bubbles and lives on the counter",
                       created_at=two_days_ago)
    repl, screen = repl_factory()
    openai_server.default_reply = "ok"
    drive(repl, "hello there\rhow is my sourdough starter Bubbles doing\r/memory 1\r/memory 2\r/memory 9\r\x04")
    shown = screen.getvalue()
    _, first, second = re.split(r"\bid +why +score +text", shown.split("no reply 9")[0])
    assert "profile: location" in first and "Lives in Porto" in first
    assert "Bubbles" not in first  # reply 1 ("hello there") recalled the profile only
    assert "profile: location" in second and "relevant:" in second and "Bubbles" in second
    assert "no reply 9 in this session" in shown and "/memory 1 to 2" in shown


def test_forget_from_the_repl_asks_first_and_names_what_goes(repl_factory, memory):
    fact = memory.facts.add("old address: 12 Elm Street")
    repl, screen = repl_factory()
    drive(repl, f"/forget f{fact.fact_id}\r\r/forget f{fact.fact_id}\rno\r\x04")  # Enter alone is no
    shown = screen.getvalue()
    assert shown.count("f1: old address: 12 Elm Street") == 2 and shown.count("nothing forgotten") == 2
    assert [i.text for i in memory.list_items("fact")] == ["old address: 12 Elm Street"]
    repl, screen = repl_factory()
    drive(repl, f"/forget f{fact.fact_id}\ry\r/forget f999\r\x04")
    assert "Forget" not in screen.getvalue().split("no fact f999")[1]  # a missing id: an error, no question
    assert "forgot f1" in screen.getvalue() and "no fact f999" in screen.getvalue()
    assert memory.list_items("fact") == []


def test_forget_in_pipe_mode_needs_yes(memory, openai_server, coop_home):
    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.api_base": openai_server.api_base})
    session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
    fact = memory.facts.add("old address: 12 Elm Street")
    screen = io.StringIO()
    repl = Repl(session, console=Console(file=screen, width=100), out=io.StringIO())
    repl.run_lines([f"/forget f{fact.fact_id}\n".encode()], commands=True)
    assert "refusing to forget without confirmation" in screen.getvalue() and "--yes" in screen.getvalue()
    assert len(memory.list_items("fact")) == 1
    repl = Repl(session, console=Console(file=screen, width=100), out=io.StringIO())
    repl.run_lines([f"/forget f{fact.fact_id} --yes\n".encode()], commands=True)
    assert memory.list_items("fact") == []


def test_model_is_checked_against_the_servers_list(repl_factory, openai_server):
    openai_server.models = ["test-model", "gpt-4o-mini"]
    repl, screen = repl_factory()
    drive(repl, "/model openai/gpt-4o-mni\r\x04")
    shown = " ".join(screen.getvalue().split())
    assert "has no model 'gpt-4o-mni'" in shown and "did you mean /model openai/gpt-4o-mini?" in shown
    assert "stays with openai/test-model" in shown and repl.session.model_name == "openai/test-model"
    assert any(r["path"] == "/v1/models" for r in openai_server.requests)
    repl, screen = repl_factory()
    drive(repl, "/model openai/gpt-4o-mini\r\x04")
    assert repl.session.model_name == "openai/gpt-4o-mini" and "note:" not in screen.getvalue()


def test_model_is_accepted_with_a_note_when_the_list_cannot_be_had(repl_factory):
    repl, screen = repl_factory(**{"model.api_base": "http://127.0.0.1:9/v1"})  # nothing listens there
    drive(repl, "/model openai/anything\r\x04")
    shown = " ".join(screen.getvalue().split())
    assert "note: the server's model list could not be read" in shown and "without checking" in shown
    assert repl.session.model_name == "openai/anything"


def test_ctrl_c_twice_exits_and_once_does_not(repl_factory, openai_server):
    repl, screen = repl_factory()
    assert drive(repl, "\x03\x03") == 0
    assert "Ctrl-C again to exit" in screen.getvalue()
    repl, _ = repl_factory()
    drive(repl, "\x03still here\r\x04")
    assert openai_server.chat_requests()[-1]["messages"][-1]["content"] == "still here"


def test_exit_command_and_ctrl_d(repl_factory, openai_server):
    repl, _ = repl_factory()
    assert drive(repl, "/exit\rnever sent\r") == 0
    assert openai_server.chat_requests() == []


def test_history_file_is_private_and_persists(repl_factory, coop_home):
    repl, _ = repl_factory()
    drive(repl, "/help\r\x04")
    path = coop_home / "history"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "/help" in path.read_text()


def test_model_error_in_the_repl_is_shown_and_the_loop_goes_on(repl_factory, openai_server):
    repl, screen = repl_factory()
    openai_server.replies = [{"status": 401, "message": "invalid key"}, "second works"]
    drive(repl, "first\rsecond\r\x04")
    shown = screen.getvalue()
    assert "error:" in shown and "the key was refused" in shown and "hint:" in shown
    assert "second works" in shown


def test_end_command_ends_the_session_and_starts_another(repl_factory, memory):
    repl, screen = repl_factory()
    assert repl.session.session_id is None  # nothing said yet: no session
    drive(repl, "hello\r/end\ragain\r\x04")
    sessions = memory.sessions.recent()
    assert len(sessions) == 2
    first = min(s["id"] for s in sessions)
    assert {s["id"]: s["ended_at"] for s in sessions}[first] is not None and repl.session.session_id != first
    assert f"session {first} ended" in screen.getvalue()


def test_new_and_end_leave_no_empty_sessions_and_counts_read_right(repl_factory, memory):
    repl, screen = repl_factory()
    drive(repl, "/new\r/end\r/new\rhello\r/new\r/sessions\r\x04")
    sessions = memory.sessions.recent()
    assert [s["messages"] for s in sessions] == [2]  # the one with "hello" and its reply, no empty ones
    total = memory.db.scalar("SELECT count(*) FROM sessions WHERE user_id = $1", (memory.user_id,))
    assert total == 1
    assert "2 messages" in screen.getvalue() and "msgs" not in screen.getvalue()


def test_ctrl_x_ctrl_e_brings_the_edited_text_back_for_review(repl_factory, openai_server, tmp_path, monkeypatch,
                                                              wait_until):
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nprintf 'written in the editor' > \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    repl, screen = repl_factory()
    openai_server.replies = ["the reply to the edited text"]
    with create_pipe_input() as pipe:
        prompt = repl.make_prompt_session(input=pipe, output=DummyOutput())
        seen: list[object] = []

        def later():  # the editor runs asynchronously; its text must wait in the line until Enter
            try:
                wait_until(lambda: prompt.default_buffer.text == "written in the editor", timeout=20,
                           message="the edited text in the prompt")
                time.sleep(0.3)
                seen.append(list(openai_server.chat_requests()))
                pipe.send_text(" (reviewed)\r")
                wait_until(lambda: "the reply to the edited text" in screen.getvalue(), timeout=20,
                           message="the edited turn's reply")
            finally:
                pipe.send_text("\x04")

        pipe.send_text("\x18\x05")
        feeder = threading.Thread(target=later)
        feeder.start()
        repl.run_terminal(prompt)
        feeder.join()
    assert seen == [[]]  # nothing was sent when the editor closed
    assert openai_server.chat_requests()[0]["messages"][-1]["content"] == "written in the editor (reviewed)"


def test_ctrl_r_searches_history(repl_factory, openai_server):
    repl, _ = repl_factory()
    drive(repl, "what about oboes?\r\x04")
    repl, _ = repl_factory()  # a new REPL reads the same history file
    drive(repl, "\x12oboe\r\r\x04")
    contents = [b["messages"][-1]["content"] for b in openai_server.chat_requests()]
    assert contents == ["what about oboes?", "what about oboes?"]


def test_no_color_keeps_colour_codes_out(memory, openai_server, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    config = apply_overrides(load_config(), {"model.name": "openai/t", "model.api_base": openai_server.api_base})
    session = ChatSession(memory, config, embedder=lambda: EMBEDDER)
    screen = io.StringIO()
    console = Console(file=screen, width=80, force_terminal=True)
    openai_server.replies = ["# Heading\n\n```python\nprint('x')\n```\n"]
    repl = Repl(session, console=console)
    repl.turn("hi", interactive=True)
    assert "Heading" in screen.getvalue()
    assert "\x1b[3" not in screen.getvalue() and "\x1b[38;" not in screen.getvalue()
