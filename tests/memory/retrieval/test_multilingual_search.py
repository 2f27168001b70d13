"""Full-text search finds a fact or a message by a word in its own language, on SQLite and on Postgres: French and
Spanish with and without their accents, German umlauts, ß and a compound searched by the whole word, Japanese words
inside sentences with no spaces; text and query in any Unicode form (NFC, NFD, full-width and half-width forms).

The index folds case and diacritics (FTS5's unicode61 with remove_diacritics 2, which the Postgres index runs too)
and splits unspaced scripts into characters (`text.fts_text`); the query side (`retrieval/terms.py`) must not undo
that: it reads the query in NFC, keeps ß, and adds the NFKC reading of a query typed in full-width or half-width
forms."""

from __future__ import annotations

import unicodedata

import pytest

from coop.memory.retrieval.search import search
from coop.memory.retrieval.terms import query_terms, query_words


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


FRENCH = "Je préfère le café noir sans sucre"
GERMAN = "Meine Krankenversicherung läuft über die Arbeit, Büro in der Schloßstraße"
SPANISH = "Mi canción favorita la cantaba mi abuela en España, con los niños"
JAPANESE = "東京に住んでいる"
OTHER = "Walks the dog every morning in the park"  # no word of any query below
FACTS = [FRENCH, GERMAN, SPANISH, JAPANESE, OTHER]


def found(memory, query: str, kinds=("fact",)) -> list[str]:
    return [hit.item.text for hit in search(memory, query, embedder=None, kinds=kinds).hits]


@pytest.fixture
def facts(memory):
    for text in FACTS:
        memory.facts.add(text)
    return memory


@pytest.mark.parametrize("query, text", [
    ("préfère", FRENCH), ("prefere", FRENCH), ("PRÉFÈRE", FRENCH), (nfd("préfère"), FRENCH), ("café", FRENCH),
    ("cafe", FRENCH), ("Krankenversicherung", GERMAN), ("krankenversicherung", GERMAN), ("läuft", GERMAN),
    ("lauft", GERMAN), ("Büro", GERMAN), (nfd("Büro"), GERMAN), ("Schloßstraße", GERMAN),
    ("canción", SPANISH), ("cancion", SPANISH), ("España", SPANISH), ("espana", SPANISH), ("niños", SPANISH),
    (nfd("niños"), SPANISH), ("東京", JAPANESE), ("住んで", JAPANESE), ("東京に住んでいます", JAPANESE),
    ("大阪", None), ("Versicherung", None)])
def test_a_fact_is_found_by_a_word_of_its_language(facts, query, text):
    # a part of a compound ("Versicherung") is not a word of the index
    assert found(facts, query) == ([text] if text else [])


@pytest.mark.parametrize("text, query", [
    (nfd(FRENCH), "préfère"), (nfd(FRENCH), "prefere"), (nfd(SPANISH), "niños"), (nfd(SPANISH), "España"),
    (nfd(GERMAN), "Büro"), (nfd(GERMAN), "läuft")])
def test_a_fact_stored_decomposed_is_found_by_a_composed_query(memory, text, query):
    memory.facts.add(text)
    memory.facts.add(OTHER)
    assert found(memory, query) == [text]


def test_messages_are_found_by_a_word_of_their_language(memory):
    # one session each: a message is also indexed by the words of the two before it in its session
    said = {text: memory.messages.add(memory.sessions.start(), "user", text) for text in
            ["J'habite à Montréal depuis l'été dernier", "Ich habe meine Lebensversicherung gekündigt",
             "El año pasado aprendí a tocar la guitarra", "昨日は京都で抹茶を飲みました", OTHER]}
    cases = {"Montréal": "J'habite à Montréal depuis l'été dernier", "montreal": "J'habite à Montréal depuis "
             "l'été dernier", "ete": "J'habite à Montréal depuis l'été dernier",
             "Lebensversicherung": "Ich habe meine Lebensversicherung gekündigt",
             "gekundigt": "Ich habe meine Lebensversicherung gekündigt",
             "año": "El año pasado aprendí a tocar la guitarra", "aprendi": "El año pasado aprendí a tocar la guitarra",
             "抹茶": "昨日は京都で抹茶を飲みました", "京都": "昨日は京都で抹茶を飲みました"}
    for query, text in cases.items():
        hits = search(memory, query, embedder=None, kinds=("message",)).hits
        assert [hit.item.item_id for hit in hits][:1] == [said[text]], query


def test_full_width_and_half_width_queries_find_what_they_read_as(memory):
    memory.facts.add("Works on AI at Sony in Tokyo")
    memory.facts.add("毎朝コーヒーを飲む")
    memory.facts.add(OTHER)
    assert found(memory, "ＡＩ") == ["Works on AI at Sony in Tokyo"]  # full-width Latin, as a Japanese IME types it
    assert found(memory, "Ｔｏｋｙｏ") == ["Works on AI at Sony in Tokyo"]
    assert found(memory, "ｺｰﾋｰ") == ["毎朝コーヒーを飲む"]  # half-width katakana


def test_a_word_the_user_stored_in_full_width_is_found_as_typed(memory):
    memory.facts.add("ｉＰｈｏｎｅを使っている")
    assert found(memory, "ｉＰｈｏｎｅ") == ["ｉＰｈｏｎｅを使っている"]


def test_query_terms_keep_the_query_as_the_index_reads_it():
    assert query_terms("Schloßstraße") == ["schloßstraße"]  # casefold would make it "schlossstrasse", not indexed
    assert query_terms(nfd("préfère le café")) == ["préfère", "le", "café"]  # not "pre", "fe", "re"
    assert query_terms("Ｔｏｋｙｏ") == ["ｔｏｋｙｏ", "tokyo"]  # as typed, and as it reads
    assert query_words("ｺｰﾋｰ") == ["コ ー", "ー ヒ", "ヒ ー", "ｺｰﾋｰ"]
    assert query_words("東京") == ["東 京"]
