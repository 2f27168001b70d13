"""Messages name whose memory it is in plain English: "your memory" for the user called "you" (the name a first
run picks when it knows no other), "ana's memory" for anyone else (issue 30's "you's memory")."""

from __future__ import annotations

from coop.memory.storage.items import whose


def test_whose_reads_as_english():
    assert whose("you") == "your" and whose("ana") == "ana's"


def test_a_missing_item_of_you_is_not_in_your_memory(run_cli):
    result = run_cli("memory", "show", "f99", "--user", "you")
    assert result.exit_code == 3
    assert "your memory" in result.stderr and "you's" not in result.stderr
    other = run_cli("memory", "show", "f99", "--user", "ana")
    assert "ana's memory" in other.stderr


def test_a_name_with_an_accent_is_one_user_however_it_was_typed(run_cli, store):
    composed, decomposed = "\u00e1lice", "a\u0301lice"  # "álice" as one code point, and as "a" and an accent
    assert run_cli("--user", decomposed, "memory", "add", "I keep bees").exit_code == 0
    assert run_cli("--user", composed, "memory", "add", "I live in Porto").exit_code == 0
    listed = run_cli("--user", decomposed, "memory", "list", "--json").json()
    assert sorted(item["text"] for item in listed) == ["I keep bees", "I live in Porto"]
    assert store.user_ids() == [composed]
    assert store.user(decomposed).user_id == composed
