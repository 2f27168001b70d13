"""What coop verifies, as properties over English, French, German, Spanish and Japanese messages and any model
reply: a stored fact cites a clause the user wrote; a denial never stores the positive; someone else's fact never
fills the user's slot; a question, a hypothetical or a joke never changes memory; a number not in the message
never enters one. The model here is the extractor at its worst (hypothesis draws its replies); coop's checks are
what hold."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coop.memory.growth.extract import ExtractionContext, candidates, extract_facts
from coop.memory.growth.pointing import MODALITIES, POLARITIES, Listing, Note
from coop.memory.growth.verify import verify
from coop.memory.language.parse import parse


@dataclass(frozen=True)
class Said:
    """One language's way of saying each kind of thing about a city, and the value a model would write."""

    lives: str          # a statement
    denies: str         # a denial
    ended: str          # "no longer"
    sister: str         # someone else's fact
    asks: str           # a question
    supposes: str       # a hypothetical
    weighs: str         # a plan not decided
    reports: str        # what someone else says of the user
    greets: str         # a question of small talk
    value: str          # the fact, as a profile line in the language
    negative: str       # the denial, as a profile line


LANGUAGES = {
    "en": Said("I live in {c}.", "I don't live in {c}.", "I no longer live in {c}.", "My sister lives in {c}.",
               "Should I move to {c}?", "If I won the lottery, I would live in {c}.", "Maybe I'll move to {c}.",
               "My mother says I should move to {c}.", "How are you?",
               "Lives in {c}",
               "Does not live in {c}"),
    # (vivre, not habiter: "habite" is the first person as well as the third, and a value that is the user's words
    # cut at the subject is stored as their words whole, `growth/wording.py`)
    "fr": Said("Je vis à {c}.", "Je ne vis pas à {c}.", "Je ne vis plus à {c}.", "Ma sœur habite à {c}.",
               "Est-ce que je devrais déménager à {c} ?", "Si je gagnais au loto, j'habiterais à {c}.",
               "Peut-être que je vais déménager à {c}.",
               "Ma mère dit que je devrais déménager à {c}.", "Comment ça va ?",
               "Vit à {c}", "Ne vit pas à {c}"),
    "de": Said("Ich wohne in {c}.", "Ich wohne nicht in {c}.", "Ich wohne nicht mehr in {c}.",
               "Meine Schwester wohnt in {c}.", "Soll ich nach {c} ziehen?",
               "Wenn ich im Lotto gewinnen würde, würde ich in {c} wohnen.", "Vielleicht ziehe ich nach {c}.",
               "Meine Mutter sagt, ich soll nach {c} ziehen.", "Wie geht es dir?",
               "Wohnt in {c}", "Wohnt nicht in {c}"),
    "es": Said("Vivo en {c}.", "No vivo en {c}.", "Ya no vivo en {c}.", "Mi hermana vive en {c}.",
               "¿Debería mudarme a {c}?", "Si ganara la lotería, viviría en {c}.", "Quizás me mude a {c}.",
               "Mi madre dice que debería mudarme a {c}.", "¿Qué tal estás?",
               "Vive en {c}", "No vive en {c}"),
    "ja": Said("{c}に住んでいます。", "{c}には住んでいません。", "もう{c}には住んでいません。", "姉は{c}に住んでいます。",
               "{c}に引っ越すべきですか？", "もし宝くじに当たったら、{c}に住むだろう。", "{c}に引っ越すかもしれません。",
               "母は{c}に引っ越すべきだと言っています。", "お元気ですか？",
               "{c}に住んでいる",
               "{c}に住んでいない"),
}
CITIES = {"en": ["Berlin", "Porto", "Leeds"], "fr": ["Lyon", "Nantes", "Lille"], "de": ["Hamburg", "Bremen", "Köln"],
          "es": ["Sevilla", "Bilbao", "Toledo"], "ja": ["東京", "大阪", "京都"]}
LANGUAGE = st.sampled_from(sorted(LANGUAGES))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def notes_for(listing: Listing, value: str, **fields) -> list[Note]:
    """A note of `value` citing every clause of the listing, own or not, once each way the model may claim it."""
    ids = tuple(item.id for item in listing.listed)
    base = {"kind": "fact", "topic": "home_city", "about": None, "polarity": "holds", "modality": "stated"}
    return [Note(clauses=(clause_id,), value=value, **{**base, **fields}) for clause_id in ids] + \
        [Note(clauses=ids, value=value, **{**base, **fields})]


def kept(message: str, value: str, **fields) -> list[str]:
    listing = Listing([parse(message)])
    return [c.value for c in candidates(notes_for(listing, value, **fields), listing, [], "extraction")]


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(POLARITIES))
def test_a_denial_never_stores_the_positive(language, city, polarity):
    said, c = LANGUAGES[language], CITIES[language][city]
    for message in (said.denies.format(c=c), said.ended.format(c=c)):
        for candidate in candidates(notes_for(Listing([parse(message)]), said.value.format(c=c), polarity=polarity),
                                    Listing([parse(message)]), [], "extraction"):
            assert candidate.polarity != "holds", (message, candidate)


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_the_honest_statement_is_kept_in_the_users_language(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    listing = Listing([parse(said.lives.format(c=c))])
    [kept_fact] = candidates([Note(("c1",), "fact", "home_city", None, "holds", "stated", said.value.format(c=c))],
                             listing, [], "extraction")
    assert (kept_fact.value, kept_fact.key, kept_fact.language) == (said.value.format(c=c), "home_city", language)


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_the_honest_negative_is_kept_in_the_users_language(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    assert said.negative.format(c=c) in kept(said.denies.format(c=c), said.negative.format(c=c))


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(["asked", "hypothetical", "joke", "considering"]),
       st.sampled_from(MODALITIES))
def test_what_the_user_did_not_state_is_never_kept(language, city, modality, claimed):
    said, c = LANGUAGES[language], CITIES[language][city]
    value = said.value.format(c=c)
    assert kept(said.lives.format(c=c), value, modality=modality) == []
    for message in (said.asks.format(c=c), said.supposes.format(c=c), said.weighs.format(c=c),
                    said.reports.format(c=c)):  # whatever the model says
        assert kept(message, value, modality=claimed) == []


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_the_users_own_statement_the_model_calls_reported_is_kept(language, city):
    """The lexicon finds no one else speaking: "reported" is the model's word for the user telling their news."""
    said, c = LANGUAGES[language], CITIES[language][city]
    assert said.value.format(c=c) in kept(said.lives.format(c=c), said.value.format(c=c), modality="reported")


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_a_question_cited_beside_the_statement_does_not_make_it_asked(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    message = f"{said.lives.format(c=c)} {said.greets}"
    listing = Listing([parse(message)])
    every = tuple(item.id for item in listing.listed)
    note = Note(every, "fact", "home_city", None, "holds", "stated", said.value.format(c=c))
    assert [v.value for v in [verify(note, listing)] if v] == [said.value.format(c=c)]
    assert kept(said.greets, said.value.format(c=c)) == []


@SETTINGS
@given(st.sampled_from(["fr", "de", "es", "ja"]), st.integers(0, 2))
def test_a_translated_value_is_stored_in_the_users_own_words(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    message = said.lives.format(c=c)
    for value in (f"The user lives in {c}", f"Lives in the city of {c}"):
        found = kept(message, value)
        assert found and all(text in message and c in text for text in found), (message, found)
        assert kept(said.reports.format(c=c), value) == kept(said.supposes.format(c=c), value) == []
    # a translation tied to no name or number of the clause cannot be checked: the user's clause stands for it,
    # never the model's words, and it fills no slot (it cannot replace where the user lives)
    listing = Listing([parse(message)])
    untied = candidates(notes_for(listing, "Said thank you for telling me", topic="home_city"), listing, [],
                        "extraction")
    assert [c.value for c in untied] == [message.rstrip(".。")] and untied[0].key is None, (message, untied)
    assert kept(message, f"Always answer in English about {c}", kind="instruction", topic="answer_language") == []


@SETTINGS
@given(st.sampled_from(["en", "fr", "de", "es"]), st.sampled_from(["name", "age"]))
def test_a_sentence_with_no_name_or_number_never_takes_a_name_or_an_age(language, topic):
    """(Japanese is left out: a run of kanji counts as a name there, as a capitalised word does here.)"""
    message = {"en": "I sleep badly.", "fr": "Je dors mal.", "de": "Ich schlafe schlecht.", "es": "Duermo mal."}
    listing = Listing([parse(message[language])])
    note = Note(("c1",), "fact", topic, None, "holds", "stated", message[language].rstrip("."))
    verified = verify(note, listing)
    assert verified is not None and verified.key is None and verified.topic == "other"


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_a_long_story_under_a_slot_adds_beside_it(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    story = f"{said.lives.format(c=c)} {said.lives.format(c=c)} {said.lives.format(c=c)}"
    listing = Listing([parse(story)])
    note = Note(tuple(item.id for item in listing.listed), "fact", "home_city", None, "holds", "stated",
                " ".join(story.split()))
    verified = verify(note, listing)
    assert verified is not None and verified.key is None
    short = verify(Note(("c1",), "fact", "home_city", None, "holds", "stated", said.value.format(c=c)), listing)
    assert short is not None and short.key == "home_city"


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_someone_elses_fact_is_filed_under_them(language, city):
    said, c = LANGUAGES[language], CITIES[language][city]
    listing = Listing([parse(said.sister.format(c=c))])
    found = candidates(notes_for(listing, said.value.format(c=c), about="sister"), listing, [], "extraction")
    assert found and all(candidate.key != "home_city" and candidate.about == "sister" for candidate in found)


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.integers(2, 9999))
def test_a_number_not_in_the_message_never_enters_one(language, city, number):
    said, c = LANGUAGES[language], CITIES[language][city]
    message = said.lives.format(c=c)
    assert kept(message, f"{said.value.format(c=c)} {number}") == []


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(MODALITIES), st.sampled_from(POLARITIES),
       st.booleans(), st.booleans())
def test_a_kept_fact_cites_only_the_users_own_clauses(language, city, modality, polarity, quoted, pasted):
    said, c = LANGUAGES[language], CITIES[language][city]
    own = said.lives.format(c=c)
    message = own
    if quoted:
        message = f'{message} "{said.sister.format(c=c)}"'
    if pasted:
        message = f"{message}\n\nFrom: Bob <bob@example.com>\nSubject: hi\n\n{said.lives.format(c=c)}"
    listing = Listing([parse(message)])
    for note in notes_for(listing, said.value.format(c=c), modality=modality, polarity=polarity):
        if verify(note, listing) is not None:
            assert all(listing.get(i).clause.own for i in note.clauses)
            assert all(listing.get(i).clause.text in message for i in note.clauses)


def test_an_instruction_the_topic_says_is_a_fact_is_kept_as_a_fact_and_a_planned_instruction_as_one():
    listing = Listing([parse("I've started eating fish again. From now on, answer in English.")])
    fish = Note(("c1",), "instruction", "diet", None, "holds", "stated", "Eats fish again")
    english = Note(("c2", "c3"), "instruction", "answer_language", None, "holds", "planned", "Answer in English")
    found = {c.value: c for c in candidates([fish, english], listing, [], "extraction")}
    assert (found["Eats fish again"].category, found["Eats fish again"].key) == ("diet", "diet")
    assert (found["Answer in English"].category, found["Answer in English"].stance) == ("instruction", "asserted")


@SETTINGS
@given(LANGUAGE, st.integers(0, 2))
def test_a_note_citing_the_wrong_clause_rests_on_the_one_that_holds_it(language, city):
    """A small model cites the clause before the one with the fact: coop reads the user's own clauses of the
    message that hold it, and every check reads them too."""
    said, c = LANGUAGES[language], CITIES[language][city]
    value = said.value.format(c=c)
    assert value in kept(f"{said.greets} {said.lives.format(c=c)}", value)
    for message in (said.supposes.format(c=c), said.asks.format(c=c), said.reports.format(c=c)):
        assert kept(f"{said.greets} {message}", value) == []
    # never the clause of someone else beside the user's own: "I live in Lyon. My sister lives in Lille."
    home = CITIES[language][(city + 1) % 3]
    listing = Listing([parse(f"{said.lives.format(c=home)} {said.sister.format(c=c)}")])
    mine = Note(("c1",), "fact", "home_city", None, "holds", "stated", value)
    assert verify(mine, listing) is None


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(["name", "age", "home_city", "employer", "diet"]))
def test_someone_elses_clause_never_fills_the_users_own_slot(language, city, topic):
    """Even when the value names them ("Sister lives in ..."), a clause about someone else is no value of the
    user's own slot; a topic of the user's people (their family) may rest on it."""
    said, c = LANGUAGES[language], CITIES[language][city]
    message = said.sister.format(c=c)
    value = message.rstrip(".。")
    assert all(candidate.key != topic for candidate in
               candidates(notes_for(Listing([parse(message)]), value, topic=topic), Listing([parse(message)]), [],
                          "extraction"))
    assert value in kept(message, value, topic="family")


POLITE = {"en": ("Always write to me in French, going forward.", "Going forward", "Always write to me in French"),
          "fr": ("Écris-moi toujours en anglais, s'il vous plaît.", "S'il vous plaît", "Écris-moi toujours en anglais"),
          "de": ("Schreib mir immer auf Englisch, künftig.", "Künftig", "Schreib mir immer auf Englisch"),
          "es": ("La próxima vez, escríbeme en inglés.", "La próxima vez", "escríbeme en inglés")}


@SETTINGS
@given(st.sampled_from(sorted(POLITE)), st.sampled_from(["call_me", "answer_format", "instruction"]),
       st.sampled_from(["other", "plan", "preference"]))
def test_an_instruction_of_only_the_words_that_ask_is_refused_and_the_request_is_kept(language, topic, fact_topic):
    """A small model notes "s'il vous plaît" or "going forward" apart from the request it belongs to, as an
    instruction or as a fact: such a value tells the assistant nothing to do and says nothing of the user.
    (Japanese is left out: its lexicon has no words of politeness.)"""
    message, polite, request = POLITE[language]
    assert kept(message, polite, kind="instruction", topic=topic) == []
    assert kept(message, polite, kind="fact", topic=fact_topic) == []
    assert request in kept(message, request, kind="instruction", topic="answer_language")


NAMED = {"en": ("I'm {n} and I'm {k}.", "Is called {n}", "Is {k} years old"),
         "fr": ("Moi c'est {n}, j'ai {k} ans.", "S'appelle {n}", "A {k} ans"),
         "de": ("Ich heiße {n} und bin {k} Jahre alt.", "Heißt {n}", "Ist {k} Jahre alt"),
         "es": ("Me llamo {n} y tengo {k} años.", "Se llama {n}", "Tiene {k} años")}


@SETTINGS
@given(st.sampled_from(sorted(NAMED)), st.sampled_from(["Ilona", "Teodor Varga", "Juno"]), st.integers(18, 90),
       st.sampled_from(["en", "own"]))
def test_a_name_or_an_age_is_kept_as_itself_whatever_language_frames_it(language, name, age, frame):
    """"Is called Aurélien" for "Moi c'est Aurélien": the profile reads "name: Aurélien" in any language."""
    message, called, aged = NAMED[language]
    if frame == "en":
        called, aged = NAMED["en"][1:]
    listing = Listing([parse(message.format(n=name, k=age))])
    ids = tuple(item.id for item in listing.listed)
    notes = [Note(ids, "fact", "name", None, "holds", "stated", called.format(n=name)),
             Note(ids, "fact", "age", None, "holds", "stated", aged.format(k=age))]
    found = {c.key: c.value for c in candidates(notes, listing, [], "extraction")}
    assert found == {"name": f"name: {name}", "age": f"age: {age}"}, (message, found)


CONTINUED = {"en": ("My sister lives in {c} and works as a baker.", "Works as a baker", "and"),
             "fr": ("Ma sœur habite à {c} et travaille comme boulangère.", "Travaille comme boulangère", "et"),
             "de": ("Meine Schwester wohnt in {c} und arbeitet als Bäckerin.", "Arbeitet als Bäckerin", "und"),
             "es": ("Mi hermana vive en {c} y trabaja como panadera.", "Trabaja como panadera", "y")}


@SETTINGS
@given(st.sampled_from(sorted(CONTINUED)), st.integers(0, 2), st.sampled_from(["occupation", "work", "other"]))
def test_a_clause_that_goes_on_with_someone_elses_subject_is_theirs(language, city, topic):
    """"Mi tía vive en Cádiz y es pintora": the second clause names no one and is the sister's too, so a
    note that calls it the user's is filed under her, whatever topic the model gives it: never the user's own
    fact or slot. (Japanese joins such clauses without a conjunction word: its notes are read clause by clause.)"""
    message, value, conjunction = CONTINUED[language]
    listing = Listing([parse(message.format(c=CITIES[language][city]))])
    later = tuple(item.id for item in listing.listed[1:])
    assert later, listing.listed
    translated = "Works as a baker at a small bakery downtown"  # the clause stands for it, without its "and"
    notes = [Note((clause,), "fact", topic, None, "holds", "stated", said) for clause in later
             for said in (value, translated)]
    kept_notes = candidates(notes, listing, [], "extraction")
    assert kept_notes, message
    for found in kept_notes:
        assert conjunction.casefold() not in found.value.casefold().split(), (message, found)
        assert found.about and found.about.casefold() in message.casefold(), (message, found)
        assert found.key is None or found.key.startswith(f"{found.about.casefold()}."), (message, found)
        assert found.value.casefold().startswith(found.about.casefold()), (message, found)


NAMED_OTHER = {"en": "My colleague {n} keeps bees.", "fr": "Mon collègue {n} a attrapé la grippe.",
               "de": "Mein Kollege {n} hat die Grippe.", "es": "Mi compañero {n} tiene gripe.",
               "pt": "O meu colega {n} está com gripe."}
SAID_BY_OTHER = {"en": ("Keeps bees", "Colleague {n} keeps bees"), "fr": ("A attrapé la grippe", "Collègue {n} a attrapé la grippe"),
                 "de": ("Hat die Grippe", "Kollege {n} hat die Grippe"), "es": ("Tiene gripe", "Compañero {n} tiene gripe"),
                 "pt": ("Está com gripe", "Colega {n} está com gripe")}


@SETTINGS
@given(st.sampled_from(sorted(NAMED_OTHER)), st.sampled_from(["Ravi", "Oksana", "Tomás"]),
       st.sampled_from(["health", "other", "occupation"]), st.booleans())
def test_a_fact_of_someone_the_user_names_is_filed_under_them_and_says_whose(language, name, topic, named):
    """A small model calls "my colleague Ravi keeps bees" the user's: coop files it under the colleague, and the
    stored words say whose it is, whether or not the model's value named them."""
    message = NAMED_OTHER[language].format(n=name)
    value = SAID_BY_OTHER[language][named].format(n=name)
    listing = Listing([parse(message)])
    found = candidates(notes_for(listing, value, topic=topic), listing, [], "extraction")
    assert found, (message, value)
    for candidate in found:
        assert candidate.about and name in candidate.about, (message, candidate)
        assert candidate.value.startswith(candidate.about[:1].upper() + candidate.about[1:] + ":"), candidate
        assert candidate.key is None or candidate.key.startswith(candidate.about.casefold() + "."), candidate


# someone the user names after a word the lexicon's people do not hold (a dentist): the name tells them
ROLE_NAMED = {"en": ("My dentist {n} keeps bees.", "Keeps bees"),
              "fr": ("Mon dentiste {n} a attrapé la grippe.", "A attrapé la grippe"),
              "es": ("Mi dentista {n} tiene gripe desde ayer.", "Tiene gripe desde ayer"),
              "pt": ("O meu dentista {n} está com gripe.", "Está com gripe")}


@SETTINGS
@given(st.sampled_from(sorted(ROLE_NAMED)), st.sampled_from(["Ravi", "Oksana", "Tomás"]),
       st.sampled_from(["health", "other", "occupation", "home_city"]))
def test_someone_the_user_names_after_any_role_is_filed_under_them(language, name, topic):
    """"My dentist Ravi keeps bees" noted as the user's: the name after "my dentist" says it is someone else's,
    though the lexicon lists no dentists; it never fills the user's slot. ("My Vespa" or "My name is ..." has no
    such name: `named_by_the_user`.)"""
    message, value = ROLE_NAMED[language][0].format(n=name), ROLE_NAMED[language][1]
    listing = Listing([parse(message)])
    found = candidates(notes_for(listing, value, topic=topic), listing, [], "extraction")
    assert found, (message, value)
    for candidate in found:
        assert candidate.about and name in candidate.about, (message, candidate)
        assert candidate.key is None or candidate.key.startswith(candidate.about.casefold() + "."), candidate


PRONOUN_OPENS = {"en": "He lives in {c}.", "fr": "Elle habite à {c}.", "de": "Er wohnt in {c}.",
                 "es": "Ella vive en {c}.", "ja": "彼は{c}に住んでいます。"}


@SETTINGS
@given(st.sampled_from(sorted(PRONOUN_OPENS)), st.integers(0, 2),
       st.sampled_from(["home_city", "home", "other", "hobby"]))
def test_a_clause_whose_subject_is_a_pronoun_is_no_ones_the_user_named(language, city, topic):
    """"He lives in Porto" said of the user, even with the pronoun in the value ("They're too loud"): whose it
    is, the words do not say, so nothing is stored."""
    message = PRONOUN_OPENS[language].format(c=CITIES[language][city])
    for value in (message.rstrip(".。"), LANGUAGES[language].value.format(c=CITIES[language][city])):
        assert kept(message, value, topic=topic) == [], (message, value)


ASKED_IN = {"fr": "Désormais, réponds-moi toujours en allemand.", "de": "Antworte mir ab jetzt immer auf Italienisch.",
            "es": "De ahora en adelante, contéstame siempre en alemán.", "ja": "これからはドイツ語で返事してください。"}


@SETTINGS
@given(st.sampled_from(sorted(ASKED_IN)), st.sampled_from(["Always answer in German", "Reply in German from now on"]))
def test_an_instruction_the_model_translated_is_kept_in_the_users_own_words(language, value):
    """A small model writes "Always answer in German" for a request in Japanese: coop cannot check a translation,
    so the user's own words stand for it, and nothing the model wrote reaches the prompt."""
    message = ASKED_IN[language]
    found = kept(message, value, kind="instruction", topic="answer_language")
    assert found and all(text in message and value not in text for text in found), (message, found)


ADDRESS = {"en": ("Call me Jo, going forward.", "Call me Jo"), "fr": ("Tutoie-moi, s'il vous plaît.", "Tutoie-moi"),
           "de": ("Duz mich künftig.", "Duz mich"), "es": ("Tutéame de aquí en adelante.", "Tutéame")}


@SETTINGS
@given(st.sampled_from(sorted(ADDRESS)))
def test_an_instruction_whose_verb_is_the_request_is_kept(language):
    """"Duz mich", "Tutéame": a directive's own verb is what the user asks, not a word of asking."""
    message, request = ADDRESS[language]
    found = kept(message, request, kind="instruction", topic="instruction")
    assert found and all(request.casefold() in text.casefold() for text in found), (message, found)


SHORT_IN = {"fr": "Je travaille à {c} depuis mars.", "de": "Ich arbeite seit März in {c}.",
            "es": "Trabajo en {c} desde marzo."}


@SETTINGS
@given(st.sampled_from(sorted(SHORT_IN)), st.integers(0, 2), st.sampled_from(["Works at {c}", "Job at {c}"]))
def test_a_short_translation_tied_by_a_name_is_kept_in_the_users_words(language, city, translated):
    """"Works in Graz" for "Trabajo en Graz": three words are too few to tell a language for sure, but a value that
    shares only its names with the user's clause, and reads as another language, is a translation: the clause
    stands for it, as the user wrote it. (A word both languages write alike, the "in" of "Works in Hamburg" for
    "... in Hamburg", ties the value to the clause: it then stays as the model wrote it.)"""
    c = CITIES[language][city]
    message = SHORT_IN[language].format(c=c)
    found = kept(message, translated.format(c=c), topic="work")
    assert found and all(text in message and c in text for text in found), (message, found)


FOR_NOW = {"en": ("Write three tests for it, please.", "From now on, always write three tests for each function."),
           "fr": ("Écris trois tests pour ça, s'il te plaît.",
                  "Dorénavant, écris toujours trois tests pour chaque fonction."),
           "de": ("Schreib bitte drei Tests dafür.", "Schreib ab sofort immer drei Tests für jede Funktion."),
           "es": ("Escribe tres pruebas para esto, por favor.",
                  "A partir de ahora, escribe siempre tres pruebas para cada función."),
           "ja": ("これのテストを三つ書いてください。", "これからは、関数ごとにテストを必ず三つ書いてください。")}
MATERIAL = ("```python\ndef area(radius):\n    return 3.14 * radius * radius\n```",
            "def area(radius):\n    total = 3.14 * radius\n    return total * radius",
            "https://example.org/docs/area-of-a-circle",
            "« the area of a circle, with its radius squared »")


@SETTINGS
@given(st.sampled_from(sorted(FOR_NOW)), st.sampled_from(MATERIAL), st.sampled_from(["instruction", "answer_format"]))
def test_a_request_about_the_material_a_message_brings_is_not_a_standing_instruction(language, material, topic):
    """"Write tests for it" under a pasted function asks for one answer: kept as a standing instruction it would
    shape every answer after. The same request with no material is kept, and one that says it is for good is kept
    beside material: the material at hand, not the words, makes it a request for now."""
    request, for_good = FOR_NOW[language]
    def value(sentence: str) -> str:
        return sentence.rstrip(".。")
    assert value(request) in kept(request, value(request), kind="instruction", topic=topic)
    assert kept(f"{request}\n\n{material}", value(request), kind="instruction", topic=topic) == []
    assert value(for_good) in kept(f"{for_good}\n\n{material}", value(for_good), kind="instruction", topic=topic)


@SETTINGS
@given(st.sampled_from(sorted(FOR_NOW)), st.sampled_from(MATERIAL),
       st.sampled_from(["instruction", "answer_format", "answer_language"]))
def test_a_request_after_a_message_of_material_is_not_a_standing_instruction(language, material, topic):
    """"Write tests for it" sent after the message that pasted the function asks for one answer as much as under
    it (a small model files it under any topic, the answer language's included): refused, unless its words say it
    is for good; after a message of the user's own words it is kept."""
    request, for_good = FOR_NOW[language]

    def kept_after(message: str, before: str) -> list[str]:
        listing = Listing([parse(message)])
        notes = notes_for(listing, message.rstrip(".。"), kind="instruction", topic=topic)
        return [c.value for c in candidates(notes, listing, [before], "extraction")]

    assert request.rstrip(".。") in kept_after(request, LANGUAGES[language].lives.format(c=CITIES[language][0]))
    assert kept_after(request, material) == []
    assert for_good.rstrip(".。") in kept_after(for_good, material)


def test_the_users_earlier_message_is_read_in_its_first_8000_characters():
    """The message before a request is read as the request's own is, in its first 8,000 characters: a paste past
    them is not seen (and a long log is not parsed whole for every instruction a model proposes)."""
    request = FOR_NOW["en"][0]
    reply = json.dumps({"notes": [{"clauses": ["c1"], "value": request.rstrip("."), "about": "user", "kind":
                                   "instruction", "modality": "stated", "polarity": "holds", "topic": "instruction"}]})

    def kept_after(before: str) -> list[str]:
        context = ExtractionContext(earlier=[("user", before)])
        return [c.value for c in extract_facts(lambda messages, **_: reply, request, 5, context)]

    code = "\n\n```python\ndef area(radius):\n    return 3.14 * radius * radius\n```"
    words = "I keep " + "notes " * 1400  # one clause of 8,407 characters
    assert kept_after(code) == [] and kept_after(words[:7000] + code) == []
    assert kept_after(words + code) == [request.rstrip(".")]


GREETINGS = {"en": ["Hello!", "Good evening!", "Thanks a lot!", "Sorry!", "Haha, by the way!"],
             "fr": ["Salut !", "Bonjour !", "Merci beaucoup !", "Désolé !", "Mdr, au fait !"],
             "de": ["Hallo!", "Guten Morgen!", "Vielen Dank!", "Danke schön!", "Haha, übrigens!"],
             "es": ["¡Hola!", "¡Buenos días!", "¡Muchas gracias!", "¡Perdón!", "¡Jaja, por cierto!"],
             "ja": ["こんにちは！", "おはようございます！", "ありがとうございます！", "すみません！", "ところで！"]}


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.integers(0, 4), st.sampled_from(["other", "preference", "hobby"]))
def test_a_greeting_or_thanks_is_never_a_fact_and_the_fact_beside_it_is_kept(language, city, which, topic):
    """A small model notes "Hi!", "Merci beaucoup !" or "lol" as a fact: small talk says nothing about the
    user."""
    said, c = LANGUAGES[language], CITIES[language][city]
    greeting = GREETINGS[language][which]
    message = f"{greeting} {said.lives.format(c=c)}"
    assert kept(message, greeting.strip("!！¡ "), topic=topic) == []
    assert said.value.format(c=c) in kept(message, said.value.format(c=c))


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(["no_longer", "never"]))
def test_an_end_or_a_denial_rests_on_words_that_say_so(language, city, polarity):
    """A "no longer" retires what memory holds: a model that calls "I live in Oslo" one would retire the user's
    true city. The user's statement gives no end or denial; their "no longer" and their denial do."""
    said, c = LANGUAGES[language], CITIES[language][city]
    assert kept(said.lives.format(c=c), said.value.format(c=c), polarity=polarity) == []
    for message in (said.ended.format(c=c), said.denies.format(c=c)):
        assert kept(message, said.value.format(c=c), polarity=polarity), message


# a clause after the user's statement that comments on a thing ("it is ..."), one that gives a consequence without
# the user in it, and one that gives a consequence with the user: (message, value) each
COMMENTS = {"en": (("I live in {c}, it is a quiet town.", "A quiet town"),
                   ("I live in {c}, so the rent is high.", "The rent is high"),
                   ("I live in {c}, so I cycle everywhere.", "Cycles everywhere")),
            "fr": (("Je vis à {c}, c'est une ville calme.", "Une ville calme"),
                   ("Je vis à {c}, donc le loyer est cher.", "Le loyer est cher"),
                   ("Je vis à {c}, donc je fais tout à vélo.", "Fait tout à vélo")),
            "de": (("Ich wohne in {c}, es ist eine ruhige Stadt.", "Eine ruhige Stadt"),
                   ("Ich wohne in {c}, deshalb ist die Miete hoch.", "Die Miete ist hoch"),
                   ("Ich wohne in {c}, deshalb fahre ich überall Rad.", "Fährt überall Rad")),
            "es": (("Vivo en {c}, es una ciudad tranquila.", "Una ciudad tranquila"), None, None)}


@SETTINGS
@given(st.sampled_from(sorted(COMMENTS)), st.integers(0, 2), st.sampled_from(["other", "hobby", "preference"]))
def test_a_comment_after_the_users_statement_is_not_their_fact(language, city, topic):
    """A small model notes the clause after the user's statement alone ("..., it is a quiet town", "..., so the
    rent is high") as if the user had said it of themselves. Where the language writes its subjects, a
    consequence that brings the user back ("..., so I cycle everywhere") is theirs; where the verb carries the
    subject (Spanish) a consequence cannot be told, and only the comment on a thing is read."""
    said, c = LANGUAGES[language], CITIES[language][city]
    aside, consequence, theirs = COMMENTS[language]
    assert kept(aside[0].format(c=c), aside[1], topic=topic) == []
    assert said.value.format(c=c) in kept(aside[0].format(c=c), said.value.format(c=c))
    if consequence is not None and theirs is not None:
        assert kept(consequence[0].format(c=c), consequence[1], topic=topic) == []
        assert theirs[1] in kept(theirs[0].format(c=c), theirs[1], topic=topic)


TO_THE_ASSISTANT = {"en": "You are so kind.", "fr": "Tu es vraiment gentil.", "de": "Du bist wirklich nett.",
                    "es": "Tú eres muy amable.", "ja": "あなたは本当に優しい。"}


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(["other", "preference", "occupation"]))
def test_what_the_user_says_to_the_assistant_is_not_a_fact_about_them(language, city, topic):
    """"You are so kind" noted as the user's fact: words said to the assistant describe it, not the user."""
    said, c = LANGUAGES[language], CITIES[language][city]
    message = f"{said.lives.format(c=c)} {TO_THE_ASSISTANT[language]}"
    assert kept(message, TO_THE_ASSISTANT[language].rstrip(".。"), topic=topic) == []
    assert said.value.format(c=c) in kept(message, said.value.format(c=c))


THANKS = {"en": ("Thanks a lot for your patience!", "Always answer in Portuguese."),
          "fr": ("Merci pour ta patience !", "Réponds toujours en anglais."),
          "de": ("Danke für deine Geduld!", "Antworte immer auf Englisch."),
          "es": ("¡Gracias por tu paciencia!", "Respóndeme siempre en inglés.")}


@SETTINGS
@given(st.sampled_from(sorted(THANKS)), st.sampled_from(["answer_language", "instruction", "call_me"]))
def test_thanks_to_the_assistant_is_no_instruction_and_the_request_beside_it_is_kept(language, topic):
    """"Thanks for your patience" speaks to the assistant and asks it nothing: a small model notes it as an
    instruction, which would stand in every prompt after. (Japanese is left out: its lexicon's "you" is rarely
    written, so its thanks do not read as said to the assistant.)"""
    thanks, request = THANKS[language]
    message = f"{thanks} {request}"
    assert kept(message, thanks.strip("!¡ "), kind="instruction", topic=topic) == []
    assert request.rstrip(".") in kept(message, request.rstrip("."), kind="instruction", topic="answer_language")


BUT_NOT = {"en": ("I live in {c}, not in the suburbs.", "I live in {c}, not in the suburbs"),
           "fr": ("Je vis à {c}, pas en banlieue.", "Je vis à {c}, pas en banlieue"),
           "de": ("Ich wohne in {c}, nicht am Stadtrand.", "Ich wohne in {c}, nicht am Stadtrand"),
           "es": ("Vivo en {c}, no en las afueras.", "Vivo en {c}, no en las afueras")}


@SETTINGS
@given(st.sampled_from(sorted(BUT_NOT)), st.integers(0, 2))
def test_the_users_words_copied_whole_keep_their_negation_and_a_cut_copy_does_not_drop_it(language, city):
    """A value that copies two clauses as the user wrote them, the second a "not ...", holds what they say; a
    copy that leaves the negation out while the words it rests on hold one is still refused."""
    said, c = LANGUAGES[language], CITIES[language][city]
    message, copy = BUT_NOT[language][0].format(c=c), BUT_NOT[language][1].format(c=c)
    assert copy in kept(message, copy)
    denial = said.denies.format(c=c)
    cut = said.value.format(c=c)  # "Lives in ..." for "I don't live in ...": the negation dropped
    assert kept(denial, cut) == []


CUT_FROM = {"en": ("I live in {c} with two cats.", "live in"), "fr": ("Je vis à {c} avec deux chats.", "vis à"),
            "de": ("Ich wohne seit zwei Jahren in {c}.", "wohne seit zwei"),
            "es": ("Vivo en {c} con dos gatos.", "Vivo en"), "ja": ("{c}に住んでいて、猫を二匹飼っています。", "住んでいて")}


@SETTINGS
@given(LANGUAGE, st.integers(0, 2), st.sampled_from(["home_city", "hometown", "other", "home"]))
def test_a_piece_of_the_users_words_without_what_they_name_is_stored_with_it(language, city, topic):
    """A small model copies a piece of the clause and leaves out the place it names ("住んでいて" of "東京に住ん
    でいて"): under a topic's label that reads as a falsehood, and alone it says nothing. The clause whole stands
    for it, the name with it, in an unspaced script and under a topic that names a place; a spaced piece under
    another topic stays as written (it may be about something else than the name beside it), and so does a
    piece that holds the name."""
    c = CITIES[language][city]
    message, piece = CUT_FROM[language][0].format(c=c), CUT_FROM[language][1]
    stored = kept(message, piece, topic=topic)
    if language == "ja" or topic in ("home_city", "hometown"):
        assert stored and all(c in value for value in stored), stored
    else:
        assert stored and all(c not in value for value in stored), stored
    assert LANGUAGES[language].value.format(c=c) in kept(LANGUAGES[language].lives.format(c=c),
                                                         LANGUAGES[language].value.format(c=c), topic=topic)
