"""Forgotten means gone from every place coop wrote it (issue 27): a unique marker goes in through every road (a chat
turn and its session title, the model's reply and a tool result, /remember, an MCP host's memory_record, an import
with a title of its own, a summary, a log line, the prompt history, the trace), one `coop memory forget` later it
is in none of the database file, its WAL, coop.log, the history file, the trace or a new export, and the command's
receipt names each place it cleaned."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from coop.chat.terminal import masked_file_history
from coop.config.loading import apply_overrides, load_config
from coop.files.logs import logging_to_file
from coop.files.trace import Tracer
from coop.memory.growth.embedders import HashEmbedder
from tests.mcp.test_mcp import call, make_server
from tests.memory.transfer.test_reliability_import import conversation

EMBEDDER = HashEmbedder(64)
MARKER = "zqxv7731"
FACT = f"My locker code is {MARKER}"


def _files(home: Path, *extra: Path) -> dict[str, bytes]:
    found = {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file()}
    found.update({str(p): p.read_bytes() for p in extra if p.exists()})
    return found


def test_a_marker_written_through_every_road_is_nowhere_after_one_forget(coop_home, memory, scripted, run_cli,
                                                                         tmp_path, backend):
    trace_file = tmp_path / "trace.jsonl"
    config = apply_overrides(load_config(), {"model.name": "openai/test-model", "trace.file": str(trace_file)})
    with logging_to_file(coop_home):
        # chat: the user's first line (the session's title), the model's reply echoing it
        scripted.replies = [f"Noted: your locker code is {MARKER}."]
        chat = scripted.session(memory, config, embedder=lambda: EMBEDDER, tracer=Tracer(str(trace_file)))
        chat.turn(f"{FACT}, please keep it")
        # /remember, and a tool result that quotes the fact
        fact = chat.remember(FACT)
        memory.messages.add(chat.session_id, "tool", json.dumps({"facts": [f"f1: {FACT}"]}), tool_name="memory_search",
                           tool_call_id="call_1")
        chat.end()
        # a summary that states it, a log line and a trace event that quote it (as a careless one would)
        memory.summaries.add(f"The user said their locker code is {MARKER}.", session_id=chat.session_id)
        logging.getLogger("coop.test").info("extraction proposed %r", FACT)
        Tracer(str(trace_file)).event("error", error=f"could not parse {FACT}")
    # an MCP host's record
    server, _ = make_server(memory, allow_writes=True)
    call(server, "memory_record", {"user_message": f"{FACT}.", "assistant_reply": f"Locker code {MARKER} noted."})
    # an import whose conversation has a title of its own
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([conversation("c1", f"Locker code {MARKER}", [f"{FACT}!", "Got it."])]))
    assert run_cli("memory", "import", str(export), "--user", "ana").exit_code == 0
    # the prompt history
    history = masked_file_history(__import__("prompt_toolkit.history", fromlist=["FileHistory"]).FileHistory)(
        str(coop_home / "history"))
    history.store_string(f"{FACT}, please keep it")
    history.store_string("what is the weather like?")

    before = _files(coop_home, trace_file)
    # db or wal, log, history, trace (on a server, the database is not a file here)
    assert sum(MARKER.encode() in data for data in before.values()) >= (4 if backend == "sqlite" else 3)

    ref = f"f{fact.fact_id}" if hasattr(fact, "fact_id") else "f1"
    result = run_cli("--config", str(_config_file(tmp_path, trace_file)), "memory", "forget", ref, "--yes",
                     "--user", "ana")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"forgot {ref} and ")
    receipt = lines[1]
    for place in ("facts", "messages", "summaries", "session titles", "prompt history entries", "coop.log lines",
                  "trace lines"):
        assert place in receipt, (place, receipt)
    assert "keyed hash" in lines[2] and "exports made from now on" in lines[2]

    exported = run_cli("memory", "export", "--user", "ana").stdout
    markdown = run_cli("memory", "export", "--user", "ana", "--format", "markdown").stdout
    leaks = {name: True for name, data in _files(coop_home, trace_file).items() if MARKER.encode() in data}
    assert leaks == {}, leaks
    assert MARKER not in exported and MARKER not in markdown
    # what had nothing to do with it stays: the other history entry, the imported reply
    assert "what is the weather like?" in (coop_home / "history").read_text()
    assert "Got it." in exported


def _config_file(tmp_path: Path, trace_file: Path) -> Path:
    path = tmp_path / "coop.toml"
    path.write_text(f'[trace]\nfile = "{trace_file}"\n', encoding="utf-8")
    return path
