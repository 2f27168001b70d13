"""The units two texts are compared in, in any language: words reduced to their stems by the language's Snowball
stemmer (PyStemmer), character bigrams for scripts written without spaces, the numbers a text states whatever
script or words it writes them in, and the names it mentions.

One tokenisation for every comparison: a value and the clause it rests on are read the same way, so "Je n'habite
plus à Rennes" and "N'habite plus à Rennes" share their terms, and "東京に住んでいます" and "東京在住" share "東京".
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

from coop.memory.language.detect import detect as detect
from coop.memory.language.scripts import UNSPACED, has_letters, katakana_runs, regex

# ISO 639-1 -> the Snowball algorithm PyStemmer names it by (those PyStemmer does not have are left unstemmed).
SNOWBALL = {"ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
            "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
            "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
            "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian",
            "nn": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian",
            "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish"}
# The languages text2num reads number words in.
NUMBER_WORDS = frozenset({"en", "fr", "de", "es", "pt", "it", "nl", "da"})

_TOKEN = f"([{UNSPACED}]+)|([^\\W{UNSPACED}]+)"
# A number as written: digits with "." or "," between groups ("4.5", "1.000", "4,5", "24.12.2026").
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_ENDS = frozenset(".!?。！？…\n")
_OPENERS = frozenset(" \t\"'“”„«»‚‘’「『([*-•>")
_local = threading.local()  # a PyStemmer stemmer is not thread-safe: one per thread and language


def _stemmer(language: str) -> Any:
    cache: dict[str, Any] | None = getattr(_local, "stemmers", None)
    if cache is None:
        cache = _local.stemmers = {}
    if language not in cache:
        algorithm = SNOWBALL.get(language)
        stemmer = None
        if algorithm is not None:
            import Stemmer

            if algorithm in Stemmer.algorithms():
                stemmer = Stemmer.Stemmer(algorithm)
        cache[language] = stemmer
    return cache[language]


def _flat(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def terms(text: str, language: str) -> tuple[str, ...]:
    """Comparable units: NFKC + casefold; words stemmed by the language's Snowball stemmer (PyStemmer) when
    there is one; for unspaced scripts (Han, Kana, Hangul, Thai) character bigrams of each run. Apostrophes and
    hyphens end a word ("n'habite" -> "n", "habit"; "don't" -> "don", "t")."""
    stemmer = _stemmer(language)
    out: list[str] = []
    for unspaced, word in regex(_TOKEN).findall(_flat(text)):
        if unspaced:
            out.extend(_bigrams(unspaced))
        else:
            out.append(stemmer.stemWord(word) if stemmer is not None and not word.isdigit() else word)
    return tuple(out)


def _digits(text: str) -> str:
    """Decimal digits of any script as ASCII (NFKC leaves Arabic-Indic or Devanagari digits as they are)."""
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)


def _integer(digits: str) -> str:
    return digits.lstrip("0") or "0"


def _canonical(written: str) -> list[str]:
    """"4,5" and "4.5" -> "4.5"; "1.000" and "1,000" -> "1000"; "1.000,5" and "1,000.5" -> "1000.5";
    "24.12.2026" -> "24", "12", "2026"."""
    groups = re.split(r"[.,]", written)
    separators = re.findall(r"[.,]", written)
    if len(groups) == 1:
        return [_integer(written)]
    if all(len(g) == 3 for g in groups[1:]) and len(set(separators)) == 1:
        return [_integer("".join(groups))]  # a thousands separator
    thousands = all(len(g) == 3 for g in groups[1:-1]) and len(set(separators[:-1])) == 1
    if len(groups) == 2 or (thousands and separators[-1] != separators[0]):
        fraction = groups[-1].rstrip("0")
        return [_integer("".join(groups[:-1])) + ("." + fraction if fraction else "")]
    return [_integer(g) for g in groups]


def numbers(text: str, language: str = "und") -> frozenset[str]:
    """Every number the text states, as canonical digit strings ("2", "2027", "4.5"): digits in any script
    (NFKC, unicodedata.decimal), and number words where a maintained library reads them (text2num for
    en/fr/de/es/pt/it/nl/da)."""
    flat = _digits(unicodedata.normalize("NFKC", text))
    digits = frozenset(n for written in _NUMBER.findall(flat) for n in _canonical(written))
    if not (language in NUMBER_WORDS and has_letters(flat)):
        return digits
    from text_to_num import alpha2digit

    try:
        read = alpha2digit(flat, language, threshold=0)
    except ValueError:  # a text the library cannot read: its digits still count
        return digits
    words = frozenset(n for written in _NUMBER.findall(read) for n in _canonical(written))
    # "un", "ein", "a" are read as 1 by the library and are articles as often as numbers: 1 counts as a digit only
    return digits | (words - {"1"})


def _starts_a_sentence(text: str, at: int) -> bool:
    before = at
    while before > 0 and text[before - 1] in _OPENERS:
        before -= 1
    return before == 0 or text[before - 1] in _SENTENCE_ENDS


def names(text: str, language: str) -> frozenset[str]:
    """Proper names and other capitalised words that are not the first word of a sentence (cased scripts),
    and runs of Katakana of two or more characters (`scripts.katakana_runs`), as terms() writes them. Han is
    checked by the value's character pairs instead (`verify`), since a Han run is as often a common noun."""
    normal = unicodedata.normalize("NFKC", text)
    found: set[str] = set()
    for match in regex(_TOKEN).finditer(normal):
        word = match.group(2)
        if not word or len(word) < 2 or not word[0].isupper():
            continue
        if _starts_a_sentence(normal, match.start()):
            continue
        found.update(terms(word, language))
    for run in katakana_runs(normal):
        found.update(terms(run, language))
    return frozenset(found)
