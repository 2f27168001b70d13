"""Exits and faults: every odd input or state ends in one line with a hint and the right exit code, and `coop
chat` exits cleanly whatever its background threads are doing."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

import apsw
import pytest

from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:") and len(lines) <= 2, stderr
    assert "Traceback" not in stderr and "unexpected" not in stderr
    return lines[0]


def test_a_session_id_out_of_range_is_a_usage_error(run_cli):
    result = run_cli("chat", "--session", "99999999999999999999", env={"COOP_MODEL_NAME": "openai/x"})
    assert result.exit_code == 2 and "--session" in result.stderr and "Traceback" not in result.stderr


def test_a_nul_in_the_database_path_is_a_config_error(run_cli, tmp_path):
    config = tmp_path / "nul.toml"
    config.write_text('[memory]\ndb_path = "/tmp/a\\u0000b.db"\n')
    result = run_cli("--config", str(config), "memory", "list")
    assert result.exit_code == 2
    assert "NUL" in one_error_line(result.stderr)


def test_a_deeply_nested_toml_value_is_a_config_error(run_cli, tmp_path):
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    result = run_cli("--config", str(config), "memory", "list")
    assert result.exit_code == 2
    assert "nested too deeply" in one_error_line(result.stderr)


def test_check_reports_a_held_write_lock_as_busy_not_damaged(run_cli, coop_home):
    path = str(coop_home / "coop.db")
    MemoryStore(open_database(path)).user("ana").facts.add("a fact")
    holder = apsw.Connection(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = run_cli("check", "--json", env={"COOP_MEMORY_BUSY_TIMEOUT_MS": "50"})
    finally:
        holder.execute("ROLLBACK")
    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["integrity"]["severity"] == "warning" and "busy" in checks["integrity"]["message"]
    assert "damaged" not in result.stdout and "corrupt" not in result.stdout


def test_a_log_line_that_cannot_be_written_is_dropped_silently(coop_home, capsys):
    from coop.files.logs import logging_to_file

    with logging_to_file(coop_home, secrets=[]):
        handler = next(h for h in logging.getLogger("coop").handlers if hasattr(h, "baseFilename"))
        class FullDisk:
            def write(self, text: str) -> None:
                raise OSError(28, "No space left on device")

            def flush(self) -> None:
                pass

            def close(self) -> None:
                pass

        handler.stream = FullDisk()  # every write fails, as on a full disk
        logging.getLogger("coop.test").warning("this line cannot be written")
    assert "Logging error" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.real_model
def test_chat_exits_cleanly_while_a_large_embedding_backlog_runs(openai_server, coop_home, real_model_dir):
    """Exiting while the worker embeds with onnxruntime used to abort the interpreter (rc 134)."""
    db = open_database(str(coop_home / "coop.db"))
    memory = MemoryStore(db).user("ana")
    session = memory.sessions.start()
    with db.atomic():
        for i in range(3000):
            memory.messages.add(session, "user", f"backlog message number {i} about rivers and mountains")
    db.close()
    env = {**os.environ, "COOP_HOME": str(coop_home), "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base, "COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed",
           "COOP_MEMORY_EMBEDDER_MODEL_PATH": real_model_dir, "COOP_MEMORY_EXTRACTION_ENABLED": "false"}
    for _ in range(3):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "coop", "chat", "--user", "ana"], input=b"hello\n",
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-500:]
        assert b"terminate called" not in done.stderr
        assert time.monotonic() - started < 60


def test_a_chat_run_inside_another_program_never_ends_its_process(run_cli, openai_server, monkeypatch):
    """The embedder still loading at exit makes the `coop` program leave without the interpreter's shutdown;
    a chat run in another program's process (here pytest's) returns instead, whatever is still loading."""
    from coop.cli import chat

    monkeypatch.setattr(chat.EmbedderLoader, "ready", lambda self: False)
    openai_server.replies = ["hello"]
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
           "COOP_MEMORY_EXTRACTION_ENABLED": "false", "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}
    result = run_cli("chat", "--user", "ana", input="hi\n", env=env)
    assert result.exit_code == 0 and "hello" in result.stdout  # and this process is still here to see it


def test_the_coop_program_leaving_early_still_runs_its_exit_functions(openai_server, coop_home):
    """Leaving without the interpreter's shutdown must not skip the exit functions (log files flush there)."""
    script = ("import atexit, sys; atexit.register(lambda: print('exit functions ran', file=sys.stderr)); "
              "from coop.cli import chat; chat.EmbedderLoader.ready = lambda self: False; "
              "from coop.cli.app import main; sys.argv = ['coop', 'chat', '--user', 'ana']; main()")
    openai_server.replies = ["hello"]
    env = {**os.environ, "COOP_HOME": str(coop_home), "COOP_MODEL_NAME": "openai/test-model",
           "COOP_MODEL_API_BASE": openai_server.api_base, "COOP_MEMORY_EXTRACTION_ENABLED": "false",
           "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}
    done = subprocess.run([sys.executable, "-c", script], input=b"hi\n", capture_output=True, env=env, timeout=240)
    assert done.returncode == 0 and b"hello" in done.stdout
    assert b"exit functions ran" in done.stderr


def test_the_program_owns_its_process_only_while_its_entry_point_runs(monkeypatch):
    """A program that called `main` once (as the tests' runner does) is not coop's to end afterwards."""
    from coop.cli import app as cli_app
    from coop.cli.context import own_process

    seen = []
    monkeypatch.setattr(cli_app, "app", lambda prog_name: seen.append(own_process()))
    cli_app.main()
    assert seen == [True] and not own_process()
