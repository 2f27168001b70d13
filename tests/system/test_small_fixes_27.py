"""The smaller items of issue 27, one test each: a usage error is an `error:` line and a `hint:` (click printed
three lines), and a FIFO given as the config file is named for what it is, not "not found"."""

from __future__ import annotations

import os


def test_a_usage_error_is_one_error_line_and_a_hint(run_cli):
    for args, needle in ((("memory", "search"), "Missing argument 'query'"),
                         (("memory", "list", "--limit", "x"), "'--limit'")):
        result = run_cli(*args)
        assert result.exit_code == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2 and lines[0].startswith("error: ") and needle in lines[0], result.stderr
        assert lines[1] == f"hint: see `coop {' '.join(args[:2])} --help`"
        assert "Usage:" not in result.stderr and "Try '" not in result.stderr and result.stdout == ""


def test_a_fifo_given_as_config_is_not_reported_missing(tmp_path, run_cli):
    fifo = tmp_path / "coop.toml"
    os.mkfifo(fifo)
    result = run_cli("--config", str(fifo), "memory", "stats")
    assert result.exit_code == 2
    assert "not a regular file" in result.stderr and "not found" not in result.stderr
    missing = run_cli("--config", str(tmp_path / "nope.toml"), "memory", "stats")
    assert missing.exit_code == 2 and "config file not found" in missing.stderr
