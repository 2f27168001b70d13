"""The lexicons: each finds how its own language says "not", "no longer", "if", "I hope", "used to", "I dreamt",
"yeah right", "in my novel" and "she said", and none ever reads another language's text."""

from __future__ import annotations

import pytest

from coop.memory.language.lexicon import LANGUAGES, MARKS, has_lexicon, marks, module
from tests.memory.language.messages import ORDINARY

NEGATIONS = {
    "en": ("I don't live in Paris.", "I dont live in Paris.", "I cant eat gluten.", "She doesnt eat meat.",
           "I am not a doctor.", "I never drink coffee."),
    "fr": ("Je n'habite plus à Berlin.", "Je ne mange pas de viande.", "Je ne bois jamais de café."),
    "de": ("Ich wohne nicht mehr in Berlin.", "Ich esse kein Fleisch.", "Ich trinke nie Kaffee."),
    "es": ("Ya no vivo en Berlín.", "No como carne.", "Nunca bebo café."),
    "pt": ("Não moro mais em Berlim.", "Já não como carne.", "Nunca bebo café."),
    "ja": ("もう住んでいません。", "肉は食べません。", "コーヒーは飲まない。"),
}
NO_LONGER = {
    "en": "I no longer live in Paris.", "fr": "Je n'habite plus à Paris.", "de": "Ich wohne nicht mehr in Paris.",
    "es": "Ya no vivo en París.", "pt": "Já não moro em Paris.", "ja": "もうパリには住んでいません。",
}
# (language, text, mark): how people say each of the other marks.
SAID = [
    ("en", "Maybe I'll move to Hamburg.", "doubt"), ("de", "Vielleicht ziehe ich nach Hamburg.", "doubt"),
    ("fr", "Si je gagnais au loto, j'habiterais à Lisbonne.", "condition"),
    ("es", "Si gano la lotería, viviré en Lisboa.", "condition"), ("ja", "もし宝くじが当たったら、リスボンに住みます。", "condition"),
    ("en", "I hope to become a doctor.", "wish"), ("fr", "J'espère devenir médecin.", "wish"),
    ("de", "Ich hoffe, Ärztin zu werden.", "wish"), ("es", "Ojalá pueda ser médica.", "wish"),
    ("ja", "医者になりたいです。", "wish"),
    ("en", "I used to live in Paris.", "past"), ("es", "Antes vivía en París.", "past"),
    ("de", "Früher habe ich in Paris gewohnt.", "past"), ("pt", "Antigamente eu morava em Paris.", "past"),
    ("en", "Last night I dreamt I was a pilot.", "dream"), ("fr", "Cette nuit, j'ai rêvé que j'étais pilote.", "dream"),
    ("es", "Anoche soñé que era piloto.", "dream"), ("ja", "昨夜、パイロットになる夢を見た。", "dream"),
    ("en", "Oh sure, I totally live in Paris, yeah right.", "irony"), ("de", "Ja klar, ich wohne in Paris.", "irony"),
    ("en", "My character in the novel lives in Paris.", "fiction"),
    ("fr", "Mon personnage dans le roman habite à Paris.", "fiction"),
    ("es", "Mi personaje en la novela vive en París.", "fiction"),
    ("en", "My sister says she lives in Paris.", "report"), ("es", "Mi hermana dice que vive en París.", "report"),
    ("de", "Meine Schwester sagt, sie wohnt in Paris.", "report"), ("ja", "姉はパリに住んでいると言った。", "report"),
]
# A sentence of each language (four words or more) that holds a word another lexicon knows.
OTHER_LANGUAGE = [
    ("Ya no vivo en Berlín.", "en"), ("No vivo en Berlín desde marzo.", "en"), ("I don't live in Paris anymore.", "fr"),
    ("I don't live in Paris anymore.", "es"), ("Ich wohne nicht mehr in Berlin.", "en"),
    ("Je n'habite plus à Berlin depuis mars.", "en"), ("Je ne mange pas de viande.", "es"),
    ("Não moro mais em Berlim desde março.", "es"), ("もう住んでいません。", "en"), ("I don't live here anymore.", "ja"),
    ("Si je gagnais au loto, j'habiterais à Lisbonne.", "es"),
]


def test_every_language_has_its_module_with_the_marks_and_conjunctions():
    assert set(LANGUAGES) == {"en", "fr", "de", "es", "pt", "ja"}
    for language in LANGUAGES:
        lexicon = module(language)
        assert lexicon is not None and has_lexicon(language)
        assert set(lexicon.MARKERS) == set(MARKS), language
        assert all(lexicon.MARKERS[mark] for mark in MARKS), language
        assert lexicon.CONJUNCTIONS, language
        for phrases in lexicon.MARKERS.values():
            assert all(p == p.casefold() and p.strip() == p for p in phrases), language


def test_a_language_without_a_lexicon_gets_no_marks():
    assert not has_lexicon("it") and not has_lexicon("und")
    assert marks("Non abito più a Roma.", "it") == frozenset()
    assert marks("I don't live in Paris.", "und") == frozenset()
    assert marks("", "en") == frozenset()


@pytest.mark.parametrize(("language", "text"), [(lang, t) for lang, texts in NEGATIONS.items() for t in texts])
def test_negation_is_found_in_each_language(language, text):
    assert "negation" in marks(text, language)


@pytest.mark.parametrize(("language", "text"), NO_LONGER.items())
def test_no_longer_is_found_in_each_language(language, text):
    assert "no_longer" in marks(text, language)


@pytest.mark.parametrize(("language", "text", "mark"), SAID)
def test_how_people_say_the_other_marks(language, text, mark):
    assert mark in marks(text, language)


@pytest.mark.parametrize("language", list(ORDINARY))
def test_an_ordinary_statement_is_no_negation_and_no_change(language):
    for sentence in ORDINARY[language]:
        assert not marks(sentence, language) & {"negation", "no_longer", "condition", "irony", "fiction", "dream"}, \
            sentence


@pytest.mark.parametrize(("text", "language"), OTHER_LANGUAGE)
def test_a_lexicon_never_reads_another_languages_text(text, language):
    assert marks(text, language) == frozenset()


def test_a_contraction_written_without_its_apostrophe_is_the_speaker_only_when_no_other_word_is_spelled_so():
    """A phrase may lose its apostrophe in the text ("im", "dont"), so a contraction that then spells another word
    ("we're" as "were", "I'll" as "ill", "I'd" as "id") must not stand in the lexicon: "they were late" is not
    the speaker. "I" and "we" find those contractions whole."""
    for text in ("They were late.", "Were the trains on time?", "She felt ill.", "Which id is it?"):
        assert not marks(text, "en") & {"first_person", "self"}, text
    for text in ("We're moving to Porto.", "I'll call later.", "I'd like tea.", "im tired", "ive been there"):
        assert {"first_person", "self"} <= marks(text, "en"), text
