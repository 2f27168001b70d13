"""Terms, numbers and names, read one way for every comparison: a value and the clause it rests on share their
stems, their numbers in any script or in words, and their names, in English, French, German, Spanish and Japanese."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coop.memory.language import detect, names, numbers, terms
from tests.memory.language.messages import ALL, ORDINARY

SAME_STEM = [
    ("en", "I live in Lyon", "She lives in Lyon", "live"),
    ("fr", "J'habite à Lyon", "Il habitait à Lyon", "habit"),
    ("es", "Vivo en Sevilla", "Vive en Sevilla", "viv"),
    ("pt", "Eu moro em Lisboa", "Ela mora em Lisboa", "mor"),
    ("de", "Ich arbeite in Bremen", "Er arbeitet in Bremen", "arbeit"),
]


@pytest.mark.parametrize(("language", "one", "other", "stem"), SAME_STEM)
def test_forms_of_a_word_share_their_stem(language, one, other, stem):
    assert stem in terms(one, language) and stem in terms(other, language)


@pytest.mark.parametrize(("language", "message"), ALL)
def test_terms_are_casefolded_and_normalised(language, message):
    assert terms(message.upper(), language) == terms(message, language)
    for term in terms(message, language):
        assert term == term.casefold() and term.strip() == term and term


def test_full_width_and_accented_forms_read_alike():
    assert terms("ＢＥＲＬＩＮ ２０２６", "de") == terms("berlin 2026", "de")


def test_apostrophes_and_hyphens_end_a_word():
    assert terms("Je n'habite plus", "fr") == ("je", "n", "habit", "plus")
    assert terms("don't", "en") == ("don", "t")
    assert terms("peut-être", "fr")[:1] == ("peut",)


def test_unspaced_scripts_are_read_as_character_bigrams():
    assert terms("東京に住んでいます", "ja")[:2] == ("東京", "京に")
    assert terms("猫", "ja") == ("猫",)
    assert set(terms("東京在住", "ja")) & set(terms("東京に住んでいます", "ja")) == {"東京"}


def test_a_language_without_a_stemmer_keeps_its_words():
    assert terms("running dogs", "und") == ("running", "dogs")
    assert terms("running dogs", "xx") == ("running", "dogs")


def test_stemmers_give_the_same_terms_from_many_threads():
    text, language = "Ich wohne nicht mehr in Berlin und arbeite jetzt in Hamburg", "de"
    expected = terms(text, language)
    results: list[tuple[str, ...]] = []

    def work() -> None:
        results.extend(terms(text, language) for _ in range(200))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 800


@pytest.mark.parametrize(("text", "expected"), [
    ("２０２６年３月１日", {"2026", "3", "1"}),
    ("٢٠٢٦", {"2026"}),
    ("२०२६", {"2026"}),
    ("It costs 4.5 euros", {"4.5"}),
    ("Es kostet 4,5 Euro", {"4.5"}),
    ("1.000 Bücher und 1,000 books", {"1000"}),
    ("1.000,50 € or 1,000.50 $", {"1000.5"}),
    ("am 24.12.2026", {"24", "12", "2026"}),
    ("version 007", {"7"}),
    ("no number here", set()),
])
def test_numbers_in_any_script(text, expected):
    assert numbers(text) == expected


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("en", "I have two cats and twenty-one fish", {"2", "21"}),
    ("fr", "J'ai trois enfants et vingt et un chats", {"3", "21"}),
    ("de", "Ich habe drei Kinder und einundzwanzig Bücher", {"3", "21"}),
    ("es", "Tengo dos hijos y treinta y dos libros", {"2", "32"}),
    ("de", "Ich komme am 1. März 2026 an", {"1", "2026"}),
])
def test_number_words_in_their_language(language, text, expected):
    assert numbers(text, language) == expected


def test_number_words_are_read_only_in_a_language_the_reader_knows():
    assert numbers("I have two cats") == frozenset()
    assert numbers("I have two cats", "ja") == frozenset()


@settings(deadline=None)
@given(st.text(max_size=60))
def test_numbers_are_canonical_digit_strings(text):
    for number in numbers(text, "en"):
        whole, _, fraction = number.partition(".")
        assert whole.isascii() and whole.isdigit() and (whole == "0" or not whole.startswith("0"))
        assert not fraction or (fraction.isascii() and fraction.isdigit() and not fraction.endswith("0"))


@pytest.mark.parametrize(("language", "text", "name"), [
    ("en", "I live in Berlin with my wife.", "Berlin"),
    ("es", "Mi hermana Ana vive en Sevilla.", "Ana"),
    ("fr", "Je travaille avec Ana depuis mars.", "Ana"),
    ("de", "Ich wohne jetzt in Berlin.", "Berlin"),
    ("ja", "トムは東京に住んでいます。", "トム"),
])
def test_names_are_found_as_terms_writes_them(language, text, name):
    found = names(text, language)
    assert set(terms(name, language)) <= found
    assert found <= set(terms(text, language))


def test_a_run_of_han_is_no_name_for_it_is_as_often_a_common_noun():
    assert names("名前は遥香です。毎朝六時に起きる。", "ja") == frozenset()


def test_the_first_word_of_a_sentence_and_single_letters_are_no_names():
    assert names("Berlin is big. I know.", "en") == frozenset()
    assert names("My name is Sam. Sam is short for Samuel.", "en") == frozenset({"sam", "samuel"})
    assert "sevill" in names("Vivo en Sevilla. Sevilla es bonita.", "es")


@pytest.mark.parametrize("language", list(ORDINARY))
def test_detect_reads_ordinary_sentences(language):
    for sentence in ORDINARY[language]:
        assert detect(sentence) == language


@pytest.mark.parametrize(("text", "language"), [
    ("", "und"), ("   ", "und"), ("12345", "und"), ("👍🎉", "und"), ("ありがとう", "ja"), ("안녕하세요", "ko"),
])
def test_detect_lets_the_script_decide_and_says_und_for_no_letters(text, language):
    assert detect(text) == language
