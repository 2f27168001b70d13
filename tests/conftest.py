"""Shared fixtures, in the style of simonw/llm: every test gets its own COOP_HOME and no config from the host.

- `coop_home`: a temp COOP_HOME (autouse), with COOP_* variables from the host cleared, the embedder set to the
  deterministic hash embedder (fast, no model needed), and the working directory moved so ./coop.toml is not read.
- `db`, `store`, `memory`: an on-disk store in that home and one user's handle on it; `store` and `memory` are
  parametrized by `backend`: every test that takes them runs on SQLite and on Postgres (`tests/postgres.py`).
- `hash_embedder`: the deterministic embedder.
- `real_model_dir` / `real_embedder`: the real all-MiniLM-L6-v2 model from COOP_TEST_MODEL_PATH (set by
  .ci/run from ../shared/tools/provision-embedder-model); tests that need it skip with the reason when absent.
- `run_cli`: runs `coop` in-process with typer's CliRunner, stdout and stderr kept apart.
- `scripted`: the in-process scripted model (tests/scripted_model.py), chat model and fast model in one, with the
  scripted server's names; what tests use unless the HTTP path through litellm is their subject.
- `openai_server`: a scripted OpenAI-compatible HTTP server on 127.0.0.1 that records every request, for the tests
  of the HTTP path: the model client, credentials, errors and retries, streaming, `coop chat` run as a process.
- `retry_backoff` (autouse): coop's model calls still retry, but without waiting out the real backoff; a test
  that is about the backoff sets its own with `retry_backoff(seconds)`.
- `wait_until`: poll a condition with a timeout instead of sleeping for a fixed time.

Hypothesis profiles: "dev" (the default: a modest number of examples per property, for the inner loop) and "ci"
(chosen when $CI is set, as CI sets CI=true: more examples, never thousands). HYPOTHESIS_PROFILE picks one
explicitly. Properties take their example count from the profile; one that is costly per example (CLI runs)
takes a share of it, `settings().max_examples * share`.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

pytest_plugins = ["tests.postgres"]  # postgres_server, postgres_url

# The environment as the test run found it, before any fixture patches it.
_HOST_ENV = dict(os.environ)

# --- hypothesis profiles ------------------------------------------------------------------------------------
# A generous deadline (hypothesis' own 200 ms fails on a loaded machine); the properties that write to SQLite,
# whose timing varies with the disk and the load, set deadline=None themselves.
settings.register_profile("dev", max_examples=25, deadline=2000)
settings.register_profile("ci", max_examples=250, deadline=2000, print_blob=True)
_IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _IN_CI else "dev"))


def poll(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.01,
         message: str = "the condition") -> Any:
    """Poll `predicate` until it is true and return its value; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """`wait_until(predicate, timeout=30.0, message=...)`: wait for a condition instead of a fixed sleep."""
    return poll


# --- no real backoff between model retries ------------------------------------------------------------------


@functools.cache
def _settings_with_backoff(base: type, seconds: float) -> type:
    """`base` (coop.model.llm.ModelSettings) with another default backoff; everything else, retries included, as is."""

    @dataclass(frozen=True)
    class ModelSettings(base):  # type: ignore[misc, valid-type]
        backoff_seconds: float = seconds

    ModelSettings.__qualname__ = base.__qualname__
    ModelSettings.__module__ = base.__module__
    return ModelSettings


@pytest.fixture(autouse=True)
def retry_backoff(coop_home: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Model calls retry as in production, with no backoff sleep in between (0.5 s, doubling, would otherwise be
    waited out by every test whose scripted model fails). Call the returned function to set another backoff.

    In process, coop.model.llm.ModelSettings gets a default backoff of 0. Processes that tests start read
    COOP_MODEL_BACKOFF_SECONDS, once the config has a `model.backoff_seconds` key.
    """
    from coop.config.loading import iter_keys
    from coop.model import llm

    base = getattr(llm.ModelSettings, "_coop_test_base", llm.ModelSettings)
    config_key = dict(iter_keys()).get("model.backoff_seconds")

    def set_backoff(seconds: float) -> None:
        patched = _settings_with_backoff(base, float(seconds))
        patched._coop_test_base = base
        monkeypatch.setattr(llm, "ModelSettings", patched)
        if config_key is not None:  # as low as the config allows
            floor = config_key.metadata.get("min") or 0.0
            monkeypatch.setenv("COOP_MODEL_BACKOFF_SECONDS", repr(max(float(seconds), float(floor))))

    set_backoff(0.0)
    return set_backoff


@pytest.fixture(autouse=True)
def no_local_model_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test asks this machine's Ollama, LM Studio or llama.cpp ports (`coop/model/discover.py`); the tests of
    the discovery give it servers of their own."""
    monkeypatch.setattr("coop.model.discover.LOCAL_SERVERS", ())


@pytest.fixture(autouse=True)
def coop_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("COOP_") and name not in ("COOP_TEST_MODEL_PATH",):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("COOP_HOME", str(home))
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_PROVIDER", "hash")
    monkeypatch.setenv("COOP_MODEL_CACHE", str(tmp_path / "no-model-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


@pytest.fixture
def db(coop_home: Path):
    from coop.memory.storage.database import open_database

    database = open_database(str(coop_home / "coop.db"))
    yield database
    database.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """Which store `store` (and so `memory`) is: each test that takes one runs on both (see `store`)."""
    return str(request.param)


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """A SQLite file in the test's home and, again, a fresh database on the throwaway Postgres server
    (`tests/postgres.py`). Under Postgres, the configuration the CLI, the chat and MCP read names the same
    database (COOP_MEMORY_BACKEND, COOP_DATABASE_URL), so a test that mixes `memory` with commands sees one store.
    A test that reaches SQLite itself (the `db` fixture: pragmas, FTS5 tables, migrations, files) runs on SQLite
    only, as does one marked `sqlite_only` (`pytest_collection_modifyitems` below)."""
    if backend == "sqlite":
        from coop.memory.storage.store import MemoryStore

        return MemoryStore(request.getfixturevalue("db"))
    from coop.memory.storage.postgres.store import PgStore

    url = request.getfixturevalue("postgres_url")
    request.getfixturevalue("coop_home").mkdir(mode=0o700, parents=True, exist_ok=True)  # as `Services.store`
    monkeypatch.setenv("COOP_MEMORY_BACKEND", "postgres")
    monkeypatch.setenv("COOP_DATABASE_URL", url)
    opened = PgStore.open(url)
    request.addfinalizer(opened.close)
    return opened


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Postgres runs of tests about SQLite itself are left out (see `store`)."""
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        sqlite_only = "db" in getattr(item, "fixturenames", ()) or item.get_closest_marker("sqlite_only")
        (drop if on_postgres and sqlite_only else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def memory(store):
    return store.user("ana")


@pytest.fixture
def hash_embedder():
    from coop.memory.growth.embedders import HashEmbedder

    return HashEmbedder(64)


@pytest.fixture(scope="session")
def real_model_dir() -> str:
    path = _HOST_ENV.get("COOP_TEST_MODEL_PATH", "")
    if not path:  # where provision-embedder-model puts it by default
        cache = _HOST_ENV.get("COOP_MODEL_CACHE") or str(Path.home() / ".cache" / "coop-models")
        path = str(Path(cache) / "all-MiniLM-L6-v2-onnx")
    if not (Path(path) / "model.onnx").is_file():
        pytest.skip("real model absent: set COOP_TEST_MODEL_PATH to the provision-embedder-model directory")
    return path


@pytest.fixture(scope="session")
def real_embedder(real_model_dir: str):
    from coop.memory.growth.embedders import FastEmbedEmbedder

    return FastEmbedEmbedder("sentence-transformers/all-MiniLM-L6-v2", 384, real_model_dir)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def run_cli() -> Callable[..., CliResult]:
    from typer.testing import CliRunner

    from coop.cli.app import app

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
        runner = CliRunner()
        result = runner.invoke(app, list(args), input=input, env=env, catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return CliResult(result.exit_code, result.stdout, result.stderr, result.exception)

    return run


@pytest.fixture
def scripted():
    """The in-process scripted model, named as the configs in tests name the server's (openai/test-model)."""
    from tests.scripted_model import ScriptedModel

    return ScriptedModel(name="openai/test-model", body_callables=True)


# --- a scripted OpenAI-compatible server --------------------------------------------------------------------


@dataclass
class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script and records every request.

    `replies` is a queue; each chat request takes the next entry (or `default_reply` when it is empty); requests
    from background jobs (extraction, the one question about changes, summaries: any system prompt other than
    coop's chat preamble) take from `background_replies` (or `background_default`, an empty list of notes). An entry is:
    - a string: the reply text (streamed in small chunks when the request asks for a stream);
    - a dict with any of: `content`, `tool_calls` ([{"name", "arguments"}]), `status` and `message` (an HTTP
      error), `sleep` (seconds before answering), `chunk_delay` (seconds between streamed chunks), `malformed`
      (a stream of garbage), `empty` (a stream with no content), `chunk_size` (characters a streamed chunk, 7), `cut` (the stream stops after the text: no
      finish reason, no [DONE]), `error_midway` (an error event after the text), `finish` (the finish reason);
    - a callable taking the request body and returning one of the above.
    /v1/embeddings answers with `embed(text)` vectors; /api/chat answers as Ollama does (from the same queues). `requests` holds every request's path, body, auth and
    arrival time (time.monotonic()).
    """

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    embed: Callable[[str], list[float]] | None = None
    replies: list[Any] = field(default_factory=list)
    default_reply: Any = "ok"
    background_replies: list[Any] = field(default_factory=list)
    background_default: Any = '{"notes": []}'
    status: int = 200
    models: list[str] = field(default_factory=lambda: ["test-model"])  # what GET /models lists
    owned_by: str | None = None  # each listed model's `owned_by` ("llamacpp": as llama.cpp's server says)
    # Like llama-cpp-python's server: `response_format` type json_schema is answered with HTTP 500 ("Input should be
    # 'text' or 'json_object'"), before any reply is taken from the queues.
    refuses_json_schema: bool = False
    # Like llama-cpp-python's server too: a streamed request with `tools` gets the role delta and [DONE], nothing
    # else (the same request unstreamed gets the reply, the call written as text).
    streams_nothing_with_tools: bool = False

    @property
    def api_base(self) -> str:
        return self.url + "/v1"

    def chat_requests(self) -> list[dict[str, Any]]:
        """The chat turns' requests (system prompt "You are coop"), not the background jobs'."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions") and is_chat(r["body"])]

    def background_requests(self) -> list[dict[str, Any]]:
        """Extraction, the question about changes and summary requests to the fast model."""
        return [r["body"] for r in self.requests
                if r["path"].endswith("/chat/completions") and not is_chat(r["body"])]

    def chat_request_times(self) -> list[float]:
        """When each chat turn's request arrived (time.monotonic())."""
        return [r["time"] for r in self.requests if r["path"].endswith("/chat/completions") and is_chat(r["body"])]

    def system_prompt(self, index: int = -1) -> str:
        return self.chat_requests()[index]["messages"][0]["content"]


def is_chat(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", "")).startswith("You are coop")


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


@pytest.fixture
def openai_server():
    import time as _time

    server_state = ScriptedServer()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            server_state.requests.append({"path": self.path, "body": None, "time": _time.monotonic(),
                                          "authorization": self.headers.get("Authorization")})
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", **({"owned_by": server_state.owned_by} if server_state.owned_by else {})}
                    for m in server_state.models]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            server_state.requests.append({"path": self.path, "body": body, "time": _time.monotonic(),
                                          "authorization": self.headers.get("Authorization")})
            if server_state.status != 200:
                self._send(server_state.status, {"error": {"message": "scripted failure", "type": "server_error"}})
                return
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": server_state.embed(t)}
                        for i, t in enumerate(texts)]
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})
                return
            if server_state.refuses_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
                self._send(500, {"error": {"message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', "
                                                      "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]",
                                           "type": "internal_server_error", "code": 500}})
                return
            if self.path.endswith("/api/chat"):  # Ollama's own API (litellm's ollama_chat/ provider)
                self._ollama(body)
                return
            if server_state.streams_nothing_with_tools and body.get("tools") and body.get("stream"):
                data = _chunk(body.get("model", "x"), {"role": "assistant"}) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if is_chat(body):
                reply = server_state.replies.pop(0) if server_state.replies else server_state.default_reply
            else:
                reply = (server_state.background_replies.pop(0) if server_state.background_replies
                         else server_state.background_default)
            if callable(reply):
                reply = reply(body)
            if isinstance(reply, str):
                reply = {"content": reply}
            if reply.get("sleep"):
                _time.sleep(reply["sleep"])
            if reply.get("status"):
                self._send(reply["status"], {"error": {"message": reply.get("message", "scripted error"),
                                                       "type": "scripted", "code": reply["status"]}})
                return
            model = body.get("model", "x")
            calls = [{"index": i, "id": f"call_{i}", "type": "function",
                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                     for i, c in enumerate(reply.get("tool_calls") or [])]
            content = reply.get("content", "")
            if not body.get("stream"):
                message: dict[str, Any] = {"role": "assistant", "content": content}
                if calls:
                    message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": model,
                                 "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop",
                                              "message": message}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                if reply.get("malformed"):
                    self.wfile.write(b"data: {this is not json\n\n")
                elif not reply.get("empty"):
                    self.wfile.write(_chunk(model, {"role": "assistant", "content": ""}))
                    size = reply.get("chunk_size", 7)  # characters a chunk
                    pieces = (content[i:i + size] for i in range(0, len(content), size))
                    for piece in pieces:
                        self.wfile.write(_chunk(model, {"content": piece}))
                        self.wfile.flush()
                        if reply.get("chunk_delay"):
                            _time.sleep(reply["chunk_delay"])
                    if reply.get("cut"):  # the server stops mid-reply: no finish reason, no [DONE]
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if reply.get("error_midway"):  # an error event after some text, as providers send them
                        self.wfile.write(b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n')
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    for call in calls:
                        self.wfile.write(_chunk(model, {"tool_calls": [call]}))
                    self.wfile.write(_chunk(model, {}, reply.get("finish", "tool_calls" if calls else "stop")))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _ollama(self, body: dict[str, Any]) -> None:
            queue = server_state.replies if is_chat(body) else server_state.background_replies
            default = server_state.default_reply if is_chat(body) else server_state.background_default
            reply = queue.pop(0) if queue else default
            reply = reply(body) if callable(reply) else reply
            content = reply if isinstance(reply, str) else reply.get("content", "")
            done = {"model": body.get("model"), "created_at": "2026-01-01T00:00:00Z", "done": True,
                    "done_reason": "stop", "prompt_eval_count": 1, "eval_count": 1}
            if not body.get("stream"):
                self._send(200, {**done, "message": {"role": "assistant", "content": content}})
                return
            lines = [{**done, "done": False, "message": {"role": "assistant", "content": content}},
                     {**done, "message": {"role": "assistant", "content": ""}}]
            data = "".join(json.dumps(line) + "\n" for line in lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server_state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # shutdown() waits for serve_forever to notice, which it does once per poll interval (0.5 s by default)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield server_state
    httpd.shutdown()
    httpd.server_close()
