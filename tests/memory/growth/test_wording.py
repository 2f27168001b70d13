"""A fact cut from the user's words never keeps their verb without its subject ("Repair old clocks" of "I repair
old clocks"): the words whole stand for it, in every language with a lexicon; a profile line the model wrote, a value
that cuts more than the subject, and a language without a lexicon keep the model's value as written."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memory.growth.test_verify_properties import kept

# (the user's words with their subject, the subject, a profile line of the same fact), one language each
SAID = {
    "en": ("I work as a {w} in {c}", "I ", "Works as a {w} in {c}"),
    "fr": ("Je travaille comme {w} à {c}", "Je ", "Travaille comme {w} à {c}"),
    "de": ("Ich arbeite als {w} in {c}", "Ich ", "Arbeitet als {w} in {c}"),
    "es": ("Yo trabajo de {w} en {c}", "Yo ", "Trabaja de {w} en {c}"),
    "pt": ("Eu trabalho como {w} em {c}", "Eu ", "Trabalha como {w} em {c}"),
    "ja": ("私は{c}で{w}として働いています", "私は", "{c}で{w}として働いている"),
}
WORK = {"en": ["glazier", "clockmaker", "pilot"], "fr": ["infirmière", "boulanger"], "de": ["Bäcker", "Pilotin"],
        "es": ["enfermera", "panadero"], "pt": ["enfermeira", "padeiro"], "ja": ["看護師", "パン職人"]}
CITY = {"en": ["Leeds", "Porto"], "fr": ["Nantes", "Lille"], "de": ["Bremen", "Köln"], "es": ["Bilbao", "Toledo"],
        "pt": ["Braga", "Faro"], "ja": ["大阪", "京都"]}


@st.composite
def statements(draw):
    language = draw(st.sampled_from(sorted(SAID)))
    said, subject, line = SAID[language]
    fill = {"w": draw(st.sampled_from(WORK[language])), "c": draw(st.sampled_from(CITY[language]))}
    return language, said.format(**fill), subject, line.format(**fill)


@given(statements(), st.sampled_from(["", "."]))
@settings(max_examples=60, deadline=None)
def test_a_value_cut_at_the_subject_is_stored_as_the_users_words_whole(statement, end):
    language, said, subject, _ = statement
    cut = said[len(subject):]
    stored = kept(said + ("。" if language == "ja" and end else end), cut[:1].upper() + cut[1:], topic="occupation")
    assert stored and set(stored) == {said}, (language, stored)


@given(statements())
@settings(max_examples=40, deadline=None)
def test_a_profile_line_the_model_wrote_is_kept_as_written(statement):
    """Unless the line is the user's words cut at the subject (French "travaille" is both "I" and "she" work):
    then the words whole, which say it as well."""
    language, said, subject, line = statement
    stored = kept(said, line, topic="occupation")
    cut_at_the_subject = said[len(subject):].casefold() == line.casefold()
    assert stored and set(stored) == ({said} if cut_at_the_subject else {line}), (language, stored)


@pytest.mark.parametrize("said, value", [
    ("I live in Leeds and I repair clocks in York.", "I repair clocks in York"),  # more than a subject is cut
    ("Io lavoro come infermiera a Roma.", "Lavoro come infermiera a Roma"),  # Italian: no lexicon, no rule
])
def test_a_value_cut_past_the_subject_or_in_a_language_without_a_lexicon_is_left_as_written(said, value):
    assert kept(said, value, topic="other") == [value]
