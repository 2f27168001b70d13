"""`coop init`: a private, commented config that loads back to the defaults and is never overwritten by accident."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from coop.config.example import example_toml
from coop.config.loading import Config, load_config
from coop.errors import ExitCode


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("where", ["user config", "argument", "--config"])
def test_init_writes_the_commented_config_privately(run_cli, coop_home, tmp_path, where):
    if where == "user config":
        target, args = coop_home / "config.toml", ["init"]
    elif where == "argument":
        target = tmp_path / "deep" / "dir" / "mine.toml"
        args = ["init", str(target)]
    else:
        target = tmp_path / "flagged.toml"
        args = ["--config", str(target), "init"]
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    assert str(target) in result.stdout
    assert target.read_text(encoding="utf-8") == example_toml()
    assert mode(target) == 0o600
    assert load_config(target, env={}) == Config()
    assert load_config(target, env={}).source == str(target)


def test_init_refuses_to_overwrite_without_force(run_cli, tmp_path):
    target = tmp_path / "coop.toml"
    target.write_text('[model]\nname = "mine"\n', encoding="utf-8")
    result = run_cli("init", str(target))
    assert result.exit_code == ExitCode.USAGE
    assert "already exists" in result.stderr and "--force" in result.stderr
    assert target.read_text(encoding="utf-8") == '[model]\nname = "mine"\n'


def test_init_force_overwrites_and_tightens_the_mode(run_cli, tmp_path):
    target = tmp_path / "coop.toml"
    target.write_text('[model]\nname = "mine"\n', encoding="utf-8")
    target.chmod(0o644)
    result = run_cli("init", str(target), "--force")
    assert result.exit_code == 0, result.stderr
    assert target.read_text(encoding="utf-8") == example_toml()
    assert mode(target) == 0o600


def test_the_initialised_user_config_is_what_coop_then_reads(run_cli, coop_home):
    assert run_cli("init").exit_code == 0
    report = run_cli("check", "--json").json()
    config_check = next(c for c in report["checks"] if c["name"] == "config")
    assert str(coop_home / "config.toml") in config_check["message"]
    assert report["passed"] is True
