"""Extraction that a small model gets right (issue 31): no example value in the prompts for it to copy, the
speakers named, a fixed vocabulary of categories and keys, ids never keys, questions, courtesies and bare words
never facts, and a fact the extractor was shown as KNOWN never turned into a new mention. The fast model is the
scripted server; assertions are on what coop sends it and what it stores."""

from __future__ import annotations

import json

import pytest

from coop.memory.growth import refusals
from coop.memory.growth.consolidate import SUMMARY_PROMPT
from coop.memory.growth.extract import RECONCILE_PROMPT, ExtractionContext, extract_facts, extraction_prompt
from coop.memory.growth.vocabulary import bad_value, normalise


def proposal(value, evidence, category="general", key=None, stance="asserted"):
    return {"category": category, "key": key, "value": value, "importance": 0.5, "evidence": evidence,
            "stance": stance}


def extract_with(reply_facts, user, reply="Noted.", context=None):
    sent = []

    def complete(messages):
        sent.append(messages)
        return json.dumps({"facts": reply_facts})

    return extract_facts(complete, user, reply, 5, context), sent


@pytest.mark.parametrize("prompt", [extraction_prompt(5), RECONCILE_PROMPT, SUMMARY_PROMPT])
def test_the_prompts_hold_no_concrete_example_value_a_model_could_copy(prompt):
    for copied in ("Lyon", "Paris", "Answer briefly", "Call me Sam", "Likes tea", "green tea", "Berlin", "Sam"):
        assert copied not in prompt


def test_the_extractor_is_shown_the_slots_and_the_speakers_by_name():
    facts, [messages] = extract_with([], "I live in Porto", "Porto is lovely; I visited it once.")
    system, exchange = messages[0]["content"], messages[1]["content"]
    assert "location/home_city" in system and "work/employer" in system and "diet/diet" in system
    assert "The user wrote:\nI live in Porto\n" in exchange
    assert "The assistant answered (context only; its words are never facts about the user):" in exchange
    assert "USER:" not in exchange


def test_keys_and_categories_come_from_the_vocabulary_so_a_subject_keeps_one_slot():
    said = "I live in Porto and work at Farfetch, and I'm vegan"
    facts, _ = extract_with([proposal("Lives in Porto", "I live in Porto", "residence", "current_city"),
                             proposal("Works at Farfetch", "work at Farfetch", "personal", "company"),
                             proposal("Is vegan", "I'm vegan", "food", "dietary_preference")], said)
    assert [(f.category, f.key) for f in facts] == [("location", "home_city"), ("work", "employer"),
                                                    ("diet", "diet")]
    assert normalise("instruction", "name") == ("instruction", "name")  # "Call me ..." stays an instruction


def test_an_id_is_never_a_key():
    facts, _ = extract_with([proposal("Lives in Porto", "I live in Porto", "location", "f12"),
                             proposal("Has a cat named Mochi", "a cat named Mochi", "pets", "12")],
                            "I live in Porto with a cat named Mochi")
    assert [f.key for f in facts] == [None, None]
    assert normalise("f3", None) == ("general", None)


def test_questions_courtesies_and_bare_words_are_not_facts():
    before = refusals.counts()["value"]
    said = "Thanks for the help! Do you know Leiden? I'm married"
    facts, _ = extract_with([proposal("Thanks for the help", "Thanks for the help"),
                             proposal("Do you know Leiden?", "Do you know Leiden"),
                             proposal("Leiden", "know Leiden"), proposal("married", "I'm married"),
                             proposal("Is married", "I'm married", "family", "marriage")], said)
    assert [f.value for f in facts] == ["Is married"]
    assert refusals.counts()["value"] - before == 4
    assert bad_value("Smokes") is None and bad_value("Hello there") is not None
    assert bad_value("<user's exact words> }, {") == "the value is a placeholder of the prompt"  # SmolLM2-135M


def test_a_fact_shown_as_known_is_not_a_new_mention_unless_the_user_says_it_again():
    from coop.memory.storage.items import Item

    known = Item(kind="fact", item_id=7, text="Lives in Bologna", created_at=0.0, category="location",
                 key="home_city")
    context = ExtractionContext(today="Monday 2026-11-23", known=[known])
    before = refusals.counts()["known"]
    copied, [messages] = extract_with([proposal("Lives in Bologna", "Bologna", "location", "home_city")],
                                      "My teacher Giulia is from Bologna, she says hi", context=context)
    assert copied == [] and refusals.counts()["known"] - before == 1
    assert "KNOWN facts about the user, already in memory" in messages[1]["content"]
    said_again, _ = extract_with([proposal("Lives in Bologna", "I live in Bologna", "location", "home_city")],
                                 "Yes, I live in Bologna", context=context)
    assert [f.value for f in said_again] == ["Lives in Bologna"]  # the user's own words: a mention


def test_a_quote_with_a_speaker_name_still_proves_the_users_words():
    facts, _ = extract_with([proposal("Lives in Porto", "The user wrote: I live in Porto", "location", "city")],
                            "I live in Porto")
    assert [f.value for f in facts] == ["Lives in Porto"]


def test_a_slots_bare_value_becomes_the_sentence_it_stands_for_and_must_still_be_proved():
    """What Qwen2.5-Coder-1.5B sends: the slot's value alone ("Lyon", "Claire", "vegetarian")."""
    said = "Hi, I'm Claire. I live in Lyon, I've been vegetarian for years and I'm allergic to walnuts."
    facts, _ = extract_with([proposal("Claire", "I'm Claire", "identity", "name"),
                             proposal("Lyon", "I live in Lyon", "location", "city"),
                             proposal("vegetarian", "I've been vegetarian", "diet", "diet"),
                             proposal("walnuts", "allergic to walnuts", "health_allergy", "allergy_type"),
                             proposal("Berlin", "Lyon", "location", "home_city")], said)  # not proved: refused
    assert [(f.category, f.key, f.value) for f in facts] == [
        ("identity", "name", "Is called Claire"), ("location", "home_city", "Lives in Lyon"),
        ("diet", "diet", "Is vegetarian"), ("health", "allergy_type", "Is allergic to walnuts")]
    instruction, _ = extract_with([proposal("Spanish", "please always answer me in Spanish", "instruction",
                                            "answer_language")], "From now on, please always answer me in Spanish.")
    assert [f.value for f in instruction] == ["Answer in Spanish"]
