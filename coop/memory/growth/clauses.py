"""The user's own sentence, said of them: "I live in Lyon" -> "Lives in Lyon".

A small model reads a sentence well enough to tell a statement from a question and to say what it is about, but
writes the fact badly: a bare word ("Berlin"), a date alone, the sentence in the first person, a paraphrase that
drops the year of the car or the name of the town. So when the value it wrote cannot stand (`sentence_facts`),
the fact is written from the user's clause instead, by grammar alone: the clauses of a sentence (split where a
new subject starts: "..., so I'm ...", "...; I ...", "...: I ..."), the discourse around them dropped ("Okay,",
"Sorry, I meant", "by the way", a trailing ", not in Cork itself"), and the first person turned into the third:
"I'm" -> "Is", "I've" -> "Has", "I take" -> "Takes", "I never eat" -> "Never eats", "I grew up" -> "Grew up",
"we moved" -> "Moved", "my" -> "their", "My sister Ana is" -> "Sister Ana is". A clause with no first-person
subject gives nothing: it is not said of the user.

The result keeps every word, name and number the user said, so the evidence check passes by construction and the
fact is never more than what the user stated; whether it is a fact at all (asserted, durable, the user's) is
still judged by the model's reading and `admission`.
"""

from __future__ import annotations

import re

IRREGULAR_PAST = frozenset("""was were had did got went came made took gave saw knew thought told found left felt
kept brought bought sold grew began ran drove rode wrote spoke broke chose wore won lost met paid said sent spent
stood understood taught caught fought sat slept swam sang quit put set cut hit let read became forgot fell flew
heard held led meant sold shut threw woke""".split())
MODALS = frozenset("can could will would should must may might shall".split())
ADVERBS = frozenset("""never always also just still really usually often only mostly now even rarely sometimes
actually already recently finally currently normally generally definitely basically""".split())
# A contraction or pronoun and verb that opens a clause, and the third-person words it becomes.
OPENINGS = {"i'm not": "is not", "i am not": "is not", "i'm": "is", "i am": "is", "i've": "has", "i have": "has",
            "i'd": "would", "i'll": "will", "i don't": "doesn't", "i do not": "does not", "i can't": "can't",
            "i cannot": "cannot", "i won't": "won't", "i didn't": "didn't", "i wasn't": "wasn't",
            "i haven't": "hasn't", "i have not": "has not", "i was": "was", "we're": "are", "we've": "have",
            "we are": "are", "we have": "have"}
_OPENINGS = sorted(OPENINGS, key=len, reverse=True)
# A text in the first person: the user's own words, not yet said of them.
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Mm]y|[Mm]e|[Ww]e|[Ww]e're|[Ww]e've)\b")
_LEADING = re.compile(r"^(?:(?:ok(?:ay)?|so|well|actually|haha|lol|oh|also|and|but|yes|yeah|sorry|anyway|btw|"
                      r"by the way|i meant|i mean|just|plus|then)\b[,!.]?\s*)+", re.IGNORECASE)
_TRAILING = re.compile(r"(?:,?\s+(?:by the way|for context|at last|though|too|as well|haha|lol|please|these days|"
                       r"at this point|anyway|before you ask|just so you know|if you must know|to be honest|"
                       r"honestly|luckily|sadly|thankfully|fortunately|unfortunately))+[.!]?$|,\s+not\s+.*$",
                       re.IGNORECASE)
_SUBJECT = r"(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|it|it's|that's|they|they're|he|she|which)\b"
_SPLIT = re.compile(rf",?\s+(?:and|because)\s+(?=(?:i|i'm|i've|my|we)\b)|,?\s+(?:so|but|though|although|since)\s+|"
                    rf";\s*|,\s+(?={_SUBJECT})", re.IGNORECASE)


def clauses(sentence: str) -> list[str]:
    """The clauses of one sentence, each without the discourse around it; a lead-in before a colon ("Big change:",
    "Quick update from Berlin:") dropped."""
    text = sentence.replace("\u2019", "'").strip()
    if ":" in text:
        text = text.split(":", 1)[1]
    parts = (_TRAILING.sub("", part.strip(" ,.!")) for part in _SPLIT.split(text))
    return [part.strip(" ,.!") for part in parts if part.strip(" ,.!")]


def third_person(verb: str) -> str | None:
    """`verb` as said of someone else ("take" -> "takes", "go" -> "goes", "study" -> "studies"); a past form or
    a modal as it is; None for an adverb, whose verb comes next ("never eat")."""
    lowered = verb.lower()
    if lowered in ADVERBS:
        return None
    if lowered in IRREGULAR_PAST or lowered in MODALS or lowered.endswith("ed"):
        return verb
    if lowered in ("have", "do", "am"):
        return {"have": "has", "do": "does", "am": "is"}[lowered]
    if re.search(r"(?:s|sh|ch|x|z|o)$", lowered):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lowered):
        return verb[:-1] + "ies"
    return verb + "s"


def said_of_the_user(clause: str) -> str | None:
    """The clause as a fact about its speaker, or None when the clause has no first-person subject."""
    text = _LEADING.sub("", clause).strip()
    lowered = text.lower()
    fact = next((OPENINGS[o] + text[len(o):] for o in _OPENINGS if lowered.startswith(o + " ")), None)
    if fact is None:
        match = re.match(r"(i|we)\s+([\w'-]+)(?:\s+([\w'-]+))?(.*)$", text, re.IGNORECASE)
        if match and match.group(1).lower() == "we":
            fact = text[match.end(1):]
        elif match:
            verb = third_person(match.group(2))
            if verb is not None:
                fact = verb + text[match.end(2):]
            elif match.group(3):  # "I never eat ..." -> "Never eats ..."
                fact = f"{match.group(2)} {third_person(match.group(3)) or match.group(3)}{match.group(4)}"
        elif re.match(r"my\s+\S", text, re.IGNORECASE):  # "My sister Ana is a dentist" -> "Sister Ana is ..."
            fact = text[3:]
    if fact is None:
        return None
    fact = re.sub(r"\bmy\b", "their", fact, flags=re.IGNORECASE)
    fact = re.sub(r"\b(?:me|myself)\b", "them", fact)
    fact = re.sub(r"\bI'm\b", "they are", re.sub(r"\bI\b(?!')", "they", fact))
    fact = " ".join(fact.split()).strip(" ,.!")
    return fact[:1].upper() + fact[1:] if fact else None


# "there" as a place named before it ("I start there"), not the "there" of "there is", "there's"
_THERE = re.compile(r"\bthere\b(?!\s*(?:is|are|was|were|'s|'re)\b)", re.IGNORECASE)


# a place a clause names: "at Allegro", "in the Alfama" ("First week at Allegro done"); "there" after a verb of
# going is "to" the place ("I'll go there again": "Will go to Noma again")
_PLACE = re.compile(r"\b(?:at|in)\s+((?:the\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_GOING = re.compile(r"\b(?:go|goes|going|gone|went|come|comes|coming|came|move|moves|moving|moved|get|gets|got|"
                    r"fly|flies|flew|drive|drives|drove|travel\w*|head\w*|return\w*|walk\w*|cycle\w*|run|ran|"
                    r"back)\s+there\b", re.IGNORECASE)


# a clause whose verb's object is the clause before: "it" or "them" ("I bought a bike and I love it"), or nothing
# after a verb of starting or stopping ("I used to smoke but I quit in 2019")
_LEANS_BACK = re.compile(r"^(?:\w+\s+)?(?:\w+\s+(?:it|them)\b|(?:quit|quits|stopped|stops|gave up|gives up|"
                         r"started|starts|began|begins|finished|finishes|dropped|drops)(?:\s+(?:in|on|at|last|this|"
                         r"when|after|before|since|for|a|\d+)\b.*)?$)", re.IGNORECASE)


def _leans_back(fact: str) -> bool:
    """Whether `fact` says nothing alone: "there" with no place, or a verb whose object is the clause before."""
    return bool(_THERE.search(fact) or _LEANS_BACK.match(fact))


def facts_in(sentence: str) -> list[str]:
    """What `sentence` says of the user, a fact a clause; a clause that leans on the one before stays with it:
    "there" of a place it names ("I've accepted the Charité offer and I start there on 1 March 2027": one fact,
    since "Starts there on 1 March 2027" alone says nothing of where), "it" of what it names ("Bought a bike and
    loves it"), a verb of starting or stopping with no object of its own ("Used to smoke and quit in 2019"). When
    the clause before is not said of the user but names one place, "there" says that place ("First week at
    Allegro done, I'm a senior engineer there now": "Is a senior engineer at Allegro now")."""
    found: list[str] = []
    place = None
    for clause in clauses(sentence):
        fact = said_of_the_user(clause)
        if fact is None:
            places = list(_PLACE.finditer(clause))
            place = places[0] if len(places) == 1 else None
            continue
        if found and _leans_back(fact) and not _leans_back(found[-1]):
            found[-1] = f"{found[-1]} and {fact[:1].lower()}{fact[1:]}"
        else:
            if place is not None and len(_THERE.findall(fact)) == 1:
                fact = _there_as(fact, place)
            found.append(fact)
        place = None
    return found


def _there_as(fact: str, place: re.Match[str]) -> str:
    """`fact` with its one "there" as the place it stands for, "to" the place after a verb of going."""
    if _GOING.search(fact):
        return _THERE.sub(f"to {place.group(1)}", fact)
    return _THERE.sub(place.group(0), fact)
