"""Whose words answer a question (`speaker.py`): asked about their own life in the first person, the user is
answered by what they said, ahead of the assistant's reply that restates it; a question to the assistant, or
about someone else, is ranked as before. Run over five languages."""

from __future__ import annotations

import pytest

from coop.memory.growth.embedding import embed_pending
from coop.memory.retrieval.search import search
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.retrieval.speaker import about_the_user
from tests.memory.retrieval.table_embedder import TableEmbedder

# per language: a question about the user's own life, one that speaks to the assistant, one about someone else
QUESTIONS = {
    "en": ("Which dance style am I learning these days?", "Which dance style did you recommend?",
           "Which dance style is Carla learning?"),
    "fr": ("Combien de cours de danse est-ce que je suis par semaine ?",
           "Quels cours de danse est-ce que tu m'as conseillés ?", "Combien de cours de danse Carla suit-elle ?"),
    "de": ("Wie viele Tanzkurse besuche ich in der Woche?", "Welche Tanzkurse hast du mir empfohlen?",
           "Wie viele Tanzkurse besucht Carla?"),
    "es": ("¿Cuántas clases de baile tengo yo a la semana?", "¿Qué clases de baile me recomendaste tú?",
           "¿Cuántas clases de baile tiene Carla?"),
    "ja": ("私は週に何回ダンスのクラスに通っていますか？", "あなたはどのダンスのクラスを勧めましたか？",
           "カルラは週に何回ダンスのクラスに通っていますか？"),
}
USER_SAID, ASSISTANT_SAID = "Tuesdays and Thursdays, salsa at seven.", "That rhythm suits salsa well."


@pytest.mark.parametrize("language", sorted(QUESTIONS))
def test_a_question_about_the_user_is_answered_by_their_own_words_first(memory, language):
    """The assistant's reply is nearer the question in meaning (0.9 against the user's 0.8), so it leads unless
    who spoke counts: then it counts `assistant_weight` of its score and the user's line leads. A question to the
    assistant, or about someone else, keeps the plain order; so does the first one with the weight at 1."""
    mine, to_you, theirs = QUESTIONS[language]
    embedder = TableEmbedder({mine: [1, 0, 0, 0], to_you: [1, 0, 0, 0], theirs: [1, 0, 0, 0],
                              USER_SAID: [0.8, 0.6, 0, 0], ASSISTANT_SAID: [0.9, 0.436, 0, 0]})
    said = memory.messages.add(memory.sessions.start(), "user", USER_SAID)
    replied = memory.messages.add(memory.sessions.start(), "assistant", ASSISTANT_SAID)
    embed_pending(memory, embedder)
    settings = RetrievalSettings.defaults().but(bm25_floor=0.0, session_weight=0.0, neighbour_weight=0.0)

    def order(question: str, weights: RetrievalSettings = settings) -> list[int]:
        return [hit.item.item_id for hit in search(memory, question, embedder=embedder, settings=weights).hits]

    assert settings.assistant_weight < 0.8 / 0.9  # the default is low enough to turn this order round
    assert about_the_user(mine) and not about_the_user(to_you) and not about_the_user(theirs)
    assert order(mine) == [said, replied]
    assert order(to_you) == order(theirs) == order(mine, settings.but(assistant_weight=1.0)) == [replied, said]


def test_a_search_about_the_user_scores_the_assistants_words_at_their_weight(memory):
    """The weight is what the hit's score says (the prompt ranks past items by it), and only the assistant's
    messages carry it: the user's words, and facts, keep their whole score."""
    question = "Where did I park the car?"
    user, assistant, fact = ("Level three of the station garage.", "Station garages fill up early on weekdays.",
                             "Parks at the station garage")
    embedder = TableEmbedder({question: [1, 0, 0, 0], user: [0.9, 0.436, 0, 0], assistant: [0.9, 0.436, 0, 0],
                              fact: [0.9, 0.436, 0, 0]})
    session = memory.sessions.start()
    memory.messages.add(session, "user", user)
    memory.messages.add(session, "assistant", assistant)
    memory.facts.add(fact, category="general")
    embed_pending(memory, embedder)
    settings = RetrievalSettings.defaults().but(bm25_floor=0.0, session_weight=0.0, neighbour_weight=0.0)
    plain = {hit.item.text: hit.score
             for hit in search(memory, question, embedder=embedder, settings=settings.but(assistant_weight=1.0)).hits}
    weighed = {hit.item.text: hit.score for hit in search(memory, question, embedder=embedder, settings=settings).hits}
    assert weighed[assistant] == pytest.approx(settings.assistant_weight * plain[assistant])
    for text in (user, fact):
        assert weighed[text] == pytest.approx(plain[text])


def test_the_language_is_told_only_when_the_first_person_word_is_in_more_than_one_lexicon(monkeypatch):
    """Telling a language loads a model (most of a second): a question with no first-person word in any lexicon
    ("hiking", "Why is the sky blue?"), or with one that only its own language's lexicon knows ("I", "ich",
    "私"), is settled without it; "me" (English, French, Spanish, Portuguese) needs it."""
    import coop.memory.retrieval.speaker as speaker

    asked: list[str] = []
    monkeypatch.setattr(speaker, "detect", lambda text: asked.append(text) or "en")
    for question in ("hiking", "Why is the sky blue?", "Pourquoi le ciel est-il bleu ?", "空はなぜ青いのですか？"):
        assert not about_the_user(question)
    for question in QUESTIONS["en"][:1] + QUESTIONS["de"][:1] + QUESTIONS["ja"][:1]:
        assert about_the_user(question)
    assert asked == []
    assert not about_the_user("Can you tell me a joke?") and asked == ["Can you tell me a joke?"]


def test_an_acronym_is_no_pronoun():
    """Case folded, "US" is "us": a word of two letters or more in capitals is a name or an acronym."""
    assert not about_the_user("Which US cities did Tim visit in the summer?")
    assert about_the_user("Which US cities did I visit in the summer?")
    assert about_the_user("私は何を買いましたか？")  # a script without capitals keeps every word
