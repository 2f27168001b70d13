"""coop verifies what the model points at: a note becomes a candidate fact only when the user's own words carry it.

Checks, in order, each refusal counted with its reason (`refusals.py`):
- `evidence`: the note cites clauses that exist and are the user's own (not quoted, pasted, code or a link: the
  parse marks those), and its value rests on them: every number and name in the value is in the cited clauses
  (any script), and most of the value's words are (their terms, weighed by length, so "is" and "a" count little).
  A clause that only leans on what came before ("Yes", "Oui, c'est ça") may borrow the user's own earlier words,
  never the assistant's: a "yes" never stores what the assistant claimed about the user.
- `mood`: the modality is stated, or planned (kept as a plan; an instruction is kept as one); a clause with a
  question mark is asked, whatever the model says, unless it asks for an answer for good and supposes nothing
  ("Could you always answer in French?").
- `holder`: a fact of the user's does not rest only on clauses that go on after the user's statement about a
  thing ("..., it is a quiet town") or with a consequence the user is not in (`holder.about_something_else`).
  A fact the note says is the user's rests only on clauses that open with someone else, in a language
  whose lexicon says so (`holder.py`): it is filed under the person they name ("My sister lives in ..." ->
  "Sister: lives in ..."), and refused when they name no one ("he", "they"). Under a topic of the user's own
  people (partner, children) such a clause is the user's when the value names them ("Wife Noor is a nurse").
- `polarity`: a value that holds keeps the negation of the cited clause that holds it, and adds none; a "no
  longer" or "never" rests on words that say so (a negation, an end, a past habit or a change, in the language's
  lexicon), since it retires what memory holds.
- `instruction`: a standing instruction is given to the assistant (not only thanks), not said of the user, and is
  not a request about material its message or the user's message before it brings (code, a paste, a quotation, a
  link) unless it says it is for good.
- `value`: the value is a statement (not a placeholder of the prompt, not a question, not only a greeting or
  thanks), a fact's does not speak to the assistant ("You are so kind"), and neither is only the words that ask
  ("s'il vous plaît", "from now on").
A value the model wrote in another language than its clauses is replaced by the clause(s) as the user wrote them,
since it cannot be checked against them (`wording.py`). The topic is the model's, but a topic of a name or an age
holds only a name or a number in a short frame (stored as itself: "name: Aurélien"), and a slot only a short value:
a sentence under such a topic adds beside it.
The language's lexicon (`language.lexicon`), where there is one, breaks ties in that language only: a marker of
a condition, a dream, a story or irony in the sentence, of doubt, a wish, a report or a past habit in the clause,
turns a note the model calls stated into a refusal; it never refuses text of another language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from coop.errors import UsageError
from coop.memory.growth.holder import (
    about_something_else,
    all_someone_elses,
    filed_under,
    names_them,
    others,
    someone_elses,
    their_holder,
)
from coop.memory.growth.overlap import coverage, held
from coop.memory.growth.pointing import Listed, Listing, Note
from coop.memory.growth.refusals import refuse
from coop.memory.growth.wording import (
    anchor_of,
    bare,
    only_how_it_is_asked,
    only_small_talk,
    to_the_assistant,
    untranslated,
    with_its_noun,
    with_its_subject,
)
from coop.memory.kinds import INSTRUCTION
from coop.memory.language.lexicon import has_lexicon, marked, marks, negated, normalise
from coop.memory.language.parse import parse
from coop.memory.language.scripts import han_or_katakana_runs, has_unspaced, noun_runs, spaced_words, word_count
from coop.memory.language.terms import names, numbers, terms
from coop.memory.slots import TOPICS, slot_for
from coop.memory.text import check_text
from coop.privacy.secrets import mask

KEPT = ("stated", "planned")
COVERAGE = 0.35       # the share of a value's terms (weighed by length) its clauses must hold
LEANING_TERMS = 3     # a cited text of at most this many terms leans on what the user said before ("Yes, I do")
MAX_FRAME_TERMS = 3   # the words a name or a number may be framed in ("Is called", "Is ... years old")
SLOT_WORDS = 8        # a longer value is a story, not the one thing a slot holds (`word_count`: any script)
MAX_VALUE_CHARS = 500
_QUESTION = re.compile(r"[?？¿؟]")
_PLACEHOLDER = re.compile(r"<[^<>]{2,40}>")
# marks that make a whole sentence not an assertion, and those that do it to the clause that holds them
SENTENCE_MARKS = frozenset({"condition", "dream", "fiction", "irony"})
CLAUSE_MARKS = frozenset({"doubt", "wish", "report", "question"})
# the marks of words that say something ended or is not so: a "no longer" or "never" rests on one of them
ENDING_MARKS = frozenset({"negation", "no_longer", "past", "change"})
_SEGMENT = re.compile(r"[,;:，、；：]")


@dataclass(frozen=True)
class Verified:
    """A note that passed, with what the write pipeline needs to file it."""

    value: str
    category: str
    key: str | None
    topic: str
    about: str | None
    polarity: str
    plan: bool
    evidence: str          # the cited clauses, as the user wrote them
    sentence: str          # the sentence(s) holding them
    language: str
    messages: tuple[int, ...]  # the indexes in the listing of the messages the clauses are from
    spans: tuple[tuple[int, int, int], ...]  # the cited clauses: (message index, start, end)


def verify(note: Note, listing: Listing, earlier: Sequence[str] = ()) -> Verified | None:
    """The note as the pipeline may file it, or None (refused, logged, counted). `earlier` holds the user's own
    earlier messages of the session (never the assistant's), which a leaning clause may rest on."""
    topic = TOPICS[note.topic]
    if note.kind == "instruction" and not topic.instruction and topic.name != "other":
        note = replace(note, kind="fact")  # "instruction" about a diet: the topic says what it is, and a fact is safer
    category = INSTRUCTION if note.kind == "instruction" else topic.category
    cited = [listing.get(clause_id) for clause_id in dict.fromkeys(note.clauses)]
    if not cited or any(item is None for item in cited):
        return _refused("evidence", "the note cites a clause the message does not have", category, note.value)
    items = [item for item in cited if item is not None]
    if any(not item.clause.own for item in items):
        source = next(item.clause.source for item in items if not item.clause.own)
        return _refused("evidence", f"the note cites {source} text, not the user's own words", category, note.value,
                        items)
    try:  # empty, NUL, a lone surrogate, too long: this note only
        value = " ".join(check_text(note.value, "fact", MAX_VALUE_CHARS).split()).rstrip(".。")
    except UsageError as exc:
        return _refused("value", exc.message, category, note.value, items)
    if _PLACEHOLDER.search(value) or _QUESTION.search(value):
        return _refused("value", "the value is a placeholder or a question, not a statement", category, value, items)
    language = items[0].clause.language
    value, untied = untranslated(value, items, language)
    if only_small_talk(value, language):
        return _refused("value", "the value is a greeting or thanks, nothing about the user", category, value, items)
    if note.kind == "fact" and to_the_assistant(value, language):
        return _refused("value", "the value speaks to the assistant, not of the user", category, value, items)
    if note.kind == "fact" and only_how_it_is_asked(value, language):  # "From now on", noted as a fact
        return _refused("value", "the value only says how or when the user asks, not what", category, value, items)
    value = with_its_subject(value, items, language)
    items = _widened(value, items, listing, language, earlier, topic.anchored, note.about)
    if note.kind == "fact" and note.about is None and not all_someone_elses(items, listing, language):
        value = with_its_noun(value, items, language, topic.named)  # someone else's: named by `filed_under`
    said = " ".join(item.clause.text for item in items)
    sentences = _sentences(items, listing)
    holding = _holding(value, items, language)
    why = _not_asserted(note, items, holding, listing, language)
    if why is not None:
        return _refused("mood", why, category, value, items)
    why = _not_grounded(value, said, language, earlier, topic.anchored)
    if why is None and note.about:
        support = set(terms(said, language)).union(*(terms(text, language) for text in earlier))
        if any(not held(name, support) for name in names(note.about, language)):
            why = "the note names someone the user did not"
    if why is not None:
        return _refused("evidence", why, category, value, items)
    if note.about is None and note.kind == "fact" and about_something_else(holding, listing, language):
        return _refused("holder", "the user's words go on about something else, not the user", category, value,
                        items)
    if note.about is None and topic.kin and someone_elses(value, items, listing, language):
        return _refused("holder", "the user's words speak of someone else", category, value, items)
    if note.about is None and not topic.kin and (texts := others(items, listing, language)) is not None:
        # "My neighbour Ravi is a pilot": filed under the neighbour, never the user's job or the user's own fact
        who = their_holder(texts, language)
        if who is None:
            return _refused("holder", "the user's words speak of someone else, and name no one", category, value,
                            items)
        note, value = replace(note, about=who), filed_under(value, who, language)
    if note.polarity == "holds" and not _copied_whole(value, said, language) and \
            negated(value, language) != negated(_closest(value, items, language), language):
        return _refused("polarity", "the value turns the negation of the user's words around", category, value, items)
    if note.polarity != "holds" and has_lexicon(language) and not marks(" ".join(sentences), language) & ENDING_MARKS:
        # "I ran a race in Oslo" called "no longer lives in Oslo" would retire the user's true city
        return _refused("polarity", "the user's words do not say it ended or is not so", category, value, items)
    if note.kind == "instruction":
        asked = " ".join(item.clause.text for item in _holding(value, items, language))  # `value` may be filed
        why = _not_an_instruction(said, asked, language) or _for_the_material_at_hand(items, listing, sentences,
                                                                                      language, earlier)
        if why is not None:
            return _refused("instruction", why, INSTRUCTION, value, items)
        if only_how_it_is_asked(value, language):
            return _refused("value", "the value only says how the user asks, not what", INSTRUCTION, value, items)
        topic = topic if topic.instruction else TOPICS["instruction"]
    elif topic.instruction:
        topic = TOPICS["other"]  # a fact filed under an instruction's topic is still a fact, never an instruction
    elif topic.anchored and not _a_name_or_number(value, said, language):
        topic = TOPICS["other"]  # "name" for a sentence with no name in it: the model's topic is wrong
    category, key = slot_for(topic, note.about)
    if note.kind == "fact" and key is not None and (untied or word_count(value) > SLOT_WORDS):
        key = None  # a story, or words standing for a translation, adds beside a slot: only its one value may change it
    anchor = anchor_of(value, language, topic.name == "age") if note.kind == "fact" and topic.anchored and not untied \
        else None
    copied = note.kind == "fact" and topic.name != "other" and not untied and bare(value, said, language)
    if anchor or copied:  # "home city: Oslo", "name: Jo" for "Is called Jo", "age: 51" for "J'ai 51 ans"
        value = f"{topic.name.replace('_', ' ')}: {anchor or value}"
    if note.about and not names_them(value, note.about, language):
        value = f"{note.about[:1].upper()}{note.about[1:]}: {value}"  # so that the profile says whose it is
    return Verified(value=mask(value), category=category, key=key, topic=topic.name, about=note.about,
                    polarity=note.polarity, plan=note.modality == "planned" and note.kind == "fact",
                    evidence=mask(said), sentence=mask(" ".join(sentences)), language=language,
                    messages=tuple(dict.fromkeys(item.message for item in items)),
                    spans=tuple(item.place for item in items))


def _refused(reason: str, why: str, category: str, text: str, cited: Sequence[Listed] = ()) -> Verified | None:
    """None, once the refusal is logged and counted, with the places of the clauses it cited."""
    refuse(reason, why, category=category, text=text, spans=[item.place for item in cited])
    return None


def _sentences(items: Sequence[Listed], listing: Listing) -> list[str]:
    """The sentences that hold the cited clauses, once each, in order."""
    found: dict[tuple[int, int], str] = {}
    for item in items:
        parsed = listing.parses[item.message]
        found.setdefault((item.message, item.clause.sentence), parsed.sentence_of(item.clause).text)
    return list(found.values())


def _not_asserted(note: Note, items: Sequence[Listed], holding: Sequence[Listed], listing: Listing,
                  language: str) -> str | None:
    """Why the user did not assert what the note says, or None: the model's own modality first, then the forms
    that say so whatever it claims (a question mark in a clause that holds the value; the language's markers: a
    condition, a dream, a story or irony in the cited clauses or a clause before them in their sentence; doubt, a
    wish, a report or a question in the cited clauses; a past habit for a note that says it holds). A "reported"
    the language's lexicon does not bear out (no one else speaks or is the subject) is the user's own statement:
    small models call what the user reports of themselves "reported"."""
    if note.modality not in KEPT and not (note.modality == "reported" and _the_users_report(items, listing, language)):
        return f"the user did not state it ({note.modality or 'no modality given'})"
    asked = any(_QUESTION.search(item.clause.text) for item in holding)
    said = marks(" ".join(item.clause.text for item in items), language)
    if asked and not (note.kind == "instruction" and "standing" in said and "condition" not in said):
        # "Could you always answer in French?" sets how to answer; "Would you always ..., if I asked?" supposes
        return "the user asked it"
    cited = set().union(*(marks(item.clause.text, language) for item in items))
    leading = set().union(*(marks(clause.text, language) for item in items for clause in listing.before(item)))
    found = (cited | leading) & SENTENCE_MARKS | cited & CLAUSE_MARKS - {"question", "report"}
    # a report covers what its own clause says ("my coach told me to rest, | so I swim now" is the user's)
    found |= set().union(*(marks(item.clause.text, language) for item in holding)) & {"report"}
    if any((before := listing.before(item)) and _introduces_a_report(before[-1].text, language)
           for item in holding):  # "Meine Mutter sagt, | ich soll ..."
        found.add("report")
    # a clause opens a question only at the start of its sentence: "où j'habite", ", who lives in ..." do not
    if any("question" in marks(item.clause.text, language) and not listing.before(item) for item in holding):
        found.add("question")
    if note.kind == "instruction":  # "Answer briefly unless I ask for detail", "Quiero que me respondas en español"
        found -= {"condition", "wish"}
    if found:
        return f"the user's words say it is not so for now ({', '.join(sorted(found))})"
    if note.polarity == "holds" and "past" in cited and not negated(note.value, language):
        return "the user said it of the past"
    return None


def _widened(value: str, items: list[Listed], listing: Listing, language: str, earlier: Sequence[str],
             anchored: bool, about: str | None) -> list[Listed]:
    """The cited clauses, with the user's own clauses of the same message that hold the rest of the value when the
    cited ones do not (a small model cites the clause before the one with the date): every check after this one
    reads all of them, so a question or a condition among them still refuses the note. A clause about someone
    else is never added to a note about the user ("I live in Lyon. My sister lives in Berlin.")."""
    if _not_grounded(value, " ".join(item.clause.text for item in items), language, earlier, anchored) is None:
        return items
    messages = {item.message for item in items}
    own = [i for i in listing.listed if i.message in messages and i.clause.own and i not in items
           and (about is not None or not all_someone_elses([i], listing, language))]
    holding = _holding(value, own, language, fallback=False)
    widened = sorted([*items, *holding], key=lambda item: (item.message, item.clause.start))
    said = " ".join(item.clause.text for item in widened)
    return widened if holding and _not_grounded(value, said, language, earlier, anchored) is None else items


def _introduces_a_report(text: str, language: str) -> bool:
    """Whether a clause ends with the words that report someone's speech ("My doctor says,"): the clause after
    it is what they said. "My doctor told me to eat more, so I ..." goes on past them, and its next clause is the
    user's own."""
    words = marked(text, language, "report")
    if words is None:
        return False
    flat = normalise(text)
    after = flat[flat.find(words) + len(words):]
    return len(spaced_words(after)) <= 1 and not has_unspaced(after)


def _the_users_report(items: Sequence[Listed], listing: Listing, language: str) -> bool:
    """Whether clauses the model calls "reported" are the user's own telling, in a language with a lexicon: no
    report marker in them or before them in their sentence, and none opens with someone else as its subject."""
    if not has_lexicon(language):
        return False
    found = set().union(*(marks(item.clause.text, language) for item in items))
    leading = set().union(*(marks(clause.text, language) for item in items for clause in listing.before(item)))
    return not (found & {"report", "other"} or "report" in leading)


def _holding(value: str, items: Sequence[Listed], language: str, fallback: bool = True) -> list[Listed]:
    """The clauses that hold part of `value` (a term, a name or a number): a question cited beside the clause that
    states the fact ("I'm Ana. How are you?") does not make the fact asked. All of them when none does (unless
    `fallback` is off)."""
    wanted = set(terms(value, language)) | numbers(value, language)
    found = [item for item in items
             if any(held(t, set(terms(item.clause.text, language)) | numbers(item.clause.text, language))
                    for t in wanted if len(t) >= 3 or t.isdigit() or has_unspaced(t))]
    return found or (list(items) if fallback else [])


def _a_name_or_number(value: str, said: str, language: str) -> bool:
    """Whether `value` is a name or a number the user said in a short frame ("Is called Claire", "Is 47"): what
    a topic of a name or an age holds (`slots.Topic.anchored`)."""
    anchors = names(value, language) | numbers(value, language)
    if has_unspaced(value):
        anchors |= {t for run in han_or_katakana_runs(value) if run in said for t in terms(run, language)}
    return bool(anchors) and len([t for t in terms(value, language) if t not in anchors]) <= MAX_FRAME_TERMS + 1


def _not_grounded(value: str, said: str, language: str, earlier: Sequence[str], anchored: bool = False) -> str | None:
    """Why `value` does not rest on the user's words `said`, or None. A name may come from the user's own earlier
    words ("she" for the sister they named); a text that only leans on what came before ("Yes, I do") may take all
    of those words as support; the assistant's words never are. A value of a topic that is a name or a number
    (`slots.Topic.anchored`) may frame it in a few words of its own ("Is called Claire" for "I'm Claire")."""
    support = set(terms(said, language))
    before = set().union(*(terms(text, language) for text in earlier)) if earlier else set()
    leaning = len(support) <= LEANING_TERMS
    said_numbers = numbers(said, language)
    if leaning:
        support |= before
        said_numbers |= frozenset().union(*(numbers(text, language) for text in earlier))
    if numbers(value, language) - said_numbers:
        return "the value has a number the user did not say"
    named = names(value, language)
    if any(not held(name, support | before) for name in named):
        return "the value has a name the user did not say"
    if not anchored and a_noun_not_written(value, " ".join([said, *earlier])):
        return "the value has a word the user did not write"
    borrowed = {name for name in named if not held(name, support)}  # names the user said before: not counted
    wanted = [t for t in terms(value, language) if t not in borrowed]
    anchors = named | numbers(value, language)
    if anchored and has_unspaced(value):  # a name in Han or Kana the user wrote: "遥香" in "遥香です"
        anchors |= {t for run in han_or_katakana_runs(value) for t in terms(run, language) if run in said}
    if anchored and anchors and len([t for t in wanted if t not in anchors]) <= MAX_FRAME_TERMS:
        return None
    weight = sum(len(t) for t in wanted)
    if not weight or sum(len(t) for t in wanted if held(t, support)) / weight < COVERAGE:
        return "the value is not in the user's words"
    return None


def a_noun_not_written(value: str, written: str) -> bool:
    """Whether a run of two or more kanji or katakana in `value` (a noun: "東京", "薬剤師") is not in the user's
    text: what a capitalised name is to `names`, where writing has no capitals ("東京に住んでいる" for "大阪に住んで
    います" holds most of its character pairs). Numerals are read by `numbers`, so they do not join a run; a topic
    of a name frames it in its own noun ("名前は遥香") and is checked by its anchors instead."""
    return any(run not in written for run in noun_runs(value))


def _copied_whole(value: str, said: str, language: str) -> bool:
    """Whether `value` is the user's cited words as written, negations and all ("Call me Jo, not Johanna" over two
    clauses): a copy cannot turn a negation around, while the clause that holds most of it may have none."""
    flat, words = normalise(value).strip(" .。!！"), normalise(said)
    return bool(flat) and flat in words and negated(value, language) == negated(said, language)


def _closest(value: str, items: Sequence[Listed], language: str) -> str:
    """The cited words that hold most of `value` ("j'habite à Rennes maintenant" for "Rennes", not "je n'habite
    plus à Brest" beside it): the one whose negation the value must keep. A clause's parts between commas count
    too, since a clause may hold both ("I quit smoking, I run now"); of two that hold as much, the shorter."""
    texts = [item.clause.text for item in items]
    texts += [part for text in texts for part in _SEGMENT.split(text) if part.strip() and part != text]
    return max(texts, key=lambda text: (coverage(value, terms(text, language), language), -len(text)))


def _not_an_instruction(said: str, holding: str, language: str) -> str | None:
    """Why the cited words are not an instruction to the assistant, or None: they speak of the user in the first
    person and not to the assistant ("I always answer e-mails in English"), or say nothing to it at all (no "you",
    no imperative of the assistant's work, no "please" or "from now on": "Siempre tomo el tren"), in a language
    whose lexicon says so; or the words that hold the value thank or greet it and ask nothing ("Thanks for your
    patience", cited beside the request that follows it: no imperative, no "from now on")."""
    found = marks(said, language)
    if "self" in found and "addressee" not in found:
        return "the user's words speak of themselves, not to the assistant"
    if "social" in (held_marks := marks(holding, language)) and not held_marks & {"directive", "standing"}:
        return "the user's words thank or greet the assistant, and ask nothing"
    if has_lexicon(language) and not found & {"addressee", "directive"}:
        return "the user's words do not address the assistant"
    return None


@lru_cache(maxsize=4)
def _brings_material(text: str) -> bool:
    """Whether a message holds material not the user's own; parsed once however many notes of a reply ask."""
    return any(not clause.own for clause in parse(text).clauses)


def _for_the_material_at_hand(items: Sequence[Listed], listing: Listing, sentences: Sequence[str],
                              language: str, earlier: Sequence[str] = ()) -> str | None:
    """Why the cited words are a request for this one answer, or None: their message, or the user's one before,
    brings material not the user's own (code, a paste, a quotation, a link), and no word of their sentences says
    it is for good ("always", "from now on"): "write tests for it" under or after a pasted function. A language
    with no lexicon cannot say "for good", so there it is refused too (one lost costs less than one never given)."""
    material = any(not clause.own for message in {item.message for item in items}
                   for clause in listing.parses[message].clauses) or any(map(_brings_material, earlier[-1:]))
    if material and "standing" not in marks(" ".join(sentences), language):
        return "a request about the material the message brings, not one for good"
    return None
