"""How much of one text another holds, in the terms of the language they are in (`language.terms`: stems, or
character pairs for unspaced scripts): whether a value rests on the user's clauses, whether a new fact repeats or
may change a known one. Weighed by length, so "is", "a" and "de" count little and no list of small words is
needed in any language."""

from __future__ import annotations

from collections.abc import Iterable

from coop.memory.language.scripts import has_unspaced, only_hiragana
from coop.memory.language.terms import names, numbers, terms

SHARED_START = 5  # two terms with this many first characters in common are one (inflections, compounds)
MIN_SHARED = 4    # a term shorter than this is too small to make two facts about one thing


def held(term: str, support: Iterable[str]) -> bool:
    """Whether `term` is among `support`, or shares its first `SHARED_START` characters with one of them."""
    pool = support if isinstance(support, (set, frozenset)) else set(support)
    if term in pool:
        return True
    return len(term) >= SHARED_START and any(
        len(s) >= SHARED_START and s[:SHARED_START] == term[:SHARED_START] for s in pool)


def coverage(text: str, support: Iterable[str], language: str) -> float:
    """The share of `text`'s terms, weighed by length, that `support` (terms) holds."""
    pool = set(support)
    wanted = terms(text, language)
    weight = sum(len(t) for t in wanted)
    return sum(len(t) for t in wanted if held(t, pool)) / weight if weight else 0.0


def names_held(text: str, support: Iterable[str], language: str) -> bool:
    """Whether every name of `text` is among the `support` terms."""
    pool = set(support)
    return all(held(name, pool) for name in names(text, language))


def restates(text: str, other: str, language: str, share: float = 0.5) -> bool:
    """Whether `text` says what `other` says, as far as words go: most of its terms and all of its names and numbers
    are in `other`."""
    support = set(terms(other, language))
    return numbers(text, language) <= numbers(other, language) and names_held(text, support, language) \
        and coverage(text, support, language) >= share


def restates_either(text: str, other: str, language: str) -> bool:
    """Whether either text says most of the other: a "no longer" said in the user's words ("もう東京には住んでいま
    せん") holds most of the fact it ends ("東京に住んでいて"), while the endings of its negation outnumber what the
    two share."""
    return restates(text, other, language) or restates(other, text, language)


def shared_terms(text: str, other: str, language: str, min_length: int = MIN_SHARED) -> set[str]:
    """The terms of `text` (of `min_length` characters or more, or numbers) that `other` holds: what may make two
    facts about one thing. An unspaced script's terms are character pairs: a caller that counts them
    passes a lower `min_length`."""
    support = set(terms(other, language))
    return {t for t in terms(text, language) if (len(t) >= min_length or t.isdigit()) and held(t, support)}


def shared_content(text: str, other: str, language: str) -> set[str]:
    """The terms of `text` that `other` holds and that may make them about one thing: words of `MIN_SHARED`
    characters or more, or numbers; in an unspaced script, its character pairs, except those of Hiragana alone
    (the particles and endings every Japanese sentence has)."""
    if not has_unspaced(text):
        return shared_terms(text, other, language)
    return {t for t in shared_terms(text, other, language, 1) if not only_hiragana(t)}


def a_new_amount(text: str, other: str, language: str) -> bool:
    """Whether `text` gives other numbers than `other` for what both are about (they share a term besides the
    numbers): "Swims 3 km a session" after "Swims 2 km a session"."""
    mine, theirs = numbers(text, language), numbers(other, language)
    return bool(mine) and bool(theirs) and mine != theirs and any(
        not t.isdigit() for t in shared_terms(text, other, language))
