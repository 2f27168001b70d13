"""What makes `coop chat` start at once and answer its first turn without delay (the figures are in
`bench/startup.py`): heavy loading begins only once the prompt is drawn, nothing on the way to the prompt waits for
the embedder, opening a database imports no numpy, and the model client's warm-up sends nothing anywhere."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from coop.chat.repl import Repl
from coop.chat.session import ChatSession
from coop.cli.chat import EmbedderLoader
from coop.config.loading import Config, apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder


def test_background_loading_starts_after_the_first_prompt_is_drawn(memory, openai_server, coop_home):
    config = apply_overrides(load_config(), {"model.name": "openai/m", "model.api_base": openai_server.api_base})
    events: list[str] = []
    session = ChatSession(memory, config, embedder=lambda: HashEmbedder(64))
    console = Console(file=io.StringIO(), width=80, force_terminal=False, color_system=None)

    def banner() -> str:
        events.append("banner")
        return "BANNER"

    repl = Repl(session, console=console, banner=banner, on_start=lambda: events.append("loading"))
    with create_pipe_input() as pipe:
        prompt = repl.make_prompt_session(input=pipe, output=DummyOutput())
        prompt.app.after_render += lambda _: events.append("drawn")
        pipe.send_text("hello\r\x04")
        assert repl.run_terminal(prompt) == 0
    assert events[:3] == ["banner", "drawn", "loading"]
    assert events.count("loading") == 1  # once, not on every redraw
    assert openai_server.chat_requests()  # the turn ran


def test_pipe_mode_starts_loading_before_the_first_line(memory):
    session = ChatSession(memory, Config(), embedder=lambda: None)
    events: list[str] = []
    repl = Repl(session, console=Console(file=io.StringIO()), on_start=lambda: events.append("loading"),
                out=io.StringIO())
    repl.run_lines([])
    assert events == ["loading"]


def test_the_worker_waits_for_the_repl_to_start_the_embedder(monkeypatch):
    """A background job asking for the embedder must not start its loading before the prompt is drawn; the main
    thread (a turn) starts it at once."""
    loaded = threading.Event()
    monkeypatch.setattr("coop.services.load_embedder", lambda config: (loaded.set(), _status())[1])
    loader = EmbedderLoader(Config())
    got: list[object] = []
    job = threading.Thread(target=lambda: got.append(loader()))
    job.start()
    time.sleep(0.3)
    assert not loaded.is_set() and not loader.ready()  # still waiting for the REPL
    loader.start()
    job.join(5)
    assert loaded.is_set() and loader.ready() and got and got[0] is not None


def test_the_worker_starts_the_embedder_itself_when_no_prompt_ever_comes(monkeypatch):
    monkeypatch.setattr("coop.services.load_embedder", lambda config: _status())
    monkeypatch.setattr(EmbedderLoader, "START_GRACE_SECONDS", 0.1)
    loader = EmbedderLoader(Config())
    got: list[object] = []
    job = threading.Thread(target=lambda: got.append(loader()))
    job.start()
    job.join(5)
    assert got and got[0] is not None


def test_catching_up_at_start_never_waits_for_the_embedder(memory):
    """The start-up embedding job asks for the embedder on the worker, not while the REPL is starting."""
    never = threading.Event()
    asked: list[str] = []

    def slow_embedder():
        asked.append(threading.current_thread().name)
        never.wait(10)
        return None

    class RecordingWorker:
        def __init__(self) -> None:
            self.jobs: list[str] = []

        def submit(self, name, job) -> None:
            self.jobs.append(name)

        def take_notices(self) -> list[str]:
            return []

    worker = RecordingWorker()
    session = ChatSession(memory, Config(), embedder=slow_embedder, worker=worker)  # type: ignore[arg-type]
    started = time.monotonic()
    session.catch_up()
    assert time.monotonic() - started < 1.0 and asked == []
    assert worker.jobs == ["embed new messages"]


def test_opening_a_database_imports_no_numpy_and_loads_no_sqlite_vec(tmp_path):
    code = ("import sys; from coop.memory.storage.database import open_database; "
            f"db = open_database({str(tmp_path / 'x.db')!r}); "
            "print(db.scalar(\"SELECT count(*) FROM pragma_function_list WHERE name = 'vec_version'\"), "
            "'numpy' in sys.modules, 'sqlite_vec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "False", "False"]  # no extension: vectors are scanned in memory (issue 43)


def test_the_model_warm_up_loads_the_request_path_and_sends_nothing(openai_server):
    code = ("import sys; from coop.model import llm; llm.warm_up('openai/some-model'); "
            "print(all(m in sys.modules for m in ('litellm', 'openai.resources', 'mcp', 'httpcore._sync')))")
    env = {"OPENAI_API_BASE": openai_server.api_base, "OPENAI_API_KEY": "sk-test", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-500:]
    assert openai_server.requests == []  # litellm's mock_response: nothing left the process


def _status():
    from coop.memory.growth.embedders import EmbedderStatus

    return EmbedderStatus(HashEmbedder(16), "hash/tokens/16")


def test_the_loading_thread_prepares_the_vector_index_after_the_embedder(monkeypatch, caplog):
    """`then` runs in the loading thread with the loaded embedder; when it fails, the failure is logged and the
    embedder is still there (the first search would do the same work itself)."""
    monkeypatch.setattr("coop.services.load_embedder", lambda config: _status())
    seen: list[tuple[str, str]] = []
    loader = EmbedderLoader(Config(), then=lambda e: seen.append((e.id, threading.current_thread().name)))
    loader.start()
    embedder = loader()
    assert embedder is not None and seen == [(embedder.id, "coop-embedder-load")]

    def broken(embedder):
        raise RuntimeError("disk gone")

    failing = EmbedderLoader(Config(), then=broken)
    failing.start()
    with caplog.at_level("WARNING"):
        assert failing() is not None
    assert "preparing the vector index failed" in caplog.text and "disk gone" in caplog.text


def test_coop_chat_loads_the_users_vector_bits_beside_the_repl(openai_server, coop_home, run_cli, monkeypatch):
    """`coop chat` hands the loading thread a job that loads this user's sign bits on a connection of its own."""
    from coop.memory.storage import vector_index

    calls: list[tuple[str, str, str]] = []
    real = vector_index.load_beside
    monkeypatch.setattr(vector_index, "load_beside",
                        lambda db, user, embedder_id: (calls.append((db.path, user, embedder_id)),
                                                       real(db, user, embedder_id))[1])
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base}
    result = run_cli("chat", "--user", "sam", input="hello there\n", env=env)
    assert result.exit_code == 0, result.stderr
    assert calls and calls[0][1] == "sam" and calls[0][2].startswith("hash/") and calls[0][0].endswith(".db")


def test_the_warm_up_readies_the_lean_path_first_and_litellm_after_the_embedder(monkeypatch):
    """A message typed at once needs the lean request path and the embedder; litellm's import (seconds of Python)
    would slow both by taking the interpreter's lock, so it starts only once the embedder has loaded, and the model
    that tells a question's language comes last (never in the loading thread, which a turn waits for)."""
    import importlib

    from coop.cli import chat as chat_cli
    from coop.model import llm

    events: list[str] = []
    monkeypatch.setattr(llm, "warm_lean", lambda: events.append("lean"))
    monkeypatch.setattr(llm, "warm_up", lambda model: events.append(f"litellm {model}"))
    detect = importlib.import_module("coop.memory.language.detect")  # the package's name `detect` is its function
    monkeypatch.setattr(detect, "load", lambda: events.append("language model"))

    class Loader:
        def wait(self, timeout: float) -> None:
            events.append("embedder loaded")

    chat_cli.warm_model_client("openai/m", Loader())  # type: ignore[arg-type]
    assert events == ["lean", "embedder loaded", "litellm openai/m", "language model"]


def test_a_session_that_ends_during_the_warm_up_waits_for_it(openai_server, coop_home, run_cli, monkeypatch):
    """A piped `coop chat` that ends while litellm is still being imported waits for the import: a daemon thread
    stopped halfway through an import holds its module's lock, and litellm's HTTP clients, collected at shutdown,
    import a module to close themselves, so the process hung for good (1 run in 3-12 under load)."""
    import threading
    import time

    from coop.cli import chat as chat_cli

    finished = threading.Event()

    def slow_warm_up(model, loader=None):
        time.sleep(1.0)  # litellm's import, still going when the last line has been answered
        finished.set()

    monkeypatch.setattr(chat_cli, "warm_model_client", slow_warm_up)
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base}
    result = run_cli("chat", "--user", "sam", input="hello there\n", env=env)
    assert result.exit_code == 0, result.stderr
    assert finished.is_set()  # the session returned only once the warm-up was done
