"""Messages name whose memory it is in plain English: "your memory" for the user called "you" (the name a first
run picks when it knows no other), "ana's memory" for anyone else (issue 30's "you's memory")."""

from __future__ import annotations

from coop.memory.storage.store import whose


def test_whose_reads_as_english():
    assert whose("you") == "your" and whose("ana") == "ana's"


def test_a_missing_item_of_you_is_not_in_your_memory(run_cli):
    result = run_cli("memory", "show", "f99", "--user", "you")
    assert result.exit_code == 3
    assert "your memory" in result.stderr and "you's" not in result.stderr
    other = run_cli("memory", "show", "f99", "--user", "ana")
    assert "ana's memory" in other.stderr
