"""Whether a value the model filed under a single-valued slot changes it: what the user's words say about the new
value beside the one that holds the slot (`reconcile.FactWriter` acts on the answers).

- `part_of`: the new value only repeats part of the holder ("diet: Keto" after "Has eaten keto since 2020"): a
  mention, no change.
- `carries_a_change`: the user's words hold most of the new value, or say that something changed; without either,
  a model's word alone never moves a slot ("I visited Rome" is no move from Oslo).
- `another_thing`: the new value shares no word with the holder, or names nothing where the holder names a place or
  an employer, or names only what the holder names where the slot is a place or an employer ("Loves Tartu" under
  the home city after "Lives in Tartu"), and the user's words say nothing changed: likely a different thing filed
  under the slot by mistake, kept beside it rather than replacing it.
- `says_it_ended`: a value said in words of negation or of an end, which does not take the slot when the same
  message gives it another value.

Words are read with the language's stemmer (`language.terms`) and change marks from its lexicon (`language.lexicon`);
a language without a lexicon says no change by marks, so its values are held to the words they share.
"""

from __future__ import annotations

from coop.memory.growth.candidate import Candidate
from coop.memory.growth.overlap import MIN_SHARED, coverage, held, shared_content
from coop.memory.language.lexicon import marks, negated
from coop.memory.language.terms import names, numbers, terms
from coop.memory.slots import Topic, topic_of
from coop.memory.storage.items import Item

CARRIED = 0.5  # the share of a new slot value's terms the user's words hold for it to change the slot unannounced
CHANGE_MARKS = frozenset({"change", "no_longer"})


def says_it_changed(candidate: Candidate) -> bool:
    """Whether the sentence the value was read from says something changed ("moved", "now", "maintenant")."""
    return bool(marks(candidate.sentence or candidate.evidence or "", candidate.language) & CHANGE_MARKS)


def carries_a_change(candidate: Candidate) -> bool:
    """Whether the user's words carry a new value of a slot: they hold most of it (`CARRIED`: "I live in Oslo"),
    or say that something changed (`CHANGE_MARKS`). "I visited Rome" does neither, so "Lives in Rome" never
    replaces "Lives in Oslo" on a model's word."""
    said = candidate.sentence or candidate.evidence or ""
    return says_it_changed(candidate) or coverage(
        candidate.value, terms(candidate.evidence or said, candidate.language), candidate.language) >= CARRIED


def another_thing(candidate: Candidate, holder: Item) -> bool:
    """Whether a new value of a slot shares no word with the value that holds it (the slot's own label aside) while
    the user's words say nothing changed. Values of one slot are said in one frame ("Lives in Tartu", "Lives in
    Oslo"); one that shares nothing ("Drives a pickup" under the job's slot) is likely something else a model
    misfiled, and replacing the holder with it would lose a true value (docs/benchmarks.md has the counts). In
    an unspaced script a character pair in common counts, unless it is Hiragana alone (`overlap.shared_content`)."""
    if says_it_changed(candidate):
        return False
    return not shared_content(candidate.value, holder.text, candidate.language) - _label(candidate) or \
        _names_nothing_in_its_place(candidate, holder) or _names_only_the_holders(candidate, holder)


def _names_nothing_in_its_place(candidate: Candidate, holder: Item) -> bool:
    """Whether the holder names something ("Works at Acme Labs", "Lives in Oslo") and the new value names nothing
    and gives no number: a new value of the same kind names its own ("Works at Harbour Tools"), so one that shares only
    the frame ("Works as a designer") is likely the job filed under the employer's slot, or the reverse."""
    language = candidate.language
    return bool(names(holder.text, language)) and not names(candidate.value, language) and \
        not numbers(candidate.value, language)


def _names_only_the_holders(candidate: Candidate, holder: Item) -> bool:
    """Whether, under a slot that holds a place or an employer (the slot is its name), the new value names only
    what the holder names: something else said about the same place ("Loves Tartu" under the home city after
    "Lives in Tartu"), not a new value of the slot."""
    slot = _named_slot(candidate)
    named = names(_unlabelled(candidate.value, slot), candidate.language) if slot is not None else frozenset()
    return bool(named) and named <= names(holder.text, candidate.language)


def may_have_held(candidate: Candidate, item: Item) -> bool:
    """Whether a fact without a key may be the former value of the slot the candidate is the first value of: under
    a slot that holds a place or an employer, only one that names something ("Works as an engineer" was never the
    employer's value, "Works at Acme Labs" may have been)."""
    return _named_slot(candidate) is None or bool(names(item.text, candidate.language))


def _named_slot(candidate: Candidate) -> Topic | None:
    """The candidate's slot when it holds a place or an employer (`slots.Topic.named`), a person's own too."""
    slot = topic_of(candidate.category, candidate.key)
    return slot if slot.named else None


def part_of(candidate: Candidate, holder: Item) -> bool:
    """Whether a new value of a slot only repeats part of what holds it: every word of it that could carry a new
    value (a number, a name, a term of `MIN_SHARED` characters or more, the slot's own label aside) is in the
    holder's text. A short value a model cut from a longer fact is the same fact, not a change."""
    label = _label(candidate)
    wanted = {t for t in terms(candidate.value, candidate.language) if (len(t) >= MIN_SHARED or t.isdigit())
              and t not in label} | numbers(candidate.value, candidate.language)
    support = set(terms(holder.text, candidate.language)) | numbers(holder.text, candidate.language)
    return bool(wanted) and all(held(t, support) for t in wanted)


def says_it_ended(candidate: Candidate) -> bool:
    """Whether a slot's value is said in words of negation or of an end ("Ne vit plus à Lyon"): not the value
    that holds the slot when the same message gives it another (`FactWriter.plan_exchange`)."""
    return candidate.key is not None and negated(candidate.value, candidate.language)


def _unlabelled(value: str, slot: Topic) -> str:
    """The value without the slot's name before it ("home city: Oslo" -> "Oslo"), as verify writes a bare one."""
    label = f"{slot.name.replace('_', ' ')}: "
    return value[len(label):] if value.casefold().startswith(label) else value


def _label(candidate: Candidate) -> set[str]:
    """The words of the slot's own name ("home city"), which a bare value stored under it carries."""
    return set(terms((candidate.key or "").replace("_", " "), candidate.language))
