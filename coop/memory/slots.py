"""The table that decides changes: every topic a fact may be filed under, the (category, key) it is stored in, and
whether it holds one value at a time.

A single-valued topic (where the user lives, their employer, job, diet, partner, name, age, the language to answer
in, ...) is a slot: a stated new value supersedes the one that holds it, with the old value kept as history. A
many-valued topic (hobbies, pets, languages spoken, the form of answers: units, spelling, emojis, each a wish of
its own, ...) adds a new fact unless it repeats one. The model points at a topic from this table (an enum in its
schema); nothing else decides where a fact is filed, so a change meets the fact it replaces by its slot, not by
the words the two happen to share.

A fact about someone else is filed under that person: the topic's category with the key `<person>.<slot>` for a
single-valued topic ("sister ana.home_city"), so the sister's move replaces the sister's city and never the
user's, and no key for a many-valued one.

An MCP host's account of a slot the user's own words hold is kept beside it under the host's mark (`host_key`:
"host:home_city"), one per slot: the host may change its own account, never the user's. Both fill the slot
(`slot_of`), so the two are seen as one slot's rival values (`coop/memory/retrieval/contested.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coop.memory.kinds import GENERAL, INSTRUCTION


@dataclass(frozen=True)
class Topic:
    name: str
    category: str
    single: bool = False      # one value at a time: the topic's name is the slot's key
    anchored: bool = False    # its value is a name or a number in a short frame ("Is called Claire", "Is 47")
    kin: bool = False         # the user's own people: said in a clause about them ("My wife Noor is ...")
    named: bool = False       # its value names a place or an organisation ("Lives in Oslo", "Works at Acme")

    @property
    def key(self) -> str | None:
        return self.name if self.single else None

    @property
    def instruction(self) -> bool:
        return self.category == INSTRUCTION


_TABLE = (
    Topic("name", "identity", True, True), Topic("age", "identity", True, True),
    Topic("home_city", "location", True, named=True), Topic("hometown", "location", True, named=True),
    Topic("home", "location"),
    Topic("employer", "work", True, named=True), Topic("occupation", "work", True), Topic("work", "work"),
    Topic("school", "education", True, named=True), Topic("education", "education"),
    Topic("partner", "family", True, kin=True), Topic("children", "family", kin=True),
    Topic("family", "family", kin=True),
    Topic("pet", "pets"), Topic("diet", "diet", True), Topic("food", "diet"),
    Topic("allergy", "health"), Topic("health", "health"), Topic("medication", "health"),
    Topic("language", "languages"), Topic("hobby", "hobbies"), Topic("preference", "preferences"),
    Topic("possession", "possessions"), Topic("plan", "plans"), Topic("date", "dates"), Topic("money", "finance"),
    Topic("answer_language", INSTRUCTION, True), Topic("answer_length", INSTRUCTION, True),
    Topic("answer_format", INSTRUCTION), Topic("call_me", INSTRUCTION, True, True),
    Topic("instruction", INSTRUCTION), Topic("other", GENERAL),
)
TOPICS: dict[str, Topic] = {topic.name: topic for topic in _TABLE}
FACT_TOPICS = tuple(t.name for t in _TABLE if not t.instruction)
INSTRUCTION_TOPICS = tuple(t.name for t in _TABLE if t.instruction)

# Keys people and other assistants give a slot under another name (`coop memory add --key city`, an import, an
# MCP host): each names the slot it is an alias of. Keys are code identifiers, not the user's language.
_ALIASES = {
    "home_city": "city current_city residence location lives_in living_city place_of_residence home_location "
                 "current_location",
    "employer": "company workplace work_place current_employer works_at job_company",
    "occupation": "job profession job_title role position career current_job",
    "diet": "dietary_preference diet_type dietary_restriction eating_habits dietary_preferences",
    "partner": "spouse wife husband girlfriend boyfriend significant_other",
    "name": "preferred_name first_name",
    "answer_language": "language_of_answers reply_language response_language",
}
_SLOT_OF = {alias: slot for slot, aliases in _ALIASES.items() for alias in aliases.split()}
_ID = re.compile(r"^(?:id_?|fact_?|f_?)?\d+$")
HOST_MARK = "host:"


def canonical_key(key: str | None) -> str | None:
    """The slot a key names (its alias resolved), or the key itself; None for none, or a fact's id ("f12")."""
    if not key or _ID.match(key):
        return None
    person, dot, slot = key.rpartition(".")
    slot = _SLOT_OF.get(slot, slot)
    return f"{person}.{slot}" if dot else slot


def host_key(key: str) -> str:
    """The key an MCP host's account of slot `key` is stored under, beside the fact that holds it."""
    return key if key.startswith(HOST_MARK) else HOST_MARK + key


def slot_of(category: str | None, key: str | None) -> tuple[str, str] | None:
    """The single-valued slot a stored fact fills: its category and the slot its key names (an alias resolved, a
    host's account counted as the slot it speaks of); None for a fact with no key. The write path treats every
    key as a slot (one active fact per key), so a key outside the table is a slot too."""
    if not key:
        return None
    slot = canonical_key(key.removeprefix(HOST_MARK))
    return ((category or GENERAL), slot) if slot else None


def spellings(slot: str) -> list[str]:
    """Every stored key that may fill `slot`: the slot, its aliases, and a host's account of each."""
    person, dot, name = slot.rpartition(".")
    names = [name, *_ALIASES.get(name, "").split()]
    keys = [f"{person}.{n}" if dot else n for n in names]
    return keys + [host_key(k) for k in keys]


def kept_key(a: str, b: str) -> str:
    """Of two keys of one slot, the one a fact that holds it keeps: the user's before a host's account (`host_key`),
    then the slot's own name before an alias."""
    return min((a, b), key=lambda k: (k.startswith(HOST_MARK), canonical_key(k) != k, k))


def topic_of(category: str, key: str | None) -> Topic:
    """The topic a (category, key) is filed under: the slot its key names, else the category's many-valued topic,
    else "other". A fact written by the user or a host (no topic of its own) is decided by the same table."""
    slot = canonical_key(key)
    if slot is not None:
        found = TOPICS.get(slot.rpartition(".")[2])
        if found is not None and found.single and found.category == category:
            return found
    return next((t for t in _TABLE if t.category == category and not t.single), TOPICS["other"])


def slot_for(topic: Topic, about: str | None) -> tuple[str, str | None]:
    """The (category, key) a fact of `topic` is stored under: the topic's own slot for the user, `<person>.<slot>`
    for someone else (`about`, lower-cased), no key for a many-valued topic."""
    if topic.key is None:
        return topic.category, None
    if about:
        person = " ".join(about.casefold().replace(".", " ").split())[:60]
        return topic.category, f"{person}.{topic.key}"
    return topic.category, topic.key
