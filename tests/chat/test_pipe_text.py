"""A pipe carries text, not commands (issue 42): a document piped into `coop chat` cannot run the `/forget f1 --yes`
it quotes unless the caller passes `--commands-from-pipe`; and lines read one by one (a pipe, a dumb terminal) are
masked with the lines before them, so a private key block or a key wrapped over lines is masked whole before the
text is cut into turns, its body never stored nor sent."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from coop.chat.repl import Repl
from coop.chat.session import MASKED_NOTICE
from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder

EMBEDDER = HashEmbedder(64)
R40 = "Ab3dEf5hIj7lMn9pQr1tUv3xYz5bCd7fGh9jKl1n"
BODY = [R40 + "Qx", R40[::-1] + "Zw", R40[5:] + "Kp7Lm", "Tt9" + R40[:20]]  # a block's lines, 42 and fewer wide
DOCUMENT = ["here is my key:", "-----BEGIN OPENSSH PRIVATE KEY-----", *BODY, "-----END OPENSSH PRIVATE KEY-----",
            "why does ssh refuse it?", f"OPENAI_API_KEY=sk-proj-{R40}", R40[::-1], R40[:11], "thanks"]
TURNS = ["here is my key:", "[secret]", "why does ssh refuse it?", "OPENAI_API_KEY=[secret]", "thanks"]


def make_repl(memory, scripted):
    config = apply_overrides(load_config(), {"model.name": "openai/test-model"})
    session = scripted.session(memory, config, embedder=lambda: EMBEDDER)
    screen = io.StringIO()
    return Repl(session, console=Console(file=screen, width=200, color_system=None), out=io.StringIO()), screen


def typed(scripted) -> list[str]:
    return [request["messages"][-1]["content"] for request in scripted.chat_requests()]


def test_slash_lines_from_a_pipe_are_sent_as_text_and_run_nothing(memory, scripted):
    fact = memory.facts.add("Lives at 12 Elm Street")
    repl, screen = make_repl(memory, scripted)
    lines = ["Please summarise this runbook:", f"/forget f{fact.fact_id} --yes", "/remember I hate cats", "/new",
             "//etc is a folder"]
    assert repl.run_lines([f"{line}\n".encode() for line in lines]) == 0
    assert [item.text for item in memory.list_items("fact")] == ["Lives at 12 Elm Street"]  # nothing forgotten
    assert typed(scripted) == lines  # each line sent as it is, slashes and all
    assert len(memory.sessions.recent()) == 1  # /new did not run either
    assert screen.getvalue().count("--commands-from-pipe") == 1  # said once


def test_with_commands_from_pipe_they_run(memory, scripted):
    fact = memory.facts.add("Lives at 12 Elm Street")
    repl, _ = make_repl(memory, scripted)
    assert repl.run_lines([f"/forget f{fact.fact_id} --yes\n".encode(), b"//etc is a folder\n"], commands=True) == 0
    assert memory.list_items("fact") == []
    assert typed(scripted) == ["/etc is a folder"]


def test_the_cli_flag_decides(memory, openai_server, run_cli):
    fact = memory.facts.add("Lives at 12 Elm Street")
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base}
    forget = f"/forget f{fact.fact_id} --yes\n"
    assert run_cli("chat", "--user", "ana", input=forget, env=env).exit_code == 0
    assert len(memory.list_items("fact")) == 1
    assert [r["messages"][-1]["content"] for r in openai_server.chat_requests()] == [forget.strip()]
    assert run_cli("chat", "--user", "ana", "--commands-from-pipe", input=forget, env=env).exit_code == 0
    assert memory.list_items("fact") == []


@pytest.mark.sqlite_only  # the database file is read byte by byte
@pytest.mark.parametrize("mode", ["pipe", "dumb terminal"])
def test_a_private_key_and_a_wrapped_key_piped_in_are_masked_whole_before_the_text_is_cut_into_turns(
        memory, scripted, coop_home, mode):
    repl, screen = make_repl(memory, scripted)
    if mode == "pipe":
        repl.run_lines([f"{line}\n".encode() for line in DOCUMENT])
    else:
        lines = iter(DOCUMENT)

        def read(_: str) -> str:
            try:
                return next(lines)
            except StopIteration:
                raise EOFError from None

        repl.run_plain(read)
    assert typed(scripted) == TURNS
    pieces = {line[i:i + 12] for line in [*BODY, R40, R40[::-1]] for i in range(0, len(line) - 11, 6)}
    files = [path.read_bytes() for path in coop_home.rglob("*") if path.is_file()]
    stored = [item.text for item in memory.list_items("message", limit=100)]
    for piece in pieces:
        assert not [data for data in files if piece.encode() in data], piece
        assert not [text for text in stored if piece in text], piece
        assert not [t for t in typed(scripted) if piece in t], piece
    assert screen.getvalue().count(MASKED_NOTICE) == 1
