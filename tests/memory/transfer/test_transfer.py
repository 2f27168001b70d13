"""Import (coop, ChatGPT, Claude), export (coop JSON Lines, markdown) and re-embedding.

The ChatGPT and Claude files are built here from the formats' public descriptions: ChatGPT's
`conversations.json` is a list of conversations, each with a `mapping` of node id -> {id, message, parent,
children} and a `current_node` (the leaf of the branch the user last saw); Claude's is a list of conversations
with `uuid`, `name`, `created_at` and `chat_messages` [{uuid, sender, text, content, attachments, files}].
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import zipfile
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore
from coop.memory.transfer.readers import iter_json_array

# -- building export files --------------------------------------------------------------------------------------


def _node(node_id: str, parent: str | None, children: list[str], role: str | None = None, text: Any = None,
          *, content: dict[str, Any] | None = None, ts: float | None = None, **extra: Any) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {"id": f"msg-{node_id}", "author": {"role": role, "name": extra.pop("name", None)},
                   "create_time": ts, "content": content or {"content_type": "text", "parts": [text]},
                   "metadata": extra.pop("metadata", {})}
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[dict[str, Any]]:
    """Two conversations: one with a branch (an edited question), odd parts and roles; one plain."""
    mapping = {
        "root": _node("root", None, ["sys"]),
        "sys": _node("sys", "root", ["u1"], "system", "", metadata={"is_visually_hidden_from_conversation": True}),
        "u1": _node("u1", "sys", ["a1"], "user", "I keep bees on my balcony in Lyon", ts=1_700_000_000.0),
        "a1": _node("a1", "u1", ["u2-old", "u2"], "assistant", "Lovely! How many hives?", ts=1_700_000_010.0),
        # the branch the user abandoned (edited away): must not be imported
        "u2-old": _node("u2-old", "a1", ["a2-old"], "user", "Three hives, ABANDONED BRANCH", ts=1_700_000_020.0),
        "a2-old": _node("a2-old", "u2-old", [], "assistant", "ABANDONED REPLY", ts=1_700_000_030.0),
        # the branch the user saw last
        "u2": _node("u2", "a1", ["img"], "user", "Two hives", ts=1_700_000_040.0),
        "img": _node("img", "u2", ["empty"], "user", None, ts=1_700_000_050.0,
                     content={"content_type": "multimodal_text",
                              "parts": [{"content_type": "image_asset_pointer", "asset_pointer": "file-1"},
                                        "here is a photo of the hives"]}),
        "empty": _node("empty", "img", ["tool"], "assistant", "", ts=1_700_000_060.0),
        "tool": _node("tool", "empty", ["critic"], "tool", "search results: bee forums", name="browser",
                      ts=1_700_000_070.0),
        "critic": _node("critic", "tool", ["code"], "critic", "an unknown role", ts=1_700_000_080.0),
        "code": _node("code", "critic", ["a3"], "assistant", None, ts=1_700_000_090.0,
                      content={"content_type": "code", "language": "python", "text": "print('bees')"}),
        "a3": _node("a3", "code", [], "assistant", "Two hives is a good start", ts=1_700_000_100.0),
    }
    first = {"title": "Bees", "create_time": 1_700_000_000.0, "update_time": 1_700_000_200.0, "mapping": mapping,
             "current_node": "a3", "conversation_id": "conv-bees", "id": "conv-bees"}
    second = {"title": "Bread", "create_time": 1_700_100_000.0, "update_time": 1_700_100_100.0,
              "conversation_id": "conv-bread", "current_node": "b2",
              "mapping": {"b0": _node("b0", None, ["b1"]),
                          "b1": _node("b1", "b0", ["b2"], "user", "How long to proof sourdough?", ts=None),
                          "b2": _node("b2", "b1", [], "assistant", "About four hours", ts=1_700_100_050.0)}}
    return [first, second]


def claude_export() -> list[dict[str, Any]]:
    return [
        {"uuid": "c-1", "name": "Trip planning", "created_at": "2024-03-01T10:00:00.000000Z",
         "updated_at": "2024-03-01T11:00:00Z",
         "chat_messages": [
             {"uuid": "m-1", "sender": "human", "text": "I am planning a trip to Kyoto in April",
              "created_at": "2024-03-01T10:00:00Z", "attachments": [], "files": []},
             {"uuid": "m-2", "sender": "assistant", "text": "",
              "content": [{"type": "text", "text": "Kyoto in April means cherry blossoms."},
                          {"type": "tool_use", "name": "web_search", "input": {"q": "kyoto"}}],
              "created_at": "2024-03-01T10:00:05Z"},
             {"uuid": "m-3", "sender": "human", "text": "Here is my itinerary",
              "attachments": [{"file_name": "itinerary.txt", "extracted_content": "Day 1: Fushimi Inari"}],
              "files": [{"file_name": "photo.jpg"}], "created_at": "2024-03-01T10:01:00Z"},
             {"uuid": "m-4", "sender": "human", "text": "   ", "created_at": "2024-03-01T10:02:00Z"},
             {"uuid": "m-5", "sender": "narrator", "text": "an unknown sender", "created_at": "2024-03-01T10:03:00Z"},
             "not a message",
         ]},
        {"name": "no uuid here", "chat_messages": []},
    ]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def messages_of(memory) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in memory.db.execute(
        "SELECT role, content FROM messages WHERE user_id = $1 ORDER BY id", (memory.user_id,))]


def _open_user(path: Path, user: str):
    return MemoryStore(open_database(str(path))).user(user)


# -- ChatGPT ----------------------------------------------------------------------------------------------------


def test_chatgpt_import_follows_the_current_branch_and_keeps_times_and_titles(tmp_path, run_cli, coop_home):
    export = write_json(tmp_path / "conversations.json", chatgpt_export())
    result = run_cli("memory", "import", str(export), "--user", "sam", "--json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["format"] == "chatgpt"
    assert (report["conversations"], report["sessions_added"]) == (2, 2)

    memory = _open_user(coop_home / "coop.db", "sam")
    texts = [content for _, content in messages_of(memory)]
    assert "Two hives" in texts and "Two hives is a good start" in texts
    assert not any("ABANDONED" in text for text in texts), "a branch the user edited away was imported"
    assert "[image]\nhere is a photo of the hives" in texts, "non-text parts become a marker, text is kept"
    assert "print('bees')" in texts
    assert ("tool", "search results: bee forums") in messages_of(memory)
    assert "an unknown role" not in texts and "" not in texts
    assert any("unknown role 'critic'" in p["reason"] for p in report["problems"])

    sessions = {s["title"]: s for s in memory.sessions.recent()}
    assert sessions["Bees"]["started_at"] == 1_700_000_000.0
    assert sessions["Bees"]["ended_at"] == 1_700_000_200.0
    first = memory.db.one("SELECT created_at, external_id FROM messages WHERE content = $1",
                          ("I keep bees on my balcony in Lyon",))
    assert first == (1_700_000_000.0, "chatgpt:msg-u1")
    # a message without a time takes the conversation's start
    assert memory.db.scalar("SELECT created_at FROM messages WHERE content LIKE 'How long%'") == 1_700_100_000.0
    assert report["embedded"] == report["messages_added"] == 9


def test_importing_the_same_file_twice_adds_nothing(tmp_path, run_cli, coop_home):
    export = write_json(tmp_path / "conversations.json", chatgpt_export())
    assert run_cli("memory", "import", str(export)).exit_code == 0
    again = run_cli("memory", "import", str(export), "--json").json()
    assert (again["sessions_added"], again["messages_added"]) == (0, 0)
    assert again["messages_skipped"] == 9
    store = MemoryStore(open_database(str(coop_home / "coop.db")))
    (user,) = store.user_ids()
    assert store.user(user).stats()["messages"] == 9


def test_a_later_export_with_new_turns_adds_only_them_to_the_same_session(tmp_path, run_cli, coop_home):
    data = chatgpt_export()
    export = write_json(tmp_path / "conversations.json", data)
    run_cli("memory", "import", str(export), "--user", "sam")
    mapping = data[1]["mapping"]
    mapping["b2"]["children"] = ["b3"]
    mapping["b3"] = _node("b3", "b2", [], "user", "And at what temperature?", ts=1_700_100_200.0)
    data[1]["current_node"] = "b3"
    write_json(export, data)
    report = run_cli("memory", "import", str(export), "--user", "sam", "--json").json()
    assert (report["sessions_added"], report["messages_added"]) == (0, 1)
    memory = _open_user(coop_home / "coop.db", "sam")
    bread = next(s for s in memory.sessions.recent() if s["title"] == "Bread")
    assert bread["messages"] == 3


def test_malformed_and_truncated_chatgpt_records_are_reported_and_the_rest_imported(tmp_path, run_cli, coop_home):
    good = chatgpt_export()[1]
    text = json.dumps([{"title": "broken", "mapping": "not a tree"}, 42, good])
    export = tmp_path / "conversations.json"
    export.write_text(text + "\n", encoding="utf-8")
    report = run_cli("memory", "import", str(export), "--format", "chatgpt", "--json").json()
    reasons = " | ".join(f"{p['where']}: {p['reason']}" for p in report["problems"])
    assert "conversation 1 ('broken')" in reasons and "conversation 2: not an object" in reasons
    assert report["messages_added"] == 2

    # cut the file in the middle of the third conversation: the ones before it are kept
    truncated = json.dumps(chatgpt_export())
    export.write_text(truncated[: truncated.index('"conv-bread"') + 5], encoding="utf-8")
    result = run_cli("memory", "import", str(export), "--user", "cut", "--json")
    assert result.exit_code == 0
    report = result.json()
    assert report["sessions_added"] == 1
    assert any("truncated" in p["reason"] for p in report["problems"])


def test_human_output_reports_counts_and_problems(tmp_path, run_cli):
    export = write_json(tmp_path / "conversations.json", chatgpt_export())
    result = run_cli("memory", "import", str(export))
    assert result.exit_code == 0
    assert "imported 2 sessions, 9 messages from chatgpt export" in result.stdout
    assert "unknown role 'critic'" in result.stderr


# -- Claude -----------------------------------------------------------------------------------------------------


def test_claude_import_with_content_blocks_attachments_and_odd_messages(tmp_path, run_cli, coop_home):
    export = write_json(tmp_path / "conversations.json", claude_export())
    report = run_cli("memory", "import", str(export), "--user", "kim", "--json").json()
    assert report["format"] == "claude"
    assert (report["sessions_added"], report["messages_added"]) == (1, 3)
    memory = _open_user(coop_home / "coop.db", "kim")
    messages = messages_of(memory)
    assert messages[0] == ("user", "I am planning a trip to Kyoto in April")
    assert messages[1] == ("assistant", "Kyoto in April means cherry blossoms.")
    assert messages[2][1] == ("Here is my itinerary\n\n[attachment: itinerary.txt]\nDay 1: Fushimi Inari\n\n"
                              "[file: photo.jpg]")
    reasons = [p["reason"] for p in report["problems"]]
    assert any("unknown sender 'narrator'" in r for r in reasons)
    assert any("not an object" in r for r in reasons)
    assert any("no uuid" in r for r in reasons)
    (session,) = memory.sessions.recent()
    assert session["title"] == "Trip planning"
    assert output_time(session["started_at"]) == "2024-03-01T10:00:00"
    assert memory.db.scalar("SELECT external_id FROM messages ORDER BY id LIMIT 1") == "claude:m-1"


def output_time(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def test_a_zip_archive_is_read_in_place(tmp_path, run_cli):
    archive = tmp_path / "data-export.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("users.json", "[]")
        handle.writestr("conversations.json", json.dumps(claude_export()))
    report = run_cli("memory", "import", str(archive), "--json").json()
    assert (report["format"], report["messages_added"]) == ("claude", 3)


def test_unknown_files_are_a_clear_error_that_touches_nothing(tmp_path, run_cli, coop_home):
    odd = tmp_path / "notes.txt"
    odd.write_text("just some notes", encoding="utf-8")
    result = run_cli("memory", "import", str(odd))
    assert result.exit_code == 2
    assert "error: cannot import notes.txt" in result.stderr and "hint: name the format" in result.stderr
    missing = run_cli("memory", "import", str(tmp_path / "nope.json"))
    assert missing.exit_code == 3 and "does not exist" in missing.stderr  # not found, as the README's table says
    bad_format = run_cli("memory", "import", str(odd), "--format", "gemini")
    assert bad_format.exit_code == 2 and "--format auto, coop, chatgpt or claude" in bad_format.stderr
    wrong = run_cli("memory", "import", str(odd), "--format", "coop")
    assert wrong.exit_code == 2 and "starts with its header" in wrong.stderr


def test_streamed_json_array_matches_json_loads_for_any_chunk_size():
    data = chatgpt_export() + claude_export() + [1.5, -2e10, "x" * 50, None, True, {"a": [1, {"b": "]"}]}]
    text = json.dumps(data, indent=1)
    for size in (1, 2, 7, 64, 1 << 20):
        assert list(iter_json_array(io.StringIO(text), chunk_size=size)) == data
    assert list(iter_json_array(io.StringIO("  [ ]  "))) == []
    with pytest.raises(ValueError):
        list(iter_json_array(io.StringIO('{"not": "an array"}')))
    with pytest.raises(ValueError, match="not closed"):
        list(iter_json_array(io.StringIO('[{"a": 1},'), chunk_size=3))


def test_library_import_reports_progress_through_the_file(tmp_path, memory):
    from coop.config.loading import ImportanceConfig
    from coop.memory.transfer.imports import import_file

    export = write_json(tmp_path / "conversations.json", chatgpt_export() * 1)
    seen = []
    report = import_file(memory, export, importance=ImportanceConfig(), progress=seen.append)
    assert report.messages_added == 9
    assert len(seen) == 2 and seen[-1].conversations == 2 and seen[-1].messages == 9
    assert seen[-1].position == seen[-1].size == export.stat().st_size
    assert [p.position for p in seen] == sorted(p.position for p in seen)


# -- coop export and import -------------------------------------------------------------------------------------


def _fill(memory) -> None:
    """A memory with one of everything: sessions, tool messages, facts with supersede/archive/history,
    a summary over a span, a forgotten item."""
    s1 = memory.sessions.start("first chat", started_at=1000.0)
    first = memory.messages.add(s1, "user", "I live in Paris and keep bees", created_at=1001.0, importance=0.7)
    memory.messages.add(s1, "assistant", "", created_at=1002.0, tool_calls='[{"id": "c1"}]')
    memory.messages.add(s1, "tool", '{"results": []}', created_at=1003.0, tool_name="memory_search",
                       tool_call_id="c1")
    last = memory.messages.add(s1, "assistant", "Noted: Paris, bees.", created_at=1004.0)
    memory.db.execute("UPDATE messages SET consolidated_at = 2000.0 WHERE id IN ($1, $2)", (first, last))
    memory.sessions.end(s1)
    s2 = memory.sessions.start(None, started_at=3000.0)
    memory.messages.add(s2, "user", "I moved to Lyon", created_at=3001.0)
    memory.messages.add(None, "user", "a message outside any session", created_at=3002.0)
    memory.facts.add("lives in Paris", category="location", key="city", source="extraction")
    memory.facts.add("lives in Lyon", category="location", key="city", source="extraction")
    bees = memory.facts.add("keeps bees", category="hobby", importance=0.8)
    memory.facts.add("keeps bees", category="hobby")  # a MERGE: mention count 2
    old = memory.facts.add("likes jazz", category="preference")
    memory.facts.archive(old.fact_id, reason="unused for a year")
    memory.facts.add("answer briefly", category="instruction")
    gone = memory.facts.add("my old phone PIN", category="general")
    memory.forget("fact", gone.fact_id)
    memory.summaries.add("Ana said she lives in Paris and keeps bees.", session_id=s1, span=(first, last))
    memory.facts.touch([bees.fact_id])


def _portable(memory) -> dict[str, Any]:
    """Everything of a user with ids replaced by what they point at, for comparing two databases."""
    from coop.memory.transfer.export import export_records

    records = list(export_records(memory))[1:]
    by = lambda kind: [r for r in records if r["type"] == kind]  # noqa: E731
    session_key = {r["id"]: (r["title"], r["started_at"]) for r in by("session")}
    message_key = {r["id"]: (r["content"], r["created_at"]) for r in by("message")}
    fact_key = {r["id"]: (r["category"], r["value"], r["created_at"]) for r in by("fact")}
    drop = {"id", "type", "external_id"}
    out: dict[str, Any] = {
        "sessions": [{k: v for k, v in r.items() if k not in drop} for r in by("session")],
        "messages": [{**{k: v for k, v in r.items() if k not in drop},
                      "session_id": session_key.get(r["session_id"])} for r in by("message")],
        "facts": [{**{k: v for k, v in r.items() if k not in drop},
                   "superseded_by": fact_key.get(r["superseded_by"])} for r in by("fact")],
        "history": [{**{k: v for k, v in r.items() if k not in drop}, "fact_id": fact_key.get(r["fact_id"]),
                     "related_fact_id": fact_key.get(r["related_fact_id"])} for r in by("fact_history")
                    if r["fact_id"] in fact_key],
        "summaries": [{**{k: v for k, v in r.items() if k not in drop}, "session_id": session_key.get(r["session_id"]),
                       "span_start_id": message_key.get(r["span_start_id"]),
                       "span_end_id": message_key.get(r["span_end_id"])} for r in by("summary")],
        # the hash is keyed by a secret of the database it was made in, never exported (issue 27)
        "forgotten": [{k: v for k, v in r.items() if k not in drop | {"content_hash"}} for r in by("forgotten")],
    }
    return out


@pytest.mark.sqlite_only  # the config file names a second SQLite store; COOP_DATABASE_URL would override it
def test_export_then_import_into_an_empty_database_gives_back_the_same_data(tmp_path, memory, run_cli, coop_home):
    _fill(memory)
    memory.db.close()
    exported = tmp_path / "ana.jsonl"
    result = run_cli("memory", "export", "--user", "ana", "-o", str(exported))
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(os.stat(exported).st_mode) == 0o600, "an export holds private memory"
    header = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == "coop" and header["version"] == 1 and header["user"] == "ana"
    assert header["records"] == len(exported.read_text(encoding="utf-8").splitlines()) - 1

    other = tmp_path / "other.toml"
    other.write_text(f'[memory]\ndb_path = "{tmp_path / "restored.db"}"\n', encoding="utf-8")
    report = run_cli("--config", str(other), "memory", "import", str(exported), "--user", "ana", "--json").json()
    assert report["problems"] == []
    assert (report["sessions_added"], report["messages_added"], report["facts_added"],
            report["summaries_added"]) == (2, 6, 5, 1)
    original = _portable(_open_user(coop_home / "coop.db", "ana"))
    restored_memory = _open_user(tmp_path / "restored.db", "ana")
    restored = _portable(restored_memory)
    for part in original:
        assert restored[part] == original[part], part
    # history is readable through the store too, and the restored facts are searchable and embedded
    city = restored_memory.facts.find_by_key("location", "city")
    assert city is not None and city.text == "lives in Lyon"
    assert [h.action for h in restored_memory.facts.history(city.superseded_by or city.item_id)][:1] == ["ADD"]
    assert restored_memory.stats()["unembedded"] == 0
    # the record that something was forgotten moves, content-free: no hash leaves the database, so the guard
    # against learning it again stays with the database that forgot it (issue 27)
    assert restored_memory.stats()["forgotten"] == 1 and not restored_memory.forgotten.was_forgotten("my old phone PIN")
    assert _open_user(coop_home / "coop.db", "ana").forgotten.was_forgotten("my old phone PIN")
    assert '"content_hash": null' in exported.read_text(encoding="utf-8")

    again = run_cli("--config", str(other), "memory", "import", str(exported), "--user", "ana", "--json").json()
    assert (again["sessions_added"], again["messages_added"], again["facts_added"], again["summaries_added"]) == \
        (0, 0, 0, 0)
    assert _portable(_open_user(tmp_path / "restored.db", "ana")) == original


def test_coop_import_into_a_memory_that_knows_a_fact_merges_and_newer_key_wins(tmp_path, memory):
    from coop.config.loading import ImportanceConfig
    from coop.memory.transfer.export import export_user
    from coop.memory.transfer.imports import import_file

    _fill(memory)
    exported = tmp_path / "ana.jsonl"
    export_user(memory, "coop", exported, io.StringIO())
    bob = memory.backend.user("bob")
    bob.facts.add("keeps bees", category="hobby")
    newer_city = bob.facts.add("lives in Berlin", category="location", key="city")
    report = import_file(bob, exported, importance=ImportanceConfig())
    assert report.facts_skipped >= 1  # "keeps bees" was known already
    assert len([f for f in bob.facts.active() if f.text == "keeps bees"]) == 1
    city = bob.facts.find_by_key("location", "city")
    assert city is not None and city.item_id == newer_city.fact_id, "the newer value for a key stays active"
    assert {f.text for f in bob.list_items("fact", include_inactive=True, limit=100)} >= {"lives in Paris",
                                                                                         "lives in Lyon"}
    assert memory.stats()["messages"] == 6, "importing into bob left ana alone"


def test_malformed_coop_lines_are_reported_with_their_line_and_skipped(tmp_path, run_cli, coop_home):
    lines = [
        {"format": "coop", "version": 1, "user": "x", "exported_at": 0, "records": 5},
        {"type": "session", "id": 1, "title": "t", "started_at": 10.0, "ended_at": None, "last_activity_at": 10.0},
        {"type": "message", "id": 1, "session_id": 1, "role": "user", "content": "kept", "created_at": 11.0},
        {"type": "message", "id": 2, "session_id": 1, "role": "wizard", "content": "bad role", "created_at": 12.0},
        {"type": "message", "id": 3, "session_id": 1, "role": "user", "content": 7, "created_at": 12.0},
        {"type": "spaceship", "id": 9},
        {"type": "fact", "id": 1, "category": "general", "value": "", "source": "user", "created_at": 1.0},
    ]
    text = "\n".join(json.dumps(line) for line in lines[:4]) + "\n{not json\n" + \
        "\n".join(json.dumps(line) for line in lines[4:]) + "\n"
    export = tmp_path / "x.jsonl"
    export.write_text(text, encoding="utf-8")
    report = run_cli("memory", "import", str(export), "--json").json()
    problems = {p["where"]: p["reason"] for p in report["problems"]}
    assert problems == {"line 4": "unknown role 'wizard': skipped", "line 5": "not JSON (Expecting property name "
                        "enclosed in double quotes): skipped", "line 6": "content is not a string: skipped",
                        "line 7": "unknown record type 'spaceship': skipped", "line 8": "value is empty: skipped"}
    assert report["messages_added"] == 1

    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"format": "coop", "version": 99}) + "\n", encoding="utf-8")
    result = run_cli("memory", "import", str(newer))
    assert result.exit_code == 2 and "newer than this coop reads" in result.stderr


def test_markdown_export_is_readable(tmp_path, memory, run_cli):
    _fill(memory)
    memory.db.close()
    result = run_cli("memory", "export", "--user", "ana", "--format", "markdown")
    assert result.exit_code == 0
    text = result.stdout
    assert text.startswith("# coop memory of ana")
    assert "### location\n\n- lives in Lyon (city)" in text
    assert "mentioned 2 times" in text
    assert "## Superseded and archived facts" in text and "- lives in Paris" in text and "archived" in text
    assert "## Summaries" in text and "Ana said she lives in Paris" in text
    assert "### first chat" in text and "**user**" in text and "I live in Paris and keep bees" in text
    assert "PIN" not in text, "a forgotten fact is not exported"


def test_markdown_export_shows_control_characters_as_codes(tmp_path, memory, run_cli):
    # an imported file or a model's reply can carry escape sequences: retitle, clear, recolour, reorder the terminal
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202eevil\x9b6n"
    session = memory.sessions.start(f"trip {hostile}")
    memory.messages.add(session, "user", f"hello {hostile}\r\nsecond line")
    memory.facts.add(f"Likes {hostile}", category="hobby", key="colour\x1b[1m")
    memory.db.close()
    on_terminal = run_cli("memory", "export", "--user", "ana", "--format", "markdown").stdout
    assert run_cli("memory", "export", "--user", "ana", "--format", "markdown", "-o",
                   str(tmp_path / "memory.md")).exit_code == 0
    for text in (on_terminal, (tmp_path / "memory.md").read_text(encoding="utf-8")):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
        shown = r"\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202eevil\x9b6n"
        assert f"hello {shown}\nsecond line" in text  # every character kept, as its code
        assert f"Likes {shown} (colour\\x1b[1m)" in text and f"### trip {shown}" in text


def test_export_is_of_one_user_only(tmp_path, memory, run_cli):
    _fill(memory)
    memory.backend.user("eve").facts.add("eve's secret plan", category="general")
    memory.db.close()
    text = run_cli("memory", "export", "--user", "ana").stdout
    assert "eve's secret plan" not in text
    assert all(json.loads(line).get("user", "ana") == "ana" for line in text.splitlines()[:1])
    eve = run_cli("memory", "export", "--user", "eve").stdout
    assert "eve's secret plan" in eve and "bees" not in eve


def test_export_to_a_bad_place_is_a_clear_error(tmp_path, run_cli):
    result = run_cli("memory", "export", "-o", str(tmp_path))
    assert result.exit_code == 2 and "is a directory" in result.stderr
    result = run_cli("memory", "export", "-o", str(tmp_path / "missing-dir" / "x.jsonl"))
    assert result.exit_code == 2 and "cannot write" in result.stderr
    result = run_cli("memory", "export", "--format", "pdf")
    assert result.exit_code == 2 and "--format coop or markdown" in result.stderr


# -- re-embedding -----------------------------------------------------------------------------------------------


def _embedders(path: Path, user: str) -> dict[str, int]:
    database = open_database(str(path))
    try:
        return {row[0]: row[1] for row in database.execute(
            "SELECT embedder, count(*) FROM embeddings WHERE user_id = $1 GROUP BY embedder", (user,))}
    finally:
        database.close()


def test_reembed_after_switching_embedder(tmp_path, run_cli, coop_home, monkeypatch):
    export = write_json(tmp_path / "conversations.json", chatgpt_export())
    run_cli("memory", "import", str(export), "--user", "sam")
    run_cli("memory", "add", "keeps two hives of bees", "--user", "sam")
    assert _embedders(coop_home / "coop.db", "sam") == {"hash/tokens/384": 10}

    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_DIMS", "128")
    check = run_cli("check", "--json")
    assert "coop memory reembed" in check.stdout
    result = run_cli("memory", "reembed", "--user", "sam", "--json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert (report["embedded"], report["failed"], report["dropped_vectors"]) == (10, 0, 10)
    assert report["dropped_embedders"] == ["hash/tokens/384"]
    assert _embedders(coop_home / "coop.db", "sam") == {"hash/tokens/128": 10}
    hits = run_cli("memory", "search", "hives", "--user", "sam", "--json", "--explain").json()
    assert any("vector" in hit.get("legs", {}) for hit in hits)
    again = run_cli("memory", "reembed", "--user", "sam", "--json").json()
    assert again["embedded"] == 0


def test_an_interrupted_reembed_keeps_old_vectors_and_resumes(memory, hash_embedder):
    from coop.memory.growth.embedders import HashEmbedder
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.transfer.reembed import reembed

    session = memory.sessions.start("s")
    for number in range(30):
        memory.messages.add(session, "user", f"message number {number} about topic {number % 4}")
    embed_pending(memory, hash_embedder)
    new = HashEmbedder(32)

    class Interrupted(Exception):
        pass

    calls = {"n": 0}
    original = new.embed

    def flaky(texts):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the run
        return original(texts)

    new.embed = flaky  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        reembed(memory, new, batch_size=8)
    counts = {row[0]: row[1] for row in memory.db.execute(
        "SELECT embedder, count(*) FROM embeddings GROUP BY embedder")}
    assert counts[hash_embedder.id] == 30, "old vectors are dropped only after every item has a new one"
    assert 0 < counts.get(new.id, 0) < 30
    assert memory.stale_count(new.id) == 30 - counts[new.id]

    new.embed = original  # type: ignore[method-assign]
    report = reembed(memory, new, batch_size=8)
    assert report.embedded == 30 - counts[new.id] and report.failed == 0
    assert {row[0]: row[1] for row in memory.db.execute(
        "SELECT embedder, count(*) FROM embeddings GROUP BY embedder")} == {new.id: 30}


def test_reembed_without_a_loadable_embedder_is_a_clear_error(run_cli, monkeypatch, tmp_path):
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_PROVIDER", "fastembed")
    monkeypatch.setenv("COOP_MEMORY_EMBEDDER_MODEL_PATH", str(tmp_path / "no-model"))
    result = run_cli("memory", "reembed")
    assert result.exit_code == 2
    assert "cannot load" in result.stderr and "coop check" in result.stderr


def test_a_failing_database_stops_the_import_instead_of_skipping_records(tmp_path, memory, monkeypatch):
    from coop.config.loading import ImportanceConfig
    from coop.errors import StoreError
    from coop.memory.transfer.imports import import_file

    export = write_json(tmp_path / "conversations.json", chatgpt_export())

    def full(*args, **kwargs):
        raise StoreError("database or disk is full", hint="free some space")

    monkeypatch.setattr(type(memory.messages), "add", full)
    with pytest.raises(StoreError):
        import_file(memory, export, importance=ImportanceConfig())
    assert memory.sessions.recent() == [], "the conversation's transaction was rolled back whole"


def test_imported_items_never_take_the_id_of_a_forgotten_one(tmp_path, memory):
    """SQLite hands out the highest rowid again once its row is deleted; a forgotten item's id must stay unused,
    or an imported item would inherit its history and answer to references that meant the forgotten one."""
    from coop.config.loading import ImportanceConfig
    from coop.memory.transfer.export import export_user
    from coop.memory.transfer.imports import import_file

    _fill(memory)
    exported = tmp_path / "ana.jsonl"
    export_user(memory, "coop", exported, io.StringIO())
    bob = memory.backend.user("bob")
    session = bob.sessions.start()
    message = bob.messages.add(session, "user", "my bank PIN is 4321")
    fact = bob.facts.add("Bank PIN is 4321").fact_id
    summary = bob.summaries.add("Bob shared his bank PIN.", session_id=session, span=(message, message))
    for kind, item_id in (("summary", summary), ("fact", fact), ("message", message)):
        bob.forget(kind, item_id)
    report = import_file(bob, exported, importance=ImportanceConfig())
    assert report.messages_added and report.facts_added and report.summaries_added
    for table, forgotten in (("messages", message), ("facts", fact), ("summaries", summary)):
        ids = [row[0] for row in bob.db.execute(f"SELECT id FROM {table} WHERE user_id = 'bob'")]
        assert ids and min(ids) > forgotten, f"an imported row of {table} took a forgotten id"
    history = list(bob.db.execute("SELECT action, old_value, new_value FROM fact_history "
                                  "WHERE fact_id = $1 AND user_id = 'bob' ORDER BY id", (fact,)))
    assert history == [("ADD", None, None), ("FORGET", None, None)], "only the forgotten fact's own, content-free"
