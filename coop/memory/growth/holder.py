"""Whose a fact is: the user's, or someone else's the user speaks of ("My aunt breeds goats in Graz").

A clause says whose it is by how it opens, in the language's lexicon (`language.lexicon`): with the user ("I",
"my"), with someone else ("my sister", "he"), or with a conjunction that goes on with the subject of the clause
before it. A fact whose clauses all open with someone the user names is filed under them (`holder`: "neighbour
Ilse"), never in the user's slot; one whose clauses open with a pronoun names no one, and is refused. A clause
that goes on after the user's statement about a thing ("..., it's quicker than cycling") is no one's fact.
"""

from __future__ import annotations

from collections.abc import Sequence

from coop.memory.growth.overlap import held
from coop.memory.growth.pointing import Listed, Listing
from coop.memory.language.lexicon import conjunctions, holder, marked, marks, normalise, writes_subjects
from coop.memory.language.scripts import has_unspaced
from coop.memory.language.terms import names, terms

_SUBJECTS = frozenset({"self", "subject", "with_me", "other"})


def others(items: Sequence[Listed], listing: Listing, language: str) -> list[str] | None:
    """The texts that say whose each clause is (`whose`), when every one opens with someone else as its subject
    and the user is not with them; None when the user's own clause is among them."""
    texts = []
    for item in items:
        found, text = whose(item, listing, language)
        if "other" not in found or "with_me" in found:
            return None
        texts.append(text)
    return texts


def all_someone_elses(items: Sequence[Listed], listing: Listing, language: str) -> bool:
    """Whether every clause opens with someone else as its subject, the user not with them."""
    return others(items, listing, language) is not None


def about_something_else(items: Sequence[Listed], listing: Listing, language: str) -> bool:
    """Whether every clause goes on, after the first of its sentence, about something other than a person: it
    opens with a thing as its subject ("..., it's quicker than cycling", "..., c'est loin"), or, in a language
    that writes its subjects, gives a reason or a consequence with no word of the user in it ("..., so dogs are
    out of the question", "..., weil es regnet"). Such a clause comments on what the user said; a small model
    notes it alone, as if it were a fact of the user's. One that brings the user back ("so I ...", "weil mir
    ...") or someone else (`others`) is not such a comment."""
    if not items:
        return False
    for item in items:
        found = marks(item.clause.text, language)
        if not listing.before(item) or found & _SUBJECTS:
            return False
        commented = "aside" in found or (
            "consequence" in found and "first_person" not in found and writes_subjects(language))
        if not commented:
            return False
    return True


def whose(item: Listed, listing: Listing, language: str) -> tuple[frozenset[str], str]:
    """The clause's marks, and the text that says whose it is: its own, or, for a clause that opens with a
    conjunction and names no one ("Mi tía vive en Cádiz | y es pintora"), those of the clause before it in
    its sentence, whose subject it goes on with. In the language's lexicon only."""
    found, text = marks(item.clause.text, language), item.clause.text
    if "other" not in found and named_by_the_user(text, language):
        found |= {"other"}
    words = conjunctions(language)
    for before in reversed(listing.before(item)):
        flat = normalise(text)
        if found & _SUBJECTS or not any(flat.startswith(f"{word} ") for word in words):
            break
        found, text = found | (marks(before.text, language) & _SUBJECTS), before.text
    return found, text


def named_by_the_user(text: str, language: str) -> str | None:
    """Whom a clause opens with when it is someone the user names after what they are to the user ("My piano
    teacher Ines lives in ...", "Mi dentista Lucía ..."): the user's possessive, one word in lower case (what they
    are; one capitalised word before it may qualify it), then a capitalised name: "teacher Ines". It reaches past
    the lexicon's list of people. None for a thing with a name of its own ("My Vespa"),
    for "my name is Jo" (two words before the name) and where every noun is capitalised (German) or none is
    (Japanese): there the lexicon's people ("my sister") tell it."""
    if marked(text, language, "possessive") is None:
        return None
    words = [word.strip(",;:.!?\"'()¡¿«»“”") for word in text.split()]
    at = next((i for i, word in enumerate(words) if "possessive" in marks(word, language)), None)
    if at is None:
        return None
    rest = words[at + 1:]
    if len(rest) >= 3 and rest[0][:1].isupper() and rest[1][:1].islower():  # "Spanish" before "teacher"
        rest = rest[1:]
    if len(rest) < 2 or not rest[0][:1].islower() or not rest[1][:1].isupper():
        return None
    name = [rest[1]]
    for word in rest[2:3]:  # a second name: "Ines Rossi"
        if word[:1].isupper():
            name.append(word)
    return " ".join([rest[0], *name])


def _whom(text: str, language: str) -> str | None:
    """Whom a clause about someone else opens with: someone the user names after what they are ("teacher Ines"),
    else the lexicon's person ("sister")."""
    return named_by_the_user(text, language) or holder(text, language)


def their_holder(texts: Sequence[str], language: str) -> str | None:
    """Who the texts that say whose the clauses are (`others`) name as their subject ("neighbour Ilse"), when
    they name one person; None for a pronoun ("he", "they": whose it is, the words do not say) or for two."""
    found = {_whom(text, language) for text in texts}
    return found.pop() if len(found) == 1 else None


def filed_under(value: str, who: str, language: str) -> str:
    """The value, said of `who`: "Neighbour Ilse: keeps bees" for "Neighbour Ilse keeps bees" (its opening words
    that name them moved before a colon), so that whoever reads it sees whose it is."""
    words, named = value.split(), [normalise(word) for word in who.split()]
    for start in range(min(2, len(words))):  # "Brother ...", "My brother ..."
        if [normalise(word.strip(",;:")) for word in words[start:start + len(named)]] == named:
            rest = " ".join(words[start + len(named):]).lstrip(",;: ")
            return f"{who[:1].upper()}{who[1:]}: {rest}" if rest else value
    return value if names_them(value, who, language) else f"{who[:1].upper()}{who[1:]}: {value}"


def someone_elses(value: str, items: Sequence[Listed], listing: Listing, language: str) -> bool:
    """Whether a value said of the user rests only on clauses that open with someone else as their subject ("My
    brother lives in Madrid", not "My brother and I ...", not "I have a cat, Moritz, he is 12") and names none of
    them ("Has a brother who lives in Madrid" names him)."""
    texts = others(items, listing, language) or []
    return bool(texts) and not any(
        names_them(value, _whom(text, language) or "", language, text)
        for text in texts)


def names_them(value: str, about: str, language: str, said: str = "") -> bool:
    """Whether `value` already says who it is about: a word of `about` in it ("Sister Ana ..." for "my sister"),
    its characters in a language written without spaces ("兄が..." for "兄"), or a name it shares with the user's
    words `said` ("Bruder Jonas ..." for "Mein Bruder Jonas ...")."""
    if not about.strip():
        return False
    if has_unspaced(about) and about.strip() in value:
        return True
    mine = set(terms(value, language))
    if any(held(t, mine) for t in terms(about, language) if len(t) >= 3):
        return True
    # the names right after the words that say who ("Mein Bruder Jonas ist ..."), not any name of the clause
    at = said.casefold().find(about.casefold()) if about else -1
    after = said[at + len(about):] if at >= 0 else ""
    return bool(names(value, language) & names(" ".join(["x", *after.split()[:2]]), language))
