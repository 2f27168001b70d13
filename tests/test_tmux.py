"""`coop chat` in a real terminal (tmux): the prompt, a streamed markdown reply, Ctrl-D to leave."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
              pytest.mark.slow]


def _capture(name: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name, "-S", "-200"], capture_output=True,
                          text=True).stdout


def _wait_for(name: str, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _capture(name)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")


def test_chat_in_a_real_terminal(openai_server, coop_home, tmp_path, run_cli, wait_until):
    run_cli("memory", "add", "My dog is called Pixel", "--user", "tmuxer")
    openai_server.replies = ["Your dog is **Pixel**, a good dog.\n\n```python\nprint('woof')\n```\n"]
    name = f"coop-test-{os.getpid()}"
    done = tmp_path / "exit-code"
    env = {"COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", "COOP_MODEL_NAME": "openai/t",
           "COOP_MODEL_API_BASE": openai_server.api_base, "TERM": "xterm-256color", "PYTHONPATH": os.getcwd()}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = (f"cd {shlex.quote(str(os.path.dirname(os.path.dirname(__file__))))} && env {exports} "
               f"{shlex.quote(sys.executable)} -m coop chat --user tmuxer; echo $? > {shlex.quote(str(done))}")
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", command], check=True)
    try:
        screen = _wait_for(name, "/help for commands")
        assert "user tmuxer" in screen and "1 fact," in screen
        subprocess.run(["tmux", "send-keys", "-t", name, "what is my dog called?", "Enter"], check=True)
        screen = _wait_for(name, "a good dog")
        assert "dog is Pixel" in screen and "**" not in screen  # rendered markdown, not raw
        assert "print('woof')" in screen
        subprocess.run(["tmux", "send-keys", "-t", name, "C-d"], check=True)
        code = wait_until(lambda: done.exists() and done.read_text().strip(), timeout=30,
                          message="coop chat to exit")
        assert code == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    system = openai_server.system_prompt()
    assert "My dog is called Pixel" in system
