"""A change stores the known fact as it reads now (issue 31): "Moved the trip to October 2027" replaces "Is going to
Japan for two weeks in April 2027" as "Is going to Japan for two weeks in October 2027", in the known fact's slot,
when the fast model writes that from the two texts alone; anything else it writes is not taken. The reconciler and
the restater are scripted callables (and once the fast model behind a scripted server); assertions are on what
they are asked and what memory holds after."""

from __future__ import annotations

import json
import logging

import pytest

from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.growth.reconcile import Candidate, Decision, FactWriter
from coop.memory.growth.restate import RESTATE_PROMPT, accepted, model_restater
from coop.model.jsonreply import ModelReplyError

EMBEDDER = HashEmbedder(64)
TRIP = "Is going to Japan for two weeks in April 2027"
MOVED = "We moved the trip to October 2027 because of work."


def writer(memory, restate, decide=None):
    config = apply_overrides(load_config(), {"memory.extraction.related_threshold": 0.0})
    return FactWriter(memory, config.memory.extraction, embedder=EMBEDDER, restate=restate,
                      decide=decide or (lambda c, existing: Decision("SUPERSEDE", existing[0].item_id, 0.9, "moved")))


def known(memory, text, category="plans", key=None):
    fact_id = memory.facts.add(text, category=category, key=key).fact_id
    embed_pending(memory, EMBEDDER)
    return fact_id


def moved(value="Moved the trip to October 2027 because of work", category="plans"):
    return Candidate(value, category=category, evidence=MOVED, sentence=MOVED)


ALLEGRO = "First week at Allegro done, I'm a senior engineer there now."
FINLY = "Is a backend developer at Finly, a small fintech in Warsaw"


def active(memory):
    return sorted((f.text, f.category, f.key) for f in memory.facts.active())


@pytest.mark.parametrize("restated, said, known_fact, ok", [
    ("Is going to Japan for two weeks in October 2027", MOVED, TRIP, True),
    ("Lives in Berlin", "Quick update from Berlin: we moved last month and I live in Berlin now.", "Lives in Lyon",
     True),
    ("Runs about 35 km a week", "I've upped my running to 35 km a week.", "Runs about 20 km a week", True),
    # the known fact unchanged: the model saw no change
    ("Is going to Japan for two weeks in April 2027", MOVED, TRIP, False),
    # words from neither text ("Spain", "translation")
    ("Lives in Spain and works in translation", "Switch back to English, my Spanish isn't good enough.",
     "Answer in Spanish", False),
    # the first person: the user's sentence copied
    ("I live in Berlin now", "Quick update: I live in Berlin now.", "Lives in Lyon", False),
    # a negation nobody said
    ("Is not going to Japan in October 2027", MOVED, TRIP, False),
    # words from the texts, but not the change the user's words carry: nothing new over the known fact
    ("Is going to Japan", MOVED, TRIP, False),
    # a word of the sentence that is not said of the user: what they do not live in, what someone else has
    ("Lives in Munich", "I live in Berlin now, not Munich.", "Lives in Lyon", False),
    ("Drives a Tesla", "I sold the Skoda, my brother drives a Tesla.", "Drives a 2015 Skoda Octavia", False),
    # a clause that is not in the first person still says what the user works with
    ("Java and Postgres these days", "I don't use Kotlin anymore, it's all Java here.",
     "Kotlin and Postgres these days", True),
    # a name or number of the thing replaced, kept beside the new one: the year was the Skoda's
    ("Drives a 2015 Nissan Leaf", "I sold the Skoda and I now drive a Nissan Leaf.", "Drives a 2015 Skoda Octavia",
     False),
    ("Drives a Nissan Leaf", "I sold the Skoda and I now drive a Nissan Leaf.", "Drives a 2015 Skoda Octavia", True),
    # ... or after it, where the known fact goes on about the thing replaced: Warsaw was Finly's
    ("Is a senior engineer at Allegro, a small fintech in Warsaw", ALLEGRO, FINLY, False),
    ("Is a senior engineer at Allegro", ALLEGRO, FINLY, True),
    ("Is learning Italian, at B2 level", "I passed the B2 exam, so I'm at B2 now.", "Is learning Italian, at B1 level",
     True),
    # a question is no fact
    ("Is going to Japan in October 2027?", MOVED, TRIP, False),
])
def test_a_restated_fact_is_taken_only_from_the_two_texts_and_with_the_change(restated, said, known_fact, ok):
    assert accepted(restated, known_fact, said) is ok


def test_a_change_stores_the_known_fact_as_it_reads_now_in_its_slot(memory):
    trip = known(memory, TRIP, "plans", "japan_trip")
    asked = []

    def restate(candidate, item):
        asked.append((candidate.sentence, item.text))
        return "Is going to Japan for two weeks in October 2027"

    result = writer(memory, restate).write(moved())
    assert result.action == "SUPERSEDE" and result.previous_id == trip
    assert asked == [(MOVED, TRIP)]
    # the new value takes the known fact's key, which the extractor's had not
    assert active(memory) == [("Is going to Japan for two weeks in October 2027", "plans", "japan_trip")]
    assert "written as it reads now" in memory.facts.history(trip)[-1].reason


@pytest.mark.parametrize("restate", [lambda c, item: None, lambda c, item: 1 / 0])
def test_no_restatement_or_a_failing_restater_stores_the_new_fact_as_written(memory, restate, caplog):
    trip = known(memory, TRIP)
    with caplog.at_level(logging.WARNING):
        result = writer(memory, restate).write(moved())
    assert result.action == "SUPERSEDE" and not memory.facts.is_active(trip)
    assert active(memory) == [("Moved the trip to October 2027 because of work", "plans", None)]


def test_a_restatement_that_is_known_already_supersedes_the_known_fact_with_that_one(memory):
    """"I sold the Skoda and I now drive a Nissan Leaf": "Now drives a Nissan Leaf" is written first; "Sold the
    Skoda" then replaces the Octavia, restated as what the Leaf fact already says: no second Leaf fact."""
    leaf = known(memory, "Now drives a Nissan Leaf", "possessions")
    octavia = known(memory, "Drives a 2015 Skoda Octavia", "possessions")
    said = "Okay, I did it: I sold the Skoda and I now drive a Nissan Leaf."
    sold = Candidate("Sold the Skoda", category="possessions", evidence="I sold the Skoda", sentence=said)
    w = writer(memory, lambda c, item: "Drives a Nissan Leaf",
               decide=lambda c, existing: Decision("SUPERSEDE", octavia, 0.9, "sold"))
    w.said_together.add(leaf)
    result = w.write(sold)
    assert result.fact_id == leaf and result.previous_id == octavia
    assert active(memory) == [("Now drives a Nissan Leaf", "possessions", None)]
    assert memory.get("fact", octavia).superseded_by == leaf
    # the Leaf fact keeps the vector of its own words, not the restatement's
    query = EMBEDDER.embed(["Now drives a Nissan Leaf"])[0]
    (hit,) = memory.vectors.nearest(EMBEDDER.id, EMBEDDER.dims, query, k=1, kinds=("fact",))
    assert hit.item_id == leaf and hit.similarity > 0.999


def test_standing_instructions_and_refinements_are_not_restated(memory):
    asked = []

    def restate(candidate, item):
        asked.append(item.text)
        return "Answer in English"

    spanish = known(memory, "Answer in Spanish", "instruction", "answer_language")
    english = Candidate("Answer in English", category="instruction", key="answer_language",
                        evidence="switch back to English for your answers", sentence="Switch back to English for "
                                                                                    "your answers.")
    assert writer(memory, restate).write(english).action == "SUPERSEDE" and not memory.facts.is_active(spanish)
    cork = known(memory, "Grew up in Cork", "location")
    kinsale = Candidate("Grew up in Kinsale, near Cork", category="location",
                        evidence="I grew up in Kinsale, near Cork", sentence="I meant I grew up in Kinsale, near Cork.")
    assert writer(memory, restate, decide=lambda c, existing: Decision("UPDATE", cork, 0.9, "")).write(kinsale) \
        .action == "UPDATE"
    assert asked == []


def test_the_fast_model_is_asked_for_the_known_fact_with_the_users_sentence(memory, openai_server):
    from coop.model.llm import fast_complete
    from tests.memory.growth.test_memory_growth import make_config

    trip = known(memory, TRIP)
    openai_server.background_replies = ['{"now_true": "Is going to Japan for two weeks in October 2027."}',
                                        '{"now_true": "Is going to Japan for two weeks in April 2027"}',
                                        "not json at all"]
    restate = model_restater(fast_complete(make_config(openai_server)))
    item = memory.get("fact", trip)
    assert restate(moved(), item) == "Is going to Japan for two weeks in October 2027"
    body = openai_server.background_requests()[-1]
    assert body["messages"][0]["content"] == RESTATE_PROMPT
    assert body["messages"][1]["content"] == f'KNOWN FACT: {TRIP}\nTHE USER JUST SAID: "{MOVED}"'
    assert body["temperature"] == 0
    assert "now_true" in json.dumps(body.get("response_format"))
    assert restate(moved(), item) is None  # the known fact unchanged is not taken
    with pytest.raises(ModelReplyError):  # an unusable reply: the writer keeps the new fact as written
        restate(moved(), item)


def test_a_chat_turn_stores_the_moved_trip_as_it_now_reads_and_says_so(memory, scripted):
    """Through the chat, its background extraction and the scripted server: the change is shown at the next
    prompt with the fact as stored, and the restatement request carries the known fact and the user's sentence."""
    from tests.memory.growth.test_reliability_extraction import decision, facts, make_session

    trip = memory.facts.add(TRIP, category="plans", key="japan_trip", source="user").fact_id
    scripted.background_replies = [
        facts(("plans", "japan_trip", "Moved the trip to October 2027", "We moved the trip to October 2027")),
        decision("SUPERSEDE", trip), '{"now_true": "Is going to Japan for two weeks in October 2027"}']
    chat = make_session(memory, scripted)
    chat.turn(MOVED)
    assert [f.text for f in memory.facts.active()] == ["Is going to Japan for two weeks in October 2027"]
    [notice] = chat.take_notices()
    assert "Is going to Japan for two weeks in October 2027" in notice and "replaces" in notice
    restating = [b for b in scripted.background_requests() if b["messages"][0]["content"] == RESTATE_PROMPT]
    assert len(restating) == 1
    assert restating[0]["messages"][1]["content"] == f'KNOWN FACT: {TRIP}\nTHE USER JUST SAID: "{MOVED}"'
