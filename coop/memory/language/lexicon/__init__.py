"""How people say "not", "no longer", "maybe", "if", "I hope", "used to", "I dreamt", "yeah right", "in my novel" and
"she said", one module per language (`en.py`, `fr.py`, ...), each a MARKERS dict {mark: phrases}, the
CONJUNCTIONS the parse cuts clauses at and the CONTRASTS ("but") a negation does not reach past.

A lexicon only ever reads text of its own language: `marks()` answers nothing for a language without a lexicon,
and nothing when the text is plainly in another language that has one (a Spanish "no" is not an English
negation). The lists are short and general on purpose: they break ties, they do not decide.

A phrase matches as whole words, case-folded, after NFKC; an apostrophe in a phrase may be left out in the text
("don't" finds "dont"), a phrase ending in an apostrophe runs into the next word ("n'" finds "n'habite"), and "…"
stands for a few words between two parts ("ne … plus"). Languages written without spaces (Japanese) match as
substrings.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from functools import cache
from types import ModuleType

from coop.memory.language.detect import MIN_DETECTED_WORDS, likeliest, ranked
from coop.memory.language.scripts import has_unspaced, script_language, spaced_words

MARKS = ("negation", "no_longer", "doubt", "condition", "wish", "past", "dream", "irony", "fiction", "report",
         "change", "self", "subject", "addressee", "directive", "standing", "with_me", "other", "question", "unsafe",
         "widening", "withholding", "the_user", "social", "aside", "consequence", "first_person",
         "possessive")
# What each mark says, for the modules that read them (`growth/verify.py`, `growth/reconcile.py`, `growth/wording.py`):
# - the mood of what is said: negation, no_longer (it ended), doubt, condition, wish, past (a past habit), dream,
#   irony, fiction, report (what someone else says), question (a clause that opens as one);
# - who speaks of whom: self (the clause opens with the speaker as subject: "I always ...", "my ..."), subject
#   (the speaker's own subject pronoun alone: what `growth/wording.py` finds cut from a value), addressee (it speaks
#   to the assistant: "you"), directive (it tells the assistant what to do: "please", "from now on", an imperative
#   of the assistant's work), standing (for good: "always", "from now on"), other (it opens with someone else as
#   subject: "my sister ..."), with_me ("... and I");
# - change: the words that say something changed ("now", "switched", "again");
# - instructions no machine may store: unsafe (drop a safety behaviour), widening (reveal, send or give, or to anyone);
#   withholding (stop, avoid, keep it private) undoes a widening as a negation does (`growth/instructions.py`);
# - the_user: how a summary names the user ("the user said ..."), so a clause it gives the user is checked against
#   the user's own words (`growth/summary_check.py`);
# - social: greetings, thanks, apologies, goodbyes, nods, laughter and asides ("hi", "merci beaucoup", "ありがとう",
#   "lol", "by the way"), which say nothing about the user: a value of those words alone is small talk
#   (`growth/verify.py`);
# - what a clause after the first of its sentence goes on about (`growth/holder.py`): aside (it opens with a thing,
#   not a person, as its subject: "it's", "c'est", "es", "eso"), consequence (it opens with a reason or a
#   consequence: "so", "because", "donc", "weil"), first_person (the speaker anywhere in it: "me", "mir", "moi"),
#   read where the language writes its subjects (`writes_subjects`);
# - possessive: the clause opens with the user's "my" ("my", "mon", "mi"), before what someone or something is to
#   them: with a name after it ("my teacher Ines") it is someone the user names (`growth/holder.py`).
# A phrase that starts with "^" matches only at the start of the text (a clause), after punctuation.
LANGUAGES = ("en", "fr", "de", "es", "pt", "ja")
UNSPACED_LANGUAGES = frozenset({"ja", "zh", "ko", "th"})
GAP = "…"

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'", "\u00b4": "'"})


def normalise(text: str) -> str:
    """The form lexicon phrases and the text are compared in: NFKC, case-folded, one kind of apostrophe."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)


def has_lexicon(language: str) -> bool:
    return language in LANGUAGES


def module(language: str) -> ModuleType | None:
    """The lexicon module of a language (None without one)."""
    if not has_lexicon(language):
        return None
    return importlib.import_module(f"coop.memory.language.lexicon.{language}")


def writes_subjects(language: str) -> bool:
    """Whether the language's clauses write their subject ("I", "je", "ich"), so that a clause with no word of the
    speaker in it is not about them; not so where the verb carries it ("vivo", "住んでいます")."""
    found = module(language)
    return bool(getattr(found, "WRITES_SUBJECTS", False)) if found is not None else False


def conjunctions(language: str) -> tuple[str, ...]:
    found = module(language)
    return tuple(normalise(c) for c in found.CONJUNCTIONS) if found is not None else ()


def contrasts(language: str) -> tuple[str, ...]:
    found = module(language)
    return tuple(normalise(c) for c in getattr(found, "CONTRASTS", ())) if found is not None else ()


def _phrase_pattern(phrase: str, spaced: bool, lead_ins: tuple[str, ...] = ()) -> str:
    if phrase.startswith("^"):  # at the start, after punctuation and at most one lead-in word ("and", "just")
        lead = "|".join(re.escape(normalise(w)) for w in lead_ins)
        optional = rf"(?:(?:{lead})(?!\w)[\W_]*)?" if lead and spaced else ""
        return r"^[\W_]*" + optional + "(?:" + _phrase_pattern(phrase[1:], spaced) + ")"
    pieces = []
    for part in (normalise(part).strip() for part in phrase.split(GAP)):
        joined = part.endswith("'")  # "n'" runs into the word it elides before
        body = re.escape(part.rstrip("'")).replace(r"\ ", r"\s+").replace("'", "'?") + ("'" if joined else "")
        if spaced:
            body = r"(?<!\w)" + body + ("" if joined else r"(?!\w)")
        pieces.append(body)
    # a gap stays inside one clause: it never runs over sentence or clause punctuation
    return r"[^.!?;。！？；]{0,40}?".join(pieces)


@cache
def _pattern(language: str, mark: str) -> re.Pattern[str] | None:
    """One mark's pattern in one language, compiled when first asked for: a search asks for two marks of each
    language ("first_person", "addressee"), and all of them at once cost a turn about a third of a second."""
    found = module(language)
    phrases: tuple[str, ...] = found.MARKERS.get(mark, ()) if found is not None else ()
    if not phrases:
        return None
    spaced = language not in UNSPACED_LANGUAGES
    lead_ins: tuple[str, ...] = getattr(found, "LEAD_INS", ())
    return re.compile("|".join(_phrase_pattern(p, spaced, lead_ins) for p in phrases))


@cache
def _patterns(language: str) -> dict[str, re.Pattern[str]]:
    found = module(language)
    if found is None:
        return {}
    return {mark: pattern for mark in found.MARKERS if (pattern := _pattern(language, mark)) is not None}


@cache
def _contrast_pattern(language: str) -> re.Pattern[str] | None:
    words = contrasts(language)
    spaced = language not in UNSPACED_LANGUAGES
    return re.compile("|".join(_phrase_pattern(w, spaced) for w in words)) if words else None


def scopes(text: str, language: str) -> list[str]:
    """`text` normalised and cut where a negation stops reaching: at the end of a sentence and at a word of contrast
    of the language, so in "never X, but Y" the "never" says nothing of Y."""
    pattern = _contrast_pattern(language)
    parts = []
    for sentence in re.split(r"[.!?;\n。！？；]", normalise(text)):
        parts += pattern.split(sentence) if pattern is not None else [sentence]
    return [part for part in parts if part.strip()]


def has_mark(text: str, language: str, mark: str) -> bool:
    """Whether the language's lexicon finds `mark` in `text`, read as that language whatever it looks like: for a
    piece of a text the caller has already told is not in another language (`marks` tells it for a whole text)."""
    pattern = _pattern(language, mark)
    return pattern is not None and pattern.search(normalise(text)) is not None


@cache
def _words_pattern(language: str, mark: str, openers: bool = True) -> re.Pattern[str] | None:
    found = module(language)
    phrases = found.MARKERS.get(mark, ()) if found is not None else ()
    spaced = language not in UNSPACED_LANGUAGES
    parts = [part.strip().lstrip("^") for phrase in phrases for part in phrase.split(GAP)
             if openers or not phrase.startswith("^")]
    # the longest first, so that "merci beaucoup" is blanked whole, not "merci" with "beaucoup" left over
    words = [_phrase_pattern(part, spaced) for part in sorted(parts, key=len, reverse=True)]
    return re.compile("|".join(words)) if words else None


def unmarked(text: str, language: str, mark: str, openers: bool = True) -> str:
    """`text` normalised, with the words of the language's phrases of `mark` blanked out (never what a "…" of a
    phrase stands for): what the rest of it says once those words are set aside (the "n'" of "n'importe qui" is
    part of a phrase, and negates nothing). Without `openers`, the phrases said to open a clause ("^...": a
    directive's verb, "Tutéame") stay: only the words that may stand anywhere ("s'il vous plaît") are set aside."""
    pattern = _words_pattern(language, mark, openers)
    flat = normalise(text)
    return pattern.sub(" ", flat) if pattern is not None else flat


def in_another_language(text: str, language: str) -> bool:
    """Whether `text` is plainly written in another language that has a lexicon of its own: told as the parse tells
    a sentence's language (a text of a few words is a guess, so it stays in the language asked for)."""
    by_script = script_language(text)
    if language in UNSPACED_LANGUAGES:
        return by_script is None and not has_unspaced(text)
    words = len(spaced_words(text))
    if by_script is not None and words < MIN_DETECTED_WORDS:
        return has_lexicon(by_script)
    if words < MIN_DETECTED_WORDS:
        return False
    ranking = ranked(text)
    if not ranking:
        return False
    read_as = likeliest(ranking, language)
    return read_as != language and has_lexicon(read_as)


def marks(text: str, language: str) -> frozenset[str]:
    """Which of MARKS the language's lexicon finds in `text` (empty for a language without one, and for text that
    is plainly in another language with a lexicon of its own)."""
    if not text or not has_lexicon(language):
        return frozenset()
    flat = normalise(text)
    found = frozenset(mark for mark, pattern in _patterns(language).items() if pattern.search(flat))
    if found and in_another_language(text, language):
        return frozenset()
    return found


def negated(text: str, language: str) -> bool:
    """Whether `text` says, in the language's lexicon, that something is not so or no longer so."""
    return bool(marks(text, language) & {"negation", "no_longer"})


def holder(text: str, language: str) -> str | None:
    """Who a clause that opens with someone else as its subject names, as the user wrote it: the noun of "my
    sister" with the names right after it ("Tante Ilse" for "Meine Tante Ilse züchtet ..."), or None for a
    subject that names no one (a pronoun: "he", "彼は") and for a language without a lexicon."""
    phrase = marked(text, language, "other")
    if phrase is None:
        return None
    phrase = phrase.strip(_PUNCTUATION + " ")
    if language in UNSPACED_LANGUAGES:
        return None if phrase in getattr(module(language), "PRONOUNS", ()) else phrase.rstrip("はが") or None
    if len(phrase.split()) < 2:  # "he", "elle", "er": a pronoun names no one
        return None
    noun = phrase.split()[-1]
    written = [word.strip(_PUNCTUATION) for word in text.split()]
    at = next((i for i, word in enumerate(written) if normalise(word) == noun), None)
    if at is None:
        return None
    who = [written[at]]
    for word, bare in zip(text.split()[at + 1:at + 3], written[at + 1:at + 3]):  # "neighbour Ilse"
        if not bare[:1].isupper():
            break
        who.append(bare)
        if word != bare:  # "my sister Ana, who ...": the names end at the punctuation
            break
    return " ".join(who)


_PUNCTUATION = ",;:.!?\"'()¡¿«»“”"


def marked(text: str, language: str, mark: str) -> str | None:
    """The words of `text` that give it `mark` in the language's lexicon ("my sister" for "other"), or None."""
    if not text or mark not in marks(text, language):
        return None
    pattern = _pattern(language, mark)
    found = pattern.search(normalise(text)) if pattern is not None else None
    return found.group(0) if found else None
