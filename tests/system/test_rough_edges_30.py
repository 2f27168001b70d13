"""Issue 30's rough edges, one test each: exit codes that agree, `--config` without a value, `embedder status
--json`, a misspelt `COOP_*` variable, a forget question that counts what it lists, Ctrl-C during reembed, the
`--explain` footer on its own line, and one Ollama model string everywhere."""

from __future__ import annotations

import json
import re

import pytest

from coop.config.loading import OTHER_VARIABLES, unknown_variables
from coop.errors import ExitCode
from tests import REPO

ROOT = REPO


@pytest.mark.parametrize("where", [["check"], ["check", "--json"], ["memory", "list"], []])
def test_config_without_a_value_says_it_needs_one(run_cli, where):
    result = run_cli(*where, "--config")
    assert result.exit_code == ExitCode.USAGE
    assert "'--config' needs a value" in result.stderr and "No such option" not in result.stderr


def test_embedder_status_json(run_cli, tmp_path):
    hashed = run_cli("memory", "embedder", "status", "--json")  # the tests' embedder: hash, nothing to load
    assert hashed.exit_code == 0
    assert json.loads(hashed.stdout) == {"provider": "hash", "model": "sentence-transformers/all-MiniLM-L6-v2",
                                         "local": False, "present": True, "path": None, "problem": None}
    missing = run_cli("memory", "embedder", "status", "--json",
                      env={"COOP_MEMORY_EMBEDDER_PROVIDER": "fastembed",
                           "COOP_MEMORY_EMBEDDER_MODEL_PATH": str(tmp_path / "nothing")})
    data = json.loads(missing.stdout)
    assert missing.exit_code == ExitCode.MODEL and data["present"] is False
    assert data["problem"].startswith("memory.embedder.model_path is not a directory")


def test_a_misspelt_variable_is_warned_about_with_what_it_meant(run_cli):
    result = run_cli("memory", "stats", env={"COOP_MODEL_NAMEE": "x", "COOP_TEST_ANYTHING": "1", "COOP_DEBUG": ""})
    assert result.exit_code == 0
    assert "COOP_MODEL_NAMEE is not one coop reads" in result.stderr and "did you mean COOP_MODEL_NAME?" in result.stderr
    assert "COOP_TEST_ANYTHING" not in result.stderr and "COOP_DEBUG" not in result.stderr
    assert "COOP_HOME" not in result.stderr  # the fixture sets it: known
    assert unknown_variables({"COOP_WHATEVER": "1"})[0][1].startswith("settings are COOP_<SECTION>_<KEY>")


def test_every_coop_variable_the_code_reads_is_known():
    """Each `COOP_*` name in the code, the benchmarks, the tests and CI is a setting or a known variable, so the
    warning never fires on a name coop itself uses."""
    names = set()
    for path in [*ROOT.glob("coop/**/*.py"), *ROOT.glob("bench/**/*.py"), *ROOT.glob("tests/**/*.py"),
                 ROOT / ".ci" / "run"]:
        names |= set(re.findall(r"\bCOOP_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    names -= {"COOP_MODEL_NAMEE", "COOP_WHATEVER", "COOP_TEST_ANYTHING"}  # this file's misspellings
    names -= {"COOP_MODEL_BACKOFF_SECONDS"}  # conftest sets it only once model.backoff_seconds is a setting
    assert set(OTHER_VARIABLES) <= names
    assert unknown_variables(dict.fromkeys(names, "")) == []


def test_forget_asks_about_every_item_it_lists(memory, run_cli, monkeypatch):
    session = memory.sessions.start("talk")
    said = memory.messages.add(session, "user", "I live in Porto now")
    fact = memory.facts.add("Lives in Porto", category="location", key="city", source="extraction")
    memory.sources.link(fact.fact_id, [said], "live in Porto")
    monkeypatch.setattr("coop.cli.memory.on_terminal", lambda: True)  # a person answers (CliRunner's input)
    result = run_cli("memory", "forget", f"f{fact.fact_id}", "--user", "ana", input="n\n")
    assert result.exit_code == 0
    assert f"f{fact.fact_id}: Lives in Porto" in result.stderr and f"with m{said}:" in result.stderr
    assert "Forget 2 items for good?" in result.stderr and "nothing forgotten" in result.stderr
    alone = run_cli("memory", "forget", f"f{fact.fact_id}", "--only", "--user", "ana", input="n\n")
    assert "Forget 1 item for good?" in alone.stderr and f"m{said}" not in alone.stderr
    assert memory.exists("fact", fact.fact_id)


def test_ctrl_c_during_reembed_says_what_was_kept(memory, run_cli, monkeypatch):
    for text in ("Lives in Porto", "Works as a nurse", "Keeps bees"):
        memory.facts.add(text)

    def interrupted(memory, embedder, *, batch_size, progress):
        progress(2)
        raise KeyboardInterrupt

    monkeypatch.setattr("coop.memory.transfer.reembed.reembed", interrupted)
    result = run_cli("memory", "reembed", "--user", "ana")
    assert result.exit_code == ExitCode.INTERRUPTED
    assert "stopped: 2 items of 3 embedded" in result.stderr
    assert "run `coop memory reembed` again to continue" in result.stderr


def test_the_explain_footer_is_a_line_of_its_own(memory, run_cli):
    memory.facts.add("Lives in Porto")
    result = run_cli("memory", "search", "Porto", "--explain", "--user", "ana")
    assert result.exit_code == 0 and result.stdout.endswith("\n")
    assert re.fullmatch(r"\ncandidates found [^\n]+ ms\n", result.stderr), result.stderr


def test_one_ollama_model_string_in_hints_example_and_readme(run_cli):
    hint = next(c for c in json.loads(run_cli("check", "--json").stdout)["checks"] if c["name"] == "model")["hint"]
    example = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for text in (hint, example, readme):
        assert "ollama_chat/llama3.1" in text and "ollama/llama3.1" not in text
