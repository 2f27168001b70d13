"""`coop check`: every rule reported with its severity; errors fail the command, warnings do not; no secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coop.errors import ExitCode


def check(run_cli, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    result = run_cli(*args, "check", "--json", env=env)
    return result.exit_code, result.json()


def by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def severity(report: dict, name: str) -> str:
    return by_name(report)[name]["severity"]


def test_check_passes_on_the_defaults_with_the_contract_shape(run_cli):
    code, report = check(run_cli)
    assert code == 0
    assert set(report) >= {"passed", "errors", "warnings", "checks"}
    assert report["passed"] is True and report["errors"] == 0
    assert report["warnings"] == sum(c["severity"] == "warning" for c in report["checks"])
    for c in report["checks"]:
        assert set(c) >= {"name", "severity", "passed", "message", "hint"}
        assert c["severity"] in ("ok", "warning", "error") and c["passed"] is (c["severity"] != "error")
    checks = by_name(report)
    assert checks["embedder"]["severity"] == "ok" and "hash/tokens/384" in checks["embedder"]["message"]


def test_check_reports_the_database_machinery(run_cli, coop_home):
    _, report = check(run_cli)
    checks = by_name(report)
    assert checks["sqlite"]["severity"] == "ok" and "FTS5" in checks["sqlite"]["message"]
    assert checks["vectors"]["severity"] == "ok" and "sign bits" in checks["vectors"]["message"]
    assert "sqlite-vec" not in {c["name"] for c in report["checks"]}  # no extension is loaded (issue 43)
    assert checks["schema"]["severity"] == "ok" and "current" in checks["schema"]["message"]
    assert checks["integrity"]["severity"] == "ok" and "ok" in checks["integrity"]["message"]
    assert checks["full-text index"]["severity"] == "ok"
    assert checks["writable"]["severity"] == "ok"
    assert checks["permissions"]["severity"] == "ok"
    assert str(coop_home / "coop.db") in checks["database"]["message"]


def test_check_prints_a_table_and_a_verdict_for_people(run_cli):
    result = run_cli("check")
    assert result.exit_code == 0
    assert "vectors" in result.stdout and "coop check: ready" in result.stdout and "0 errors" in result.stdout


def test_no_model_is_a_warning_not_a_failure(run_cli):
    code, report = check(run_cli)
    model = by_name(report)["model"]
    assert code == 0 and model["severity"] == "warning"
    assert "no chat model" in model["message"] and "api_base" in model["hint"]


def test_a_broken_config_fails_naming_the_key(run_cli, tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[memory]\nrrf_k = \"sixty\"\n", encoding="utf-8")
    code, report = check(run_cli, "--config", str(config))
    # a config that cannot be read is a usage error (2) from check as from every other command
    assert code == ExitCode.USAGE and report["passed"] is False and report["errors"] == 1
    assert severity(report, "config") == "error" and "memory.rrf_k" in by_name(report)["config"]["message"]
    people = run_cli("--config", str(config), "check")
    assert people.exit_code == ExitCode.USAGE and "memory.rrf_k" in people.stdout and "failed" in people.stdout
    elsewhere = run_cli("--config", str(config), "memory", "list")
    assert elsewhere.exit_code == ExitCode.USAGE and "memory.rrf_k" in elsewhere.stderr


def test_a_missing_api_key_fails_naming_the_variable(run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, report = check(run_cli, env={"COOP_MODEL_NAME": "openai/gpt-4o-mini"})
    key = by_name(report)["api key"]
    assert code == ExitCode.ERROR and key["severity"] == "error"
    assert "OPENAI_API_KEY" in key["message"] and "OPENAI_API_KEY" in key["hint"]


def test_a_set_api_key_passes_and_is_never_printed(run_cli, monkeypatch):
    secret = "sk-test-RECOGNISABLE-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("MY_OWN_KEY", secret)
    for env in ({"COOP_MODEL_NAME": "openai/gpt-4o-mini"},
                {"COOP_MODEL_NAME": "openai/gpt-4o-mini", "COOP_MODEL_API_KEY_ENV": "MY_OWN_KEY"}):
        for args in (["check", "--json"], ["check"], ["--debug", "check"]):
            result = run_cli(*args, env=env)
            assert result.exit_code == 0, result.stdout
            assert secret not in result.stdout and secret not in result.stderr
        key = by_name(run_cli("check", "--json", env=env).json())["api key"]
        assert key["severity"] == "ok" and "is set" in key["message"]


def test_a_local_server_needs_no_key(run_cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, report = check(run_cli, env={"COOP_MODEL_NAME": "ollama/llama3.1"})
    assert code == 0 and severity(report, "api key") == "ok"


def test_vectors_of_another_embedder_are_reported_with_reembed(run_cli):
    added = run_cli("memory", "add", "I live in Lyon", "--user", "ana", env={"COOP_MEMORY_EMBEDDER_DIMS": "64"})
    assert added.exit_code == 0
    code, same = check(run_cli, env={"COOP_MEMORY_EMBEDDER_DIMS": "64"})
    assert code == 0 and severity(same, "stored vectors") == "ok"
    assert "1 vector," in by_name(same)["stored vectors"]["message"]
    code, report = check(run_cli, env={"COOP_MEMORY_EMBEDDER_DIMS": "128"})
    stored = by_name(report)["stored vectors"]
    assert stored["severity"] in ("warning", "error")
    assert "hash/tokens/64" in stored["message"] and "reembed" in stored["hint"]
    assert code == (ExitCode.ERROR if stored["severity"] == "error" else 0)


def test_unembedded_items_are_a_backlog_warning(run_cli, memory):
    memory.facts.add("I live in Lyon")  # written without an embedder
    code, report = check(run_cli)
    assert code == 0 and severity(report, "embedding backlog") == "warning"
    assert "1 item has no vector" in by_name(report)["embedding backlog"]["message"]


def test_a_garbage_database_file_fails(run_cli, coop_home):
    coop_home.mkdir(parents=True, exist_ok=True)
    garbage = os.urandom(16384)
    (coop_home / "coop.db").write_bytes(garbage)
    code, report = check(run_cli)
    database = by_name(report)["database"]
    assert code == ExitCode.ERROR and database["severity"] == "error"
    assert str(coop_home / "coop.db") in database["message"] and database["hint"]
    assert "coop check" not in database["hint"]  # a hint that points back at this command helps nobody
    assert (coop_home / "coop.db").read_bytes() == garbage


@pytest.mark.parametrize("where", ["early pages", "late pages"])
def test_a_database_with_damaged_pages_fails(run_cli, db, memory, coop_home, where):
    """Damage early on stops the database opening; damage in table pages is found by the integrity check.
    Either way the report is complete (no traceback), exits 1, and every failure says what to do."""
    for i in range(300):
        memory.facts.add(f"fact number {i} about the garden, the bees and the roof " * 4)
    db.execute("pragma wal_checkpoint(truncate)")
    db.close()
    path = coop_home / "coop.db"
    size = path.stat().st_size
    with open(path, "r+b") as handle:  # the header page stays, so SQLite still takes it for a database
        handle.seek(4096 if where == "early pages" else size - 4096 * 30)
        handle.write(b"\xff" * 4096 * 10)
    result = run_cli("check", "--json")
    assert result.exit_code == ExitCode.ERROR, result.stderr
    report = result.json()
    failed = [c for c in report["checks"] if c["severity"] == "error"]
    assert failed and report["passed"] is False
    assert failed[0]["name"] == ("database" if where == "early pages" else "integrity")
    assert all(c["hint"] and "coop check" not in c["hint"] for c in failed)
    assert "malformed" in failed[0]["message"] or "corrupt" in failed[0]["message"]


def test_an_embedder_that_cannot_load_is_an_error(run_cli, tmp_path):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    code, report = check(run_cli, env={"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed",
                                       "COOP_MEMORY_EMBEDDER_MODEL_PATH": str(empty)})
    embedder = by_name(report)["embedder"]
    assert code == ExitCode.ERROR and embedder["severity"] == "error"
    assert str(empty) in embedder["message"] and "model.onnx" in embedder["message"]
    assert "model_path" in embedder["hint"]


def test_check_says_how_vectors_are_searched_and_search_uses_them(run_cli):
    code, report = check(run_cli)
    vectors = by_name(report)["vectors"]
    assert code == 0 and vectors["severity"] == "ok"
    assert "in memory" in vectors["message"] and "exact cosine" in vectors["message"]
    assert run_cli("memory", "add", "My cat is called Miso", "--user", "ana").exit_code == 0
    assert run_cli("memory", "add", "I live in Lyon", "--user", "ana").exit_code == 0
    hits = run_cli("memory", "search", "My cat is called Miso", "--user", "ana", "--json").json()
    assert hits[0]["text"] == "My cat is called Miso" and "vector" in hits[0]["legs"]
    assert hits[0]["legs"]["vector"]["score"] == pytest.approx(1.0, abs=1e-4)


def test_loose_permissions_are_a_warning(run_cli, coop_home):
    assert run_cli("memory", "list").exit_code == 0  # creates the database
    (coop_home / "coop.db").chmod(0o644)
    code, report = check(run_cli)
    permissions = by_name(report)["permissions"]
    assert code == 0 and permissions["severity"] == "warning" and "chmod 600" in permissions["hint"]


def test_check_works_on_a_throwaway_database(run_cli, coop_home):
    code, report = check(run_cli, env={"COOP_MEMORY_DB_PATH": ":memory:"})
    assert code == 0 and ":memory:" in by_name(report)["database"]["message"]
    assert not (coop_home / "coop.db").exists()


@pytest.mark.real_model
def test_check_passes_with_the_real_model(run_cli, real_model_dir):
    code, report = check(run_cli, env={"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed",
                                       "COOP_MEMORY_EMBEDDER_MODEL_PATH": real_model_dir})
    embedder = by_name(report)["embedder"]
    assert code == 0 and report["passed"] is True
    assert embedder["severity"] == "ok"
    assert "fastembed/sentence-transformers/all-MiniLM-L6-v2/384" in embedder["message"]
    assert str(Path(real_model_dir)) in embedder["message"]


def test_a_database_that_will_not_open_never_hints_back_at_check():
    """open_database's generic failure says "run `coop check` for details"; inside check that would loop."""
    from coop.cli.check import run_checks
    from coop.config.loading import Config
    from coop.errors import StoreError

    def will_not_open(config):
        raise StoreError("cannot open the database x.db: disk I/O error", hint="run `coop check` for details")

    checks = run_checks(Config, will_not_open)
    assert (checks[-1].name, checks[-1].severity) == ("database", "error")
    assert "x.db" in checks[-1].message and checks[-1].hint and "coop check" not in checks[-1].hint


def test_an_out_of_step_full_text_index_fails_the_check_and_reindex_mends_it(run_cli, coop_home):
    from coop.memory.storage.database import open_database

    assert run_cli("memory", "add", "Plays the cello on Sundays").exit_code == 0
    db = open_database(str(coop_home / "coop.db"))
    db.execute("INSERT INTO message_context_fts(message_context_fts) VALUES ('delete-all')")
    db.execute("INSERT INTO facts_fts(facts_fts) VALUES ('delete-all')")
    db.close()
    assert run_cli("memory", "search", "cello", "--json").json() == []

    code, report = check(run_cli)
    index = by_name(report)["full-text index"]
    assert code == ExitCode.ERROR and index["severity"] == "error"
    assert "facts_fts" in index["message"] and "coop memory reindex" in index["hint"]

    result = run_cli("memory", "reindex")
    assert result.exit_code == 0 and "facts_fts (1 rows)" in result.stdout
    code, report = check(run_cli)
    assert code == 0 and severity(report, "full-text index") == "ok"
    hits = run_cli("memory", "search", "cello", "--json").json()
    assert [h["text"] for h in hits] == ["Plays the cello on Sundays"]
