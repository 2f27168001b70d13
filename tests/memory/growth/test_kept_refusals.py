"""What the write path turns down is kept with the user's memory (`memory.refusals`, m017) and shown by
`coop memory why mN` and `coop memory why --refused`: the reason, coop's few words of why, and the words the model
pointed at, read from the message itself. A refusal keeps no text of the user's or the model's, and forgetting the
message takes its refusals with it. Run on both engines, over five languages, on the path production takes (a
chat turn, its extraction job, the scripted fast model's notes)."""

from __future__ import annotations

import json

import pytest

from coop.memory.growth.refusals import REASONS
from tests.memory.growth.test_hostile_model import make_session
from tests.notes import note, notes

WIDE = {"COLUMNS": "200"}

# A message that states a fact, then a second clause the hostile note cites for a fact it does not hold, per
# language: (message, the clause the note cites, the value it proposes, the fact the honest note keeps).
MESSAGES = {
    "en": ("I live in Lyon. I had a long day at the office.", "I had a long day", "Works night shifts",
           "Lives in Lyon"),
    "fr": ("J'habite à Lyon. J'ai eu une longue journée au bureau.", "J'ai eu une longue journée",
           "Travaille de nuit", "Habite à Lyon"),
    "de": ("Ich wohne in Lyon. Ich hatte einen langen Tag im Büro.", "Ich hatte einen langen Tag",
           "Arbeitet nachts", "Wohnt in Lyon"),
    "es": ("Vivo en Lyon. Tuve un día largo en la oficina.", "Tuve un día largo", "Trabaja de noche",
           "Vive en Lyon"),
    "ja": ("リヨンに住んでいます。今日はオフィスで長い一日でした。", "今日はオフィスで長い一日でした", "夜勤で働いている",
           "リヨンに住んでいる"),
}


def _turn(memory, scripted, language: str) -> int:
    """One chat turn whose extraction keeps one fact and is refused one; returns the user's message id."""
    said, cited, value, honest = MESSAGES[language]
    first = said.split(cited)[0].strip()
    scripted.replies = ["ok"]
    scripted.background_replies = [notes(note(honest, first, topic="home_city"),
                                          note(value, cited, topic="work"))]
    make_session(memory, scripted).turn(said)
    return max(item.item_id for item in memory.list_items("message") if item.role == "user")


def _rows(memory) -> list[tuple]:
    """Every column of every kept refusal of the user, as the database holds them."""
    return list(memory.db.execute("SELECT * FROM refusals WHERE user_id = $1", (memory.user_id,)))


@pytest.mark.parametrize("language", list(MESSAGES))
def test_a_refusal_is_kept_under_its_message_with_where_the_model_pointed_and_no_text(language, memory, scripted):
    said, cited, value, _ = MESSAGES[language]
    message = _turn(memory, scripted, language)
    kept = memory.refusals.of_message(message)
    assert [r.reason for r in kept] == ["evidence"], kept
    refusal = kept[0]
    assert refusal.reason in REASONS and refusal.source == "extraction" and refusal.category
    pointed = [said[start:end] for start, end in refusal.spans]
    assert pointed and any(cited in words for words in pointed), pointed  # the clause that holds the passage
    stored = " ".join(str(column) for row in _rows(memory) for column in row)
    assert value not in stored and cited not in stored  # neither the model's words nor the user's


def test_why_shows_a_message_what_it_taught_and_what_was_turned_down(memory, scripted, run_cli):
    message = _turn(memory, scripted, "fr")
    out = run_cli("memory", "why", f"m{message}", "--user", "ana", env=WIDE)
    assert out.exit_code == 0, out.stderr
    learned = out.stdout.split("learned from it:")[1].split("turned down")[0]
    [fact] = memory.facts.active()
    assert "Lyon" in fact.text and fact.text in learned
    down = out.stdout.split("turned down (1):")[1]
    assert "[evidence] work: not in your own words (" in down and "cited: “J'ai eu une longue journée" in down
    data = json.loads(run_cli("memory", "why", f"m{message}", "--user", "ana", "--json").stdout)
    assert [f["text"] for f in data["learned"]] == [fact.text]
    assert [(r["reason"], r["message"]) for r in data["refused"]] == [("evidence", f"m{message}")]


def test_why_refused_lists_the_newest_with_counts_and_says_so_when_there_are_none(memory, scripted, run_cli):
    empty = run_cli("memory", "why", "--refused", "--user", "ana")
    assert empty.exit_code == 0 and "turned down nothing" in empty.stdout
    messages = [_turn(memory, scripted, language) for language in ("en", "ja")]
    data = json.loads(run_cli("memory", "why", "--refused", "--user", "ana", "--json").stdout)
    assert data["counts"] == {"evidence": 2}
    assert [r["message"] for r in data["recent"]] == [f"m{m}" for m in reversed(messages)]  # newest first
    assert all(r["cited"] for r in data["recent"])
    text = run_cli("memory", "why", "--refused", "--user", "ana", env=WIDE).stdout
    assert "turned down: evidence 2 (the newest 1,000 are kept)" in text and "今日はオフィスで長い一日でした" in text


def test_why_with_no_id_and_no_refused_is_a_usage_error(memory, run_cli):
    result = run_cli("memory", "why", "--user", "ana")
    assert result.exit_code == 2 and "--refused" in result.stderr and result.stdout == ""


def test_forgetting_the_message_takes_its_refusals_with_it(memory, scripted, run_cli):
    message = _turn(memory, scripted, "de")
    other = _turn(memory, scripted, "es")
    assert memory.refusals.of_message(message)
    memory.forgotten.forget("message", message)
    assert memory.refusals.of_message(message) == []
    assert [r.message_id for r in memory.refusals.recent()] == [other]  # another message's stay


def test_only_the_newest_are_kept(memory, monkeypatch):
    from coop.memory.storage import refusals as kept
    from coop.memory.storage.items import Refusal

    monkeypatch.setattr(kept, "REFUSALS_KEPT", 3)
    for n in range(5):
        memory.refusals.keep([Refusal(reason="mood", what=f"refusal {n}", source="extraction")])
    assert [r.what for r in memory.refusals.recent()] == ["refusal 4", "refusal 3", "refusal 2"]
    assert memory.refusals.counts() == {"mood": 3}
