"""A change the reconciler saw but pinned on a fact about another thing (issue 31): coop asks, one known fact at a
time, whether it is still true after what the user said, and changes the first that is not, when the user's words
carry the change. The reconciler and the judge are scripted callables (and once the fast model behind a scripted
server); assertions are on what they are asked and what memory holds after."""

from __future__ import annotations

import json
import re

import pytest

from coop.config.loading import apply_overrides, load_config
from coop.memory.growth.admission import admit
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.embedding import embed_pending
from coop.memory.growth.reconcile import PAIRS_ASKED, Candidate, Decision, FactWriter
from coop.memory.growth.sameness import announced_change, may_change, slot_only
from coop.memory.growth.still_true import BOTH_TRUE, CHANGED, DIFFERENT, STILL_TRUE_PROMPT, a_new_amount, model_judge
from coop.model.jsonreply import ModelReplyError

EMBEDDER = HashEmbedder(64)
FISH = "Big change: my doctor told me to get more protein, so I've started eating fish again."


def writer(memory, decide, judge):
    config = apply_overrides(load_config(), {"memory.extraction.related_threshold": 0.0})
    return FactWriter(memory, config.memory.extraction, embedder=EMBEDDER, decide=decide, judge=judge)


def active(memory):
    return sorted((f.text, f.category, f.key) for f in memory.facts.active())


def fish(sentence=FISH):
    return Candidate("Has started eating fish again", category="diet", key="diet",
                     evidence="I've started eating fish again", sentence=sentence)


def known(memory, *facts):
    ids = [memory.facts.add(text, category=category, key=key).fact_id for text, category, key in facts]
    embed_pending(memory, EMBEDDER)
    return ids


def test_a_change_pinned_on_another_thing_is_asked_about_pair_by_pair(memory):
    walnuts, vegetarian = known(memory, ("Is allergic to walnuts", "health", "allergy"),
                                ("Has been vegetarian for about ten years", "diet", "diet"))
    asked = []

    def judge(candidate, item):
        asked.append((candidate.sentence, item.text))
        return CHANGED if item.item_id == vegetarian else BOTH_TRUE

    result = writer(memory, lambda c, existing: Decision("UPDATE", walnuts, 0.9, "more detail"), judge).write(fish())
    assert result.action == "SUPERSEDE"
    # the allergy is another slot and shares no word with the new fact: never asked about
    assert asked == [(FISH, "Has been vegetarian for about ten years")]
    # the new fact takes the old one's slot: a subject keeps one category and key
    assert active(memory) == [("Has started eating fish again", "diet", "diet"),
                              ("Is allergic to walnuts", "health", "allergy")]
    assert "no longer true" in memory.facts.history(vegetarian)[-1].reason


def test_a_change_across_categories_needs_a_word_in_common_and_takes_the_old_slot(memory):
    (runs,) = known(memory, ("Also runs, about 20 km a week", "health", None))
    (orchestra,) = known(memory, ("Plays the cello in an amateur orchestra", "hobbies", None))
    asked = []

    def judge(candidate, item):
        asked.append(item.text)
        return CHANGED

    upped = Candidate("Has upped their running to 35 km a week", category="work",
                      evidence="I've upped my running to 35 km a week")
    result = writer(memory, lambda c, existing: Decision("UPDATE", orchestra, 0.9, ""), judge).write(upped)
    assert result.action == "SUPERSEDE" and asked == ["Also runs, about 20 km a week"]
    assert ("Has upped their running to 35 km a week", "health", None) in active(memory)
    assert not memory.facts.is_active(runs)
    assert may_change("work", None, "Has upped their running to 35 km a week", "health", None,
                      "Also runs, about 20 km a week")
    assert not may_change("work", None, "Is training for the Berlin marathon", "health", None,
                          "Also runs, about 20 km a week")
    assert not may_change("instruction", None, "Answer in English", "languages", None, "Speaks English")
    # one category is not enough: a colleague's flu is no change of a sister's job
    assert not may_change("family", None, "Colleague Mark has the flu", "family", None,
                          "Sister Ana is a dentist in Porto")
    assert may_change("diet", "diet", "Has started eating fish again", "diet", "diet", "Is vegetarian")
    # a fact about someone close to the user never changes one about the user, nor one about another person
    assert not may_change("family", None, "Sister Ana is a dentist in Porto", "location", "home_city",
                          "Lives in Porto")
    assert not may_change("family", None, "Sister Ana is a dentist", "family", None, "Brother Rui is a dentist")
    assert may_change("family", None, "Sister Ana is a nurse now", "family", None, "Sister Ana is a dentist")
    # across categories, one word in common is not enough
    assert not may_change("plans", None, "Is opening a vegan bakery in Ghent", "diet", "diet", "Is vegan")
    assert not may_change("plans", None, "Is opening a vegan bakery in Ghent", "diet", None, "Is vegan")
    # a word of time is not what a fact is about
    assert not may_change("work", None, "Is covering his shifts this week", "hobbies", None, "Runs 20 km a week")


def test_both_true_a_failing_judge_or_a_change_the_words_do_not_carry_keeps_both(memory):
    walnuts, vegetarian = known(memory, ("Is allergic to walnuts", "health", "allergy"),
                                ("Has been vegetarian for about ten years", "diet", "diet"))

    def wrong_target(candidate, existing):
        return Decision("SUPERSEDE", walnuts, 0.9, "")

    for judge in (lambda c, item: DIFFERENT, lambda c, item: BOTH_TRUE):
        result = writer(memory, wrong_target, judge).write(fish())
        assert result.action == "ADD" and memory.facts.is_active(vegetarian)
        memory.facts.archive(result.fact_id, reason="test: next case")

    def broken(candidate, item):
        raise TimeoutError("the fast model timed out")

    result = writer(memory, wrong_target, broken).write(fish())
    assert result.action == "ADD" and memory.facts.is_active(vegetarian)
    memory.facts.archive(result.fact_id, reason="test: next case")
    # "changed", but the quote does not say "fish": no change, and the new fact is still kept beside
    loose = Candidate("Has started eating fish again", category="diet", evidence="big change", sentence=FISH)
    result = writer(memory, wrong_target, lambda c, item: CHANGED).write(loose)
    assert result is not None and result.action == "ADD" and memory.facts.is_active(vegetarian)


@pytest.mark.parametrize("new, old, changed", [
    ("Has upped their running to 35 km a week", "Runs about 20 km a week", True),
    ("Is going to Japan for three weeks", "Is going to Japan for two weeks in April 2027", True),
    ("Runs about 20 km a week", "Also runs, about 20 km a week", False),  # the same amount
    # dates are no amounts: a new day of a month, a new year
    ("Starts on 2 March 2027", "Starts on 1 March 2027", False),
    ("Is going to Japan in October 2028", "Is going to Japan in October 2027", False),
    ("Runs 35 km a week", "Has 2 cats", False),  # amounts of different things
])
def test_a_new_amount_of_what_a_known_fact_counts(new, old, changed):
    assert a_new_amount(new, old) is changed


def test_the_same_thing_with_a_new_amount_is_a_change_though_the_judge_says_both_true(memory):
    """A 1.5B model answers "same_thing_both_true" for 35 km a week after 20 km a week, in every run."""
    (runs,) = known(memory, ("Runs about 20 km a week", "hobbies", None))
    (cello,) = known(memory, ("Plays the cello in an amateur orchestra", "hobbies", None))
    upped = Candidate("Has upped their running to 35 km a week", category="hobbies",
                      evidence="I've upped my running to 35 km a week")
    result = writer(memory, lambda c, existing: Decision("UPDATE", cello, 0.9, ""),
                    lambda c, item: BOTH_TRUE).write(upped)
    assert result.action == "SUPERSEDE" and result.previous_id == runs
    assert memory.facts.is_active(cello)
    # the same amount said again, "both true": nothing changes
    again = Candidate("Has kept their running at 35 km a week", category="hobbies",
                      evidence="I've kept my running at 35 km a week")
    assert writer(memory, lambda c, existing: Decision("UPDATE", cello, 0.9, ""),
                  lambda c, item: BOTH_TRUE).write(again).action == "ADD"
    assert memory.facts.is_active(result.fact_id)


def test_at_most_a_few_pairs_are_asked_about(memory):
    ids = known(memory, *[(f"Has a hamster called H{n}", "pets", None) for n in range(6)])
    asked = []

    def judge(candidate, item):
        asked.append(item.item_id)
        return DIFFERENT

    new = Candidate("Has a hamster called Bo", category="pets", evidence="I have a hamster called Bo")
    assert writer(memory, lambda c, existing: Decision("UPDATE", 999, 0.9, ""), judge).write(new).action == "ADD"
    assert len(asked) == PAIRS_ASKED and set(asked) <= set(ids)


def test_admission_keeps_the_users_whole_sentence_for_the_judge():
    said = "Settling in fine. I work at the Charité now, on day shifts at last."
    (admitted,) = admit([Candidate("Works at the Charité now", category="work",
                                   evidence="I work at the Charité now")], [said])
    assert admitted.sentence == "I work at the Charité now, on day shifts at last."


def test_the_fast_model_is_asked_about_one_pair_with_the_users_words(memory, openai_server):
    from coop.model.llm import fast_complete
    from tests.memory.growth.test_memory_growth import make_config

    (vegetarian,) = known(memory, ("Has been vegetarian for about ten years", "diet", "diet"))
    openai_server.background_replies = ['{"known_is_about": "diet", "new_is_about": "eating fish", '
                                        '"answer": "same_thing_changed"}', "not json at all"]
    judge = model_judge(fast_complete(make_config(openai_server)))
    item = memory.get("fact", vegetarian)
    assert judge(fish(), item) == CHANGED
    body = openai_server.background_requests()[-1]
    assert body["messages"][0]["content"] == STILL_TRUE_PROMPT
    assert body["messages"][1]["content"] == f'KNOWN FACT: Has been vegetarian for about ten years\n' \
                                             f'THE USER JUST SAID: "{FISH}"'
    assert body["temperature"] == 0
    wanted = json.dumps(body.get("response_format"))
    assert "same_thing_changed" in wanted  # the answer's enum, as the schema the mode sends
    with pytest.raises(ModelReplyError):  # an unusable reply is no verdict: the pipeline keeps both
        judge(fish(), item)


def test_facts_said_in_one_message_never_change_each_other(memory):
    """The extraction job writes a message's facts one by one; a 1.5B model calls "Now drives a Nissan Leaf" a
    change of "Sold the Skoda", said in the same breath. Only the older fact may change."""
    from coop.config.loading import load_config
    from coop.memory.growth.jobs import MemoryJobs

    (octavia,) = known(memory, ("Drives a 2015 Skoda Octavia", "possessions", None))
    said = "Okay, I did it: I sold the Skoda and I now drive a Nissan Leaf."
    session = memory.sessions.start()
    message = memory.messages.add(session, "user", said)
    job = memory.jobs.record("extraction", session_id=session, message_id=message, reply_id=None)
    shown = []

    def complete(messages, schema=None):
        name = schema["name"] if schema else ""
        if name == "sheet":
            return json.dumps({"sentences": [{"n": 1, "kind": "statement", "facts": [
                {"fact": "Sold the Skoda", "topic": "possession"},
                {"fact": "Now drives a Nissan Leaf", "topic": "possession"}]}]})
        if name == "decision":
            listed = [int(i) for i in re.findall(r"^- id (\d+)", messages[-1]["content"], re.MULTILINE)]
            shown.append(listed)
            return json.dumps({"action": "SUPERSEDE", "target": listed[0], "confidence": 0.9, "reason": "x"})
        return json.dumps({"known_is_about": "", "new_is_about": "", "answer": CHANGED})

    complete.takes_schema = True
    MemoryJobs(load_config(), complete, lambda: EMBEDDER).extraction(memory.user_id, job)(memory.backend)
    assert active(memory) == [("Now drives a Nissan Leaf", "possessions", None),
                              ("Sold the Skoda", "possessions", None)]
    assert not memory.facts.is_active(octavia)
    sold = next(f.item_id for f in memory.facts.active() if f.text == "Sold the Skoda")
    assert all(sold not in listed for listed in shown)  # never offered as the fact the Leaf changes


def test_a_near_fact_that_shares_a_word_is_asked_about_though_too_far_to_show_the_reconciler(memory):
    (runs,) = known(memory, ("Also runs, about 20 km a week", "health", None))
    decided, asked = [], []

    def decide(candidate, existing):
        decided.append(candidate.value)
        return Decision("ADD")

    def judge(candidate, item):
        asked.append(item.text)
        return CHANGED

    config = apply_overrides(load_config(), {"memory.extraction.related_threshold": 0.99})
    writer_ = FactWriter(memory, config.memory.extraction, embedder=EMBEDDER, decide=decide, judge=judge)
    upped = Candidate("Has upped their running to 35 km a week", category="work",
                      evidence="I've upped my running to 35 km a week")
    assert writer_.write(upped).action == "SUPERSEDE"
    assert decided == [] and asked == ["Also runs, about 20 km a week"] and not memory.facts.is_active(runs)
    # nothing shares a word: nothing is asked, the fact is added
    assert writer_.write(Candidate("Plays the cello", category="hobbies", evidence="I play the cello")).action == "ADD"
    assert asked == ["Also runs, about 20 km a week"]


ALLEGRO = "First week at Allegro done, I'm a senior engineer there now."


def test_a_plan_come_true_ends_the_fact_that_holds_its_slot(memory):
    """The model pins "Is a senior engineer at Allegro now" on the plan it fulfils, a change the user's words do not
    carry (it adds nothing to the plan); the fact that holds work/occupation is asked about instead, and ends."""
    finly, plan = known(memory, ("Is a backend developer at Finly", "work", "occupation"),
                        ("Is joining Allegro as a senior engineer on 2 January 2027", "work", None))
    asked = []

    def judge(candidate, item):
        asked.append(item.text)
        return CHANGED

    now = Candidate("Is a senior engineer at Allegro now", category="work", key="occupation", evidence=ALLEGRO,
                    sentence=ALLEGRO)
    result = writer(memory, lambda c, existing: Decision("UPDATE", plan, 0.9, "detail"), judge).write(now)
    assert result.action == "SUPERSEDE" and asked == ["Is a backend developer at Finly"]
    assert not memory.facts.is_active(finly) and memory.facts.is_active(plan)
    assert ("Is a senior engineer at Allegro now", "work", "occupation") in active(memory)
    # the slot's holder still true: memory is kept as it was, as before
    (result_id,) = [f.item_id for f in memory.facts.active() if f.key == "occupation"]
    memory.facts.archive(result_id, reason="test: next case")
    holder, = known(memory, ("Is a backend developer at Finly, in Warsaw", "work", "occupation"))
    kept = writer(memory, lambda c, existing: Decision("UPDATE", plan, 0.9, ""), lambda c, item: BOTH_TRUE)
    assert kept.plan(now).action == "SKIP" and memory.facts.is_active(holder)


def test_another_grade_of_one_scale_is_asked_about_though_no_word_is_shared(memory):
    """"Is at B2 now", filed under identity, shares no word with "Is learning Italian at B1 level": the grade
    written the same way is what they share, and the known fact is asked about."""
    assert may_change("identity", None, "Is at B2 now", "languages", None, "Is learning Italian at B1 level")
    assert not may_change("identity", None, "Is at B1 now", "languages", None, "Is learning Italian at B1 level")
    assert not may_change("health", None, "Takes B12 every day", "languages", None, "Is learning Italian at B1 level")
    assert not may_change("identity", None, "Is 47", "languages", None, "Is learning Italian at B1 level")
    giulia, italian = known(memory, ("Italian teacher Giulia is from Bologna", "languages", None),
                            ("Is learning Italian at B1 level", "languages", None))
    asked = []

    def judge(candidate, item):
        asked.append(item.text)
        return CHANGED

    said = "Actually I passed the B2 exam last week, so I'm at B2 now."
    now = Candidate("Is at B2 now", category="identity", evidence=said, sentence=said)
    result = writer(memory, lambda c, existing: Decision("UPDATE", giulia, 0.9, ""), judge).write(now)
    assert result.action == "SUPERSEDE" and asked == ["Is learning Italian at B1 level"]
    assert not memory.facts.is_active(italian) and memory.facts.is_active(giulia)
    assert ("Is at B2 now", "languages", None) in active(memory)


def test_a_change_said_in_so_many_words_is_asked_about_on_the_fact_the_model_named(memory):
    """"Has started eating fish again" and "Has been vegetarian for about ten years" share no slot or word; the
    model names the vegetarian fact, and the new fact says a change ("started"): that one fact is asked about.
    A new fact that says no change ("Is basically made of hummus"), or a named fact of another category, is not."""
    (vegetarian,) = known(memory, ("Has been vegetarian for about ten years", "diet", None))
    (walnuts,) = known(memory, ("Is allergic to walnuts", "health", "allergy"))
    asked = []

    def judge(candidate, item):
        asked.append((candidate.value, item.text))
        return CHANGED

    def naming(target):
        return lambda c, existing: Decision("UPDATE", target, 0.9, "more detail")

    hummus = Candidate("Is basically made of hummus", category="diet",
                       evidence="I'm basically made of hummus", sentence="Haha I'm basically made of hummus.")
    assert writer(memory, naming(vegetarian), judge).write(hummus).action == "ADD"
    # a start still to come is a plan, not a change said: "starts" is no word of change
    assert not announced_change("work", "Starts at Allegro on 2 January 2027", "work", "Is a backend developer")
    assert announced_change("work", "Started at Allegro in January", "work", "Is a backend developer")
    fish_elsewhere = Candidate("Has started eating fish again", category="hobbies",
                               evidence="I've started eating fish again", sentence=FISH)
    assert writer(memory, naming(walnuts), judge).write(fish_elsewhere).action == "ADD"
    assert asked == [] and memory.facts.is_active(vegetarian) and memory.facts.is_active(walnuts)
    for item in memory.facts.active():
        if item.item_id not in (vegetarian, walnuts):
            memory.facts.archive(item.item_id, reason="test: next case")
    now = Candidate("Has started eating fish again", category="diet", evidence="I've started eating fish again",
                    sentence=FISH)
    result = writer(memory, naming(vegetarian), judge).write(now)
    assert result.action == "SUPERSEDE" and asked == [("Has started eating fish again",
                                                       "Has been vegetarian for about ten years")]
    assert not memory.facts.is_active(vegetarian)
    # the judge still decides: both true keeps both
    assert writer(memory, naming(result.fact_id), lambda c, item: BOTH_TRUE).write(
        Candidate("Has stopped drinking coffee", category="diet", evidence="I've stopped drinking coffee",
                  sentence="I've stopped drinking coffee.")).action == "ADD"


def test_a_slot_shared_and_nothing_else_is_asked_about_not_taken_from_the_reconciler(memory):
    """A 1.5B model files "Drives a 2016 Volvo V70" under work/occupation, where "Works as an intensive-care nurse"
    is, and calls it a SUPERSEDE: the two share the slot and no word, so the still-true question decides. Without
    a judge, the reconciler's change of a slot's value stands, as before."""
    (nurse,) = known(memory, ("Works as an intensive-care nurse at Sahlgrenska hospital", "work", "occupation"))
    asked = []

    def judge(answer):
        def ask(candidate, item):
            asked.append(item.text)
            return answer
        return ask

    volvo = Candidate("Drives a 2016 Volvo V70", category="work", key="occupation",
                      evidence="I drive a 2016 Volvo V70", sentence="I drive a 2016 Volvo V70.")
    supersede = lambda c, existing: Decision("SUPERSEDE", nurse, 0.9, "a new value")  # noqa: E731
    result = writer(memory, supersede, judge(DIFFERENT)).write(volvo)
    assert result.action == "ADD" and asked == ["Works as an intensive-care nurse at Sahlgrenska hospital"]
    assert memory.facts.is_active(nurse)
    assert ("Drives a 2016 Volvo V70", "work", None) in active(memory)  # kept beside, without the slot
    memory.facts.archive(result.fact_id, reason="test: next case")
    # a new job in the slot is still a change, when the question says so
    job = Candidate("Is a ferry captain now", category="work", key="occupation", evidence="I'm a ferry captain now",
                    sentence="I'm a ferry captain now.")
    assert writer(memory, supersede, judge(CHANGED)).write(job).action == "SUPERSEDE"
    assert not memory.facts.is_active(nurse)
    # two values that share a word of what they are about are the reconciler's to change, as before
    assert not slot_only("location", "home_city", "Lives in Berlin", "location", "city", "Lives in Lyon")
    assert slot_only("work", "occupation", "Drives a 2016 Volvo V70", "work", "job", "Works as a nurse")
    assert not slot_only("instruction", "name", "Call me Sam", "instruction", "name", "Use my full name")
    # no judge: the reconciler's change stands
    (captain,) = [f.item_id for f in memory.facts.active() if f.key == "occupation"]
    no_judge = writer(memory, lambda c, existing: Decision("SUPERSEDE", captain, 0.9, ""), None).write(volvo)
    assert no_judge.action == "SUPERSEDE" and not memory.facts.is_active(captain)
