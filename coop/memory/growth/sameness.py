"""When two facts are about the same thing: the rule by which coop, not the reconciler, decides whether a change
may apply.

The fast model proposes ADD / UPDATE / SUPERSEDE / NONE and names a target; coop applies a change only when
`same_thing` holds, and otherwise adds the new fact beside the old one (refused as a `change`, logged):
- same category (never across categories: a dentist visit is not an allergy, a conference trip not a home), about
  the same person (`someone`: "Husband Karim is a civil engineer" is no change of "Sister Ana is a dentist"), and
- the same slot: both have keys and they name one slot (`canonical_key`: "city", "home_city", "current_city" are
  one), or at least one has no key and the two share a word of what they are about (`evidence.subject_words`:
  "Always answer in French" and "Answer in English" share "answer"; "Lives in Lyon" and "Went to a conference"
  share nothing), other than the category's own name ("work" in "Works at Maple Freight" and "Writes Go
  at work"). In "general" only equal keys count. Two facts that share the slot and no such word (`slot_only`) are
  asked about as a pair instead (`still_true`): the slot is then only the model's filing.
Then an UPDATE must only refine (`refines`: the old fact's subject words, names and negations all still there:
"Likes tea" -> "Likes green tea"); one that replaces a value is applied as a SUPERSEDE, so the old value stays as
history. A NONE (already known) merges only when the new fact says nothing the old one lacks (`says_nothing_new`).
"""

from __future__ import annotations

import re

from coop.memory.growth.evidence import TIME_WORDS, content_words, held, names_and_numbers, negations, subject_words
from coop.memory.growth.mood import RELATIONS, THIRD_VERBS
from coop.memory.kinds import GENERAL, INSTRUCTION

# Keys small and large models give one slot under different names; each group is one slot.
SLOT_GROUPS = (
    ("home_city", "city", "current_city", "residence", "location", "lives_in", "living_city", "place_of_residence",
     "home_location", "current_location"),
    ("employer", "company", "workplace", "work_place", "current_employer", "works_at", "job_company"),
    ("occupation", "job", "profession", "job_title", "role", "position", "career", "current_job", "work"),
    ("diet", "dietary_preference", "diet_type", "dietary_restriction", "eating_habits", "dietary_preferences"),
    ("partner", "spouse", "wife", "husband", "girlfriend", "boyfriend", "significant_other"),
    ("name", "preferred_name", "nickname", "first_name", "call_me"),
    ("language", "answer_language", "reply_language", "response_language", "preferred_language"),
)
_CANONICAL = {alias: group[0] for group in SLOT_GROUPS for alias in group}


def canonical_key(key: str | None) -> str | None:
    """The slot a key names: the first of its group, or the key itself."""
    if not key:
        return None
    return _CANONICAL.get(key, key)


def same_thing(category: str, key: str | None, value: str, target_category: str | None, target_key: str | None,
               target_value: str) -> bool:
    """True when a new fact and an existing one are about the same thing (see the module's rule)."""
    if category != (target_category or "general") or someone(value) != someone(target_value):
        return False
    mine, theirs = canonical_key(key), canonical_key(target_key)
    if mine and theirs:
        return mine == theirs
    if category == "general":
        return False
    return bool(_words_in_common(value, target_value, category))


def may_change(category: str, key: str | None, value: str, target_category: str | None, target_key: str | None,
               target_value: str) -> bool:
    """Whether a new fact may be a change of a known one when the model says the known one is no longer true
    (`still_true`): both in one slot, or sharing a word of what they are about, whatever their categories ("Has
    upped their running to 35 km a week", filed under work, and "Also runs about 20 km a week", under health:
    running, km), other than a word of time ("week": "Is covering a colleague's shifts this week" is not about
    running), or giving another grade of one scale (`a_new_grade`: "Is at B2 now", "Is learning Italian at B1
    level"). Across categories one word is not enough: "Is opening a vegan bakery" is no change of "Is vegan".
    Not merely one category: a 1.5B model calls a colleague's flu a change of a sister's job (both "family").
    An instruction only ever changes an instruction."""
    target_category = target_category or "general"
    if (category == INSTRUCTION) != (target_category == INSTRUCTION):
        return False
    if someone(value) != someone(target_value):  # "Sister Ana is a dentist in Porto" is no change of "Lives in
        return False                               # Porto"; what one sister does, of what another does
    mine, theirs = canonical_key(key), canonical_key(target_key)
    if mine and theirs:
        return mine == theirs
    about = _words_in_common(value, target_value, category, target_category, leave_out=TIME_WORDS)
    return len(about) >= (1 if category == target_category else 2) or a_new_grade(value, target_value)


def slot_only(category: str, key: str | None, value: str, target_category: str | None, target_key: str | None,
              target_value: str) -> bool:
    """Whether two facts share their slot and no word of what they are about: the slot is then only the model's
    filing, which a 1.5B model gets wrong ("Drives a 2016 Volvo V70" under work/occupation, beside "Works as an
    intensive-care nurse"), so the still-true question decides, not the reconciler. Not for instructions."""
    mine, theirs = canonical_key(key), canonical_key(target_key)
    return category != INSTRUCTION and bool(mine) and mine == theirs and category == (target_category or GENERAL) \
        and not _words_in_common(value, target_value, category)


# words that say a state of the user's ended or began: "Has started eating fish again", "No longer eats meat"
_CHANGE = re.compile(r"\b(?:started|stopped|quit|gave up|given up|switched|became|no longer|any ?more)\b",
                     re.IGNORECASE)


def announced_change(category: str, value: str, target_category: str | None, target_value: str) -> bool:
    """Whether a new fact that names a change in its own words ("Has started eating fish again") may be a change
    of the known fact the model named, though they share no slot or word ("Has been vegetarian for about ten
    years"): one category (not "general"), one person. The still-true question and the user's words decide."""
    return category == (target_category or GENERAL) != GENERAL and someone(value) == someone(target_value) \
        and bool(_CHANGE.search(value))


# a grade, level or tier written as one or two capitals and a number: "B2", "C1", "Q3", "A4"
_GRADE = re.compile(r"\b([A-Z]{1,2})(\d{1,2})\b")


def a_new_grade(value: str, target_value: str) -> bool:
    """Whether `value` gives another grade of a scale `target_value` gives one of, written the same way ("Is at B2
    now" after "Is learning Italian at B1 level", which share no word; "Q4" after "Q3"), and none it gave."""
    def grades(text: str) -> dict[str, tuple[int, int]]:
        return {m.group(0): (len(m.group(1)), len(m.group(2))) for m in _GRADE.finditer(text)}

    mine, theirs = grades(value), grades(target_value)
    return not mine.keys() & theirs.keys() and bool(set(mine.values()) & set(theirs.values()))


def _words_in_common(value: str, target_value: str, *categories: str, leave_out: frozenset[str] = frozenset()
                     ) -> set[str]:
    """The words of what two facts are about that both hold (`held`: a stem or a form apart), other than the words
    of the categories' own names (`_category_words`) and `leave_out`."""
    shared = held(subject_words(value) - leave_out, subject_words(target_value) - leave_out)
    named = frozenset().union(*(_category_words(category) for category in categories))
    return {word for word in shared if not held([word], named)}


_VERB_OR_ADVERB = THIRD_VERBS | frozenset("""are am had have does doesn't isn't wasn't hasn't don't just also now
never still will would can can't could""".split())


def someone(value: str) -> frozenset[str]:
    """Who a fact is about when it is not the user: the relation and names before its verb ("Sister Ana is ...":
    sister, ana; "Italian teacher Giulia is from ...": teacher, giulia); empty for a fact about the user, which
    opens with its verb ("Lives in ...", "Has a partner called Karim", "Also has a sister")."""
    found: set[str] = set()
    for index, word in enumerate(value.split()[:4]):
        plain = word.strip(",.;:!").casefold()
        if plain in _VERB_OR_ADVERB:
            break
        if plain in RELATIONS or (index > 0 and word[:1].isupper()):
            found.add(plain)
    return frozenset(found) if RELATIONS & found else frozenset()


def _category_words(category: str) -> frozenset[str]:
    """The words of a category's own name ("work"): shared by any two of its facts, they do not make them about
    one thing ("Writes mostly Go at work" and "Works at Maple Freight"). Only the name: "live" is in most facts of
    location, and "Lives in Berlin" is about what "Lives in Lyon" is about."""
    return content_words(category.replace("_", " "))


def _names(text: str) -> frozenset[str]:
    return frozenset(names_and_numbers(text))


def refines(old: str, new: str) -> bool:
    """True when `new` keeps everything `old` is about and only adds detail (an UPDATE, not a new value)."""
    return (len(held(subject_words(old), subject_words(new))) == len(subject_words(old))
            and _names(old) <= _names(new) and negations(old) == negations(new))


def says_nothing_new(new: str, old: str) -> bool:
    """True when `new` holds no subject word, name or negation that `old` lacks: a duplicate, safe to merge."""
    return (len(held(subject_words(new), subject_words(old))) == len(subject_words(new))
            and _names(new) <= _names(old) and negations(new) == negations(old))
