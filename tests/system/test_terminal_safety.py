"""The model and memory cannot write to the terminal (issue 27): a reply full of OSC (clipboard write, window
title), CSI (clear screen, cursor moves) and C1 sequences reaches a real terminal (a pty) only as visible codes, in
pipe mode (`echo ... | coop chat` with stdout on a terminal) and in the REPL; only coop's own rendering writes
escape sequences."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

HOSTILE = ("Here: \x1b]52;c;ZXZpbA==\x07 copied, \x1b[2J\x1b[H cleared, \x1b]0;pwned\x07 titled, "
           "\x9b31m C1 CSI, \x9d2;t\x9c C1 OSC, bell\x07 done.")
RAW = (b"\x1b]52", b"\x1b[2J", b"\x1b]0;pwned", b"\xc2\x9b", b"\xc2\x9d", b"\x07")


def _run_on_pty(args: list[str], env: dict[str, str], *, stdin_pty: bool, typed: bytes = b"",
                timeout: float = 60) -> bytes:
    """Run `coop chat` with stdout (and, for the REPL, stdin) on a pty; return all it wrote there."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "coop", "chat", *args], stdout=slave, stderr=subprocess.PIPE,
                            stdin=slave if stdin_pty else subprocess.PIPE, env=env, close_fds=True)
    os.close(slave)
    if not stdin_pty:
        assert proc.stdin is not None
        proc.stdin.write(typed)
        proc.stdin.close()
    out = b""
    deadline = time.monotonic() + timeout
    sent = ended = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if stdin_pty and not sent and (b"\xe2\x80\xba" in out or b">" in out[-200:]):  # the prompt is drawn
            time.sleep(0.5)
            os.write(master, typed)
            sent = True
        elif stdin_pty and sent and b"done." in out and not ended:
            time.sleep(0.5)
            os.write(master, b"\x04")  # Ctrl-D: the REPL exits
            ended = True
        if proc.poll() is not None and not ready:
            break
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    os.close(master)
    return out


@pytest.fixture
def chat_env(openai_server, coop_home):
    return {**os.environ, "COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
            "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", "TERM": "xterm-256color"}


@pytest.mark.slow
def test_pipe_mode_on_a_terminal_shows_the_models_escape_sequences_as_codes(openai_server, chat_env):
    openai_server.replies = [HOSTILE]
    out = _run_on_pty(["--user", "ana"], chat_env, stdin_pty=False, typed=b"hello\n")
    assert b"copied" in out and b"done." in out, out
    for raw in RAW:
        assert raw not in out, (raw, out)
    assert b"\x1b" not in out  # pipe mode prints plain: no escape sequence at all
    assert b"\\x1b]52;c;ZXZpbA==\\x07" in out and b"\\x9b31m" in out  # shown, as codes


@pytest.mark.slow
def test_the_repl_on_a_terminal_never_passes_the_models_sequences_through(openai_server, chat_env, run_cli):
    openai_server.replies = [HOSTILE]
    out = _run_on_pty(["--user", "ana"], chat_env, stdin_pty=True, typed=b"hello\r", timeout=40)
    assert b"copied" in out, out[-2000:]
    for raw in RAW[:5]:
        assert raw not in out, (raw, out[-2000:])
    assert b"\\x1b]52;c;ZXZpbA==" in out  # shown, as codes
    # memory too: the reply was stored as it came, and shown from memory it is codes again
    listed = run_cli("memory", "list", "--user", "ana").stdout
    assert "\x1b" not in listed and "\x9b" not in listed and "\\x1b]52" in listed
