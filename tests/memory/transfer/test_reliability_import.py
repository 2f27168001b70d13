"""`coop memory import` against hostile and broken files, and imports that share the database.

Each case ends as one line: a problem in the report (where and why; the rest of the file is imported) or a usage
error with a hint and exit code 2. Memory stays bounded whatever the file holds, and other coop processes keep
writing while a large import runs.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from coop.config.loading import ImportanceConfig
from coop.memory.storage.database import open_database
from coop.memory.storage.store import MemoryStore

# -- helpers ----------------------------------------------------------------------------------------------------


class Overtime(BaseException):
    """Raised by `deadline`: a BaseException, so no `except Exception` (or OSError) on the way can swallow it."""


@contextmanager
def deadline(seconds: float):
    """Fail (instead of hanging the run) when the block takes longer than `seconds`."""

    def expired(signum, frame):
        raise Overtime(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def node(key: str, parent: str | None, children: list[str], role: str | None = None, text: str = "",
         ts: Any = None, message_id: Any = "auto", node_id: Any = "auto") -> dict[str, Any]:
    message = None
    if role is not None:
        message = {"author": {"role": role}, "create_time": ts,
                   "content": {"content_type": "text", "parts": [text]}}
        if message_id is not None:
            message["id"] = f"msg-{key}" if message_id == "auto" else message_id
    out: dict[str, Any] = {"message": message, "parent": parent, "children": children}
    if node_id is not None:
        out["id"] = key if node_id == "auto" else node_id
    return out


def conversation(cid: str, title: str, texts: list[str], *, create_time: Any = 1_700_000_000.0,
                 update_time: Any = None, times: list[Any] | None = None, ids: bool = True,
                 **extra: Any) -> dict[str, Any]:
    """A linear ChatGPT conversation: a root, then one node per text (user, assistant, ...)."""
    mapping = {"root": node("root", None, ["n0"] if texts else [], node_id="root" if ids else None)}
    for i, text in enumerate(texts):
        key, parent = f"n{i}", ("root" if i == 0 else f"n{i - 1}")
        mapping[key] = node(key, parent, [f"n{i + 1}"] if i + 1 < len(texts) else [],
                            "user" if i % 2 == 0 else "assistant", text,
                            ts=(times[i] if times else create_time + i if isinstance(create_time, float) else None),
                            message_id=f"{cid}-msg-{key}" if ids else None, node_id="auto" if ids else None)
    return {"title": title, "conversation_id": cid, "create_time": create_time, "update_time": update_time,
            "current_node": f"n{len(texts) - 1}" if texts else None, "mapping": mapping, **extra}


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def do_import(memory, path: Path, fmt: str = "auto"):
    from coop.memory.transfer.imports import import_file

    return import_file(memory, path, fmt, importance=ImportanceConfig())


def texts_of(memory) -> list[str]:
    return [row[0] for row in memory.db.execute("SELECT content FROM messages WHERE user_id = $1 ORDER BY id",
                                                (memory.user_id,))]


def reasons(report) -> str:
    return " | ".join(f"{p.where}: {p.reason}" for p in report.problems)


def coop_env(coop_home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", **extra}


# Runs a command and measures it. ru_maxrss counts the pages a child had at fork (a copy of its parent, here a
# pytest process of hundreds of MB), and keeps them across exec; so the command is started by this small launcher,
# whose own size is what its child starts from. A child that grows past the limit (polled in /proc) or runs past
# the timeout is killed, so a regression fails fast instead of filling the machine.
_LAUNCHER = """
import json, os, subprocess, sys, time
limit_kb, timeout, out, err = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(out, "wb") as stdout, open(err, "wb") as stderr:
    child = subprocess.Popen(sys.argv[5:], stdout=stdout, stderr=stderr)
started, killed = time.monotonic(), ""
while True:
    pid, status, usage = os.wait4(child.pid, os.WNOHANG)
    if pid:
        break
    try:
        with open(f"/proc/{child.pid}/status") as handle:
            rss = next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), 0)
    except OSError:
        rss = 0
    if not killed and (rss > limit_kb or time.monotonic() - started > timeout):
        killed = f"killed at {rss // 1024} MB after {time.monotonic() - started:.1f} s"
        child.kill()
    time.sleep(0.02)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "peak_kb": usage.ru_maxrss, "killed": killed}))
"""


def run_measured(args: list[str], env: dict[str, str], limit_mb: int, timeout: float,
                 tmp_path: Path) -> tuple[int, int, str, str]:
    """Run `python -m coop ARGS`: (exit code, peak RSS in MB, stdout, stderr)."""
    out, err = tmp_path / "measured.out", tmp_path / "measured.err"
    launcher = subprocess.run([sys.executable, "-c", _LAUNCHER, str(limit_mb * 1024), str(timeout), str(out),
                               str(err), sys.executable, "-m", "coop", *args], env=env, capture_output=True,
                              timeout=timeout + 60)
    assert launcher.returncode == 0, launcher.stderr.decode()
    result = json.loads(launcher.stdout)
    assert not result["killed"], result["killed"]
    return result["code"], result["peak_kb"] // 1024, out.read_text(), err.read_text()


def sparse_file(path: Path, head: bytes, hole: int, tail: bytes) -> Path:
    """`head`, then `hole` bytes of NULs that take no disk space, then `tail`."""
    with open(path, "wb") as handle:
        handle.write(head)
        handle.seek(hole, os.SEEK_CUR)
        handle.write(tail)
    return path


# -- 1. loops in the ChatGPT tree ---------------------------------------------------------------------------------


def test_a_loop_in_chatgpt_children_or_parents_is_cut_and_reported(tmp_path, memory):
    looping_children = {"title": "loop", "conversation_id": "c-loop", "mapping": {
        "a": node("a", None, ["b"]),
        "b": node("b", "a", ["c"], "user", "before the loop"),
        "c": node("c", "b", ["b"], "assistant", "inside the loop")}}  # no current_node: walked down from "a"
    looping_parents = {"title": "parents", "conversation_id": "c-parents", "current_node": "y", "mapping": {
        "x": node("x", "y", ["y"], "user", "x says hi"),
        "y": node("y", "x", ["x"], "assistant", "y answers")}}
    export = write(tmp_path / "conversations.json", [looping_children, looping_parents,
                                                     conversation("c-ok", "fine", ["after the loops"])])
    assert len(export.read_bytes()) < 1500
    with deadline(20):
        report = do_import(memory, export)
    found = reasons(report)
    assert "conversation 1 ('loop'), node b: the children form a loop" in found
    assert "conversation 2 ('parents'), node y: the parent links form a loop" in found
    assert texts_of(memory) == ["before the loop", "inside the loop", "x says hi", "y answers", "after the loops"]


# -- 2. only regular files ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["conversations.json", "export.zip"])
def test_a_fifo_is_refused_before_anything_is_read(tmp_path, run_cli, name):
    path = tmp_path / name
    os.mkfifo(path)
    with deadline(20):
        result = run_cli("memory", "import", str(path))
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0] == f"error: cannot import {path}: it is a FIFO (named pipe), not a file"
    assert lines[1] == "hint: give the path of an export file (.json, .jsonl or .zip)"


def test_dev_zero_is_refused_before_anything_is_read(tmp_path, coop_home):
    """Run as a process with a memory cap: before the fix this grew without end (23 GB)."""
    for fmt in ("auto", "chatgpt", "coop"):
        code, peak, out, err = run_measured(["memory", "import", "/dev/zero", "--format", fmt], coop_env(coop_home),
                                            300, 60, tmp_path)
        assert code == 2 and out == ""
        assert err.splitlines() == ["error: cannot import /dev/zero: it is a device, not a file",
                                    "hint: give the path of an export file (.json, .jsonl or .zip)"]


def test_a_directory_holding_a_fifo_named_conversations_json_is_refused(tmp_path, run_cli):
    folder = tmp_path / "export"
    folder.mkdir()
    os.mkfifo(folder / "conversations.json")
    with deadline(20):
        result = run_cli("memory", "import", str(folder))
    assert result.exit_code == 2 and "error:" in result.stderr


# -- 3. limits: record size, zip members ------------------------------------------------------------------------


def test_a_record_over_the_size_limit_is_one_problem_and_the_rest_is_imported(tmp_path, memory, monkeypatch):
    from coop.memory.transfer import jsonstream

    monkeypatch.setattr(jsonstream, "MAX_RECORD_CHARS", 20_000)
    big = conversation("c-big", "big", ["x" * 30_000])
    data = [conversation("c-1", "one", ["first"]), big, conversation("c-3", "three", ["third"])]
    export = write(tmp_path / "conversations.json", data)
    report = do_import(memory, export)
    assert [(p.where, p.reason) for p in report.problems] == [
        ("conversation 2", "larger than 0 MB (the most one record may hold): skipped")]
    assert texts_of(memory) == ["first", "third"]

    # the same inside a ZIP, and for a coop JSON Lines record
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("conversations.json", json.dumps(data))
    other = memory.backend.user("zip")
    report = do_import(other, archive)
    assert [p.where for p in report.problems] == ["conversation 2"] and texts_of(other) == ["first", "third"]

    lines = [{"format": "coop", "version": 1},
             {"type": "message", "id": 1, "role": "user", "content": "kept before", "created_at": 1e9},
             {"type": "message", "id": 2, "role": "user", "content": "y" * 30_000, "created_at": 1e9},
             {"type": "message", "id": 3, "role": "user", "content": "kept after", "created_at": 1e9}]
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    third = memory.backend.user("jsonl")
    report = do_import(third, jsonl)
    assert [(p.where, p.reason[:12]) for p in report.problems] == [("line 3", "larger than ")]
    assert texts_of(third) == ["kept before", "kept after"]


def test_a_zip_member_that_would_unpack_past_the_limits_is_refused(tmp_path, run_cli, monkeypatch):
    from coop.memory.transfer import source

    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("conversations.json", b"[" + b" " * 8_000_000 + b"]")  # 8 MB from about 8 KB
    monkeypatch.setattr(source, "RATIO_FLOOR_BYTES", 1_000_000)
    result = run_cli("memory", "import", str(bomb))
    assert result.exit_code == 2
    assert "error: cannot import bomb.zip: conversations.json would unpack to 7.6 MB from" in result.stderr
    assert "100 times its packed size" in result.stderr and "hint: unpack it yourself" in result.stderr

    monkeypatch.setattr(source, "RATIO_FLOOR_BYTES", 64 * 1024**2)
    monkeypatch.setattr(source, "MAX_MEMBER_BYTES", 1_000_000)
    assert run_cli("memory", "import", str(bomb)).exit_code == 2
    monkeypatch.setattr(source, "MAX_MEMBER_BYTES", 16 * 1024**3)
    result = run_cli("memory", "import", str(bomb), "--format", "chatgpt", "--json")
    assert result.exit_code == 0 and result.json()["conversations"] == 0


def test_a_damaged_zip_is_a_problem_not_a_crash(tmp_path, run_cli):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("conversations.json", json.dumps([conversation(f"c{i}", f"t{i}", [f"text {i} " * 50])
                                                          for i in range(200)]))
    data = bytearray(archive.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)  # corrupt the deflate stream, keep the directory
    archive.write_bytes(bytes(data))
    result = run_cli("memory", "import", str(archive), "--format", "chatgpt", "--json")
    assert result.exit_code in (0, 2), result.stderr
    if result.exit_code == 0:
        assert any("cannot be read" in p["reason"] for p in result.json()["problems"])
    else:
        assert len(result.stderr.strip().splitlines()) == 2


def test_junk_where_a_conversation_should_start_stops_at_once(tmp_path, memory):
    export = sparse_file(tmp_path / "conversations.json",
                         b"[" + json.dumps(conversation("c-1", "one", ["before the junk"])).encode() + b",",
                         2 * 1024**3, b"]")
    started = time.monotonic()
    with deadline(30):
        report = do_import(memory, export, "chatgpt")
    assert time.monotonic() - started < 10, "2 GB of junk was read instead of stopping at its first byte"
    assert texts_of(memory) == ["before the junk"]
    assert "cannot be read after conversation 1: the array holds '\\x00' where a value should start" \
        in reasons(report)


def test_peak_memory_of_an_import_of_hostile_files_stays_bounded(tmp_path, coop_home):
    """A 400 MB string inside one conversation (as a 1.5 GB string would unpack from a zip), and `[` followed
    by 2 GB of NULs: both sparse files, so this is fast. Peak RSS of the `coop memory import` process (wait4's
    ru_maxrss) stays under 300 MB; the conversation after the big one is imported."""
    after = conversation("c-after", "after", ["imported after the big one"])
    big = sparse_file(tmp_path / "big.json",
                      b'[{"title": "big", "mapping": {}, "conversation_id": "c-big", "junk": "',
                      400 * 1024**2, b'"}, ' + json.dumps(after).encode() + b"]")
    nuls = sparse_file(tmp_path / "nuls.json", b"[", 2 * 1024**3, b"")
    line = sparse_file(tmp_path / "line.jsonl", json.dumps({"format": "coop", "version": 1}).encode()
                       + b'\n{"type": "message", "id": 1, "role": "user", "content": "', 400 * 1024**2,
                       b'", "created_at": 1e9}\n' + json.dumps({"type": "message", "id": 2, "role": "user",
                                                                "content": "after the long line",
                                                                "created_at": 1e9}).encode() + b"\n")
    env = coop_env(coop_home)
    started = time.monotonic()
    code, peak, out, err = run_measured(["memory", "import", str(big), "--json", "--no-embed"], env, 300, 120,
                                        tmp_path)
    assert code == 0, err
    report = json.loads(out)
    assert report["messages_added"] == 1
    assert [(p["where"], p["reason"][:16]) for p in report["problems"]] == [("conversation 1", "larger than 64 M")]
    assert peak < 300, f"peak RSS {peak} MB"
    big_seconds = time.monotonic() - started
    code, peak_nuls, out, err = run_measured(["memory", "import", str(nuls), "--format", "chatgpt", "--json"],
                                             env, 300, 60, tmp_path)
    assert code == 0, err
    assert peak_nuls < 300, f"peak RSS {peak_nuls} MB"
    code, peak_line, out, err = run_measured(["memory", "import", str(line), "--json", "--no-embed"], env, 300, 120,
                                             tmp_path)
    assert code == 0, err
    report = json.loads(out)
    assert report["messages_added"] == 1 and [p["where"] for p in report["problems"]] == ["line 2"]
    assert peak_line < 300, f"peak RSS {peak_line} MB"
    print(f"peak RSS {peak} MB in {big_seconds:.1f} s (400 MB string), {peak_nuls} MB (2 GB of NULs), "
          f"{peak_line} MB (a 400 MB JSON Lines line)")


def test_the_streamed_reader_matches_json_loads_at_every_chunk_boundary():
    """Strings with quotes, backslashes and brackets, cut anywhere by the chunks: the same values as json.loads;
    an invalid element between good ones is skipped alone."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from coop.memory.transfer.jsonstream import BadRecord, iter_json_array

    tricky = st.text(alphabet=st.sampled_from('ab"\\[]{}\n é😀\x00'), max_size=12)
    values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                              allow_infinity=False) | tricky,
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky, inner, max_size=3),
                          max_leaves=20)

    @settings(deadline=None)
    @given(data=st.lists(values, max_size=5), chunk=st.integers(1, 9), indent=st.booleans(), ascii=st.booleans())
    def run(data, chunk, indent, ascii):
        text = json.dumps(data, indent=1 if indent else None, ensure_ascii=ascii)
        assert list(iter_json_array(io.StringIO(text), chunk_size=chunk)) == data

    run()
    for chunk in (3, 1 << 20):
        found = list(iter_json_array(io.StringIO('[{"a": "x]"}, {"b": [1 2]}, {"c": 3}]'), chunk_size=chunk))
        assert found == [{"a": "x]"}, BadRecord("not valid JSON (Expecting ',' delimiter): skipped"), {"c": 3}]


# -- 4. nesting -----------------------------------------------------------------------------------------------------


def test_a_deeply_nested_value_skips_its_conversation_only(tmp_path, memory):
    deep = conversation("c-deep", "deep", ["lost with its conversation"])
    text = json.dumps([conversation("c-1", "one", ["first"]), deep, conversation("c-3", "three", ["third"])])
    nested = "[" * 100_000 + "]" * 100_000
    text = text.replace('"lost with its conversation"]', '"lost with its conversation"], "odd": ' + nested, 1)
    export = tmp_path / "conversations.json"
    export.write_text(text, encoding="utf-8")
    report = do_import(memory, export)
    assert [(p.where, p.reason) for p in report.problems] == [
        ("conversation 2", "nested deeper than 100 levels: skipped")]
    assert texts_of(memory) == ["first", "third"]

    lines = [json.dumps({"format": "coop", "version": 1}),
             json.dumps({"type": "message", "id": 1, "role": "user", "content": "kept", "created_at": 1e9}),
             '{"type": "message", "id": 2, "role": "user", "content": ' + nested + ', "created_at": 1e9}',
             json.dumps({"type": "message", "id": 3, "role": "user", "content": "also kept", "created_at": 1e9})]
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    other = memory.backend.user("other")
    report = do_import(other, jsonl)
    assert [(p.where, p.reason) for p in report.problems] == [("line 3", "nested deeper than 100 levels: skipped")]
    assert texts_of(other) == ["kept", "also kept"]


# -- 5. times outside 1970..2200 ------------------------------------------------------------------------------------


def test_times_outside_1970_to_2200_are_never_stored(tmp_path, run_cli, coop_home, openai_server):
    bad = conversation("c-bad", "bad times", ["minus huge", "nine e ninety-nine", "infinite", "fine"],
                       create_time=-1e20, update_time=9e99, times=[-1e20, 9e99, 1e400, 1_700_000_100.0])
    claude = [{"uuid": "k-1", "name": "far future", "created_at": "9999-12-31T00:00:00Z",
               "chat_messages": [{"uuid": "k-m1", "sender": "human", "text": "claude far future",
                                  "created_at": "2400-01-01T00:00:00Z"},
                                 {"uuid": "k-m2", "sender": "assistant", "text": "claude fine",
                                  "created_at": "2024-03-01T10:00:00Z"}]}]
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([bad]).replace("Infinity", "1e400"), encoding="utf-8")
    result = run_cli("memory", "import", str(export), "--user", "sam", "--json")
    assert result.exit_code == 0, result.stderr
    found = [(p["where"], p["reason"]) for p in result.json()["problems"]]
    assert ("conversation 1 ('bad times')", "create_time and update_time are not times in 1970..2200: its "
            "messages' times are used instead") in found
    assert ("conversation 1 ('bad times')", "3 messages have no time in 1970..2200: each takes the time of the "
            "message before it (the first, the conversation's start)") in found
    assert result.json()["messages_added"] == 4
    write(export, claude)
    result = run_cli("memory", "import", str(export), "--user", "sam", "--json")
    assert result.exit_code == 0 and result.json()["messages_added"] == 2

    lines = [{"format": "coop", "version": 1},
             {"type": "session", "id": 1, "title": "s", "started_at": 1e400},
             {"type": "message", "id": 1, "role": "user", "content": "coop minus", "created_at": -1e20},
             {"type": "message", "id": 2, "role": "user", "content": "coop late", "created_at": 1_700_000_000.0,
              "consolidated_at": 9e99},
             {"type": "fact", "id": 1, "category": "general", "value": "coop fact", "source": "user",
              "created_at": 1_700_000_000.0, "archived_at": -1.0},
             {"type": "summary", "id": 1, "text": "coop summary", "created_at": float("inf")},
             {"type": "message", "id": 3, "role": "user", "content": "coop fine", "created_at": 1_700_000_000.0}]
    jsonl = tmp_path / "times.jsonl"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines).replace("Infinity", "1e400") + "\n",
                     encoding="utf-8")
    result = run_cli("memory", "import", str(jsonl), "--user", "sam", "--json")
    assert result.exit_code == 0, result.stderr
    # a session's or message's unusable time is stood in for (they are imported, as ChatGPT's and Claude's are);
    # a fact's or summary's makes its record a problem, skipped
    assert {(p["where"], p["reason"]) for p in result.json()["problems"]} == {
        ("sessions", "1 has no started_at in 1970..2200: each starts at the import's time"),
        ("messages", "1 has no created_at in 1970..2200: each takes the time of the message before it in its session "
                     "(the first, the session's start)"),
        ("records", "1 has an unusable consolidated_at: left out"),
        ("line 5", "archived_at is not a time in 1970..2200: skipped"),
        ("line 6", "created_at is not a time in 1970..2200: skipped")}
    assert result.json()["messages_added"] == 3

    db = open_database(str(coop_home / "coop.db"))
    try:
        for table, columns in (("messages", ("created_at", "consolidated_at")),
                               ("sessions", ("started_at", "ended_at", "last_activity_at")),
                               ("facts", ("created_at", "updated_at", "archived_at")),
                               ("summaries", ("created_at",))):
            for column in columns:
                outside = db.scalar(f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL AND NOT "
                                    f"({column} BETWEEN 0 AND 7258118400)")
                assert outside == 0, f"{table}.{column}"
        # a message without a usable time took the one before it (the first: the conversation's start, here
        # the first usable message time, as the conversation's own is unusable too)
        times = dict(db.execute("SELECT content, created_at FROM messages WHERE user_id = 'sam'").fetchall())
        assert times["minus huge"] == times["infinite"] == times["fine"] == 1_700_000_100.0
    finally:
        db.close()

    for args in (("memory", "list", "--user", "sam"), ("memory", "list", "--user", "sam", "--json"),
                 ("memory", "search", "coop", "--user", "sam", "--json"), ("memory", "stats", "--user", "sam"),
                 ("memory", "export", "--user", "sam", "--format", "markdown"),
                 ("memory", "export", "--user", "sam")):
        result = run_cli(*args)
        assert result.exit_code == 0, (args, result.stderr)
    openai_server.default_reply = "noted"
    result = run_cli("chat", "--user", "sam", "--no-tools", input="what about claude and coop?\n",
                     env={"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base})
    assert result.exit_code == 0, result.stderr
    assert "noted" in result.stdout


# -- 6. messages without ids -----------------------------------------------------------------------------------------


def test_chatgpt_messages_without_ids_get_stable_ids_of_their_own(tmp_path, memory):
    texts = ["no id one", "no id two", "no id three", "no id two"]  # the same text twice, at another place
    data = [conversation("c-1", "first", texts, ids=False), conversation("c-2", "second", texts, ids=False)]
    export = write(tmp_path / "conversations.json", data)
    report = do_import(memory, export)
    assert (report.messages_added, report.messages_skipped, report.problems) == (8, 0, [])
    ids = [row[0] for row in memory.db.execute("SELECT external_id FROM messages ORDER BY id")]
    assert len(set(ids)) == 8 and all(i.startswith("chatgpt:c-") and "None" not in i for i in ids)
    again = do_import(memory, export)
    assert (again.messages_added, again.messages_skipped) == (0, 8)
    # a newer export of the same account with one more turn adds only it
    data[0] = conversation("c-1", "first", [*texts, "a new turn"], ids=False)
    write(export, data)
    newer = do_import(memory, export)
    assert (newer.messages_added, newer.messages_skipped) == (1, 8)

    # ids present but all the same: each message is still kept once
    same = conversation("c-3", "same ids", ["dup a", "dup b", "dup c"])
    for key in ("n0", "n1", "n2"):
        same["mapping"][key]["message"]["id"] = "dup"
        same["mapping"][key]["id"] = "dup"
    write(export, [same])
    assert do_import(memory, export).messages_added == 3
    assert do_import(memory, export).messages_added == 0


# -- 7. bounded transactions --------------------------------------------------------------------------------------


@pytest.mark.sqlite_only
def test_a_long_conversation_commits_in_bounded_batches_and_a_rerun_finishes_it(tmp_path, memory, monkeypatch):
    from coop.errors import StoreError
    from coop.memory.storage.messages import Messages
    from coop.memory.transfer import batches

    monkeypatch.setattr(batches, "BATCH_ROWS", 100)
    monkeypatch.setattr(batches, "BATCH_SECONDS", 60.0)
    texts = [f"turn {i} of a long talk" for i in range(1_000)]
    export = write(tmp_path / "conversations.json", [conversation("c-long", "long", texts)])
    sizes: list[int] = []
    pending = [0]

    def count_row(kind, database, table, rowid):
        pending[0] += table == "messages"

    def on_commit():
        sizes.append(pending[0])
        pending[0] = 0
        return False

    memory.db.conn.set_update_hook(count_row)
    memory.db.conn.set_commit_hook(on_commit)
    original = Messages.add
    calls = [0]

    def failing(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 750:
            raise StoreError("database or disk is full", hint="free some space")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Messages, "add", failing)
    with pytest.raises(StoreError):
        do_import(memory, export)
    committed = memory.stats()["messages"]
    assert 600 <= committed < 750, "whole batches before the failure stay; the batch at hand is rolled back"
    assert len(sizes) >= 7 and max(sizes) <= 100, f"messages per transaction: {sizes}"

    monkeypatch.setattr(Messages, "add", original)
    report = do_import(memory, export)
    assert (report.messages_added, report.messages_skipped) == (1_000 - committed, committed)
    assert texts_of(memory) == texts
    assert memory.db.scalar("SELECT count(*) FROM sessions") == 1


def test_the_import_pauses_after_each_slice_of_holding_the_lock(memory):
    from coop.memory.transfer import batches

    clock = [0.0]
    slept: list[float] = []
    session = memory.sessions.start("s")
    with batches.Batches(memory, rows=10, seconds=0.25, sleep=slept.append, clock=lambda: clock[0]) as writing:
        for i in range(100):
            with writing.record():
                memory.messages.add(session, "user", f"row {i}")
            clock[0] += 0.05  # each row holds the lock 50 ms
    assert writing.commits >= 10
    # 100 rows of 50 ms hold the lock 5 s: a pause after each 1.5 s, longer than SQLite's longest busy sleep
    assert len(slept) >= 2 and all(pause > 0.1 for pause in slept)


@pytest.mark.slow  # a 60,000-message conversation through `coop memory import`: 10 to 40 s
def test_memory_add_in_another_process_never_fails_during_a_large_import(tmp_path, coop_home):
    messages = 60_000
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"uuid": "c-long", "name": "long", "created_at": "2024-03-01T10:00:00Z",
                                   "chat_messages": [{"uuid": f"m{i}", "sender": "human" if i % 2 else "assistant",
                                                      "text": f"message {i} about sailing and knots",
                                                      "created_at": "2024-03-01T10:00:00Z"}
                                                     for i in range(messages)]}]), encoding="utf-8")
    # 4 s (not the default 5 s): one transaction for the whole conversation would hold the lock longer than this
    # even on a fast machine, while the batches and pauses keep every wait near 1.5 s
    env = coop_env(coop_home, COOP_MEMORY_BUSY_TIMEOUT_MS="4000")
    coop = [sys.executable, "-m", "coop"]
    first = subprocess.run([*coop, "memory", "add", "a fact before the import"], env=env, capture_output=True,
                           timeout=120)
    assert first.returncode == 0, first.stderr.decode()
    importer = subprocess.Popen([*coop, "memory", "import", str(export), "--json", "--no-embed"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results: list[subprocess.CompletedProcess] = []

    def add_loop() -> None:
        number = 0
        while importer.poll() is None or number < 5:
            results.append(subprocess.run([*coop, "memory", "add", f"added fact number {number} about owls"],
                                          env=env, capture_output=True, timeout=120))
            number += 1

    time.sleep(1.0)  # the import is under way
    adder = threading.Thread(target=add_loop)
    adder.start()
    out, err = importer.communicate(timeout=600)
    adder.join(600)
    assert importer.returncode == 0, err.decode()
    assert json.loads(out)["messages_added"] == messages
    failures = [r.stderr.decode() for r in results if r.returncode != 0]
    assert failures == [], failures
    assert len(results) >= 5
    db = open_database(str(coop_home / "coop.db"))
    try:
        user = MemoryStore(db).user_ids()[0]
        for number in range(len(results)):
            assert MemoryStore(db).user(user).facts.find_exact(f"added fact number {number} about owls", "general")
    finally:
        db.close()


# -- 8. a coop export read back ---------------------------------------------------------------------------------


def _chat_like(memory) -> None:
    """What chatting leaves: sessions and messages without source ids, tool calls, facts, a summary."""
    for number in range(3):
        session = memory.sessions.start(f"chat {number}" if number else None, started_at=1_700_000_000.0 + number)
        for turn in range(6):
            memory.messages.add(session, "user", f"question {turn} of chat {number}",
                               created_at=1_700_000_000.5 + number * 100 + turn * 2)
            memory.messages.add(session, "assistant", f"answer {turn}", created_at=1_700_000_001.5 + turn * 2
                               + number * 100)
        memory.messages.add(session, "assistant", "", created_at=1_700_000_050.0 + number, tool_calls='[{"id": "x"}]')
        memory.messages.add(session, "tool", '{"hits": []}', created_at=1_700_000_051.0 + number, tool_call_id="x",
                           tool_name="memory_search")
        memory.sessions.end(session)
    memory.messages.add(None, "user", "a message outside any session", created_at=1_700_000_900.0)
    memory.facts.add("keeps bees on the balcony", category="hobby")
    memory.forget("fact", memory.facts.add("my old phone PIN is 1234", category="general").fact_id)
    memory.summaries.add("They talked about bees.", created_at=1_700_000_999.0)


def _counts(memory) -> dict[str, int]:
    stats = memory.stats()
    return {name: stats[name] for name in ("messages", "sessions", "facts_active", "summaries", "forgotten")}


def test_a_coop_export_read_back_into_its_own_database_adds_nothing(tmp_path, memory):
    from coop.memory.transfer.export import export_user

    _chat_like(memory)
    before = _counts(memory)
    assert before["messages"] == 43
    exported = tmp_path / "ana.jsonl"
    export_user(memory, "coop", exported, io.StringIO())

    report = do_import(memory, exported)
    assert (report.messages_added, report.sessions_added, report.facts_added, report.summaries_added) == (0, 0, 0, 0)
    assert report.messages_skipped == 43 and report.problems == []
    assert _counts(memory) == before

    fresh_db = open_database(str(tmp_path / "fresh.db"))
    try:
        fresh = MemoryStore(fresh_db).user("ana")
        do_import(fresh, exported)
        assert _counts(fresh) == before
        assert do_import(fresh, exported).messages_added == 0
        # and back: the copy's export (whose rows now carry derived ids) into the original adds nothing either
        copy = tmp_path / "copy.jsonl"
        export_user(fresh, "coop", copy, io.StringIO())
    finally:
        fresh_db.close()
    back = do_import(memory, copy)
    assert (back.messages_added, back.sessions_added) == (0, 0)
    assert _counts(memory) == before
