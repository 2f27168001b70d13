"""Memory that learns in any language, end to end through `coop chat`'s turn: a standing instruction given in
French, German, Spanish or Japanese goes into every later prompt; a fact said in one language is kept in it and
changed by the language's own "no longer ... now"; someone else's fact in it never takes the user's slot. The fast
model is scripted on the path production takes (the notes of the pointing call)."""

from __future__ import annotations

import pytest

from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from tests.notes import note, notes
from tests.scripted_model import session_on

EMBEDDER = HashEmbedder(64)

INSTRUCTIONS = {
    "fr": ("Réponds toujours en français, s'il te plaît.", "Réponds toujours en français"),
    "de": ("Antworte bitte immer auf Deutsch.", "Antworte immer auf Deutsch"),
    "es": ("Respóndeme siempre en español, por favor.", "Respóndeme siempre en español"),
    "ja": ("これからは日本語で答えてください。", "これからは日本語で答えてください"),
}
MOVES = {  # (what the user says first, its value, the move said the language's way, its value)
    # (vivre: "habite" is the first person too, and the user's words cut at "je" are stored whole, growth/wording.py)
    "fr": ("Je vis à Lyon.", "Vit à Lyon", "Je ne vis plus à Lyon, je vis à Berlin maintenant.",
           "Vit à Berlin"),
    "de": ("Ich wohne in Hamburg.", "Wohnt in Hamburg", "Ich wohne nicht mehr in Hamburg, jetzt wohne ich in Bremen.",
           "Wohnt in Bremen"),
    "es": ("Vivo en Sevilla.", "Vive en Sevilla", "Ya no vivo en Sevilla, ahora vivo en Bilbao.", "Vive en Bilbao"),
    "ja": ("東京に住んでいます。", "東京に住んでいる", "もう東京には住んでいません。今は大阪に住んでいます。",
           "大阪に住んでいる"),
}


def make_session(memory, server):
    config = apply_overrides(load_config(), {"model.name": "openai/test-model", "model.api_base": server.api_base,
                                             "model.timeout_seconds": 5.0})
    return session_on(server, memory, config, embedder=lambda: EMBEDDER)


def instructions_in(system: str) -> str:
    head = "Standing instructions from the user (always follow them):\n"
    return system.split(head, 1)[1].split("\n\n", 1)[0] if head in system else ""


@pytest.mark.parametrize("language", sorted(INSTRUCTIONS))
def test_an_instruction_in_any_language_is_in_every_later_prompt(memory, scripted, language):
    said, value = INSTRUCTIONS[language]
    scripted.background_replies = [notes(note(value, said.rstrip("。."), kind="instruction",
                                              topic="answer_language"))]
    chat = make_session(memory, scripted)
    chat.turn(said)
    chat.turn("?")
    assert value in instructions_in(scripted.system_prompt(-1))
    [instruction] = memory.facts.active("instruction")
    assert (instruction.text, instruction.key) == (value, "answer_language")


@pytest.mark.parametrize("language", sorted(MOVES))
def test_a_move_said_the_languages_way_replaces_the_city_in_that_language(memory, scripted, language):
    first, old, then, new = MOVES[language]
    scripted.background_replies = [
        notes(note(old, first.rstrip("。."), topic="home_city")),
        notes(note(old, then.split(",")[0].split("。")[0], topic="home_city", polarity="no_longer"),
              note(new, then.split(",")[-1].split("。")[-2] if language == "ja" else then.split(",")[-1].rstrip("."),
                   topic="home_city"))]
    chat = make_session(memory, scripted)
    chat.turn(first)
    chat.turn(then)
    [current] = [f for f in memory.facts.active() if f.key == "home_city"]
    assert current.text == new
    assert old not in [f.text for f in memory.facts.active()]
    assert [f.text for f in memory.list_items("fact", include_inactive=True) if f.text == old]  # kept as history


@pytest.mark.parametrize("language", sorted(MOVES))
def test_of_two_values_of_a_slot_said_together_the_one_that_holds_takes_it(memory, scripted, language):
    """A small model notes the end of the old city first, as a value that holds in the user's own words ("Je ne
    vis plus à Lyon"), then the new one: the new city takes the slot, whatever the order of the notes."""
    first, old, then, new = MOVES[language]
    ended, moved = (then.split("。")[0], then.split("。")[1]) if language == "ja" else then.rstrip(".").split(", ")
    scripted.background_replies = [
        notes(note(old, first.rstrip("。."), topic="home_city")),
        notes(note(ended, ended, topic="home_city"), note(new, moved, topic="home_city"))]
    chat = make_session(memory, scripted)
    chat.turn(first)
    chat.turn(then)
    [current] = [f for f in memory.facts.active() if f.key == "home_city"]
    assert current.text == new, [(f.text, f.key) for f in memory.facts.active()]


@pytest.mark.parametrize(("language", "said", "value"), [
    ("fr", "Ma sœur habite à Nantes.", "Habite à Nantes"),
    ("de", "Meine Schwester wohnt in Köln.", "Wohnt in Köln"),
    ("es", "Mi hermana vive en Sevilla.", "Vive en Sevilla"),
    ("ja", "姉は京都に住んでいます。", "京都に住んでいる"),
])
def test_a_sisters_city_never_takes_the_users_slot(memory, scripted, language, said, value):
    home = memory.facts.add("Lives in Porto", category="location", key="home_city", source="user").fact_id
    scripted.background_replies = [notes(note(value, said.rstrip("。."), topic="home_city"))]  # claimed as the user's
    make_session(memory, scripted).turn(said)
    assert memory.facts.find_by_key("location", "home_city").item_id == home
    theirs = [f for f in memory.facts.active() if f.item_id != home]
    assert theirs, "the sister's city is filed under her"
    assert all(f.key and f.key.endswith(".home_city") and f.key != "home_city" for f in theirs), theirs
