"""The table decides changes: a single-valued slot's new value supersedes its holder, "no longer" retires the fact
it names, a many-valued topic adds, and the one extra model question is asked only where the table cannot decide,
at most once an exchange, and taken only for a fact it offered."""

from __future__ import annotations

import pytest

from coop.config.loading import load_config
from coop.memory.growth.candidate import NEVER, NO_LONGER, PLAN, Candidate
from coop.memory.growth.changes import changes_request, read_changes
from coop.memory.growth.embedders import HashEmbedder
from coop.memory.growth.reconcile import FactWriter
from coop.memory.slots import TOPICS, canonical_key, slot_for, topic_of

EMBEDDER = HashEmbedder(64)


class Asker:
    """The one extra question, scripted: answers `answer` ({index: fact id}) and records what it was offered."""

    def __init__(self, answer=None, fail=False):
        self.answer, self.fail, self.asked = answer or {}, fail, []

    def __call__(self, said, undecided):
        self.asked.append((said, [(u.value, [k.item_id for k in u.known]) for u in undecided]))
        if self.fail:
            raise TimeoutError("the model is gone")
        return self.answer


def writer_for(memory, ask=None):
    return FactWriter(memory, load_config().memory.extraction, embedder=EMBEDDER, ask=ask)


def extracted(value, topic, *, about=None, sentence=None, **fields):
    category, key = slot_for(TOPICS[topic], about)
    return Candidate(value, category=category, key=key, evidence=sentence or value, sentence=sentence or value,
                     language="en", about=about, **fields)


def active(memory):
    return sorted(f.text for f in memory.facts.active())


def test_every_topic_has_one_slot_and_single_valued_ones_have_a_key():
    for topic in TOPICS.values():
        category, key = slot_for(topic, None)
        assert (key is not None) == topic.single and category == topic.category
        assert topic_of(category, key).name == (topic.name if topic.single else topic_of(category, None).name)
    assert canonical_key("city") == canonical_key("current_city") == "home_city"
    assert canonical_key("f12") is None and canonical_key("sister ana.city") == "sister ana.home_city"


@pytest.mark.parametrize("topic,old,new", [("home_city", "Lives in Lyon", "Lives in Berlin"),
                                           ("employer", "Works at Harbour Tools", "Works at Nordwind Labs"),
                                           ("diet", "Is vegetarian", "Eats fish again"),
                                           ("name", "Is called Maren", "Is called Marit")])
def test_a_new_value_of_a_single_valued_slot_supersedes_its_holder_with_no_question(memory, topic, old, new):
    asker = Asker()
    writer = writer_for(memory, asker)
    first = writer.write(extracted(old, topic))
    [plan] = writer.plan_exchange([extracted(new, topic)], new)
    assert plan.action == "SUPERSEDE" and plan.target_id == first.fact_id
    writer.apply(plan)
    assert active(memory) == [new] and asker.asked == []
    assert [h.action for h in memory.facts.history(first.fact_id)] == ["ADD", "SUPERSEDE"]


NAMED_AGAIN = {  # (a slot that holds a name, its value, one naming only that name, said so, another name, said so)
    "en": ("home_city", "Lives in Tartu", "Really loves Tartu", "I really love Tartu, honestly.",
           "Lives in Narva now", "I live in Narva now."),
    "fr": ("home_city", "Habite à Tartu", "Adore vraiment Tartu", "J'adore vraiment Tartu.",
           "Habite à Narva maintenant", "J'habite à Narva maintenant."),
    "de": ("employer", "Arbeitet bei Nordwind", "Mag Nordwind sehr", "Ich mag Nordwind sehr.",
           "Arbeitet jetzt bei Harbour", "Ich arbeite jetzt bei Harbour."),
    "es": ("home_city", "Vive en Tartu", "Le encanta Tartu", "Me encanta Tartu.", "Ahora vive en Narva",
           "Ahora vivo en Narva."),
    "ja": ("home_city", "タルトゥに住んでいる", "タルトゥが大好き", "タルトゥが大好きです。", "今はナルヴァに住んでいる",
           "今はナルヴァに住んでいます。"),
}


@pytest.mark.parametrize("language", sorted(NAMED_AGAIN))
def test_a_value_naming_only_the_place_or_employer_that_holds_the_slot_is_kept_beside_it(memory, language):
    """A slot that holds a place or an employer is its name: a value under it that names only that name ("Really
    loves Tartu" under the home city), said with no word of change, is something else said of the same place,
    kept beside the holder and never its replacement; one that names another, said as a change, replaces it."""
    topic, old, same, said_same, other, said_other = NAMED_AGAIN[language]
    category, key = slot_for(TOPICS[topic], None)
    writer = writer_for(memory)
    first = writer.write(Candidate(old, category=category, key=key, language=language, source="user")).fact_id
    for value, sentence, expected in ((same, said_same, ("ADD", None, None)),
                                      (other, said_other, ("SUPERSEDE", first, key))):
        plan = writer.plan(Candidate(value, category=category, key=key, evidence=sentence, sentence=sentence,
                                     language=language, source="extraction"))
        assert (plan.action, plan.target_id, plan.candidate.key) == expected


@pytest.mark.parametrize("topic,old,part", [("diet", "Has eaten keto since 2020, mostly fish", "diet: Keto"),
                                            ("home_city", "Lives in Zagreb, near the old tram depot", "home city: Zagreb"),
                                            ("employer", "Works at Nordwind on the night team", "Works at Nordwind")])
def test_a_part_of_the_slots_value_is_a_mention_not_a_change(memory, topic, old, part):
    writer = writer_for(memory)
    first = writer.write(extracted(old, topic))
    plan = writer.plan(extracted(part, topic))
    assert plan.action == "MERGE" and plan.target_id == first.fact_id
    writer.apply(plan)
    assert active(memory) == [old]


def test_a_many_valued_topic_adds_and_asks_nothing_without_a_sign_of_change(memory):
    asker = Asker({0: 1})
    writer = writer_for(memory, asker)
    writer.write(extracted("Plays five-a-side football", "hobby"))
    plans = writer.plan_exchange([extracted("Plays online chess", "hobby", sentence="I play online chess")],
                                 "I play online chess")
    assert [p.action for p in plans] == ["ADD"] and asker.asked == []


def test_where_the_table_cannot_decide_one_question_is_asked_for_the_whole_exchange(memory):
    writer = writer_for(memory)
    running = writer.write(extracted("Runs about 20 km a week", "hobby")).fact_id
    car = writer.write(extracted("Drives a 2015 Skoda Octavia", "possession")).fact_id
    said = "I've upped my running to 35 km a week, and I sold the Skoda, I now drive a Nissan Leaf"
    asker = Asker({0: running, 1: car})
    writer.ask = asker
    plans = writer.plan_exchange([extracted("Runs about 35 km a week", "hobby", sentence=said),
                                  extracted("Drives a Nissan Leaf", "possession", sentence=said)], said)
    assert len(asker.asked) == 1  # one question for both
    assert [(p.action, p.target_id) for p in plans] == [("SUPERSEDE", running), ("SUPERSEDE", car)]
    for plan in plans:
        writer.apply(plan)
    assert active(memory) == ["Drives a Nissan Leaf", "Runs about 35 km a week"]


def test_an_answer_naming_a_fact_not_offered_or_a_failing_question_keeps_both(memory):
    writer = writer_for(memory)
    running = writer.write(extracted("Runs about 20 km a week", "hobby")).fact_id
    other = writer.write(extracted("Allergic to penicillin", "allergy")).fact_id
    said = "I've upped my running to 35 km a week"
    for asker in (Asker({0: other}), Asker(fail=True), Asker({})):
        writer.ask = asker
        [plan] = writer.plan_exchange([extracted("Runs about 35 km a week", "hobby", sentence=said)], said)
        assert plan.action == "ADD" and len(asker.asked) == 1
    assert memory.facts.is_active(running) and memory.facts.is_active(other)


def test_no_longer_retires_the_fact_it_names_and_nothing_else(memory):
    writer = writer_for(memory)
    berlin = writer.write(extracted("Lives in Berlin", "home_city")).fact_id
    chess = writer.write(extracted("Plays chess", "hobby")).fact_id
    assert writer.plan(extracted("Lives in Paris", "home_city", polarity=NO_LONGER)).action == "SKIP"
    assert writer.plan(extracted("Plays the piano", "hobby", polarity=NEVER)).action == "SKIP"
    result = writer.write(extracted("Lives in Berlin", "home_city", polarity=NO_LONGER))
    assert result is not None and (result.action, result.fact_id) == ("RETIRE", berlin)
    assert active(memory) == ["Plays chess"] and memory.facts.is_active(chess)
    assert memory.facts.history(berlin)[-1].action == "ARCHIVE"
    memory.undo(berlin)
    assert memory.facts.is_active(berlin)


def test_a_plan_never_holds_a_slot_and_a_persons_fact_fills_their_own(memory):
    writer = writer_for(memory)
    lyon = writer.write(extracted("Lives in Lyon", "home_city")).fact_id
    writer.write(extracted("Moves to Berlin in March 2027", "home_city", stance=PLAN))
    writer.write(extracted("Sister Ana lives in Seville", "home_city", about="sister Ana"))
    writer.write(extracted("Sister Ana lives in Madrid", "home_city", about="sister Ana"))
    assert memory.facts.find_by_key("location", "home_city").item_id == lyon
    assert memory.facts.find_by_key("location", "sister ana.home_city").text == "Sister Ana lives in Madrid"
    assert "Sister Ana lives in Seville" not in active(memory)


def test_facts_said_together_never_change_each_other(memory):
    writer = writer_for(memory)
    plans = writer.plan_exchange([extracted("Lives in Lyon", "home_city"), extracted("Lives in Geneva", "home_city")],
                                 "I live in Lyon and in Geneva")
    for plan in plans:
        writer.said_together.add(writer.apply(plan).fact_id)
    assert active(memory) == ["Lives in Geneva", "Lives in Lyon"]


def test_the_question_offers_only_its_facts_and_reads_only_its_labels(memory):
    writer = writer_for(memory)
    running = writer.write(extracted("Runs about 20 km a week", "hobby")).fact_id
    from coop.memory.growth.changes import Undecided

    messages, schema, labels = changes_request("I run 35 km a week now", [
        Undecided("Runs about 35 km a week", [memory.get("fact", running)])])
    assert "n1: Runs about 35 km a week" in messages[1]["content"]
    assert "k1: Runs about 20 km a week" in messages[1]["content"]
    assert schema["schema"]["properties"]["changes"]["items"]["properties"]["replaces"]["enum"] == ["k1", None]
    assert read_changes('{"changes": [{"new": "n1", "replaces": "k1"}]}', 1, labels) == {0: running}
    assert read_changes('{"changes": [{"new": "n1", "replaces": "k9"}, {"new": "n5", "replaces": "k1"}]}',
                        1, labels) == {}


FORMAT_WISHES = {  # two wishes about the form of answers, each its own, in each language
    "en": ("Give weights in kilograms", "Put code samples in Rust"),
    "fr": ("Donne les distances en kilomètres", "Écris sans émojis"),
    "de": ("Nenne Preise in Euro", "Schreib britisches Englisch"),
    "es": ("Usa el sistema métrico", "Pon los ejemplos en Go"),
    "ja": ("温度は摂氏で書いて", "コード例はRustで"),
}


@pytest.mark.parametrize("language", sorted(FORMAT_WISHES))
def test_wishes_about_the_form_of_answers_stand_together(memory, language):
    """The form of answers is many-valued: units, spelling, emojis and code are separate wishes, so a second one
    never supersedes the first (a real model filed them under one slot and lost the first)."""
    writer = writer_for(memory)
    for wish in FORMAT_WISHES[language]:
        category, key = slot_for(TOPICS["answer_format"], None)
        result = writer.write(Candidate(wish, category=category, key=key, evidence=wish, sentence=wish,
                                        language=language))
        assert result is not None and result.action == "ADD"
    assert active(memory) == sorted(FORMAT_WISHES[language])


# A holder of the job's slot, a value that shares no word with it (a car, which a model filed under the job), and
# a new job said with the language's word for a change.
MISFILED = {
    "en": ("Works as a welder", ("Drives a red pickup", "I drive a red pickup."),
           ("Teaches maths", "Now I teach maths.")),
    "fr": ("Travaille comme soudeuse", ("Conduit une camionnette rouge", "Je conduis une camionnette rouge."),
           ("Enseigne les maths", "Maintenant j'enseigne les maths.")),
    "de": ("Arbeitet als Schweißer", ("Fährt einen roten Pick-up", "Ich fahre einen roten Pick-up."),
           ("Unterrichtet Mathe", "Jetzt unterrichte ich Mathe.")),
    "es": ("Trabaja como soldadora", ("Conduce una camioneta roja", "Conduzco una camioneta roja."),
           ("Enseña matemáticas", "Ahora enseño matemáticas.")),
    "ja": ("溶接工として働いている", ("赤いトラックを運転している", "赤いトラックを運転しています。"),
           ("数学を教えている", "今は数学を教えている。")),
}


def _said(value, sentence, language):
    category, key = slot_for(TOPICS["occupation"], None)
    return Candidate(value, category=category, key=key, evidence=sentence, sentence=sentence, language=language,
                     source="extraction")


def _kept_beside_the_holder(memory, holder, value, sentence, language):
    """The job's slot held by `holder`, then `value` said in `sentence`: it is added beside, the holder stays.
    The writer and the holder's id, for what the test does next."""
    writer = writer_for(memory)
    first = writer.write(_said(holder, holder, language)).fact_id
    plan = writer.plan(_said(value, sentence, language))
    assert plan.action == "ADD" and plan.candidate.key is None
    writer.apply(plan)
    assert memory.facts.find_by_key("work", "occupation").item_id == first
    return writer, first


@pytest.mark.parametrize("language", sorted(lang for lang, (_, other, _) in MISFILED.items() if other))
def test_a_value_sharing_no_word_with_the_slots_and_no_change_said_is_kept_beside_it(memory, language):
    """Values of one slot share their frame ("Works as ..."); one that shares no word with the holder while the
    user's words say nothing changed is another thing misfiled under the slot: stored, never the slot's new value.
    (In Japanese a word is a character pair, and the endings both share in Hiragana are no word in common.)"""
    holder, (value, sentence), _ = MISFILED[language]
    _kept_beside_the_holder(memory, holder, value, sentence, language)
    assert active(memory) == sorted([holder, value])


@pytest.mark.parametrize("language", sorted(MISFILED))
def test_a_new_value_said_with_a_word_of_change_takes_the_slot_whatever_it_shares(memory, language):
    holder, _, (value, sentence) = MISFILED[language]
    writer = writer_for(memory)
    first = writer.write(_said(holder, holder, language)).fact_id
    plan = writer.plan(_said(value, sentence, language))
    assert plan.action == "SUPERSEDE" and plan.target_id == first


ONLY_NEVER = {  # (a fact held, a new one sharing only a word of negation or standing, one sharing what it is about)
    "en": ("Has never eaten sushi", "Now never drinks coffee", "Now eats sushi every week"),
    "fr": ("N'a jamais mangé de sushi", "Maintenant ne boit jamais de café", "Maintenant mange des sushis"),
    "de": ("Hat niemals Sushi gegessen", "Trinkt jetzt niemals Kaffee", "Isst jetzt jede Woche Sushi"),
    "es": ("Nunca ha comido sushi", "Ahora nunca bebe café", "Ahora come sushi cada semana"),
}


@pytest.mark.parametrize("language", sorted(ONLY_NEVER))
def test_a_word_of_negation_in_common_is_not_a_thing_in_common(memory, language):
    """The extra question is offered the facts a new one may change: those it shares a term with. "Never" or
    "nunca" in both says nothing about what they are about. (Japanese terms are character pairs, which the offer
    does not count at all.)"""
    held, only_never, same_thing = ONLY_NEVER[language]
    category, _ = slot_for(TOPICS["food"], None)

    def candidate(value):
        return Candidate(value, category=category, evidence=value, sentence=value, language=language)

    asker = Asker()
    writer = writer_for(memory, asker)
    writer.write(candidate(held))
    writer.plan_exchange([candidate(only_never)], only_never)
    assert asker.asked == []
    writer.plan_exchange([candidate(same_thing)], same_thing)
    assert len(asker.asked) == 1


# A holder of the job's slot that names an employer (a model filed it there), a value that names nothing (the job
# itself) and one that names another employer: in the languages whose capitals tell a name (German capitalises
# every noun, Japanese has no capitals: there a value is held to the words it shares).
NAMED = {
    "en": ("Works at Brightwater Labs", ("Works as a welder", "I work as a welder."),
           ("Works at Harbour Tools", "I work at Harbour Tools.")),
    "fr": ("Travaille chez Brightwater Labs", ("Travaille comme soudeuse", "Je travaille comme soudeuse."),
           ("Travaille chez Harbour Tools", "Je travaille chez Harbour Tools.")),
    "es": ("Trabaja en Brightwater Labs", ("Trabaja como soldadora", "Trabajo como soldadora."),
           ("Trabaja en Harbour Tools", "Trabajo en Harbour Tools.")),
}


@pytest.mark.parametrize("language", sorted(NAMED))
def test_a_value_that_names_nothing_does_not_take_a_named_slot_unless_a_change_is_said(memory, language):
    """Values of the employer and of the job share their frame ("Works at ...", "Works as ..."): a value that
    names nothing where the holder names its employer is the other kind, misfiled, and is kept beside it; a
    value that names another employer takes the slot."""
    holder, (job, said_job), (other, said_other) = NAMED[language]
    writer, first = _kept_beside_the_holder(memory, holder, job, said_job, language)
    plan = writer.plan(_said(other, said_other, language))
    assert plan.action == "SUPERSEDE" and plan.target_id == first


# a fact held in the user's words (kept beside the slot), and their "no longer" of it, in the user's words too
ENDED_IN_THEIR_WORDS = {
    "en": ("I live in Leeds", "I don't live in Leeds anymore"),
    "fr": ("Je vis à Lille", "Je ne vis plus à Lille"),
    "de": ("Ich wohne in Bremen", "Ich wohne nicht mehr in Bremen"),
    "es": ("Vivo en Bilbao", "Ya no vivo en Bilbao"),
    "ja": ("京都に住んでいて", "もう京都には住んでいません"),
}


@pytest.mark.parametrize("language", sorted(ENDED_IN_THEIR_WORDS))
def test_a_no_longer_in_the_users_words_retires_the_fact_it_ends(memory, language):
    """A "no longer" kept as the user wrote it carries its negation's words and endings, which may outnumber what
    it shares with the fact it ends; that fact still says nothing the "no longer" does not, so it is retired."""
    held, ended = ENDED_IN_THEIR_WORDS[language]
    writer = writer_for(memory)
    first = writer.write(Candidate(held, category="location", evidence=held, sentence=held, language=language)).fact_id
    plan = writer.plan(Candidate(ended, category="location", evidence=ended, sentence=ended, language=language,
                                 polarity=NO_LONGER))
    assert plan.action == "RETIRE" and plan.target_id == first


FIRST_VALUE = {  # (the job told without its slot, its new value, said with a word of change, said without one,
    #                another fact of work without a slot that shares no word with it, or only Japanese endings)
    "en": ("Works as a nurse on a night ward", "Works as a nurse at a school now",
           "I work as a nurse at a school now.", "I work as a nurse at a school.", "Helps out at a cafe on weekends"),
    "fr": ("Travaille comme infirmière de nuit", "Travaille maintenant comme infirmière dans une école",
           "Je travaille maintenant comme infirmière dans une école.", "Je travaille comme infirmière dans une école.",
           "Aide au café du quartier le samedi"),
    "de": ("Arbeitet als Krankenpflegerin auf einer Nachtstation", "Arbeitet jetzt als Krankenpflegerin an einer Schule",
           "Ich arbeite jetzt als Krankenpflegerin an einer Schule.", "Ich arbeite als Krankenpflegerin an einer Schule.",
           "Hilft am Wochenende in einem Café"),
    "es": ("Trabaja como enfermera en un turno de noche", "Ahora trabaja como enfermera en un colegio",
           "Ahora trabajo como enfermera en un colegio.", "Trabajo como enfermera en un colegio.",
           "Ayuda en una cafetería los fines de semana"),
    "ja": ("病院で看護師として働いている", "今は学校で看護師をしている", "今は学校で看護師をしています。", "学校で看護師をしています。",
           "週末はカフェで手伝いをしている"),
}


@pytest.mark.parametrize("language", sorted(FIRST_VALUE))
def test_a_slots_first_value_may_replace_its_former_value_filed_without_the_slot(memory, language):
    """The job first told under a wider topic (or as a story) is kept without the slot's key; a later value of the
    slot, said with a word of change, would leave it current beside the new one. The one extra question is asked,
    offering only facts without a key (the employer's slot is another slot) that share a word with it (Japanese
    endings in Hiragana are no word in common), and the answer's fact is superseded by
    the new value, which keeps the slot. Said with no word of change, it is added and nothing is asked."""
    old, new, changed, unchanged, unrelated = FIRST_VALUE[language]
    writer = writer_for(memory)
    former, beside = (writer.write(Candidate(text, category="work", language=language, source="extraction",
                                             evidence=text, sentence=text)).fact_id for text in (old, unrelated))
    employer = writer.write(Candidate(f"{old} (employer)", category="work", key="employer", language=language,
                                      source="user")).fact_id
    asker = Asker({0: former})
    writer.ask = asker
    [plan] = writer.plan_exchange([_said(new, unchanged, language)], unchanged)
    assert plan.action == "ADD" and asker.asked == []
    [plan] = writer.plan_exchange([_said(new, changed, language)], changed)
    assert [known for _, offered in asker.asked for _, known in offered] == [[former]]
    assert (plan.action, plan.target_id, plan.candidate.key) == ("SUPERSEDE", former, "occupation")
    writer.apply(plan)
    assert memory.facts.find_by_key("work", "occupation").text == new
    assert not memory.facts.is_active(former) and memory.facts.is_active(employer) and memory.facts.is_active(beside)


def test_two_first_values_of_a_slot_in_one_exchange_leave_one_holding_it(memory):
    """Said together, two values of a slot no fact held: the first takes the slot, and the one whose answer names
    a fact without a key replaces that fact beside it, never a second holder of the slot."""
    writer = writer_for(memory)
    former = writer.write(Candidate("Works as a nurse on a night ward", category="work", source="extraction",
                                    evidence="x", sentence="x")).fact_id
    said = "I work as a nurse at a school now, and I now also work as a nurse tutor"
    writer.ask = Asker({1: former})
    plans = writer.plan_exchange([_said("Works as a nurse at a school now", said, "en"),
                                  _said("Works as a nurse tutor now", said, "en")], said)
    for plan in plans:
        writer.apply(plan)
    holders = [f for f in memory.facts.active() if f.key == "occupation"]
    assert len(holders) == 1 and not memory.facts.is_active(former)
    assert active(memory) == ["Works as a nurse at a school now", "Works as a nurse tutor now"]


EMPLOYER_FIRST = {  # (a job without a slot, a former employer without one, the employer's first value, said so)
    "en": ("Works as an engineer on the night team", "Worked at Harbour Tools for years", "Works at Nordwind Labs now",
           "I work at Nordwind Labs now."),
    "fr": ("Travaille comme ingénieure dans l'équipe de nuit", "Travaillait chez Harbour depuis des années",
           "Travaille maintenant chez Nordwind", "Je travaille maintenant chez Nordwind."),
    "es": ("Trabaja como ingeniera en el turno de noche", "Trabajó en Harbour durante años", "Ahora trabaja en Nordwind",
           "Ahora trabajo en Nordwind."),
    "ja": ("夜勤で技術者として働いている", "ハーバー社で長年働いていた", "今はノルドヴィントで働いている", "今はノルドヴィントで働いています。"),
}


@pytest.mark.parametrize("language", sorted(EMPLOYER_FIRST))
def test_a_named_slots_first_value_is_asked_about_only_facts_that_name_something(memory, language):
    """The employer's first value may replace a former employer told without the slot, never the job: a fact
    that names nothing was never the value of a slot that holds a name ("Works as an engineer" is no employer),
    though the two share their frame. (German is left out: its nouns are capitalised, and read as names.)"""
    job, former, new, said = EMPLOYER_FIRST[language]
    writer = writer_for(memory)
    job_id, former_id = (writer.write(Candidate(text, category="work", language=language, source="extraction",
                                                evidence=text, sentence=text)).fact_id for text in (job, former))
    asker = Asker()
    writer.ask = asker
    category, key = slot_for(TOPICS["employer"], None)
    writer.plan_exchange([Candidate(new, category=category, key=key, evidence=said, sentence=said,
                                    language=language, source="extraction")], said)
    assert [known for _, offered in asker.asked for _, known in offered] == [[former_id]]
    assert memory.facts.is_active(job_id)


@pytest.mark.parametrize("language", sorted(FIRST_VALUE))
def test_a_slots_first_value_said_as_an_end_asks_nothing(memory, language):
    """"I no longer work at the bank", filed as the job's first value with the polarity of a fact that holds, is
    no new value of the slot: no question is asked, so a model's answer never makes it the job's value (where it
    denies the job told without the slot, the denial replaces that, as a denial does)."""
    old, _, _, _, _ = FIRST_VALUE[language]
    ended = {"en": "Does not work as a nurse anymore", "fr": "Ne travaille plus comme infirmière",
             "de": "Arbeitet nicht mehr als Krankenpflegerin", "es": "Ya no trabaja como enfermera",
             "ja": "もう看護師として働いていない"}[language]
    writer = writer_for(memory)
    former = writer.write(Candidate(old, category="work", language=language, source="extraction", evidence=old,
                                    sentence=old)).fact_id
    asker = Asker({0: former})
    writer.ask = asker
    [plan] = writer.plan_exchange([_said(ended, ended, language)], ended)
    assert asker.asked == [] and (plan.action, plan.target_id) in (("ADD", None), ("SUPERSEDE", former))
    assert plan.action == "ADD" or plan.reason.startswith("the user's words deny")
