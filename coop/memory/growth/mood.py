"""What the user did with the words a fact quotes: asserted it, or asked, supposed, weighed, denied or reported it.

Only an assertion is a fact about the user. The check reads the user's sentence around the quote, not the model's
word for it, since a small model extracts "Lives in Berlin" from "Should I move to Berlin?" as readily as a
hostile one does. The rules, each on the sentence (or the clause) that holds the quote:
- question: the sentence ends with "?", or opens with a question word and has no full stop ("should I move").
- hypothetical: a conditional or a wish anywhere in the sentence ("if", "unless", "suppose", "imagine", "what
  if", "in case", "let's say", "wish"). A fact from "I'd live in Lisbon if I could" is not where the user lives.
- considering: a plan still being weighed ("thinking of", "considering", "might", "maybe", "perhaps", "not sure",
  "wondering", "tempted"). It may be kept as a plan (the fact says so: "Is considering moving to Berlin"),
  never as the thing itself, and never changes another fact (`reconcile.py`).
- negated: the clause around the quote and the fact disagree on negation ("I don't live in Berlin" never gives
  "Lives in Berlin"; nor does "I live in Berlin" give "Does not live in Berlin").
- reported: someone else is the subject or the speaker ("my friend lives in Rome", "Ana said she moved", "she
  is a nurse") and the fact does not name them: it would make their life the user's. "My sister Ana is a
  dentist" gives "Sister Ana is a dentist", never "Is a dentist". "my X" is someone else only when X is a
  person (`RELATIONS`): "my job", "my cat", "my oboe" are the user's.
- joke, and whatever else the extractor itself marks as not asserted (`stance` in its reply).
Instructions to the assistant are judged by `instructions.py` instead: "if I ask for code, use Python" is one.
"""

from __future__ import annotations

import re

from coop.memory.growth.evidence import (
    NEGATIONS,
    content_words,
    find_quote,
    held,
    holding_sentence,
    names_and_numbers,
    same_word,
)

ASSERTED, PLAN = "asserted", "plan"
NOT_ASSERTED = ("question", "hypothetical", "considering", "negated", "reported", "joke")

QUESTION_STARTS = frozenset("""should would could can do does did is are am was were will shall what where when why
how which who whom whose may""".split())
CONDITIONALS = frozenset("if unless suppose supposing imagine imagining hypothetically hypothetical pretend wish "
                         "wished assuming".split())
CONDITIONAL_PHRASES = (("what", "if"), ("in", "case"), ("let", "s", "say"), ("say", "that"))
JOKING = frozenset("jk kidding joking".split())  # said outright; a "lol" alone may laugh at something true
CONSIDERING = frozenset("thinking considering consider might maybe perhaps possibly wondering debating tempted "
                        "toying undecided unsure weighing".split())
CONSIDERING_PHRASES = (("not", "sure"), ("no", "idea"), ("haven", "t", "decided"), ("have", "not", "decided"))
PLAN_WORDS = frozenset("consider considering thinking might may maybe plan plans planning wants hoping hopes "
                       "possibly undecided weighing idea".split())
REPORTING = frozenset("said says told tells claims claimed reckons thinks thought believes believed heard "
                      "according".split())
FIRST_PERSON = frozenset("i me we us i'm i've i'd i'll".split())
THIRD_PERSON = frozenset("he she they his her their who whose".split())  # "a brother, Rui, who lives in ..."
RELATIONS = frozenset("""mother mom mum father dad parent parents sister brother sibling wife husband partner
spouse friend friends son daughter child children kid kids boss colleague coworker cousin aunt uncle grandmother
grandma grandfather grandpa neighbour neighbor roommate flatmate girlfriend boyfriend fiance fiancee niece nephew
family teacher doctor""".split())
THIRD_VERBS = frozenset("is was has wants lives works says thinks likes loves hates plays goes studies "
                        "moved started got".split())
LEADING = frozenset("and but so also well oh ok okay actually btw now anyway yeah yes no then plus".split())
_TOKEN = re.compile(r"\w+|[,;:()\u2013\u2014]|(?<!\w)-(?!\w)")
_CLAUSE_WORDS = frozenset("but and because although though while whereas so since".split())


def _tokens(text: str) -> list[str]:
    flat = re.sub(r"n't\b", " not", text.casefold().replace("\u2019", "'"))
    return _TOKEN.findall(flat)


def _has_phrase(words: list[str], phrases: tuple[tuple[str, ...], ...]) -> bool:
    return any(words[i:i + len(p)] == list(p) for p in phrases for i in range(len(words)))


def _clause(tokens: list[str], start: int, end: int) -> tuple[list[str], list[str]]:
    """The words of the clause before the quote, and of the quote's clause as a whole, from word positions."""
    words_at = [i for i, t in enumerate(tokens) if t[0].isalnum() or t[0] == "_"]
    first, last = words_at[start], words_at[end - 1]
    begin = first
    while begin > 0 and not (tokens[begin - 1][0] in ",;:()-\u2013\u2014" or tokens[begin - 1] in _CLAUSE_WORDS):
        begin -= 1
    before = [t for t in tokens[begin:first] if t[0].isalnum()]
    return before, before + [t for t in tokens[first:last + 1] if t[0].isalnum()]


def _index_of_word(tokens: list[str], word: int) -> int:
    return [i for i, t in enumerate(tokens) if t[0].isalnum() or t[0] == "_"][word]


def _segment(tokens: list[str], start: int, end: int) -> list[str]:
    """The words of the part of a sentence that holds the quote, cut at "but", "and", "because", ";" (not at
    commas: "If I won, I'd live in Lisbon" is one conditional)."""
    first, last = _index_of_word(tokens, start), _index_of_word(tokens, end - 1)
    begin, stop = first, last + 1
    while begin > 0 and not (tokens[begin - 1] in _CLAUSE_WORDS or tokens[begin - 1] == ";"):
        begin -= 1
    while stop < len(tokens) and not (tokens[stop] in _CLAUSE_WORDS or tokens[stop] == ";"):
        stop += 1
    return [t for t in tokens[begin:stop] if t[0].isalnum()]


def _names_someone_else(fact: str, relation: str | None, clause: list[str], sentence: str) -> bool:
    """The fact is about another person: it names the relation the user gave ("friend"), a relation of its own
    ("Sister is a nurse"), the person as its subject ("Karim is a civil engineer", from "My husband Karim is a
    civil engineer": a name of the sentence), or a name the clause itself does not hold (the person, from an
    earlier sentence)."""
    words = content_words(fact)
    if relation is not None and relation in RELATIONS and any(same_word(relation, w) for w in words):
        return True  # (a name as the relation counts only as the fact's subject: "Is called Leo" is not about Leo)
    if words & RELATIONS:
        return True
    subject = re.match(r"[A-Z][\w'-]*", fact.strip())
    named = content_words(subject.group()) if subject is not None else frozenset()
    if named and named <= names_and_numbers(sentence) and held(named, content_words(" ".join(clause[:4]))):
        return True  # the person the clause opens with ("My husband Karim"), not a place it names ("Nara")
    said = content_words(" ".join(clause))
    return bool({n for n in names_and_numbers(fact) if not n.isdigit()} - said)


_NAMED = re.compile(r"^(?:is called|is named|goes by|name is|'s name is)\s+(?:the\s+)?(\w+)", re.IGNORECASE)
_NAMING = (("i", "m"), ("i", "am"), ("name", "is"), ("name", "s"), ("call", "me"), ("called", "me"), ("this", "is"),
           ("it", "s"), ("i", "go", "by"))


def _may_name_the_user(fact: str, tokens: list[str]) -> bool:
    """A fact that gives the user a name ("Is called Leo") holds only when the sentence gives it as theirs ("I'm
    Leo", "my name is Leo", "call me Leo", "Leo here"): Qwen2.5-Coder-1.5B named the user after their son ("I have
    two kids, Leo ...") and their new employer ("I'm joining Allegro")."""
    named = _NAMED.match(fact.strip())
    if named is None:
        return True
    name = named.group(1).casefold()
    words = [t for t in tokens if t[0].isalnum()]
    for i, word in enumerate(words):
        if word != name:
            continue
        if (i + 1 < len(words) and words[i + 1] == "here") or (i == 0 and len(words) <= 2):
            return True  # "Leo here", or the name alone as a message
        if any(tuple(words[max(0, i - len(p)):i]) == p for p in _NAMING):
            return True
    return False


def _says_of_the_user(clause: list[str]) -> bool:
    """Whether the clause reports what someone else says of the user ("my neighbour thinks I should try keto",
    "Ana says I should visit more often"): their view, never a fact, whether or not the fact names them."""
    for i, word in enumerate(clause[1:-1], start=1):
        if word in REPORTING and clause[i - 1] not in FIRST_PERSON:
            following = clause[i + 2:i + 3] if clause[i + 1] == "that" else clause[i + 1:i + 2]
            if following and following[0] in FIRST_PERSON:
                return True
    return False


def _someone_else(before: list[str], quote: list[str], sentence: str) -> tuple[bool, str | None]:
    """Whether the clause's subject or speaker is another person, and the word that names them ("friend")."""
    for i, word in enumerate(before):
        if word in REPORTING and not (i > 0 and before[i - 1] in FIRST_PERSON):
            return True, before[i - 1] if i > 0 else None
    words = before + quote
    while words and words[0] in LEADING:
        words = words[1:]
    if not words or words[0] in FIRST_PERSON or any(words[i] == "and" and words[i + 1] in FIRST_PERSON
                                                    for i in range(min(3, len(words) - 1))):
        return False, None  # "Ana and I moved": the user too; "Ana says I should", "my neighbour thinks I" are not
    head = words[0]
    if head in ("my", "our") and len(words) > 1:  # "my friend", "my Italian teacher"; never "my cat", "my job"
        relation = next((w for w in words[1:4] if w in RELATIONS), None)
        return (True, relation) if relation is not None else (False, None)
    if head in THIRD_PERSON:
        return True, None
    if head in {w.casefold() for w in names_and_numbers(sentence)} and not head.isdigit():  # a name, not first
        return True, head
    if len(words) > 1 and words[1] in THIRD_VERBS and head not in QUESTION_STARTS | LEADING \
            and re.search(rf"\b{re.escape(head.capitalize())}\b", sentence):
        return True, head  # a name (or a thing) and its verb: "Leo wants to be an astronaut", "Work is busy"
    return False, None


def stance_of(quote: str, source: str, fact: str, *, claimed: str = ASSERTED) -> tuple[str, str]:
    """(stance, why): ASSERTED, PLAN (a plan still weighed, kept only as a plan), or one of NOT_ASSERTED.
    `claimed` is the extractor's own mark; anything but asserted or plan is taken at its word."""
    if claimed in NOT_ASSERTED:
        return claimed, f"the extractor marked it a {claimed}"
    sentence = holding_sentence(quote, source) or source
    found = find_quote(quote, [sentence])
    if found is None:
        return ASSERTED, ""
    tokens = _tokens(sentence)
    before, clause = _clause(tokens, found[1], found[2])
    last_clause = not any(t in ",;:" for t in tokens[_index_of_word(tokens, found[2] - 1) + 1:])
    asking = sentence.rstrip().endswith("?") or not sentence.rstrip().endswith((".", "!"))
    if (asking and clause and clause[0] in QUESTION_STARTS) or (sentence.rstrip().endswith("?") and last_clause):
        return "question", "a question is not a statement"
    segment = _segment(tokens, found[1], found[2])
    if CONDITIONALS & set(segment) or _has_phrase(segment, CONDITIONAL_PHRASES):
        return "hypothetical", "a hypothetical or conditional is not a statement"
    words = segment
    denied, denies = bool(set(clause) & NEGATIONS), bool(set(_tokens(fact)) & NEGATIONS)
    if denied != denies:
        return "negated", "the user said it is not so" if denied else "the fact denies what the user said"
    if not _may_name_the_user(fact, tokens):
        return "reported", "the user did not give this name as theirs"
    other, relation = _someone_else(before, clause[len(before):], sentence)
    if other and _says_of_the_user(clause):
        return "reported", "someone else's word about the user"
    if other and not _names_someone_else(fact, relation, clause, sentence):
        return "reported", "the user spoke of someone else"
    if JOKING & set(segment) or _has_phrase(segment, (("just", "kidding"), ("only", "joking"))):
        return "joke", "the user was joking"
    if CONSIDERING & set(words) or _has_phrase(words, CONSIDERING_PHRASES) or claimed == PLAN:
        if PLAN_WORDS & {w for w in _tokens(fact)}:
            return PLAN, "a plan still being weighed: kept as a plan"
        return "considering", "a plan still being weighed is not a fact"
    return ASSERTED, ""
