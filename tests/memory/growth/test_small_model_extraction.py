"""Extraction that a small model gets right (issue 31): no example value in the prompts for it to copy, the
user's message shown on its own (not the reply), a fixed vocabulary of categories and keys, ids never keys,
questions, courtesies and bare words never facts, a fact the extractor was shown as KNOWN never turned into a new
mention, and the evidence found in the user's words when the model quotes loosely. The fast model is the
scripted server; assertions are on what coop sends it and what it stores."""

from __future__ import annotations

import json

import pytest

from coop.memory.growth import refusals
from coop.memory.growth.consolidate import SUMMARY_PROMPT
from coop.memory.growth.extract import (
    MESSAGE_HEADING,
    RECONCILE_PROMPT,
    ExtractionContext,
    extract_facts,
    extraction_prompt,
)
from coop.memory.growth.vocabulary import bad_value, normalise


def proposal(value, evidence, category="general", key=None, stance="asserted"):
    return {"category": category, "key": key, "value": value, "importance": 0.5, "evidence": evidence,
            "stance": stance}


def extract_with(reply_facts, user, context=None):
    sent = []

    def complete(messages):
        sent.append(messages)
        return json.dumps({"facts": reply_facts})

    return extract_facts(complete, user, 5, context), sent


@pytest.mark.parametrize("prompt", [extraction_prompt(), RECONCILE_PROMPT, SUMMARY_PROMPT])
def test_the_prompts_hold_no_concrete_example_value_a_model_could_copy(prompt):
    for copied in ("Lyon", "Paris", "Answer briefly", "Call me Sam", "Likes tea", "green tea", "Berlin", "Sam"):
        assert copied not in prompt


def test_the_extractor_is_shown_the_topics_and_the_users_message_on_its_own():
    facts, [messages] = extract_with([], "I live in Porto")
    system, exchange = messages[0]["content"], messages[1]["content"]
    assert "home_city, hometown" in system and "employer" in system and "answer_language" in system
    assert exchange == f"{MESSAGE_HEADING}\n1. I live in Porto"
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


def test_a_known_fact_proposed_again_is_not_a_new_mention_unless_the_user_says_it_again():
    from coop.memory.storage.items import Item

    known = Item(kind="fact", item_id=7, text="Lives in Bologna", created_at=0.0, category="location",
                 key="home_city")
    context = ExtractionContext(today="Monday 2026-11-23", known=[known])
    before = refusals.counts()["known"]
    copied, [messages] = extract_with([proposal("Lives in Bologna", "Bologna", "location", "home_city")],
                                      "My teacher Giulia is from Bologna, she says hi", context=context)
    assert copied == [] and refusals.counts()["known"] - before == 1
    assert "Lives in Bologna" not in messages[1]["content"]  # not shown: a small model turned the list into changes
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


def test_a_loose_quote_points_at_the_users_sentence_which_is_kept_as_the_evidence():
    """What Qwen2.5-Coder-1.5B quotes: the instruction in its own words, the whole message, a role prefix. The
    user's words that prove the fact are the evidence (the shortest run of them; an instruction's whole sentence);
    words that do not prove it never are."""
    said = "From now on, please always answer me in Spanish."
    facts, _ = extract_with([proposal("Answer in Spanish", "Answer in Spanish", "instruction", "language")], said)
    assert [(f.value, f.evidence) for f in facts] == [("Answer in Spanish", said)]
    said = "Hi! I'm Claire, by the way. Can you help me plan my week?"  # quoted whole: not a question about Claire
    facts, _ = extract_with([proposal("Is called Claire", said, "identity", "name")], said)
    assert [(f.value, f.evidence) for f in facts] == [("Is called Claire", "I'm Claire")]
    before = refusals.counts()["evidence"]
    facts, _ = extract_with([proposal("Is ill", "ill", "health", "condition"),  # three letters inside "will"
                             proposal("Works as a dentist", "I'm covering his shifts", "work", "occupation")],
                            "I will call you tomorrow. My sister is a dentist, so I'm covering his shifts.")
    assert facts == [] and refusals.counts()["evidence"] - before == 2  # no sentence holds "ill"; nor "works"
    facts, _ = extract_with([proposal("Cares about cats", "cat", "pets", None)], "I live in Lyon with my cat.")
    assert facts == []  # a sentence coop finds must hold every word of the fact: "my cat" is not "cares about"


def test_a_sentence_found_for_a_loose_quote_stands_on_its_own_words():
    """A long sentence with "this" or "it" does not borrow the earlier turns' words: only a short answer
    ("Yes, she does.") leans on them, as a quoted "yes" does."""
    context = ExtractionContext(earlier=[("user", "My sister Ana is a dentist in Porto.")])
    facts, _ = extract_with([proposal("Works as a dentist", "dentist", "work", "occupation")],
                            "My colleague Mark has the flu, so I'm covering his shifts this week.", context=context)
    assert facts == []
    context = ExtractionContext(earlier=[("assistant", "Do you still live in Porto?")])
    facts, _ = extract_with([proposal("Lives in Porto", "I still live in Porto", "location", "home_city")],
                            "Yes, I do.", context=context)
    assert [f.value for f in facts] == ["Lives in Porto"]


def test_a_named_person_as_the_facts_subject_is_about_them_not_the_user():
    said = "My husband Karim is a civil engineer."
    facts, _ = extract_with([proposal("Karim is a civil engineer", said, "family", "partner"),
                             proposal("Is a civil engineer", said, "work", "occupation")], said)
    assert [f.value for f in facts] == ["Karim is a civil engineer"]


def test_a_slot_run_together_with_its_category_is_the_slot():
    assert normalise("identity", "diet_diet") == ("diet", "diet")
    assert normalise("family", "family_partner") == ("family", "partner")
    assert normalise("location", "location_home_city") == ("location", "home_city")
    assert normalise("hobbies", "hobbies_climbing") == ("hobbies", "climbing")


def test_the_evidence_is_narrowed_to_the_clause_the_fact_comes_from():
    """A quote of the whole sentence would make the mood check read its other clauses: "I might move" is not a
    doubt about where the user lives now, and "I don't live in Berlin anymore" is not a denial of Porto."""
    facts, _ = extract_with([proposal("Lives in Lyon", "I live in Lyon, but I might move to Berlin.", "location",
                                      "home_city")], "I live in Lyon, but I might move to Berlin.")
    assert [(f.value, f.evidence) for f in facts] == [("Lives in Lyon", "I live in Lyon")]
    said = "I don't live in Berlin anymore, I live in Porto now."
    facts, _ = extract_with([proposal("Lives in Porto", said, "location", "home_city"),
                             proposal("Does not live in Berlin", said, "location", None)], said)
    assert [(f.value, f.evidence) for f in facts] == [("Lives in Porto", "I live in Porto"),
                                                      ("Does not live in Berlin", "I don't live in Berlin")]


def test_a_person_the_user_speaks_of_does_not_give_the_user_their_name():
    """Qwen2.5-Coder-1.5B stored "Is called Leo" from a sentence about the user's son: a fact that names the
    person only as its object is not about them, and not the user's own."""
    said = "Leo wants to be an astronaut, it's adorable. I sold 10 bikes."
    facts, _ = extract_with([proposal("Is called Leo", "Leo wants to be an astronaut", "identity", "name"),
                             proposal("Sold 10 bikes", "10 bikes", "possessions", None)], said)
    assert [f.value for f in facts] == ["Sold 10 bikes"]  # a number is nobody's name


def test_a_long_passage_is_kept_whole_rather_than_narrowed():
    """Narrowing is quadratic in the passage's words: past `MAX_NARROWED_WORDS` the sentence is the evidence."""
    from coop.memory.growth.evidence import MAX_NARROWED_WORDS

    said = "I live in Lyon, " + ", ".join(["the weather there is lovely most days"] * 6) + "."
    assert len(said.split()) > MAX_NARROWED_WORDS
    facts, _ = extract_with([proposal("Lives in Lyon", said, "location", "home_city")], said)
    assert [(f.value, f.evidence) for f in facts] == [("Lives in Lyon", said)]
