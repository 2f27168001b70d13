"""`coop memory` through the command line: the JSON contract, exit codes, user isolation and hostile input.

Every test drives the real typer app in-process (`run_cli`) against a database in the temp COOP_HOME, with the
hash embedder; the `memory` fixture (user "ana") opens the same file when a test needs messages, which the CLI
cannot add.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys

import pytest

from coop.errors import ExitCode

ITEM_FIELDS = {"id", "kind", "text", "created_at"}
FACT_FIELDS = ITEM_FIELDS | {"category", "key", "importance", "mention_count"}
HIT_FIELDS = ITEM_FIELDS | {"score"}
WIDE = {"COLUMNS": "200"}  # tables for people fold at 80 columns; tests that read a whole cell widen them


def add(run_cli, text: str, *args: str, user: str = "ana") -> dict:
    result = run_cli("memory", "add", text, "--user", user, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return result.json()


def ok_json(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def assert_error(result, code: int, *needles: str) -> None:
    """A one-line `error:` plus `hint:` on stderr and the contract's exit code."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and any(line.startswith("hint: ") for line in lines[1:]), result.stderr
    assert len(lines) == 2, result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def fact_texts(run_cli, user: str = "ana", *extra: str) -> list[str]:
    return [item["text"] for item in ok_json(run_cli("memory", "list", "--user", user, "--kind", "fact", "--json",
                                                     *extra))]


# --- add ---------------------------------------------------------------------------------------------------


def test_add_prints_the_new_id(run_cli):
    result = run_cli("memory", "add", "I live in Lyon", "--user", "ana")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "remembered f1"
    assert ok_json(run_cli("memory", "show", "f1", "--user", "ana", "--json"))["text"] == "I live in Lyon"


def test_add_json_is_the_item_with_its_action(run_cli):
    item = add(run_cli, "My sister is called Ines", "--category", "person", "--key", "sister")
    assert set(item) >= FACT_FIELDS
    assert (item["id"], item["kind"], item["action"]) == ("f1", "fact", "ADD")
    assert (item["category"], item["key"], item["mention_count"]) == ("person", "sister", 1)
    assert item["text"] == "My sister is called Ines" and item["created_at"].endswith("Z")
    assert item["embedder"] == "hash/tokens/384"  # embedded at once with the configured embedder


def test_the_same_text_again_is_a_merge_with_two_mentions(run_cli):
    first = add(run_cli, "I live in Lyon.")
    again = add(run_cli, "i live in   LYON")
    assert again["action"] == "MERGE" and again["id"] == first["id"]
    assert again["mention_count"] == 2
    assert fact_texts(run_cli) == ["I live in Lyon."]
    text = run_cli("memory", "add", "I live in Lyon", "--user", "ana")
    assert "already known as f1" in text.stdout and "3 times" in text.stdout


def test_a_new_value_for_a_key_supersedes_and_the_old_one_stays_visible(run_cli):
    old = add(run_cli, "I live in Paris", "--category", "location", "--key", "city")
    new = add(run_cli, "I live in Lyon", "--category", "location", "--key", "city")
    assert new["action"] == "SUPERSEDE" and new["supersedes"] == old["id"]
    assert fact_texts(run_cli) == ["I live in Lyon"]
    archived = {i["id"]: i for i in ok_json(run_cli("memory", "list", "--archived", "--user", "ana", "--json"))}
    assert archived[old["id"]]["superseded_by"] == new["id"] and archived[old["id"]]["text"] == "I live in Paris"
    table = run_cli("memory", "list", "--archived", "--user", "ana")
    assert "I live in Paris" in table.stdout and f"[superseded by {new['id']}]" in table.stdout
    history = ok_json(run_cli("memory", "history", old["id"], "--user", "ana", "--json"))
    assert [h["action"] for h in history] == ["ADD", "SUPERSEDE"]
    assert (history[-1]["old_value"], history[-1]["new_value"], history[-1]["related_id"]) == (
        "I live in Paris", "I live in Lyon", new["id"])
    people = run_cli("memory", "history", old["id"], "--user", "ana", env=WIDE)
    assert "SUPERSEDE" in people.stdout and "I live in Paris -> I live in Lyon" in people.stdout


# --- search ------------------------------------------------------------------------------------------------


@pytest.fixture
def mixed(run_cli, memory):
    """Two facts through the CLI and two imported messages of one session for user ana."""
    add(run_cli, "I play the cello in an orchestra")
    add(run_cli, "My cat is called Miso")
    session = memory.sessions.start("music")
    memory.messages.add(session, "user", "Rehearsal of the cello suite went well tonight", external_id="chat-17")
    memory.messages.add(session, "assistant", "Glad the cello rehearsal went well!")
    return session


def test_search_json_has_the_contract_fields(run_cli, mixed):
    hits = ok_json(run_cli("memory", "search", "cello", "--user", "ana", "--json"))
    assert {h["kind"] for h in hits} == {"fact", "message"} and len(hits) == 3
    for hit in hits:
        assert set(hit) >= HIT_FIELDS, hit
        assert "cello" in hit["text"].lower() and isinstance(hit["score"], float)
        assert "fts" in hit["legs"]
    message = next(h for h in hits if h.get("external_id") == "chat-17")
    assert message["id"].startswith("m") and message["session_id"] == mixed
    assert all({"session_id", "external_id"} <= set(h) for h in hits if h["kind"] == "message")
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_search_kind_and_limit(run_cli, mixed):
    facts = ok_json(run_cli("memory", "search", "cello", "--kind", "fact", "--user", "ana", "--json"))
    messages = ok_json(run_cli("memory", "search", "cello", "--kind", "message", "--user", "ana", "--json"))
    assert [h["text"] for h in facts] == ["I play the cello in an orchestra"]
    assert {h["kind"] for h in messages} == {"message"} and len(messages) == 2
    one = ok_json(run_cli("memory", "search", "cello", "--limit", "1", "--user", "ana", "--json"))
    assert len(one) == 1
    bad = run_cli("memory", "search", "cello", "--kind", "people", "--user", "ana")
    assert_error(bad, ExitCode.USAGE, "people")


def test_search_explain_says_in_words_which_search_found_each_hit(run_cli, mixed):
    # The hash embedder has no semantics: only the exact text clears the similarity floor, for both legs.
    result = run_cli("memory", "search", "My cat is called Miso", "--explain", "--user", "ana", env=WIDE)
    assert result.exit_code == 0, result.stderr
    assert "My cat is called Miso" in result.stdout
    assert re.search(r"by meaning #1 \(cosine \d\.\d\d\)", result.stdout) and "by its words #1" in result.stdout
    assert "fts" not in result.stdout + result.stderr and "vector" not in result.stdout + result.stderr  # no jargon
    assert re.search(r"candidates found by meaning \d+, by its words \d+", result.stderr), result.stderr
    plain = run_cli("memory", "search", "Miso", "--user", "ana")
    assert "My cat is called Miso" in plain.stdout and "by its words" not in plain.stdout


def test_search_with_no_match_says_so(run_cli, mixed):
    result = run_cli("memory", "search", "submarine", "--user", "ana")
    assert result.exit_code == 0 and result.stdout == "" and "no matches" in result.stderr
    assert ok_json(run_cli("memory", "search", "submarine", "--user", "ana", "--json")) == []


# --- list, show, stats -------------------------------------------------------------------------------------


def test_list_json_fields_kind_and_limit(run_cli, mixed):
    items = ok_json(run_cli("memory", "list", "--user", "ana", "--json"))
    assert {i["kind"] for i in items} == {"fact", "message"} and len(items) == 4
    for item in items:
        assert set(item) >= ITEM_FIELDS
        if item["kind"] == "fact":
            assert set(item) >= FACT_FIELDS and item["mention_count"] == 1 and item["importance"] == 0.9
    facts = ok_json(run_cli("memory", "list", "--kind", "fact", "--user", "ana", "--json"))
    assert [f["text"] for f in facts] == ["My cat is called Miso", "I play the cello in an orchestra"]  # newest first
    messages = ok_json(run_cli("memory", "list", "--kind", "message", "--user", "ana", "--json"))
    assert {m["kind"] for m in messages} == {"message"} and len(messages) == 2
    assert len(ok_json(run_cli("memory", "list", "--limit", "1", "--user", "ana", "--json"))) == 1
    table = run_cli("memory", "list", "--user", "ana")
    assert "My cat is called Miso" in table.stdout and "Rehearsal of the cello" in table.stdout


def test_show_json_and_its_errors(run_cli, mixed):
    fact = ok_json(run_cli("memory", "show", "f2", "--user", "ana", "--json"))
    assert fact["text"] == "My cat is called Miso" and set(fact) >= FACT_FIELDS
    message = ok_json(run_cli("memory", "show", "m1", "--user", "ana", "--json"))
    assert (message["kind"], message["external_id"], message["session_id"]) == ("message", "chat-17", mixed)
    people = run_cli("memory", "show", "f2", "--user", "ana")
    assert people.exit_code == 0 and "My cat is called Miso" in people.stdout and "category: general" in people.stdout
    assert_error(run_cli("memory", "show", "f999", "--user", "ana"), ExitCode.NOT_FOUND, "f999")
    for malformed in ("x12", "f", "12", "f-1", "f1.5"):
        assert_error(run_cli("memory", "show", malformed, "--user", "ana"), ExitCode.USAGE, "f12")


def test_stats_json_counts(run_cli, mixed):
    add(run_cli, "I live in Paris", "--category", "location", "--key", "city")
    add(run_cli, "I live in Lyon", "--category", "location", "--key", "city")
    stats = ok_json(run_cli("memory", "stats", "--user", "ana", "--json"))
    assert stats["user"] == "ana"
    assert (stats["facts_active"], stats["facts_superseded"], stats["messages"], stats["sessions"]) == (3, 1, 2, 1)
    assert stats["embedders"] == {"hash/tokens/384": 4}  # the CLI embedded its facts; the messages wait
    people = run_cli("memory", "stats", "--user", "ana")
    assert "facts active: 3" in people.stdout


# --- forget ------------------------------------------------------------------------------------------------


def test_forget_needs_yes_when_it_cannot_ask(run_cli):
    fact = add(run_cli, "My locker code is 4417")
    result = run_cli("memory", "forget", fact["id"], "--user", "ana")
    assert_error(result, ExitCode.USAGE, "--yes")
    assert fact_texts(run_cli) == ["My locker code is 4417"]


def test_forget_removes_the_item_and_leaves_a_textless_history(run_cli):
    fact = add(run_cli, "My locker code is 4417")
    keep = add(run_cli, "My bike is blue")
    result = run_cli("memory", "forget", fact["id"], "--yes", "--user", "ana")
    assert result.exit_code == 0, result.stderr
    assert fact["id"] in result.stdout
    assert_error(run_cli("memory", "show", fact["id"], "--user", "ana"), ExitCode.NOT_FOUND)
    assert ok_json(run_cli("memory", "search", "locker 4417", "--user", "ana", "--json")) == []
    history = ok_json(run_cli("memory", "history", fact["id"], "--user", "ana", "--json"))
    assert history[-1]["action"] == "FORGET"
    assert all(h["old_value"] is None and h["new_value"] is None for h in history)
    people = run_cli("memory", "history", fact["id"], "--user", "ana")
    assert "FORGET" in people.stdout and "4417" not in people.stdout
    assert fact_texts(run_cli) == [keep["text"]]
    assert ok_json(run_cli("memory", "stats", "--user", "ana", "--json"))["forgotten"] == 1


def test_forget_compact_rewrites_the_file_and_without_ids_needs_compact(run_cli, coop_home):
    fact = add(run_cli, "My locker code is 4417")
    assert_error(run_cli("memory", "forget", "--user", "ana"), ExitCode.USAGE, "name the items")
    for filler in range(30):
        add(run_cli, f"Filler fact number {filler} " + "x" * 400)
    size = (coop_home / "coop.db").stat().st_size
    done = run_cli("memory", "forget", fact["id"], "--yes", "--compact", "--user", "ana")
    assert done.exit_code == 0 and "compacted" in done.stdout
    listed = ok_json(run_cli("memory", "list", "--kind", "fact", "--user", "ana", "--json"))
    for item in listed:
        assert run_cli("memory", "forget", item["id"], "--yes", "--user", "ana").exit_code == 0
    alone = run_cli("memory", "forget", "--compact", "--user", "ana")
    assert alone.exit_code == 0 and "compacted" in alone.stdout
    assert (coop_home / "coop.db").stat().st_size < size  # the freed pages given back


def test_forget_checks_every_id_before_removing_any(run_cli):
    fact = add(run_cli, "My locker code is 4417")
    result = run_cli("memory", "forget", fact["id"], "f99", "--yes", "--user", "ana")
    assert_error(result, ExitCode.NOT_FOUND, "f99")
    assert fact_texts(run_cli) == ["My locker code is 4417"]


def test_history_of_a_message_is_a_usage_error(run_cli, mixed):
    assert_error(run_cli("memory", "history", "m1", "--user", "ana"), ExitCode.USAGE, "only facts")
    assert_error(run_cli("memory", "history", "f404", "--user", "ana"), ExitCode.NOT_FOUND, "f404")


# --- JSON on stdout only -----------------------------------------------------------------------------------


def test_json_output_is_only_json_even_with_warnings(run_cli, tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    env = {"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed", "COOP_MEMORY_EMBEDDER_MODEL_PATH": str(empty)}
    added = run_cli("memory", "add", "I collect stamps", "--user", "ana", "--json", env=env)
    assert added.exit_code == 0
    assert "warning: no embedder" in added.stderr  # the warning went to stderr ...
    assert json.loads(added.stdout)["embedder"] is None  # ... and stdout is one JSON document
    for args in (["search", "stamps"], ["list"], ["show", "f1"], ["history", "f1"], ["stats"]):
        result = run_cli("memory", *args, "--user", "ana", "--json", env=env)
        assert result.exit_code == 0, (args, result.stderr)
        json.loads(result.stdout)
    found = json.loads(run_cli("memory", "search", "stamps", "--user", "ana", "--json", env=env).stdout)
    assert [h["text"] for h in found] == ["I collect stamps"] and set(found[0]["legs"]) == {"fts"}


# --- isolation ---------------------------------------------------------------------------------------------


def test_one_users_memory_never_shows_for_another(run_cli):
    secret = add(run_cli, "Ana's passport number is X1234567", user="ana")
    add(run_cli, "Ben likes passport photos", user="ben")
    for global_option in (False, True):  # `coop memory X --user ben` and `coop --user ben memory X`

        def as_ben(*args: str):
            if global_option:
                return run_cli("--user", "ben", "memory", *args)
            return run_cli("memory", *args, "--user", "ben")

        hits = ok_json(as_ben("search", "passport X1234567", "--json"))
        assert [h["text"] for h in hits] == ["Ben likes passport photos"]
        listed = ok_json(as_ben("list", "--archived", "--json"))
        assert [i["text"] for i in listed] == ["Ben likes passport photos"]
        assert_error(as_ben("show", secret["id"]), ExitCode.NOT_FOUND)
        assert_error(as_ben("history", secret["id"]), ExitCode.NOT_FOUND)
        stats = ok_json(as_ben("stats", "--json"))
        assert (stats["user"], stats["facts_active"]) == ("ben", 1)
        assert "X1234567" not in as_ben("list").stdout
    assert_error(run_cli("memory", "forget", secret["id"], "--yes", "--user", "ben"), ExitCode.NOT_FOUND)
    assert "Ana's passport number is X1234567" in fact_texts(run_cli, "ana")
    # The command's --user wins over the global one.
    mine = ok_json(run_cli("--user", "ben", "memory", "show", secret["id"], "--user", "ana", "--json"))
    assert mine["text"] == secret["text"]


def test_the_default_user_comes_from_config(run_cli, tmp_path):
    add(run_cli, "Cleo grows tomatoes", user="cleo")
    config = tmp_path / "c.toml"
    config.write_text('[chat]\nuser = "cleo"\n', encoding="utf-8")
    assert [i["text"] for i in ok_json(run_cli("--config", str(config), "memory", "list", "--json"))] == [
        "Cleo grows tomatoes"]
    assert ok_json(run_cli("memory", "list", "--json", env={"COOP_CHAT_USER": "dan"})) == []


@pytest.mark.parametrize("args", [["memory", "list", "--user", ""], ["--user", " ", "memory", "list"]])
def test_an_explicit_empty_user_is_refused(run_cli, args):
    add(run_cli, "Default user's fact", user="ana")
    result = run_cli(*args, env={"COOP_CHAT_USER": "ana"})
    assert result.exit_code == ExitCode.USAGE and "user id is empty" in result.stderr
    assert result.stdout == ""


# --- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "?!...", "\"\" -- ** ()"])
def test_a_query_without_words_is_a_usage_error(run_cli, query):
    add(run_cli, "I live in Lyon")
    assert_error(run_cli("memory", "search", query, "--user", "ana"), ExitCode.USAGE, "no words")
    assert fact_texts(run_cli) == ["I live in Lyon"]


@pytest.mark.parametrize("query", ['"Lyon', 'Lyon*', '-Lyon', 'city:Lyon', '(Lyon', 'Lyon AND', 'NEAR(Lyon',
                                   'Lyon OR NOT', '"unbalanced "quotes" Lyon', "l'Lyon", "Lyon^2 {x}"])
def test_fts_syntax_in_a_query_is_just_text(run_cli, query):
    add(run_cli, "I live in Lyon", "--category", "location", "--key", "city")
    add(run_cli, "My cat is called Miso")
    hits = ok_json(run_cli("memory", "search", "--user", "ana", "--json", "--", query))
    assert hits and hits[0]["text"] == "I live in Lyon"


def test_a_huge_fact_is_refused_and_nothing_is_lost(run_cli):
    add(run_cli, "I live in Lyon")
    result = run_cli("memory", "add", "x" * 1_000_000, "--user", "ana")
    assert_error(result, ExitCode.USAGE, "too long", "1,000,000")
    assert fact_texts(run_cli) == ["I live in Lyon"]


@pytest.mark.parametrize("command", ["add", "search"])
def test_non_utf8_argument_is_refused(run_cli, command):
    add(run_cli, "I had a café in Lyon")
    bad = "caf\udce9"  # how Python hands over the bytes caf\xe9 from a latin-1 terminal's argv
    result = run_cli("memory", command, bad, "--user", "ana")
    assert_error(result, ExitCode.USAGE, "UTF-8")
    assert fact_texts(run_cli) == ["I had a café in Lyon"]
    assert_error(run_cli("memory", "list", "--user", bad), ExitCode.USAGE, "UTF-8")


def test_a_missing_database_directory_is_created_private(run_cli, tmp_path):
    db_path = tmp_path / "new" / "deeper" / "memory.db"
    result = run_cli("memory", "add", "I live in Lyon", "--user", "ana",
                     env={"COOP_MEMORY_DB_PATH": str(db_path)})
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(os.stat(db_path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    listed = run_cli("memory", "list", "--user", "ana", "--json", env={"COOP_MEMORY_DB_PATH": str(db_path)})
    assert [i["text"] for i in ok_json(listed)] == ["I live in Lyon"]


def test_a_read_only_database_directory_is_a_store_error(run_cli, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: chmod does not stop writes")
        result = run_cli("memory", "add", "I live in Lyon", "--user", "ana",
                         env={"COOP_MEMORY_DB_PATH": str(locked / "coop.db")})
        assert_error(result, ExitCode.STORE, str(locked))
    finally:
        locked.chmod(0o700)


def test_a_database_path_that_cannot_be_created_is_a_store_error(run_cli, tmp_path):
    """The same failure as a read-only directory, but one that holds for root too: the parent is a file."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    result = run_cli("memory", "add", "I live in Lyon", "--user", "ana",
                     env={"COOP_MEMORY_DB_PATH": str(blocker / "sub" / "coop.db")})
    assert_error(result, ExitCode.STORE, str(blocker / "sub"))
    assert blocker.read_text() == "not a directory"


def test_a_corrupted_database_is_a_store_error_and_is_left_alone(run_cli, coop_home):
    coop_home.mkdir(parents=True, exist_ok=True)
    garbage = bytes(range(256)) * 64
    (coop_home / "coop.db").write_bytes(garbage)
    for args in (["add", "I live in Lyon"], ["list"], ["search", "Lyon"]):
        result = run_cli("memory", *args, "--user", "ana")
        assert_error(result, ExitCode.STORE, str(coop_home / "coop.db"), "corrupted")
        assert "move it aside" in result.stderr
    assert (coop_home / "coop.db").read_bytes() == garbage


def test_user_text_with_markup_is_printed_literally(run_cli):
    text = "use [/] to close [bold]tags[/bold]"
    item = add(run_cli, text, "--category", "[red]notes")
    for args in (["list"], ["search", "tags"], ["history", item["id"]], ["show", item["id"]]):
        result = run_cli("memory", *args, "--user", "ana")
        assert result.exit_code == 0, (args, result.stderr)
        assert text in result.stdout, (args, result.stdout)
    assert "[red]notes" in run_cli("memory", "show", item["id"], "--user", "ana").stdout


def test_an_unexpected_exception_is_one_line_and_exit_1(monkeypatch, capsys):
    from coop.cli import app as cli_app
    from coop.memory.storage.store import UserMemory

    def broken(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(UserMemory, "stats", broken)
    monkeypatch.setattr(sys, "argv", ["coop", "memory", "stats", "--user", "ana"])
    with pytest.raises(SystemExit) as exited:
        cli_app.main()
    assert exited.value.code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: unexpected RuntimeError: boom") and "--debug" in err
    assert "Traceback" not in err
    monkeypatch.setattr(sys, "argv", ["coop", "--debug", "memory", "stats", "--user", "ana"])
    with pytest.raises(SystemExit):
        cli_app.main()
    assert "Traceback" in capsys.readouterr().err


# --- the real model ----------------------------------------------------------------------------------------


@pytest.mark.real_model
def test_real_model_finds_hiking_by_meaning(run_cli, real_model_dir):
    env = {"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed", "COOP_MEMORY_EMBEDDER_MODEL_PATH": real_model_dir}
    added = run_cli("memory", "add", "I adore long walks on mountain trails", "--user", "ana", "--json", env=env)
    assert added.exit_code == 0, added.stderr
    assert added.json()["embedder"] == "fastembed/sentence-transformers/all-MiniLM-L6-v2/384"
    assert run_cli("memory", "add", "My favourite dish is ramen", "--user", "ana", env=env).exit_code == 0
    people = run_cli("memory", "search", "hiking", "--user", "ana", env=env)
    assert people.exit_code == 0 and "I adore long walks on mountain trails" in people.stdout
    hits = ok_json(run_cli("memory", "search", "hiking", "--user", "ana", "--json", env=env))
    assert hits[0]["text"] == "I adore long walks on mountain trails"
    assert "vector" in hits[0]["legs"] and "fts" not in hits[0]["legs"]  # no shared word: meaning found it
    assert hits[0]["legs"]["vector"]["score"] >= 0.655
    assert "My favourite dish is ramen" not in [h["text"] for h in hits]
