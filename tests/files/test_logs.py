"""Background failures during `coop chat`: written to coop.log (0600, secrets masked), shown as a one-line notice
at the next prompt, never printed over the conversation."""

from __future__ import annotations

import io
import logging
import os
import stat
import subprocess
import sys
import threading

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from coop.chat.repl import Repl
from coop.config.loading import apply_overrides, load_config
from coop.errors import ErrorKind, ModelError
from coop.files.logs import LOG_FILE, logging_to_file
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.worker import BackgroundWorker

SECRET = "sk-ant-not-a-real-key-4242"


def test_records_from_any_thread_go_to_the_file_not_the_terminal(tmp_path, capfd):
    logger = logging.getLogger("coop.memory.storage.vectors")
    with logging_to_file(tmp_path / "home", secrets=[SECRET, None, ""]) as path:
        worker = threading.Thread(target=lambda: logger.warning("embedding failed: bad key %s", SECRET))
        worker.start()
        worker.join()
        logger.debug("only with --debug")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    text = path.read_text()
    assert "WARNING coop.memory.storage.vectors" in text and "embedding failed: bad key [secret]" in text
    assert SECRET not in text and "only with --debug" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "home").st_mode) == 0o700
    coop_logger = logging.getLogger("coop")
    assert coop_logger.handlers == [] and coop_logger.propagate  # put back as it was


def test_no_directory_means_no_file_and_still_nothing_on_the_terminal(tmp_path, capfd):
    with logging_to_file(None) as path:
        logging.getLogger("coop.chat").warning("a warning while incognito")
    assert path is None and capfd.readouterr() == ("", "")
    assert list(tmp_path.rglob(LOG_FILE)) == [] and not (tmp_path / "cwd" / LOG_FILE).exists()


def test_a_failed_background_job_becomes_a_notice_at_the_next_prompt(coop_home, scripted, capfd, monkeypatch,
                                                                       wait_until):
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore

    db_path = str(coop_home / "coop.db")
    memory = MemoryStore(open_database(db_path)).user("ana")
    monkeypatch.setenv("COOP_TEST_MODEL_KEY", SECRET)
    config = apply_overrides(load_config(), {"model.name": "openai/test-model",
                                             "model.api_key_env": "COOP_TEST_MODEL_KEY"})
    worker = BackgroundWorker(lambda: MemoryStore.open(db_path))
    session = scripted.session(memory, config, embedder=lambda: HashEmbedder(64), worker=worker)
    scripted.replies = ["Noted!", "Sure."]
    # the fast model fails as the model client reports an HTTP 500 whose text echoes the key (retries too)
    scripted.background_default = ModelError(f"server error: upstream exploded ({SECRET})", kind=ErrorKind.SERVER)
    screen = io.StringIO()
    repl = Repl(session, console=Console(file=screen, width=200, color_system=None), banner=lambda: "BANNER")

    with create_pipe_input() as pipe, logging_to_file(coop_home, secrets=[SECRET]) as log_path:
        def later():  # the second line only once the first turn's extraction has failed
            try:
                wait_until(scripted.background_requests, timeout=30, message="the extraction request")
                worker.wait_idle(30)
            finally:
                pipe.send_text("and another thing\r\x04")

        pipe.send_text("I have a cat called Tofu\r")
        feeder = threading.Thread(target=later)
        feeder.start()
        assert repl.run_terminal(repl.make_prompt_session(input=pipe, output=DummyOutput())) == 0
        feeder.join()
        worker.wait_idle(30)  # the second turn's extraction fails too: logged here, not after the log file closes

    shown = screen.getvalue()
    assert "memory: extract facts failed (" in shown and "ModelError" not in shown, shown
    # Shown when the REPL next draws its prompt: after the second turn here, which was typed ahead.
    assert shown.index("Noted!") < shown.index("memory: extract facts failed (")
    assert "upstream exploded" in shown and "nothing was lost" in shown and SECRET not in shown
    assert capfd.readouterr().err == ""
    logged = log_path.read_text()
    assert "extract facts failed: ModelError" in logged and SECRET not in logged
    assert [m.text for m in memory.list_items("message")][-2:][::-1] == ["I have a cat called Tofu", "Noted!"]


@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_coop_chat_keeps_background_warnings_off_stderr(openai_server, coop_home):
    openai_server.replies = ["Noted!"]
    openai_server.background_replies = [f"no JSON here, and a key: {SECRET}"]  # a reply with no usable JSON
    env = {**os.environ, "COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
           "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", "ANTHROPIC_API_KEY": SECRET}
    result = subprocess.run([sys.executable, "-m", "coop", "chat"], input=b"I have a cat called Tofu\n",
                            capture_output=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    # stderr holds coop's one-line notices (what memory did, and that it failed), never a log record or traceback
    assert result.stdout.decode().strip() == "Noted!"
    notices = result.stderr.decode().splitlines()
    assert notices and all(line.startswith("memory") for line in notices), notices
    assert "the fast model returned no usable JSON" in result.stderr.decode() and SECRET not in result.stderr.decode()
    logged = (coop_home / LOG_FILE).read_text()
    # said by its length: the reply may quote the user's words, so its text is for DEBUG only
    assert "gave no usable notes JSON in json_schema mode (" in logged and SECRET not in logged
    assert "no JSON here" not in logged
