"""`coop chat` as a person meets it, in a real terminal (tmux): time to the prompt, what the first turn adds before
the request reaches the model, and time to exit. Used by `bench/startup.py`.

The model is an instant local OpenAI-compatible server (this module's `InstantServer`): it answers at once and
notes when each chat request arrived, so "first-turn overhead" is the time from the Enter key (sent with tmux
send-keys) to the request's arrival, all of it coop's own work. The turn is typed after loading is done (the
embedder and litellm load in the background once the prompt is up; the run waits until the process has used
no CPU for half a second, or `--settle` seconds at most). Beside it, "first message typed at once": a new
`coop chat` is typed to the moment its prompt shows (as most people do), and the time from Enter to the request's
arrival is what that person waits before the model even starts. Exit is
timed from Ctrl-D to the end of the process. The bare interpreter is timed the same way (spawned in tmux until
what it prints is on the screen), so both figures carry tmux's own cost.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# A tmux server of the benchmark's own: other tmux users are not disturbed, and the processes it starts inherit the
# benchmark's niceness (`nice -n -15 .venv/bin/python bench/startup.py` measures close to an idle machine's figures
# on a busy one).
TMUX = ["tmux", "-L", "coop-bench"]
REPLY = "Noted: the lentil recipe is in your notes from March."
PROMPT_MARK = "›"


class InstantServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that answers at once; `arrivals` holds the monotonic time
    of each streamed (chat) request."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /models, for `coop check`
                self._send("application/json", json.dumps({"data": [{"id": "instant"}]}).encode())

            def do_POST(self) -> None:
                arrived = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if body.get("stream"):
                    server.arrivals.append(arrived)
                    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "instant",
                             "choices": [{"index": 0, "delta": {"role": "assistant", "content": REPLY},
                                          "finish_reason": None}]}
                    end = dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
                    data = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()
                    self._send("text/event-stream", data)
                else:  # the fast model (extraction): nothing to learn
                    reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "instant",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": '{"facts": []}'}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                    self._send("application/json", json.dumps(reply).encode())

            def _send(self, kind: str, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that drops a kept-alive connection as it exits: nothing the figures depend on

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.api_base = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()


def _screen(name: str) -> str:
    return subprocess.run([*TMUX, "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout


def _until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll every 5 ms; the monotonic time at which `check` first held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f"timed out waiting for {what}")


def _spawn(name: str, command: str, env: dict[str, str], done: Path) -> float:
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    shell = f"env -i {exports} {command}; echo $? > {shlex.quote(str(done))}; sleep 60"
    started = time.monotonic()
    # started in a scratch directory: `python -m coop` would import a coop package in the current directory
    # before the one PYTHONPATH names (bench/startup.py --compare)
    subprocess.run([*TMUX, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", str(done.parent), shell],
                   check=True)
    return started


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children so far, from /proc."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _chat_pid(name: str) -> int:
    """The `coop chat` process in the tmux pane: the child of the pane's shell."""
    shell = subprocess.run([*TMUX, "list-panes", "-t", name, "-F", "#{pane_pid}"], capture_output=True,
                           text=True).stdout.split()[0]
    children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
    return int(children[0]) if children else int(shell)


def _settled(pid: int, limit: float) -> None:
    """Wait until the process is idle (under 10 ms of CPU in 0.5 s): its background loading is done."""
    deadline = time.monotonic() + limit
    before = _cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = _cpu_seconds(pid)
        if now - before < 0.01:
            return
        before = now


def bare_start(python: str, env: dict[str, str]) -> float:
    """Seconds from spawning `python -c print(...)` in tmux to its output on the screen."""
    name = f"coop-bench-bare-{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        started = _spawn(name, f"{shlex.quote(python)} -c 'print(\"ready\")'", env, Path(tmp) / "done")
        try:
            return _until(lambda: "ready" in _screen(name), 30, "the bare interpreter") - started
        finally:
            subprocess.run([*TMUX, "kill-session", "-t", name], capture_output=True)


def _chat_env(env: dict[str, str], server: InstantServer) -> dict[str, str]:
    return dict(env, COOP_MODEL_NAME="openai/instant", COOP_MODEL_API_BASE=server.api_base,
                OPENAI_API_KEY="sk-local", TERM="xterm-256color")


def _prompt_shown(name: str) -> bool:
    return any(line.startswith(PROMPT_MARK) for line in _screen(name).splitlines())


def _wait_for_prompt(name: str) -> float:
    try:
        return _until(lambda: _prompt_shown(name), 60, "the prompt")
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}; the screen: {' | '.join(_screen(name).split(chr(10)))[-600:]}") from None


def _send_turn(name: str, server: InstantServer, text: str) -> float:
    """Type `text` and Enter; seconds from Enter to the request's arrival at the server."""
    before = len(server.arrivals)
    subprocess.run([*TMUX, "send-keys", "-t", name, "-l", text], check=True)
    entered = time.monotonic()
    subprocess.run([*TMUX, "send-keys", "-t", name, "Enter"], check=True)
    _until(lambda: len(server.arrivals) > before, 60, "the request to reach the model")
    return server.arrivals[before] - entered


def _exit(name: str, done: Path) -> float:
    """Ctrl-D once the reply is on the screen; seconds to the end of the process (which must exit 0)."""
    _until(lambda: "lentil recipe is in" in _screen(name), 60, "the reply on the screen")
    time.sleep(0.3)
    return _ctrl_d(name, done)


def _ctrl_d(name: str, done: Path) -> float:
    """Ctrl-D now; seconds to the end of the process (which must exit 0)."""
    exiting = time.monotonic()
    subprocess.run([*TMUX, "send-keys", "-t", name, "C-d"], check=True)
    ended = _until(lambda: done.exists() and done.read_text().strip() != "", 60, "coop chat to exit")
    if done.read_text().strip() != "0":
        raise RuntimeError(f"coop chat exited with {done.read_text().strip()}: {_screen(name)[-400:]}")
    return ended - exiting


def chat_run(coop: list[str], env: dict[str, str], server: InstantServer, settle: float) -> dict[str, float]:
    """One `coop chat`: seconds to the prompt, first-turn overhead, seconds to exit."""
    name = f"coop-bench-chat-{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        done = Path(tmp) / "done"
        started = _spawn(name, " ".join(shlex.quote(c) for c in coop) + " chat", _chat_env(env, server), done)
        try:
            shown = _wait_for_prompt(name)
            _settled(_chat_pid(name), settle)  # the background loading finishes
            overhead = _send_turn(name, server, "where is the lentil recipe?")
            exited = _exit(name, done)
        finally:
            subprocess.run([*TMUX, "kill-session", "-t", name], capture_output=True)
    return {"prompt_s": shown - started, "first_turn_overhead_s": overhead, "exit_s": exited}


@contextmanager
def _chat_shown(coop: list[str], env: dict[str, str], server: InstantServer) -> Iterator[tuple[str, Path]]:
    """A `coop chat` in a tmux session of its own, once its prompt shows: (session name, the file its exit code is
    written to); the session is killed afterwards."""
    name = f"coop-bench-chat-{time.monotonic_ns()}"
    with tempfile.TemporaryDirectory() as tmp:
        done = Path(tmp) / "done"
        _spawn(name, " ".join(shlex.quote(c) for c in coop) + " chat", _chat_env(env, server), done)
        try:
            _wait_for_prompt(name)
            yield name, done
        finally:
            subprocess.run([*TMUX, "kill-session", "-t", name], capture_output=True)


def typed_at_once_run(coop: list[str], env: dict[str, str], server: InstantServer) -> float:
    """One `coop chat` whose first message is typed the moment the prompt shows: seconds from Enter to the
    request at the server."""
    with _chat_shown(coop, env, server) as (name, done):
        waited = _send_turn(name, server, "where is the lentil recipe?")
        _exit(name, done)
    return waited


def early_exit_run(coop: list[str], env: dict[str, str], server: InstantServer, after: float = 1.0) -> float:
    """One `coop chat` left with Ctrl-D `after` seconds after its prompt shows (the model client may still be
    warming up): seconds from Ctrl-D to the end of the process, which must exit 0."""
    with _chat_shown(coop, env, server) as (name, done):
        time.sleep(after)
        return _ctrl_d(name, done)
