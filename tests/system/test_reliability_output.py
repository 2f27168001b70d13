"""Stored text cannot drive the terminal: control characters are shown as codes in human output, while JSON
output stays exact."""

from __future__ import annotations

import json

HOSTILE = "I like tea\x1b]0;pwned\x07\x1b[2J\x1b[31m red\x9b"


def test_list_and_show_print_no_control_characters_and_json_stays_exact(run_cli):
    added = run_cli("memory", "add", HOSTILE, "--json")
    assert added.exit_code == 0, added.stderr
    ref = added.json()["id"]
    for args in (("memory", "list"), ("memory", "show", ref), ("memory", "search", "tea"), ("memory", "history", ref)):
        result = run_cli(*args)
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\x9b" not in result.stdout, args
    shown = run_cli("memory", "show", ref).stdout
    assert "\\x1b]0;pwned\\x07" in shown
    assert json.loads(run_cli("memory", "list", "--json").stdout)[0]["text"] == HOSTILE
    assert run_cli("memory", "show", ref, "--json").json()["text"] == HOSTILE
