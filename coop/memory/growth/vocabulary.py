"""The fixed vocabulary of categories and keys a proposed fact is filed under, and the shape its value must have.

A small model names one subject many ways (one came back 15 times under 3 categories and 5 keys: "home",
"residence", "location"; "city", "lives_in", ...), and a change meets the fact it replaces only when both sit in
one slot. So the extractor picks a topic from a fixed list (`TOPICS`, an enum in the sheet's schema) and every
proposal is normalised here:
- a category is one of `CATEGORIES` when an alias names one ("residence" -> "location", "job" -> "work");
- a key is its slot's one name (`sameness.canonical_key`: "city", "current_city" -> "home_city"), and a key that
  names a slot puts the fact in that slot's category ("home_city" is filed under "location", whatever the model
  said), except for standing instructions, which keep theirs ("Call me ..." is an instruction's `name`);
- a key or category that is a fact's id ("f12", "12", "fact_12") is no key at all: a model copied it from a list
  of facts;
- a slot's value given bare ("Lyon" for `location/home_city`) becomes the sentence it stands for ("Lives in Lyon",
  `as_sentence`), which the user's quote must then prove like any other.

`bad_value` says why a value cannot be a fact (a placeholder of the prompt copied, "<the fact>"; a question, a
courtesy, a report of someone's words, a date alone, a bare word such as "Leiden" or "married": a verb of its own,
"Smokes", is a sentence), or None; `is_bare` whether a value is a noun phrase rather than a statement.
"""

from __future__ import annotations

import re

from coop.memory.growth.sameness import canonical_key
from coop.memory.kinds import GENERAL, INSTRUCTION

CATEGORIES = ("identity", "location", "work", "education", "family", "pets", "health", "diet", "languages",
              "hobbies", "preferences", "possessions", "plans", "dates", "finance", INSTRUCTION, GENERAL)

# The keys that name a slot: a key of one of these is never a category and key run together ("diet_diet").
SLOT_KEYS = frozenset("""name age home_city hometown employer occupation school partner children pet diet allergy
condition medication answer_language length format""".split())

# The topics the sentence sheet offers (`sheet.py`, an enum in its schema), each the (category, key) it files a fact
# under; a key only for a slot that holds one value at a time, whose new value replaces the old.
TOPICS = {"name": ("identity", "name"), "age": ("identity", "age"), "home_city": ("location", "home_city"),
          "hometown": ("location", "hometown"), "home": ("location", None), "employer": ("work", "employer"),
          "occupation": ("work", "occupation"), "work": ("work", None), "school": ("education", "school"),
          "partner": ("family", "partner"), "children": ("family", "children"), "family": ("family", None),
          "pet": ("pets", None), "diet": ("diet", "diet"), "food": ("diet", None), "allergy": ("health", "allergy"),
          "health": ("health", None), "medication": ("health", "medication"), "language": ("languages", None),
          "hobby": ("hobbies", None), "preference": ("preferences", None), "possession": ("possessions", None),
          "plan": ("plans", None), "date": ("dates", None), "money": ("finance", None),
          "answer_language": (INSTRUCTION, "answer_language"), "answer_length": (INSTRUCTION, "length"),
          "answer_format": (INSTRUCTION, "format"), "call_me": (INSTRUCTION, "name"),
          "instruction": (INSTRUCTION, None), "other": (GENERAL, None)}

_CATEGORY_ALIASES = {
    "location": "residence home place places city address lives living where_lives geography",
    "work": "job jobs occupation career employment profession workplace employer business",
    "identity": "personal personal_info personal_information bio biography name age background about_me basics",
    "family": "relationship relationships relatives relations partner spouse children kids",
    "pets": "pet animals animal",
    "diet": "food dietary eating nutrition meals",
    "health": "medical allergies allergy medication medications fitness_health wellbeing",
    "languages": "language",
    "hobbies": "hobby interests interest activities activity sports sport leisure",
    "preferences": "preference likes dislikes tastes taste favourites favorites",
    "possessions": "possession belongings owns property",
    "plans": "plan goals goal future_plans intentions trips travel_plans",
    "dates": "date events event birthdays anniversaries",
    INSTRUCTION: "instructions standing_instruction rule rules assistant_instruction assistant_preferences",
}
ALIASES = {alias: category for category, words in _CATEGORY_ALIASES.items() for alias in words.split()}
# The category a slot key belongs to (keys in sameness.SLOT_GROUPS, by their canonical name).
SLOT_CATEGORY = {"home_city": "location", "employer": "work", "occupation": "work", "diet": "diet",
                 "partner": "family"}
_ID = re.compile(r"^(?:id_?|fact_?|f_?)?\d+$|^f\d+_|_f\d+$")


def is_id(text: str | None) -> bool:
    """Whether a key or category is a fact's id ("f12", "12", "fact_12", "id_7")."""
    return bool(text) and bool(_ID.search(str(text)))


def normalise(category: str, key: str | None) -> tuple[str, str | None]:
    """The (category, key) a fact is filed under (see the module's rules); both already snake_case."""
    if is_id(key):
        key = None
    category = GENERAL if is_id(category) else ALIASES.get(category, category)
    head = category.split("_", 1)[0]  # "health_allergy", "work_info": the category it starts with
    category = category if category in CATEGORIES else ALIASES.get(head, head if head in CATEGORIES else category)
    key = canonical_key(key)
    if key is not None and key not in SLOT_KEYS and "_" in key and key.split("_", 1)[0] in CATEGORIES:
        key = canonical_key(key.split("_", 1)[1])  # "diet_diet", "family_partner": the slot list's pair run together
    if key in SLOT_CATEGORY and category != INSTRUCTION:
        category = SLOT_CATEGORY[key]
    return category, key


# A slot's value given bare ("Lyon" for location/home_city, as a 1.5B model does) is written as the sentence it
# stands for, in the words the user's quote must then hold ("I live in Lyon" proves "Lives in Lyon").
TEMPLATES = {"home_city": "Lives in {}", "hometown": "Is from {}", "name": "Is called {}", "age": "Is {} years old",
             "employer": "Works at {}", "occupation": "Works as {a} {}", "diet": "Is {}",
             "allergy": "Is allergic to {}", "pet": "Has a {}", "school": "Studies at {}", "medication": "Takes {}",
             "condition": "Has {}"}
INSTRUCTION_TEMPLATES = {"language": "Answer in {}", "name": "Call the user {}"}
_FACT_VERBS = frozenset("""is was are am has had have lives lived works worked likes loves enjoys hates speaks prefers
wants plans eats drinks studies takes owns answer reply call use keep always never don't do does not no""".split())


def as_sentence(category: str, key: str | None, value: str) -> str:
    """`value` as a fact: a slot's bare value (at most four words, no verb of a fact) written with the slot's
    template; anything else as it is."""
    words = value.split()
    if not key or not words or len(words) > 4 or any(w.lower().strip(".,;") in _FACT_VERBS for w in words):
        return value
    templates = INSTRUCTION_TEMPLATES if category == INSTRUCTION else TEMPLATES
    template = templates.get(key) or templates.get(key.split("_", 1)[0]) or templates.get(key.rsplit("_", 1)[-1])
    if template is None or (key == "age" and not value.strip().isdigit()):
        return value
    article = "an" if value[:1].lower() in "aeiou" else "a"
    return template.replace("{a}", article).format(value.strip().rstrip("."))


def slot_of(value: str) -> tuple[str, str] | None:
    """The (category, key) of the slot whose sentence `value` opens with, by two words of it at least, not counting
    an article ("Lives in ...", "Works as ...", "Is allergic to ..."), or None: a one-word opening ("Takes ...",
    "Has a ...") says too little ("Takes the tram to work" is no medication, "Has a sister" no pet)."""
    lowered = " ".join(value.split()).casefold()
    for key, opening in _OPENINGS.items():
        if lowered.startswith(opening + " "):
            return _TOPIC_SLOTS[key], key
    return None


# The templates' openings of two words or more, articles left out, and the category of each slot about the user
# (TOPICS', not the instructions').
_OPENINGS = {key: opening for key, opening in
             ((key, " ".join(w for w in template.split("{", 1)[0].casefold().split() if w not in ("a", "an")))
              for key, template in TEMPLATES.items()) if len(opening.split()) >= 2}
_TOPIC_SLOTS = {key: category for category, key in TOPICS.values() if key and category != INSTRUCTION}
_DETERMINERS = frozenset("a an the my this that these those his her their our your some".split())


def is_bare(value: str) -> bool:
    """Whether `value` is a bare noun phrase rather than a statement: it opens with a determiner ("a house with a
    garden", "my wife"), or is four words at most with no verb of a fact and no capital to open a sentence
    ("senior engineer", "this week")."""
    words = value.split()
    if not words:
        return True
    if words[0].lower() in _DETERMINERS:
        return True
    return len(words) <= 4 and not any(w.lower().strip(".,;") in _FACT_VERBS for w in words) \
        and not words[0][:1].isupper()


_COURTESY = re.compile(r"^(?:the user |user )?(?:says |said |wrote |is saying )?(?:thanks?|thank you|hello|hi|hey|"
                       r"greetings|good (?:morning|afternoon|evening|night)|nice to (?:meet|see) you|you'?re welcome|"
                       r"bye|goodbye|ok(?:ay)?|sure|please|sorry|cheers|no problem)\b", re.IGNORECASE)


# Words of a date (months, days, their short forms, ordinal endings): never what a value or an amount is about.
CALENDAR = frozenset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday st nd rd
th""".split())


# "Friend Kenji says Nara is a must", "Mum thinks I work too much": a report of someone's words, not a fact.
_REPORT = re.compile(r"^(?:\S+\s+){1,3}(?:says|said|thinks|thought|reckons|believes|claims|told)\b", re.IGNORECASE)


# "Is covering his shifts this week", "Am exhausted today": a state the user is in for now, not a fact to keep.
_FOR_NOW = re.compile(r"^(?:is|are|am|feels?)\b.*\b(?:today|tonight|this (?:week|morning|afternoon|evening)|"
                      r"right now|at the moment)\b", re.IGNORECASE)


def bad_value(value: str) -> str | None:
    """Why `value` cannot be a fact about the user, or None: a placeholder, a question, a courtesy, a report of
    what someone else said, a bare word, a date or number alone, a state that holds only for now (what the user
    did today is kept: "Handed in their notice today")."""
    text = value.strip()
    if re.search(r"<[^<>]{2,40}>", text):  # "<the fact>", "<user's exact words>": the prompt's shape, copied
        return "the value is a placeholder of the prompt"
    if "?" in text:
        return "the value is a question"
    if _COURTESY.match(text) or re.search(r"\bthanks? (?:you|for)\b", text, re.IGNORECASE):
        return "the value is a courtesy"
    if _REPORT.match(text):
        return "the value is what someone else said or thinks"
    if _FOR_NOW.match(text):
        return "the value is true only for now"
    words = re.findall(r"\w+", text)
    if not [w for w in words if w.isalpha() and w.casefold() not in CALENDAR]:  # "2 January 2027", "2027-03-01"
        return "the value is only a date or a number"
    if len(words) < 2 and not (words and re.fullmatch(r"[A-Za-z]{3,}s", words[0])):  # "Smokes" says something
        return "the value is a bare word"
    return None
