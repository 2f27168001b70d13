"""Imports from issue 27: invalid UTF-8 is imported as U+FFFD and said, and never leaves an empty session; a
conversation whose every message fails leaves no session; a coop export whose times are all unusable imports its
messages (in order, at the import's time), and a second import of it adds nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

from coop.config.loading import ImportanceConfig
from coop.memory.transfer.imports import import_file


def do_import(memory, path: Path):
    return import_file(memory, path, "auto", importance=ImportanceConfig())


def sessions_of(memory) -> int:
    return memory.db.scalar("SELECT count(*) FROM sessions WHERE user_id = $1", (memory.user_id,))


def messages_of(memory) -> list[tuple[str, float]]:
    return [(row[0], row[1]) for row in memory.db.execute(
        "SELECT content, created_at FROM messages WHERE user_id = $1 ORDER BY id", (memory.user_id,))]


def chatgpt(cid: str, texts: list[str], ts: float = 1_700_000_000.0) -> dict:
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["n0"]}}
    for i, text in enumerate(texts):
        mapping[f"n{i}"] = {"id": f"n{i}", "parent": "root" if i == 0 else f"n{i - 1}",
                            "children": [f"n{i + 1}"] if i + 1 < len(texts) else [],
                            "message": {"id": f"{cid}-{i}", "author": {"role": "user" if i % 2 == 0 else "assistant"},
                                        "create_time": ts + i, "content": {"content_type": "text", "parts": [text]}}}
    return {"title": cid, "conversation_id": cid, "create_time": ts, "update_time": None,
            "current_node": f"n{len(texts) - 1}", "mapping": mapping}


def coop_lines(*records: dict) -> str:
    return "\n".join(json.dumps(r) for r in [{"format": "coop", "version": 1}, *records]) + "\n"


def test_invalid_utf8_in_a_message_is_imported_as_replacement_and_said(tmp_path, memory):
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps([chatgpt("c1", ["caf@@ au lait", "fine"])]).encode().replace(b"@@", b"\xff\xfe"))
    report = do_import(memory, path)
    assert [m[0] for m in messages_of(memory)] == ["caf\ufffd\ufffd au lait", "fine"]
    assert [(p.where, p.reason) for p in report.problems] == [
        ("conversations.json", "2 byte sequence(s) are not valid UTF-8: imported as U+FFFD (\ufffd)")]


def test_invalid_utf8_that_breaks_every_message_leaves_no_empty_session(tmp_path, memory, run_cli):
    path = tmp_path / "export.jsonl"
    head = coop_lines({"type": "session", "id": 1, "title": "s", "started_at": 1_700_000_000.0}).encode()
    broken = b'{"type": "message",\xff "id": 1, "session_id": 1, "role": "user", "content": "x", "created_at": 1.7e9}\n'
    path.write_bytes(head + broken)
    report = do_import(memory, path)
    assert sessions_of(memory) == 0 and messages_of(memory) == [] and report.sessions_added == 0
    reasons = [p.reason for p in report.problems]
    assert any("not JSON" in r for r in reasons) and any("not valid UTF-8" in r for r in reasons)
    result = run_cli("memory", "import", str(path), "--user", "bo")
    assert result.exit_code == 0 and "imported 0 sessions, 0 messages" in " ".join(result.stdout.split())
    assert "not valid UTF-8" in result.stderr
    assert run_cli("memory", "stats", "--user", "bo", "--json").json()["sessions"] == 0


def test_a_chatgpt_conversation_whose_every_message_fails_leaves_no_session(tmp_path, memory, monkeypatch):
    monkeypatch.setattr("coop.memory.transfer.imports.MAX_MESSAGE_CHARS", 10)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chatgpt("c1", ["far too long a message", "and this one too"]),
                                chatgpt("c2", ["short", "ok"])]), encoding="utf-8")
    report = do_import(memory, path)
    assert sessions_of(memory) == 1 and report.sessions_added == 1
    assert [m[0] for m in messages_of(memory)] == ["short", "ok"]


def test_a_coop_export_whose_times_are_all_unusable_imports_its_messages_in_order(tmp_path, memory):
    path = tmp_path / "export.jsonl"
    path.write_text(coop_lines(
        {"type": "session", "id": 1, "title": "s", "started_at": "yesterday", "ended_at": -5},
        {"type": "message", "id": 1, "session_id": 1, "role": "user", "content": "first", "created_at": None},
        {"type": "message", "id": 2, "session_id": 1, "role": "assistant", "content": "second", "created_at": -1e20},
        {"type": "message", "id": 3, "session_id": 1, "role": "user", "content": "third", "created_at": "x",
         "consolidated_at": 9e99}), encoding="utf-8")
    before = time.time()
    report = do_import(memory, path)
    rows = messages_of(memory)
    assert [text for text, _ in rows] == ["first", "second", "third"]
    assert report.messages_added == 3 and report.sessions_added == 1
    assert all(before - 1 <= at <= time.time() + 1 for _, at in rows) and rows == sorted(rows, key=lambda r: r[1])
    assert {(p.where, p.reason) for p in report.problems} == {
        ("messages", "3 have no created_at in 1970..2200: each takes the time of the message before it in its "
                     "session (the first, the session's start)"),
        ("sessions", "1 has no started_at in 1970..2200: each starts at the import's time"),
        ("records", "1 has an unusable ended_at: left out"),
        ("records", "1 has an unusable consolidated_at: left out")}
    again = do_import(memory, path)
    assert again.messages_added == 0 and again.sessions_added == 0 and len(messages_of(memory)) == 3
    assert sessions_of(memory) == 1
