"""The root's `--config` and `--debug` work after the subcommand too (`coop check --config X`), as people type
them; after `--` they are text."""

from __future__ import annotations

from coop.cli.app import hoist_global_options


def test_global_options_after_the_subcommand_move_in_front():
    assert hoist_global_options(["check", "--config", "x.toml"]) == ["--config", "x.toml", "check"]
    assert hoist_global_options(["memory", "search", "tea", "--debug", "--config=c.toml"]) == \
        ["--debug", "--config=c.toml", "memory", "search", "tea"]
    assert hoist_global_options(["memory", "add", "--", "--debug"]) == ["memory", "add", "--", "--debug"]
    assert hoist_global_options(["--config", "a.toml", "check"]) == ["--config", "a.toml", "check"]


def test_check_reads_a_config_given_after_the_subcommand(run_cli, tmp_path):
    config = tmp_path / "elsewhere.toml"
    config.write_text('[model]\nname = "ollama/llama3.1"\n', encoding="utf-8")
    before = run_cli("--config", str(config), "check", "--json")
    after = run_cli("check", "--config", str(config), "--json")
    assert after.exit_code == before.exit_code == 0
    model = {c["name"]: c for c in after.json()["checks"]}["model"]
    assert model["message"] == "chat model ollama/llama3.1"


def test_debug_after_the_subcommand_shows_the_traceback(run_cli, tmp_path):
    config = tmp_path / "broken.toml"
    config.write_text("[memory]\nrrf_k = 'sixty'\n", encoding="utf-8")
    quiet = run_cli("memory", "stats", "--config", str(config))
    loud = run_cli("memory", "stats", "--config", str(config), "--debug")
    assert quiet.exit_code == loud.exit_code != 0
    assert "Traceback" not in quiet.stderr and "Traceback" in loud.stderr
    assert "memory.rrf_k" in quiet.stderr
