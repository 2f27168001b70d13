"""Writing systems, as the parse, the terms and language detection need them: which characters belong to scripts
written without spaces between words, and the scripts that name their language on their own (Kana is Japanese,
Hangul is Korean), so a detector never has to guess there.

Patterns over whole scripts take milliseconds each to compile, and most runs of coop never parse a message: they
are compiled on first use (`regex`).
"""

from __future__ import annotations

import re
from functools import cache

from coop.memory.text import UNSPACED_CHARS

# The ideographic iteration and closing marks (々 〆) and halfwidth Katakana belong to the runs too.
UNSPACED = UNSPACED_CHARS + r"\u3005\u3006\uff66-\uff9f"
UNSPACED_RUN = f"[{UNSPACED}]+"
_KANA = r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]"
_HAN_OR_KATAKANA_RUN = r"[\u3005\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a0-\u30ff\u31f0-\u31ff]{2,}"
_KATAKANA_RUN = r"[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]{2,}"
_HANGUL = r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"
_THAI = r"[\u0e00-\u0e7f]"
# A word of a spaced script: letters and digits, apostrophes inside it ("don't", "n'habite") kept, so a count of
# words agrees with how a reader counts them.
_SPACED_WORD = f"[^\\W{UNSPACED}]+(?:['’][^\\W{UNSPACED}]+)*"
_LETTER = r"[^\W\d_]"


@cache
def regex(source: str, flags: int = 0) -> re.Pattern[str]:
    """`source` compiled, once per process, on first use."""
    return re.compile(source, flags)


def has_letters(text: str) -> bool:
    return regex(_LETTER).search(text) is not None


def letter_count(text: str) -> int:
    return len(regex(_LETTER).findall(text))


def has_unspaced(text: str) -> bool:
    return regex(UNSPACED_RUN).search(text) is not None


def unspaced_runs(text: str) -> list[str]:
    return regex(UNSPACED_RUN).findall(text)


def without_unspaced(text: str) -> str:
    """The text with its runs of unspaced scripts replaced by a space (what a detector of spaced languages reads)."""
    return regex(UNSPACED_RUN).sub(" ", text)


def han_or_katakana_runs(text: str) -> list[str]:
    """Runs of two or more Han or Katakana characters: names and nouns in Japanese and Chinese text."""
    return regex(_HAN_OR_KATAKANA_RUN).findall(text)


_KANJI_NUMERALS = str.maketrans({c: " " for c in "〇一二三四五六七八九十百千万"})


def noun_runs(text: str) -> list[str]:
    """The runs of two or more kanji or katakana that stand for nouns where writing has no capitals ("東京",
    "薬剤師"): numerals do not join a run, since numbers are read apart (`terms.numbers`)."""
    return han_or_katakana_runs(text.translate(_KANJI_NUMERALS))


def only_hiragana(term: str) -> bool:
    """Whether a term is written in Hiragana alone: in Japanese, mostly particles and endings ("は", "して"), which
    two sentences share whatever they are about."""
    return regex(r"[\u3040-\u309f]+").fullmatch(term) is not None


def katakana_runs(text: str) -> list[str]:
    """Runs of two or more Katakana characters: in Japanese, mostly names and loanwords ("トム", "セビリア"). A run
    of Han is as often a common noun ("名前", "毎朝") as a name, so it is no name here."""
    return [run for run in regex(_KATAKANA_RUN).findall(text) if run.strip("ー・")]


def spaced_words(text: str) -> list[str]:
    return regex(_SPACED_WORD).findall(text)


def script_language(text: str) -> str | None:
    """The language a script alone decides: Kana -> Japanese, Hangul -> Korean, Thai -> Thai; otherwise None."""
    if regex(_KANA).search(text):
        return "ja"
    if regex(_HANGUL).search(text):
        return "ko"
    if regex(_THAI).search(text):
        return "th"
    return None


def word_count(text: str) -> int:
    """Words as a reader counts them: spaced words, and a run of an unspaced script as one word per two characters
    (a Japanese clause of eight characters weighs about as much as four English words)."""
    return len(spaced_words(text)) + sum((len(run) + 1) // 2 for run in unspaced_runs(text))
