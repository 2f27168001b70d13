"""A fact's wording: the words a verified note is stored in, and what they keep of the user's.

- A value the model cut from the user's words, with only its subject cut ("Repair old clocks on weekends" of "I
  repair old clocks on weekends"), keeps the user's verb forms without the subject they agree with, which reads
  as neither the user's words nor a profile line. The cited words whole stand for it then, as the user wrote
  them; the prompt quotes a first-person fact as the user's (`retrieval/context.fact_line`). Where the subject is
  cut is the language's lexicon's "subject" mark (I, je, ich, yo, eu, 私は; not "my", whose noun a value may
  rightly open with), so this holds in every language with a lexicon and leaves the others' values as written. A
  profile line the model wrote ("Repairs ...") is not such a cut and is kept as written, except where the
  language gives the first and third person one form (French "travaille"): the user's words whole say the same.
  A language that drops the subject ("Trabajo de ...") has none to cut.
- A value the model translated cannot be checked against the user's words, so those words stand for it
  (`untranslated`).
- A name or an age is stored as itself under its topic's name ("name: Aurélien", `anchor_of`), and so is a bare
  word copied from the user (`bare`: "home city: Oslo").
- Some values say nothing of the user, whatever they cite: only greetings or thanks (`only_small_talk`), words
  said to the assistant (`to_the_assistant`), only the words that ask ("s'il vous plaît": `only_how_it_is_asked`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from coop.memory.growth.overlap import held
from coop.memory.growth.pointing import MAX_VALUE_CHARS, Listed
from coop.memory.language.detect import detect
from coop.memory.language.lexicon import (
    conjunctions,
    has_lexicon,
    has_mark,
    in_another_language,
    marks,
    normalise,
    unmarked,
)
from coop.memory.language.scripts import han_or_katakana_runs, has_unspaced, noun_runs, spaced_words
from coop.memory.language.terms import names, numbers, terms

BARE_WORDS, BARE_CHARACTERS = 2, 6  # a value this short, copied from the user's words, is a bare word or name
FOREIGN_WORDS = 3     # spaced words that make a value for clauses of a script without spaces another language's
TRANSLATED_CLAUSES = 2  # a translated value ties to no clause by a name or number: at most this many stand for it
MAX_SUBJECT_WORDS = 2      # a subject pronoun, with one word beside it at most ("I also", "je ne": not a clause)
MAX_UNSPACED_SUBJECT = 4   # characters: 私は, 私たちは


def with_its_subject(value: str, items: Sequence[Listed], language: str) -> str:
    """`value`, or the cited words it is cut from (a clause, or the cited clauses together) when only their
    subject was cut (module docstring)."""
    if not has_lexicon(language):
        return value
    wanted = [word for word, _ in _words(value)]
    texts = [item.clause.text for item in items] + ([" ".join(item.clause.text for item in items)] * (len(items) > 1))
    for text in texts:
        said = " ".join(text.split()).strip(" ,;:").rstrip(".。!！")
        words = _words(said)
        first = len(words) - len(wanted)
        if not wanted or first < 1 or [word for word, _ in words[first:]] != wanted:
            continue
        subject = normalise(said)[:words[first][1]].strip()
        short = first <= MAX_SUBJECT_WORDS if not has_unspaced(subject) else len(subject) <= MAX_UNSPACED_SUBJECT
        if short and has_mark(subject, language, "subject"):
            return said
    return value


def with_its_noun(value: str, items: Sequence[Listed], language: str, named: bool) -> str:
    """`value`, or the cited clause it is copied from when the copy left out everything that clause names: a piece
    of the user's words in an unspaced script with no noun ("住んでいて" of "東京に住んでいて": the verb's ending,
    cut from its place), or one with no name under a topic that names a place or an employer (`named`: "live in"
    of "I live in Leeds"), says nothing alone, and a topic's label before it ("home city: 住んでいて") reads as a
    falsehood. Elsewhere a spaced piece stays as written ("vegetarian" of "... since I moved to Berlin" is about
    the diet, not the city). Names are capitalised words (`terms.names`) and, in an unspaced script, runs of two
    or more kanji or katakana (numerals aside)."""
    flat = _trimmed(value)
    if not (named or has_unspaced(flat)):
        return value
    edge = "" if has_unspaced(flat) else r"(?<!\w)"
    piece = re.compile(edge + re.escape(flat) + edge.replace("<", ""), re.IGNORECASE) if flat else None
    for item in items:
        said = _trimmed(item.clause.text)
        if piece is None or flat.casefold() == said.casefold() or not piece.search(said):
            continue  # "Jo" is no piece of "not Johanna"
        found = _named(said, language)
        return said if found and not found & set(terms(flat, language)) else value
    return value


def _trimmed(text: str) -> str:
    return " ".join(text.split()).strip(" ,;:、，；：").rstrip(".。!！?？")


def _named(text: str, language: str) -> set[str]:
    """The terms of the names in `text`, and of its runs of two or more kanji or katakana."""
    return set(names(text, language)) | {t for run in noun_runs(text) for t in terms(run, language)}


def _words(text: str) -> list[tuple[str, int]]:
    """Each word of `text` as the lexicon reads it (a character of an unspaced script), with where it starts in
    the normalised text; punctuation and elisions (j', l') are not words."""
    flat = normalise(text)
    if has_unspaced(flat):
        return [(ch, at) for at, ch in enumerate(flat) if ch.isalnum()]
    return [(match.group(), match.start()) for match in re.finditer(r"\w+", flat)]


def untranslated(value: str, items: Sequence[Listed], language: str) -> tuple[str, bool]:
    """The value in the user's own words: a value the model wrote in another language than its clauses (a small
    model translates) cannot be checked against them, so the clauses stand for it, as the user wrote them. Only
    where coop knows the clauses' language (it has a lexicon for it). The cited clauses that hold the value's names
    and numbers when some do ("Lives in Sendai" for "今は仙台に住んでいます"), else all of them when they are at
    most `TRANSLATED_CLAUSES`: what is stored is then only what the user said, and every check after this one
    (mood, holder, polarity, an instruction's address) reads those words, never the translation. The flag says
    whether the clauses stood in with nothing to tie them to the translation: the model's topic was then chosen
    for words coop cannot check, so such a fact fills no slot and changes none."""
    foreign = in_another_language(value, language) or (  # "Lives in 東京" for "東京に住んでいます"
        has_unspaced(" ".join(item.clause.text for item in items)) and len(spaced_words(value)) >= FOREIGN_WORDS) \
        or _only_its_names_said(value, items, language)
    if not foreign or not has_lexicon(language):
        return value, False
    written_in = detect(value)
    digits = numbers(value, written_in) | numbers(value, language)
    capitalised = {_plain(word) for word in spaced_words(value)[1:] if word[:1].isupper()}
    capitalised |= {_plain(run) for run in han_or_katakana_runs(value)}
    chosen = [item for item in items
              if digits & numbers(item.clause.text, language)
              or any(word and word in _plain(item.clause.text) for word in capitalised)]
    untied = not chosen and len(items) <= TRANSLATED_CLAUSES
    if untied:
        chosen = list(items)
    words = " ".join(" ".join(item.clause.text for item in chosen).split()).strip(" ,;:、，").rstrip(".。!！")
    words = _without_its_conjunction(words, language)
    return (words, untied) if chosen and len(words) <= MAX_VALUE_CHARS else (value, False)


def _only_its_names_said(value: str, items: Sequence[Listed], language: str) -> bool:
    """Whether a value too short to be sure of its language, read as another one than its clauses, shares nothing
    with them but its names and numbers ("Works in Graz" for "trabajo en Graz"): a translation."""
    said = " ".join(item.clause.text for item in items)
    anchors = names(value, language) | numbers(value, language)
    words = [t for t in terms(value, language) if t not in anchors and not t.isdigit()]
    support = set(terms(said, language))
    return bool(anchors) and len(words) >= 2 and not any(held(t, support) for t in words) \
        and detect(value) != language


def _without_its_conjunction(words: str, language: str) -> str:
    """The clauses without the conjunction that joined the first of them to the clause before it ("y toca el
    violín" -> "toca el violín"): cut from its sentence, the clause stands alone."""
    first, _, rest = words.partition(" ")
    return rest if rest and normalise(first) in conjunctions(language) else words


def _plain(text: str) -> str:
    """Case-folded, without accents: "Fürth" and "Furth", "Montréal" and "Montreal" are one name."""
    decomposed = unicodedata.normalize("NFKD", normalise(text))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def anchor_of(value: str, language: str, number: bool) -> str | None:
    """The name or the number (an age) a value of such a topic holds, as written: the value's capitalised names
    when they stand together ("Aurélien Roux" of "Is called Aurélien Roux"), or its one number ("51" of "J'ai
    51 ans", "32" of "Tiene treinta y dos años"). Stored under the topic's name, such a fact reads the same
    whatever language the model framed it in ("Is called Aurélien" for "Moi c'est Aurélien"). None when the value
    holds names apart ("Jo, not Joanna"), two numbers, or neither (Han names: the value is kept as written)."""
    if number:
        found = numbers(value, language)
        return next(iter(found)) if len(found) == 1 else None
    named = names(value, language)
    words = spaced_words(value)
    at = [i for i, word in enumerate(words) if (held := set(terms(word, language))) and held <= named]
    if at:
        return " ".join(words[at[0]:at[-1] + 1]) if at == list(range(at[0], at[-1] + 1)) else None
    return None


def bare(value: str, said: str, language: str) -> bool:
    """Whether `value` is a bare word or name copied from the user's words ("Oslo", "baker", "Kingston
    hospital"), not a statement: a profile line says what the value is, so it is stored under its topic's name."""
    short = len(value.split()) <= BARE_WORDS if not has_unspaced(value) else len(value) <= BARE_CHARACTERS
    return short and " ".join(value.casefold().split()) in " ".join(said.casefold().split())


def only_small_talk(value: str, language: str) -> bool:
    """Whether a value holds nothing but greetings, thanks, apologies or nods ("Hi!", "Merci beaucoup",
    "ありがとう"), in a language whose lexicon has those words: a small model notes them as facts, and they say
    nothing about the user."""
    return _nothing_but(value, language, ("social",))


def to_the_assistant(value: str, language: str) -> bool:
    """Whether a fact's value speaks to the assistant ("You are so kind", "Du bist super") with no word of the
    user in it, in the language's lexicon: what the user says to it is not a fact about them."""
    found = marks(value, language)
    return "addressee" in found and not found & {"self", "subject", "first_person"}


def only_how_it_is_asked(value: str, language: str) -> bool:
    """Whether a value holds nothing but the words that ask ("s'il vous plaît", "künftig", "going
    forward"): a small model notes the politeness of a sentence apart from its request, and such a value
    tells the assistant nothing to do. Read in a language whose lexicon has those words; a directive's own verb
    is what it asks ("Duz mich", "Tutéame"), so it stays."""
    return _nothing_but(value, language, ("directive", "addressee", "standing"), openers=False)


def _nothing_but(value: str, language: str, marks_of: Sequence[str], openers: bool = True) -> bool:
    """Whether `value` holds no term once the words of the language's `marks_of` are set aside (False in a
    language without a lexicon, which cannot tell)."""
    if not has_lexicon(language):
        return False
    for mark in marks_of:
        value = unmarked(value, language, mark, openers=openers)
    return not terms(value, language)
