"""Secrets and files: coop's files are private whatever the umask, and an API key given to coop (through the
environment, or pasted by mistake into the config) never lands in the database, the trace, the history, the
logs or any message it prints, including the errors of a provider that echoes the key back."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

KEY = "sk-test-SECRET-1234567890"
MARKERS = (KEY.encode(), b"SECRET-1234567890")


def leaks(data: bytes | str) -> list[str]:
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return [m.decode() for m in MARKERS if m in raw]


def scan_tree(root: Path) -> dict[str, list[str]]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            hits = leaks(path.read_bytes())
            if hits:
                found[str(path)] = hits
    return found


@pytest.fixture
def echo_server():
    """Answers every request with 401 and a body that repeats the Authorization header it got, as some providers
    and proxies do."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            auth = self.headers.get("Authorization") or ""
            seen.append(auth)
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth.removeprefix('Bearer ')}",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    httpd.shutdown()
    httpd.server_close()


def run_coop(args: list[str], env: dict[str, str], stdin: bytes = b"", umask: int | None = None):
    def preexec() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run([sys.executable, "-m", "coop", *args], input=stdin, capture_output=True, env=env,
                          timeout=180, preexec_fn=preexec)


@pytest.mark.slow
def test_an_api_key_never_reaches_the_database_trace_history_logs_or_output(coop_home, tmp_path, openai_server,
                                                                           echo_server):
    embed_base, embed_seen = echo_server
    trace = tmp_path / "trace.jsonl"
    config = tmp_path / "coop.toml"
    config.write_text('[model]\nname = "openai/test-model"\napi_key_env = "MY_PROVIDER_KEY"\n'
                      f'api_base = "{openai_server.api_base}"\ntimeout_seconds = 10\n'
                      '[memory.embedder]\nprovider = "litellm"\nmodel = "openai/embed-model"\ndims = 64\n'
                      f'api_base = "{embed_base}"\napi_key_env = "MY_PROVIDER_KEY"\n'
                      f'[trace]\nfile = "{trace}"\n', encoding="utf-8")
    env = {**os.environ, "MY_PROVIDER_KEY": KEY, "COOP_CONFIG": str(config), "COOP_HOME": str(coop_home)}
    env.pop("COOP_MEMORY_EMBEDDER_PROVIDER", None)
    echo = f"Incorrect API key provided: {KEY}"
    openai_server.replies = [
        "Hello! Nice to meet you.",                               # a normal turn
        {"status": 401, "message": echo},                         # the key, echoed by the provider
        {"status": 400, "message": f"bad request for key {KEY}"},
        {"status": 404, "message": f"model not found (key {KEY})"},
        {"tool_calls": [{"name": "memory_search", "arguments": json.dumps({"query": "hello"})}]},
        "Done searching.",
    ]
    openai_server.background_replies = [{"status": 401, "message": echo},
                                        json.dumps({"facts": [{"category": "pets", "key": "dog", "value": "Has a dog "
                                                               "named Rex", "importance": 0.7}]})]
    lines = "hello there\nsecond try\nthird try\nfourth try\nsearch my memory\n/remember I have a dog named Rex\n"
    results = [run_coop(["--debug", "chat", "--user", "sam"], env, lines.encode()),
               run_coop(["memory", "add", "I like tea", "--user", "sam"], env),
               run_coop(["memory", "search", "tea", "--user", "sam", "--json"], env),
               run_coop(["memory", "reembed", "--user", "sam"], env),
               run_coop(["check"], env)]
    # The key was really used: the model and the embedder both received it.
    assert {r["authorization"] for r in openai_server.requests} == {f"Bearer {KEY}"}
    assert embed_seen and set(embed_seen) == {f"Bearer {KEY}"}
    first = results[0]
    assert first.returncode == 4  # model errors in pipe mode
    err = first.stderr.decode()
    assert "AuthenticationError" in err and "***" in err  # the error is shown, with the key blanked out
    for result in results:
        assert leaks(result.stdout) == [] and leaks(result.stderr) == [], (result.args, result.stderr.decode())
    assert trace.exists() and leaks(trace.read_bytes()) == []
    assert scan_tree(coop_home) == {}
    assert scan_tree(tmp_path) == {}  # the home, the trace and the config
    # the failed embeddings were recorded on the rows, without the key
    from coop.memory.storage.database import open_database

    database = open_database(str(coop_home / "coop.db"))
    try:
        errors = [row[0] for row in database.execute("SELECT embedding_error FROM messages "
                                                     "WHERE embedding_error IS NOT NULL")]
    finally:
        database.close()
    assert errors and all("AuthenticationError" in e and KEY not in e for e in errors)


@pytest.mark.parametrize("toml", [
    f'[model]\napi_key_env = "{KEY}"\n',                 # the key pasted where its variable's name belongs
    f'[model]\napi_key = "{KEY}"\n',                     # a key that does not exist
    f'[model]\napi_key_env = ["{KEY}"]\n',               # the wrong type
    f'[memory.embedder]\napi_key_env = "{KEY}"\n',
    f'[model]\napi_key_env = {KEY}\n',                   # not even TOML
    f'[model]\nname = "openai/x"\napi_key_env = "{KEY}" # comment\n',
])
def test_a_key_pasted_into_the_config_is_never_repeated_in_the_error(tmp_path, run_cli, toml):
    path = tmp_path / "coop.toml"
    path.write_text(toml, encoding="utf-8")
    result = run_cli("--config", str(path), "memory", "list")
    assert result.exit_code == 2
    assert "error:" in result.stderr and "hint:" in result.stderr
    assert leaks(result.stdout + result.stderr) == []
    for args in (["check"], ["check", "--json"]):
        result = run_cli("--config", str(path), *args)
        assert result.exit_code == 1 and "config" in result.stdout
        assert leaks(result.stdout + result.stderr) == []


def test_a_key_in_an_environment_override_is_never_repeated(run_cli):
    result = run_cli("memory", "list", env={"COOP_MODEL_API_KEY_ENV": KEY})
    assert result.exit_code == 2 and "error:" in result.stderr
    assert leaks(result.stdout + result.stderr) == []


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_files_are_private_whatever_the_umask(coop_home, tmp_path, openai_server, memory):
    assert stat.S_IMODE(coop_home.stat().st_mode) == 0o700  # created by the `memory` fixture's database
    home = tmp_path / "fresh-home"
    trace = tmp_path / "trace.jsonl"
    env = {**os.environ, "COOP_HOME": str(home), "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base, "COOP_TRACE_FILE": str(trace)}
    result = run_coop(["chat"], env, b"hello\n", umask=0)
    assert result.returncode == 0, result.stderr.decode()
    assert run_coop(["memory", "export", "-o", str(tmp_path / "out.jsonl")], env, umask=0).returncode == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("coop.db", "coop.db-wal", "coop.db-shm"):
        path = home / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert (home / "coop.db").exists()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "out.jsonl").stat().st_mode) == 0o600


def test_the_history_file_is_private_whatever_the_umask(memory, openai_server, coop_home):
    import io

    from rich.console import Console

    from coop.chat.repl import Repl
    from coop.chat.session import ChatSession
    from coop.config import apply_overrides, load_config
    from coop.memory.growth.embedders import HashEmbedder

    config = apply_overrides(load_config(), {"model.name": "openai/test-model"})
    session = ChatSession(memory, config, embedder=lambda: HashEmbedder(64))
    repl = Repl(session, console=Console(file=io.StringIO()), history_path=str(coop_home / "history"))
    old = os.umask(0)
    try:
        repl.make_prompt_session()
    finally:
        os.umask(old)
    assert stat.S_IMODE((coop_home / "history").stat().st_mode) == 0o600
