"""Turning a query into full-text terms: word terms and the phrases of unspaced scripts, which the store's text
index matches (`storage/text_index.py` quotes them, so user text is never FTS syntax); whether a message has any
word worth recalling memory for; and the checks a query must pass.

The index reads stored text through FTS5's unicode61 (`storage/text_index.py`; the Postgres index runs the same
tokenizer): case folded by simple lower-casing, diacritics removed from letters whether composed or not ("é" and
"e" + U+0301 both index as "e"), and nothing else changed (ß stays ß, full-width "ＡＩ" stays full-width). A query
is therefore read in NFC, so its decomposed accents do not split a word in two ("pre", "fe", "re" of an NFD
"préfère"), and lower-cased, not case-folded (casefold makes "Straße" "strasse", which no stored "Straße" holds).
When its NFKC reading differs (full-width Latin, half-width katakana, ligatures: what an input method types), that
reading is searched too, so "ＡＩ" finds "AI" and "ｺｰﾋｰ" finds "コーヒー". The index side is left as it is (a change
there rebuilds every index): text stored in such forms is found by the same form only.
"""

from __future__ import annotations

import re
import unicodedata

from coop.errors import UsageError
from coop.memory.text import STOP_WORDS, UNSPACED_CHARS

MAX_QUERY_CHARS = 20_000
MAX_QUERY_TERMS = 48

_TOKEN = re.compile(r"\w+", re.UNICODE)
_NOT = re.compile(r"n['\u2019]t\b", re.IGNORECASE)
_CONTRACTION = re.compile(r"(?<=\w)['\u2019](s|t|m|d|ll|re|ve)\b", re.IGNORECASE)
# Words that carry no content in a chat message: a query made only of them ("thanks!", "ok lol") is small talk.
FILLER_WORDS = frozenset("""
hello hi hey hiya thanks thank thx ty ok okay okey lol haha hahaha yeah yep yup nope bye goodbye please pls sorry
hmm um uh oh wow cool nice sure alright great awesome good morning evening afternoon night goodnight going doing
""".split())
UNSPACED_RUN = re.compile(f"[{UNSPACED_CHARS}]+")


def readings(text: str) -> list[str]:
    """The forms a query is searched in: NFC, and NFKC when that differs (see the module docstring)."""
    composed = unicodedata.normalize("NFC", text)
    compatible = unicodedata.normalize("NFKC", composed)
    return [composed] if compatible == composed else [composed, compatible]


def query_terms(text: str) -> list[str]:
    """The word terms of a query (outside unspaced scripts), in each of its `readings`: lower-cased, function
    words and conversational filler ("hello", "thanks") dropped unless nothing else is left; a query of fewer
    than three such words has no terms at all ("What's up?" is small talk, not a search for "what" and "up").
    Contraction fragments ("s" of "how's", "t" of "don't") and other single letters are never terms: each matches
    nearly every message, so "How's it going?" would otherwise match the `s` of every contraction in memory."""
    found = [term for reading in readings(text) for term in _terms(reading)]
    return list(dict.fromkeys(found))[:MAX_QUERY_TERMS]


def _terms(text: str) -> list[str]:
    text = _CONTRACTION.sub(" ", _NOT.sub(" not", UNSPACED_RUN.sub(" ", text)))
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    tokens = [t for t in tokens if len(t) > 1 or t.isdigit()]
    content = [t for t in tokens if t not in STOP_WORDS and t not in FILLER_WORDS]
    if not content and len(tokens) < 3:  # "What's up?", "Hi there": no words to search by
        return []
    return content or tokens


def has_content(text: str) -> bool:
    """True when a message has a word worth recalling memory for: "How's it going?", "Thanks, that's all for
    now." and "ok lol" have none, and a chat turn recalls nothing by relevance for them (old greetings are near
    new ones in meaning, so no similarity floor keeps them out)."""
    text = _CONTRACTION.sub(" ", _NOT.sub(" not", unicodedata.normalize("NFKC", text)))
    words = [t.casefold() for t in _TOKEN.findall(text)]
    return bool(UNSPACED_RUN.search(text)) or any(
        (len(w) > 1 or w.isdigit()) and w not in STOP_WORDS and w not in FILLER_WORDS for w in words)


def unspaced_phrases(text: str) -> list[str]:
    """Runs of Chinese, Japanese, Thai... (in each of the query's `readings`) as phrases of their characters. A
    run of one or two characters is one phrase; a longer run (a whole clause, since these scripts have no spaces)
    becomes its overlapping bigrams, so a document sharing any two-character word with the query matches and
    BM25 ranks by how many it shares."""
    phrases: list[str] = []
    for run in (run for reading in readings(text) for run in UNSPACED_RUN.findall(reading)):
        if len(run) <= 2:
            phrases.append(" ".join(run))
        else:
            phrases += [f"{run[i]} {run[i + 1]}" for i in range(len(run) - 1)]
    return list(dict.fromkeys(phrases))[:MAX_QUERY_TERMS]


def query_words(text: str) -> list[str]:
    """Everything a text index is asked to match for user text: its unspaced phrases, then its word terms
    (empty when it has no word at all)."""
    return unspaced_phrases(text) + query_terms(text)


def check_query(query: str) -> str:
    if not isinstance(query, str):
        raise UsageError("the query must be text", hint="pass a search phrase")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the query is not valid UTF-8", hint="convert the input to UTF-8") from None
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is too long ({len(query):,} characters; the limit is {MAX_QUERY_CHARS:,})",
                         hint="search with a few words or sentences")
    return query.replace("\x00", " ")
