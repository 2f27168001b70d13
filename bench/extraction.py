"""The write path: fact extraction after each exchange, through coop's own jobs, with a model.

    .venv/bin/python bench/extraction.py [--gold bench/data/extraction-dev.json]
                                         [--profile ../shared/data/profile/profile-dev.json]
                                         [--data ../shared/data/locomo/locomo-dev.json]
                                         [--model scripted [--script honest|careless]
                                          | --model openai/NAME --api-base URL [--json-mode MODE]
                                          | --replay EARLIER-RUN.json]
                                         [--limit N] [--embedder fastembed|hash] [--json FILE]

Each conversation is one user of a fresh database. For each user turn, as `coop chat` does after a reply: the user
message and the assistant's line are stored (`memory.messages.add`), the embedding job runs, the extraction
is recorded (`record_job`) and `MemoryJobs.extraction` runs it with the fast model from the config
(`coop.model.llm.fast_complete`): the message parsed once, the one pointing call ("notes"), coop's checks
(`growth/verify.py`), the table of slots, at most one extra question ("changes") where the table cannot decide,
the writes. The bench only watches: the model's calls (a wrapper around the fast model's `complete` that times
them and keeps the replies), the refusals coop counts by reason (`growth.refusals.counts()`, a snapshot before and
after each exchange, and the texts it logs at DEBUG), and each fact's history (`memory.facts.history`) before
and after.

Sources (each optional; `--limit N` takes at most N exchanges of each):
- `--gold`: `bench/data/extraction-dev.json`, written for this bench: conversations whose user states facts
  among small talk, changes some, asks questions, weighs plans, jokes, reports others; every turn annotated with
  the facts it states, or why it states none, and the traps a careless extractor would take from it. A
  conversation, or a turn, may name its language ("language": "fr"; English when it does not), as
  `bench/data/extraction-dev-multilingual.json` does.
- `--profile`: the profile data set; it has facts and histories but no messages. Each fact becomes one user turn,
  a first-person sentence made from its value (`first_person`: "Lives in Porto" -> "I live in Porto."; a
  standing instruction -> "From now on, please answer in British English."). A persona is one user with two
  sessions: first every earlier value of a fact with a history (oldest first), then every fact's current value,
  those with a history worded as a change ("I live in Porto now."), which must supersede the earlier value
  through the pipeline. The assistant answers with a short acknowledgement.
- `--data`: LoCoMo conversations: speaker A's lines as the user's turns, each with speaker B's next line as the
  reply. No gold: counts only (proposals, writes, refusals, calls).

The judge is `bench/matching.py` (a stored fact states a gold fact when their content words overlap with a Dice
coefficient of at least 0.5 and it holds the gold's names and numbers and its negation), in the language of the
gold fact's turn. A stored fact is assigned to its best match among the conversation's gold facts and traps so far;
a trap that is an instruction (a habit taken for one) only to a fact stored as an instruction.
Precision: the stored values (ADD, UPDATE, SUPERSEDE) assigned to a current gold fact, over all stored values of
the user (a value filed under another person, `<person>.<slot>`, is counted apart); a value assigned to a replaced
one is "stale", to a trap "trap", to nothing "unmatched". Recall: the gold facts (not optional) that an active
fact is assigned to right after their turn; a fact filed under another person counts only for the gold's facts
about the user's people (its "family" facts: coop files "Sister Ana: is a dentist" under her, as it must). A
change is "correct" when, after its turn, an active fact is assigned to the new value and none to the old; one
whose new value is a negation ("no longer ...") is correct when the old one is no longer active (a RETIRE: the
old fact archived, nothing new stored). A change not in the gold is a SUPERSEDE, UPDATE or RETIRE of a fact that
the turn's gold does not change.
The call budget: the fast model's calls per exchange (median, max, the share of exchanges with 0, 1, 2 or more),
the extra questions ("changes") and the changes coop took from their answers, and tokens per exchange (prompt and
reply of every call, estimated by `coop.memory.text.estimate_tokens`, about four characters a token; what the
model client adds, a schema in the prompt, is not counted).

`--replay FILE` answers every request with the reply a real model gave in an earlier run (that run's `--json`):
a change to coop's checks is measured on a real model's mistakes in seconds, without the model. With `--model` and
`--api-base` beside it, an extra question the recording lacks (a change to coop that asks one more) goes to that
model, and only those. A change to what the model is asked (the prompt, the schema, the parse's clause ids) needs
a new run.

`--model scripted` (the default) serves a scripted model on 127.0.0.1 (OpenAI-style HTTP, through litellm like
a real one) that answers from the gold. Asked for the notes of a message, it writes a note for every gold fact and
trap of the turn, citing the listed clauses that hold its evidence, with the topic of its category and key
(`slots.topic_of`) and the gold value; `--script honest` (the default) reads each as a well-behaved model would
(a plan "planned"; a trap by its kind: a question "asked", a hypothetical "hypothetical", a plan weighed
"considering", a report "reported", a joke "joke", another person's fact about them, a denial "never", an unsafe
or widening request or a habit taken for an instruction an instruction, stated), so it measures coop's rules
against a model that does its part; `--script careless` says every note is stated, holds and is about the user,
so it measures what coop's own checks catch. Both, on a fixed schedule, add a note made of the assistant's words
(which coop must refuse). Asked the extra question, it names the known fact the turn's gold change replaces, and
on a fixed schedule another offered fact for a new one the gold changes nothing with (coop takes an answer only
for a fact it offered that new fact). It measures the plumbing and coop's rules, not a model.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, BenchError, fast_model, load_embedder, machine, median, percentile
from matching import MATCH_SHARE, best_match, negated, share

from coop.memory.growth.pointing import MESSAGE_HEADING
from coop.memory.growth.refusals import REASONS
from coop.memory.slots import canonical_key, topic_of

__all__ = ["MATCH_SHARE", "best_match", "negated", "share"]  # the judge, as the tests and other scripts read it

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_GOLD = DATA / "extraction-dev.json"
MULTILINGUAL_GOLD = DATA / "extraction-dev-multilingual.json"
ACKS = ("Noted, thanks.", "Good to know.", "Thanks for telling me.", "Got it.")
SCRIPTS = ("honest", "careless")
ANSWERED_CHANGE = "is no longer true after what the user said"  # the reason of a change taken from "changes"
RETIRED = ", as the user said"  # the reasons of a retirement ("no longer true, as the user said")


# --- the data ------------------------------------------------------------------------------------------------


@dataclass
class GoldFact:
    id: str
    category: str
    key: str | None
    value: str
    evidence: str = ""
    changes: str | None = None      # the id of the earlier fact this one replaces
    optional: bool = False
    kind: str = "fact"              # "fact", or for a trap why it is one (question, joke, ...)
    language: str = "en"            # the language of its turn: the judge reads it in that language


@dataclass
class Turn:
    user: str
    assistant: str = ""
    facts: list[GoldFact] = field(default_factory=list)
    traps: list[GoldFact] = field(default_factory=list)
    none: str | None = None         # why the turn states nothing
    language: str = "en"


@dataclass
class Dialogue:
    source: str                     # gold | profile | locomo
    id: str
    sessions: list[list[Turn]]
    scored: bool = True             # has gold facts to score against


_GOLD_FIELDS = ("id", "category", "key", "value", "evidence", "changes", "optional")


def _flat(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


def _gold_fact(raw: dict[str, Any], kind: str, language: str) -> GoldFact:
    return GoldFact(**{k: raw[k] for k in _GOLD_FIELDS if k in raw}, kind=kind, language=language)


def load_gold(path: Path) -> list[Dialogue]:
    """The gold conversations, checked: each fact's evidence is a passage of its turn, `changes` names an earlier
    fact of the same conversation, ids are unique. A turn's language is its own "language", else its
    conversation's, else English."""
    raw = _read_json(path)
    dialogues, seen = [], set()
    try:
        for conv in raw["conversations"]:
            turns, earlier = [], set()
            for t in conv["turns"]:
                language = str(t.get("language") or conv.get("language") or "en")
                facts = [_gold_fact(f, "fact", language) for f in t.get("facts", [])]
                traps = [_gold_fact(f, f.get("kind", "trap"), language) for f in t.get("traps", [])]
                for f in facts + traps:
                    if f.id in seen:
                        raise BenchError(f"{path}: id {f.id} is used twice")
                    seen.add(f.id)
                    if f.evidence and _flat(f.evidence) not in _flat(t["user"]):
                        raise BenchError(f"{path}: {f.id}'s evidence is not in its turn: {f.evidence!r}")
                    if f.changes and f.changes not in earlier:
                        raise BenchError(f"{path}: {f.id} changes {f.changes}, which is not an earlier fact")
                earlier |= {f.id for f in facts}
                if not facts and not t.get("none"):
                    raise BenchError(f"{path}: a turn of {conv['id']} states no fact and says not why ('none')")
                turns.append(Turn(t["user"], t.get("assistant", ""), facts, traps, t.get("none"), language))
            dialogues.append(Dialogue("gold", conv["id"], [turns]))
    except (KeyError, TypeError) as exc:
        raise BenchError(f"{path}: not in the gold shape ({type(exc).__name__}: {exc})") from None
    return dialogues


_IMPERATIVES = {"answer", "keep", "give", "use", "explain", "show", "cite", "avoid", "always", "never", "call"}
_SUBJECTS = {"is": "I'm", "has": "I have", "does": "I do", "doesn't": "I don't", "can't": "I can't", "his": "My",
             "her": "My", "native": "I'm a native", "bilingual": "I'm bilingual", "wedding": "Our wedding",
             "thesis": "My thesis"}


_SECOND_VERBS = {"prefers", "wakes", "carries", "avoids", "eats", "likes", "loves", "hates", "plays", "works",
                 "uses", "drinks", "takes"}


def _base(verb: str) -> str:
    """A third-person verb's base form: lives -> live, tries -> try, researches -> research, goes -> go."""
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "oes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb


def first_person(value: str, *, change: bool = False) -> str:
    """A third-person profile value as the user would say it: "Lives in Porto" -> "I live in Porto."; with
    `change`, said as news ("I live in Porto now."); a standing instruction -> "From now on, please ..."."""
    words = value.strip().rstrip(".").split()
    head = words[0].casefold()
    if head in _IMPERATIVES:
        text = "From now on, please " + value[0].lower() + value.strip().rstrip(".")[1:]
        text = re.sub(r"\b(she|he) asks\b", "I ask", text)
        return text + "."
    rest = " ".join(words[1:])
    if head in _SUBJECTS:
        text = f"{_SUBJECTS[head]} {rest}"
    elif head.endswith("'s") or head[0].isdigit():
        text = value.strip().rstrip(".")
    elif head.endswith("ed") or head in ("did", "had"):
        text = f"I {head} {rest}"
    elif head.endswith("s"):
        text = f"I {_base(head)} {rest}"
    else:
        text = value.strip().rstrip(".")
    for pattern, repl in ((r"\b(his|her)\b", "my"), (r"\bhe rents\b", "I rent"), (r"\bwith them\b", "with us"),
                          (r"\b(he|she)\b", "I"), (r"\b(and|often) doesn't\b", r"\1 don't")):
        text = re.sub(pattern, repl, text)
    # a second verb of the same subject: "I don't drink coffee and prefers tea" -> "and prefer tea"
    text = re.sub(r"\b(and|often) (\w+s)\b", lambda m: f"{m.group(1)} {_base(m.group(2))}"
                  if m.group(2) in _SECOND_VERBS else m.group(0), text)
    return text + (" now." if change else ".")


def load_profile(path: Path) -> list[Dialogue]:
    """One dialogue per persona: a session of earlier values, then one of current values (see the docstring)."""
    raw = _read_json(path)
    dialogues = []
    try:
        for persona in raw["personas"]:
            earlier: list[Turn] = []
            now: list[Turn] = []
            depth = max((len(f.get("history") or []) for f in persona["facts"]), default=0)
            for level in range(depth):
                for f in persona["facts"]:
                    history = f.get("history") or []
                    if level < len(history):
                        fact = GoldFact(f"{f['id']}-h{level}", f["category"], f.get("key"), history[level]["value"],
                                        changes=f"{f['id']}-h{level - 1}" if level else None)
                        text = first_person(fact.value, change=level > 0)
                        earlier.append(Turn(text, ACKS[len(earlier) % len(ACKS)], [fact]))
            for f in persona["facts"]:
                history = f.get("history") or []
                fact = GoldFact(f["id"], f["category"], f.get("key"), f["value"],
                                changes=f"{f['id']}-h{len(history) - 1}" if history else None)
                text = first_person(fact.value, change=bool(history))
                now.append(Turn(text, ACKS[len(now) % len(ACKS)], [fact]))
            for turn in earlier + now:
                turn.facts[0].evidence = turn.user
            dialogues.append(Dialogue("profile", persona["id"], [s for s in (earlier, now) if s]))
    except (KeyError, TypeError, IndexError) as exc:
        raise BenchError(f"{path}: not in the profile shape ({type(exc).__name__}: {exc})") from None
    return dialogues


def load_locomo(path: Path) -> list[Dialogue]:
    """Speaker A's lines as user turns, each answered by speaker B's next line; images' captions left out."""
    from locomo import load

    dialogues = []
    for conv in load(path):
        sessions = []
        for session in conv.sessions:
            turns: list[Turn] = []
            for i, t in enumerate(session.turns):
                if t.speaker != conv.speaker_a:
                    continue
                text = t.text.split(" [image:", 1)[0].removeprefix(f"{t.speaker}: ").strip()
                nxt = session.turns[i + 1] if i + 1 < len(session.turns) else None
                reply = nxt.text.split(" [image:", 1)[0].removeprefix(f"{nxt.speaker}: ") \
                    if nxt is not None and nxt.speaker != conv.speaker_a else ""
                if text:
                    turns.append(Turn(text, reply.strip(), none="unknown"))
            if turns:
                sessions.append(turns)
        dialogues.append(Dialogue("locomo", conv.sample_id, sessions, scored=False))
    return dialogues


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path} is not JSON: {exc}") from None


# --- the scripted model ----------------------------------------------------------------------------------------

_LISTED = re.compile(r"^\s*(c\d+)(?: \(([^)]*)\))?: (.*)$")
_LABELLED = re.compile(r"^([nk]\d+): (.*)$", re.MULTILINE)
# how a well-behaved model reads each kind of trap (`--script honest`): its modality
TRAP_MODALITY = {"question": "asked", "hypothetical": "hypothetical", "plan_weighed": "considering",
                 "reported": "reported", "joke": "joke"}
INSTRUCTION_TRAPS = ("unsafe", "widening", "habit_not_instruction")  # noted as instructions: coop must refuse them
PLANNED = ("will ", "is going to ", "are going to ", "starts ", "is starting ", "plans to ")
ASSISTANT_EVERY = 4   # every 4th notes request also gets a note made of the assistant's words
CARELESS_EVERY = 3    # every 3rd extra question also gets an answer the gold does not give


class Script:
    """The scripted model (see the module docstring). The bench sets `turn` before each exchange and adds the
    turn's gold facts to `gold`; counts of what it proposed are kept by kind."""

    def __init__(self, mode: str = "honest") -> None:
        if mode not in SCRIPTS:
            raise ValueError(f"unknown script {mode!r}")
        self.mode = mode
        self.turn: Turn | None = None
        self.gold: dict[str, GoldFact] = {}
        self.exchanges = 0
        self.questions = 0
        self.proposed: Counter[str] = Counter()
        self.assistant_notes: list[str] = []   # the values made of the assistant's words: none may be stored
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> str:
        with self.lock:
            content = str((body.get("messages") or [{}])[-1].get("content", ""))
            kind = request_kind(body)
            if kind == "notes":
                return json.dumps({"notes": self._notes(content)}, ensure_ascii=False)
            if kind == "changes":
                return json.dumps({"changes": self._changes(content)})
            self.proposed["summary"] += 1
            return json.dumps({"summary": "", "notes": []})

    # the one pointing call

    def _notes(self, content: str) -> list[dict[str, Any]]:
        listed = listed_clauses(content.split(MESSAGE_HEADING, 1)[-1])
        self.exchanges += 1
        turn = self.turn
        if turn is None or not any(own for _, _, own in listed):
            return []
        out = []
        for fact in turn.facts:
            self.proposed["optional" if fact.optional else "gold"] += 1
            out.append(self._note(fact, False, turn, listed))
        for trap in turn.traps:
            self.proposed["trap"] += 1
            out.append(self._note(trap, True, turn, listed))
        if self.exchanges % ASSISTANT_EVERY == 3 and len(turn.assistant.split()) >= 4:
            value = "Said " + " ".join(turn.assistant.split()[:6]).strip(".,!?")
            self.proposed["assistant_words"] += 1
            self.assistant_notes.append(value)
            out.append(_note_of(["c1"], "fact", "other", "user", "holds", "stated", value))
        return out

    def _note(self, fact: GoldFact, trap: bool, turn: Turn, listed: list[tuple[str, str, bool]]) -> dict[str, Any]:
        kind, about, polarity, modality = self.reading(fact, trap, turn)
        topic = topic_of("instruction" if kind == "instruction" else fact.category, fact.key).name
        return _note_of(cite(fact.evidence or turn.user, listed), kind, topic, about, polarity, modality, fact.value)

    def reading(self, fact: GoldFact, trap: bool, turn: Turn) -> tuple[str, str, str, str]:
        """(kind, about, polarity, modality) of the note for a gold fact or trap, by the script's mode."""
        kind = "instruction" if fact.category == "instruction" else "fact"
        if self.mode == "careless":
            return kind, "user", "holds", "stated"
        if not trap:
            planned = fact.category == "plans" or fact.value.casefold().startswith(PLANNED)
            return kind, "user", "holds", "planned" if planned else "stated"
        if fact.kind in TRAP_MODALITY:
            return kind, "user", "holds", TRAP_MODALITY[fact.kind]
        if fact.kind == "other_person":
            return kind, _person(fact, turn), "holds", "stated"
        if fact.kind == "negation":
            return kind, "user", "never", "stated"
        if fact.kind in INSTRUCTION_TRAPS:
            return "instruction", "user", "holds", "stated"
        return kind, "user", "holds", "stated"  # a kind of trap the script does not know: taken carelessly

    # the one extra question

    def _changes(self, content: str) -> list[dict[str, Any]]:
        """For each new fact, the known fact its gold change replaces, else null; on the fixed schedule, for one
        new fact the gold changes nothing with, another offered known fact."""
        new_part, _, known_part = content.partition("\nKNOWN:")
        new = _LABELLED.findall(new_part.partition("NEW:")[2])
        known = _LABELLED.findall(known_part)
        self.questions += 1
        turn = self.turn
        language = turn.language if turn else "en"
        answers: dict[str, str | None] = {}
        for label, value in new:
            fact = self._gold_of(value)
            target = None
            if fact is not None and fact.changes in self.gold:
                old = self.gold[fact.changes].value
                scored = sorted(((share(text, old, language), k) for k, text in known), reverse=True)
                target = scored[0][1] if scored and scored[0][0] >= MATCH_SHARE else None
            answers[label] = target
            self.proposed["changes_gold" if target else "changes_none"] += 1
        if self.questions % CARELESS_EVERY == 0:
            open_ = [label for label, target in answers.items() if target is None]
            others = [k for k, _ in known if k not in answers.values()]
            if open_ and others:
                answers[open_[0]] = others[0]
                self.proposed["changes_none"] -= 1
                self.proposed["changes_careless"] += 1
        return [{"new": label, "replaces": target} for label, target in answers.items()]

    def _gold_of(self, value: str) -> GoldFact | None:
        """The turn's gold fact a new fact of the question is (coop writes the value the note gave)."""
        facts = self.turn.facts if self.turn else []
        same = [f for f in facts if _flat(f.value).rstrip(".") == _flat(value).rstrip(".")]
        if same:
            return same[0]
        found = best_match(value, facts, self.turn.language if self.turn else "en")
        return found if isinstance(found, GoldFact) else None


class Replay(Script):
    """A model that answers with the replies a real model gave in an earlier run (`--replay FILE`, that run's
    `--json`): each exchange's notes reply, then its extra question's, found by the user's message. Today's code
    reads the same notes, so a change to coop's checks is measured on a real model's mistakes in seconds; a change
    to what the model is asked is not (the replies were written for the old request)."""

    def __init__(self, path: Path, live: tuple[str, str, float] | None = None) -> None:
        super().__init__("honest")
        self.mode = "replay"
        self.live = live  # (api_base, model, timeout): asked what the recording lacks, else nothing is named
        self.asked_live = 0
        self.recorded: dict[str, list[dict[str, Any]]] = {}
        for exchange in _read_json(path).get("exchanges") or []:
            self.recorded.setdefault(exchange["user"], []).append(exchange)
        self.current: list[dict[str, Any]] = []

    def reply(self, body: dict[str, Any]) -> str:
        with self.lock:
            kind = request_kind(body)
            if kind == "notes":
                queue = self.recorded.get(self.turn.user if self.turn else "") or []
                self.current = list(queue.pop(0).get("calls") or []) if queue else []
                self.proposed["notes" if self.current else "not recorded"] += 1
            call = next((c for c in self.current if c.get("schema") == kind and c.get("reply") is not None), None)
            if call is not None:
                self.current.remove(call)
                return str(call["reply"])
            if self.live is None or kind == "notes":
                return json.dumps({"notes": []} if kind != "changes" else {"changes": []})
        answer = self._ask_live(body)
        with self.lock:  # counted once answered: a JSON mode the server refuses, asked again in another, is one
            self.asked_live += 1
        return answer

    def _ask_live(self, body: dict[str, Any]) -> str:
        """A question the recorded run never asked (a change to coop asks a new one), put to the live model."""
        import urllib.error
        import urllib.request

        assert self.live is not None
        api_base, model, timeout = self.live
        request = urllib.request.Request(f"{api_base.rstrip('/')}/chat/completions", method="POST",
                                         headers={"Content-Type": "application/json"},
                                         data=json.dumps({**body, "model": model.split("/", 1)[-1]}).encode())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return str(json.loads(response.read())["choices"][0]["message"]["content"])
        except urllib.error.HTTPError as exc:  # a refused JSON mode: coop's ladder must see the server's answer
            raise Upstream(exc.code, exc.read()) from None


def _note_of(clauses: list[str], kind: str, topic: str, about: str, polarity: str, modality: str,
             value: str) -> dict[str, Any]:
    return {"clauses": clauses, "kind": kind, "topic": topic, "about": about, "polarity": polarity,
            "modality": modality, "value": value}


def _person(fact: GoldFact, turn: Turn) -> str:
    """Who another person's fact is about: a capitalised word of the value the turn says before the evidence (or
    that opens the value), else "someone"."""
    before = turn.user[:max(0, _flat(turn.user).find(_flat(fact.evidence)))] if fact.evidence else ""
    words = re.findall(r"[^\W\d_][\w'-]*", fact.value)
    for i, word in enumerate(words):
        if word[0].isupper() and ((i == 0 and word in turn.user) or (i > 0 and word in before)):
            return word
    return "someone"


def listed_clauses(listing: str) -> list[tuple[str, str, bool]]:
    """(id, text, own) of each clause a pointing request lists (`pointing.Listing.lines`)."""
    found = []
    for line in listing.splitlines():
        match = _LISTED.match(line)
        if match:
            found.append((match.group(1), match.group(3), match.group(2) is None))
    return found


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` lower-cased, every run of non-word characters one space, and for each character of the result the
    index in `text` it comes from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isalnum():
            for c in ch.casefold():
                out.append(c)
                where.append(i)
        elif out and out[-1] != " ":
            out.append(" ")
            where.append(i)
    return "".join(out), where


def cite(evidence: str, listed: list[tuple[str, str, bool]]) -> list[str]:
    """The ids of the listed clauses that hold part of `evidence` (it may span clauses): the user's own ones, or
    when only quoted, pasted or code text holds it, those (which coop must refuse); none hold it: the first own
    clause."""
    own = [cid for cid, _, is_own in listed if is_own]
    joined, spans = "", []
    for _, text, _ in listed:
        start = len(joined) + (1 if joined else 0)
        joined = f"{joined} {text}" if joined else text
        spans.append((start, len(joined)))
    folded, where = _folded(joined)
    wanted = _folded(evidence)[0].strip()
    at = folded.find(wanted) if wanted else -1
    if at >= 0:
        start, end = where[at], where[at + len(wanted) - 1] + 1
        hits = [cid for (cid, _, _), (s, e) in zip(listed, spans) if s < end and start < e]
    else:  # not one passage of the listing: every clause that is part of it, or holds it
        hits = [cid for cid, text, _ in listed if (t := _folded(text)[0].strip()) and (t in wanted or wanted in t)]
    return [cid for cid in hits if cid in own] or hits or own[:1]


def request_kind(body: dict[str, Any]) -> str:
    """"notes" (the pointing call), "changes" (the extra question) or "summary" (consolidation): by the schema's
    name when the request carries one, else by the prompt's text."""
    rf = body.get("response_format") or {}
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        schema = rf.get("json_schema") or {}
        properties = (schema.get("schema") or {}).get("properties") or {}
        name = str(schema.get("name", ""))
        if name == "notes":
            return "summary" if "summary" in properties else "notes"
        if name == "changes":
            return name
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
    if MESSAGE_HEADING in text:
        return "notes"
    if "NEW:" in text and "KNOWN:" in text:
        return "changes"
    return "summary"


class Upstream(Exception):
    """The live model's server refused a forwarded request: its status and body, passed on as they are."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(status)
        self.status, self.body = status, body


def serve_script(script: Script) -> tuple[ThreadingHTTPServer, str]:
    """The scripted model behind an OpenAI-compatible endpoint on 127.0.0.1 (a free port)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            try:
                content = script.reply(body)
            except Upstream as refused:
                self.send_response(refused.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(refused.body)))
                self.end_headers()
                self.wfile.write(refused.body)
                return
            data = json.dumps({"id": "s", "object": "chat.completion", "created": 0, "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# --- watching coop's write path --------------------------------------------------------------------------------


@dataclass
class Call:
    schema: str                     # notes | changes | a summary's "notes" | plain
    seconds: float
    usable: bool
    proposals: int = 0              # notes in the reply, or changes it names
    prompt_tokens: int = 0          # estimated (`coop.memory.text.estimate_tokens`)
    reply_tokens: int = 0
    error: str | None = None
    reply: str | None = None        # the reply, as the model wrote it (cut at 2,000 characters)


class Recorder:
    """The fast model's `complete`, timed, each reply kept: what the memory jobs are given instead of it."""

    takes_schema = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def __call__(self, messages: list[dict[str, Any]], schema: Any = None) -> str:
        from coop.memory.text import estimate_tokens
        from coop.model.jsonreply import ModelReplyError, parse_json_reply, usable

        name = schema["name"] if schema else "plain"
        if name == "notes" and "summary" in (schema.get("schema") or {}).get("properties", {}):
            name = "summary"
        prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        started = time.perf_counter()
        try:
            reply = self.inner(messages, schema=schema) if schema is not None else self.inner(messages)
        except Exception as exc:
            self.calls.append(Call(name, time.perf_counter() - started, False, prompt_tokens=prompt,
                                   error=f"{type(exc).__name__}: {str(exc)[:200]}"))
            raise
        call = Call(name, time.perf_counter() - started, usable(reply, schema) if schema else True,
                    prompt_tokens=prompt, reply_tokens=estimate_tokens(str(reply)))
        call.reply = str(reply)[:2000]  # what the model wrote: which clauses it cited, which fact it named
        try:
            data = parse_json_reply(reply)
            rows = data.get(name if name == "changes" else "notes") if isinstance(data, dict) else None
            call.proposals = sum(isinstance(r, dict) and (name != "changes" or r.get("replaces") is not None)
                                 for r in rows) if isinstance(rows, list) else 0
        except ModelReplyError:
            pass
        self.calls.append(call)
        return str(reply)


class RefusalLog(logging.Handler):
    """The texts coop logs at DEBUG when it refuses a proposal ("memory refused [reason]: 'text'"), each with the
    reason in words from the INFO line before it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[tuple[str, str, str]] = []
        self._why = ""

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if not isinstance(args, tuple) or not args or args[0] not in REASONS:
            return
        if record.levelno == logging.INFO and len(args) == 3:  # "memory refused [%s]%s: %s": why, in words
            self._why = str(args[2])
        elif record.levelno == logging.DEBUG and len(args) == 2 and isinstance(args[1], str):
            self.texts.append((str(args[0]), args[1], self._why))
            self._why = ""


@dataclass
class Exchange:
    source: str
    dialogue: str
    turn: int
    user: str
    none: str | None
    language: str = "en"
    gold: int = 0                   # gold facts (not optional) the turn states
    proposals: int = 0
    calls: list[Call] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    refused_texts: list[dict[str, str]] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)
    known: int = 0                  # proposals counted as a mention of a fact already there (MERGE)
    recalled: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    changes: dict[str, str] = field(default_factory=dict)  # gold change id -> correct | both_active | missed
    error: str | None = None


def _events(memory: Any, seen: dict[int, int]) -> tuple[list[dict[str, Any]], int]:
    """The stored values (ADD, SUPERSEDE, UPDATE), the retirements (RETIRE: an ARCHIVE the user's words asked for)
    and the mentions (MERGE) since the last call, from each fact's history; `seen` holds how many history rows of
    each fact were already read."""
    items = {i.item_id: i for i in memory.list_items("fact", include_inactive=True, limit=1_000_000)}
    rows = []
    for fact_id, item in items.items():
        history = memory.facts.history(fact_id)
        rows += [(item, h) for h in history[seen.get(fact_id, 0):]]
        seen[fact_id] = len(history)
    replacing = {h.related_fact_id for _, h in rows if h.action == "SUPERSEDE"}
    writes, known = [], 0
    for item, h in rows:
        if h.action == "ADD" and item.item_id not in replacing:
            writes.append({"action": "ADD", "fact": item.item_id, "category": item.category, "key": item.key,
                           "value": h.new_value or item.text, "replaced": None, "reason": h.reason})
        elif h.action in ("SUPERSEDE", "UPDATE"):
            new = items.get(h.related_fact_id or item.item_id, item) if h.action == "SUPERSEDE" else item
            writes.append({"action": h.action, "fact": new.item_id, "category": new.category, "key": new.key,
                           "value": h.new_value or new.text, "replaced": h.old_value, "reason": h.reason})
        elif h.action == "ARCHIVE" and (h.reason or "").endswith(RETIRED):
            writes.append({"action": "RETIRE", "fact": item.item_id, "category": item.category, "key": item.key,
                           "value": None, "replaced": item.text, "reason": h.reason})
        elif h.action == "MERGE" and item.item_id not in replacing:
            known += 1
    return writes, known


def run(dialogues: list[Dialogue], *, config: Any, recorder: Recorder, embedder: Any, db: Any,
        script: Script | None, limit: int | None, log: RefusalLog) -> list[Exchange]:
    """Every user turn of `dialogues` (at most `limit` a source) through coop's jobs, as `coop chat` runs them."""
    from coop.memory.growth import refusals
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.storage.store import MemoryStore

    jobs = MemoryJobs(config, recorder, embedder=lambda: embedder)
    store = MemoryStore(db)
    done: Counter[str] = Counter()
    out: list[Exchange] = []
    for dialogue in dialogues:
        memory = store.user(f"{dialogue.source}-{dialogue.id}")
        seen: dict[int, int] = {}
        stated: list[GoldFact] = []
        traps: list[GoldFact] = []
        changed: set[str] = set()
        number = 0
        for s, session in enumerate(dialogue.sessions):
            if limit is not None and done[dialogue.source] >= limit:
                break
            session_id = memory.sessions.start(f"{dialogue.id} session {s + 1}")
            for turn in session:
                if limit is not None and done[dialogue.source] >= limit:
                    break
                done[dialogue.source] += 1
                number += 1
                if script is not None:
                    script.turn = turn
                    script.gold.update({f.id: f for f in turn.facts})
                ex = Exchange(dialogue.source, dialogue.id, number, turn.user, turn.none, turn.language,
                              gold=sum(not f.optional for f in turn.facts))
                message_id = memory.messages.add(session_id, "user", turn.user)
                assert message_id is not None  # None only for an external id already imported
                reply_id = memory.messages.add(session_id, "assistant", turn.assistant) if turn.assistant else None
                before, calls, logged = refusals.counts(), len(recorder.calls), len(log.texts)
                try:
                    jobs.embedding(memory.user_id)(store)
                    job = memory.jobs.record("extraction", session_id=session_id, message_id=message_id,
                                             reply_id=reply_id)
                    jobs.extraction(memory.user_id, job)(store)
                except Exception as exc:  # a failed job changes nothing; the bench notes it and goes on
                    ex.error = f"{type(exc).__name__}: {str(exc)[:200]}"
                after = refusals.counts()
                ex.refused = {r: after.get(r, 0) - before.get(r, 0) for r in REASONS
                              if after.get(r, 0) > before.get(r, 0)}
                ex.calls = recorder.calls[calls:]
                ex.proposals = sum(c.proposals for c in ex.calls if c.schema == "notes")
                ex.writes, ex.known = _events(memory, seen)
                for write in ex.writes:  # the user's words it rests on, as coop kept them
                    write["quote"] = next((p.quote for p in memory.sources.provenance(write["fact"])
                                           if p.message_id == message_id), None)
                    write["assistant_words"] = script is not None and write["value"] in script.assistant_notes
                texts = log.texts[logged:]
                if dialogue.scored:
                    stated += turn.facts
                    traps += turn.traps
                    changed |= {f.changes for f in turn.facts if f.changes}
                    _score(ex, turn, memory, stated, traps, changed, texts,
                           set(script.assistant_notes) if script is not None else set())
                else:
                    ex.refused_texts = [{"reason": r, "text": t, "why": why} for r, t, why in texts]
                out.append(ex)
    return out


def judged_against(candidates: list[GoldFact], trap_ids: set[str], category: str) -> list[GoldFact]:
    """The gold facts and traps a value stored under `category` may be judged against: a trap that is an
    instruction (a habit taken for one) is fallen into only by an instruction, since the habit stored as a fact
    about the user is what the gold wants."""
    return [g for g in candidates if category == "instruction" or g.id not in trap_ids or g.category != "instruction"]


def someones(key: str | None, value: str = "") -> bool:
    """Whether a stored fact is filed under another person: their slot (`slots.slot_for`: `<person>.<slot>`), or a
    value that verify wrote with the person first ("Colleague Mark: has the flu"; "home city: Lyon" is a bare value
    under its topic's name, `labelled`)."""
    return (key is not None and "." in key) or (bool(_FILED_UNDER.match(value)) and labelled(value) == value)


def labelled(value: str) -> str:
    """The value a bare word was stored with under its topic's name ("home city: Lyon" -> "Lyon"): the judge reads
    the user's word, not coop's label."""
    from coop.memory.slots import TOPICS

    head, colon, rest = value.partition(": ")
    return rest if colon and head in {name.replace("_", " ") for name in TOPICS} else value


_FILED_UNDER = re.compile(r"^[^\s:]+(?: [^\s:]+){0,5}: ")


def _recalled_by(memory: Any, candidates: list[GoldFact], people: set[str], language: str) -> set[str]:
    """The gold facts the active facts state: the user's own facts for any gold fact, and a fact filed under
    another person (`someones`) only for a gold fact about the user's people (`people`: the gold's "family"
    facts, "Sister Ana is a dentist in Porto"), since coop files those under the person, as it must; a sister's
    city never states the user's."""
    found = set()
    for fact in memory.facts.active(limit=100_000):
        match = best_match(labelled(fact.text), candidates, language)
        if match is not None and (not someones(fact.key, fact.text) or match.id in people):
            found.add(match.id)
    return found


def _score(ex: Exchange, turn: Turn, memory: Any, stated: list[GoldFact], traps: list[GoldFact],
           changed: set[str], texts: list[tuple[str, str, str]], assistant: set[str]) -> None:
    """Judge the exchange's writes, refusals and the active facts after it against the gold (see the judge); a
    refusal of the scripted model's note of the assistant's words is counted as that (`assistant`)."""
    candidates = stated + traps
    current = {f.id for f in stated if f.id not in changed}
    facts, trap_ids = {f.id for f in stated}, {f.id for f in traps}
    language = turn.language

    def verdict(text: str, category: str) -> tuple[str, GoldFact | None]:
        match = best_match(labelled(text), judged_against(candidates, trap_ids, category), language)
        if match is None:
            return "unmatched", None
        if match.id in trap_ids:
            return "trap", match
        return ("correct" if match.id in current else "stale" if match.id in facts else "unmatched"), match

    turn_changes = {f.changes for f in turn.facts if f.changes}
    for write in ex.writes:
        if write["action"] == "RETIRE":
            old = best_match(write["replaced"], candidates, language)
            write.update(verdict="retired", match=old.id if old else None, subject=None,
                         instruction_not_given=False, change_in_gold=old is not None and old.id in turn_changes)
            continue
        write["verdict"], match = verdict(write["value"], write["category"])
        write["match"] = match.id if match else None
        write["trap_kind"] = match.kind if match is not None and match.id in trap_ids else None
        if someones(write["key"], write["value"]):  # filed under another person: not a fact about the user
            write["verdict"] = "about_someone"
        # the gold subject the value belongs to (a fact and its changes share one category and key in the gold)
        write["subject"] = f"{ex.dialogue}:{match.category}/{match.key}" \
            if match is not None and match.key and match.id not in trap_ids else None
        write["instruction_not_given"] = write["category"] == "instruction" and (
            match is None or match.category != "instruction" or match.id in trap_ids)
        if write["replaced"] is not None:
            old = best_match(write["replaced"], candidates, language)
            write["change_in_gold"] = old is not None and (old.id in turn_changes or match is old)
    for reason, text, why in texts:
        match = None if text in assistant else best_match(text, turn.facts + turn.traps, language)
        kind = "assistant" if text in assistant else "other" if match is None else "trap" if match in turn.traps \
            else "optional" if match.optional else "gold"
        ex.refused_texts.append({"reason": reason, "text": text, "why": why, "match": kind,
                                 "gold": match.id if match else None})
    ended = {w["match"] if w["action"] == "RETIRE" else getattr(best_match(w["replaced"], stated, language), "id", None)
             for w in ex.writes if w["replaced"] is not None}  # the gold facts the exchange retired or replaced
    assigned = _recalled_by(memory, candidates, {f.id for f in stated if f.category == "family"}, language)
    for f in turn.facts:
        # a change to "no longer ...": right when the old fact was retired (or superseded) here and is active no more
        retired = bool(f.changes) and negated(f.value, f.language) and f.changes not in assigned and \
            f.changes in ended
        if f.changes:
            ex.changes[f.id] = "correct" if retired or (f.id in assigned and f.changes not in assigned) else \
                "both_active" if f.id in assigned else "missed"
        if not f.optional:
            (ex.recalled if f.id in assigned or retired else ex.missed).append(f.id)


# --- the report ------------------------------------------------------------------------------------------------

STORED = ("ADD", "SUPERSEDE", "UPDATE")
EXAMPLES = 5


def summarise(exchanges: list[Exchange]) -> dict[str, Any]:
    """The figures of a set of exchanges (one source, or all)."""
    writes = [w for e in exchanges for w in e.writes]
    calls = [c for e in exchanges for c in e.calls]
    notes = [c for c in calls if c.schema == "notes"]
    questions = [c for c in calls if c.schema == "changes"]
    refused = Counter({r: 0 for r in REASONS})
    for e in exchanges:
        refused.update(e.refused)
    actions = Counter(w["action"] for w in writes)
    per_exchange = [len(e.calls) for e in exchanges]
    tokens = [sum(c.prompt_tokens + c.reply_tokens for c in e.calls) for e in exchanges]
    n = len(exchanges)
    out: dict[str, Any] = {
        "exchanges": n, "failed": sum(e.error is not None for e in exchanges),
        "calls": {"total": len(calls), "notes": len(notes), "changes": len(questions),
                  "other": len(calls) - len(notes) - len(questions)},
        "calls_per_exchange": {
            "median": median(per_exchange), "max": max(per_exchange, default=0),
            "share": {label: round(sum(test(k) for k in per_exchange) / n, 3) if n else None
                      for label, test in (("0", lambda k: k == 0), ("1", lambda k: k == 1), ("2", lambda k: k == 2),
                                          ("more", lambda k: k > 2))}},
        # the extra questions, and the changes coop took from their answers
        "changes_asked": {"questions": len(questions), "named": sum(c.proposals for c in questions),
                          "applied": sum(ANSWERED_CHANGE in (w.get("reason") or "") for w in writes)},
        "tokens_per_exchange": {"median": median(tokens), "max": max(tokens, default=0),
                                "mean": round(sum(tokens) / n, 1) if n else 0.0,
                                "counted_by": "coop.memory.text.estimate_tokens (about 4 characters a token)"},
        "json_usable": round(sum(c.usable for c in notes + questions) / len(notes + questions), 3)
        if notes + questions else None,
        "json_unusable": {"notes": sum(not c.usable for c in notes), "changes": sum(not c.usable for c in questions)},
        "call_errors": sum(c.error is not None for c in calls),
        "proposals": sum(e.proposals for e in exchanges),
        "stored": {"added": actions["ADD"], "superseded": actions["SUPERSEDE"], "updated": actions["UPDATE"],
                   "retired": actions["RETIRE"]},
        "known": sum(e.known for e in exchanges),
        "refused": dict(refused),
        "not_stored_no_reason": sum(max(0, e.proposals - len(e.writes) - e.known - sum(e.refused.values()))
                                    for e in exchanges),
        "assistant_words_stored": sum(bool(w.get("assistant_words")) for w in writes),
        "facts_per_exchange": round(sum(w["action"] in STORED for w in writes) / n, 3) if n else 0.0,
        "seconds_per_call": {"notes_median": round(median([c.seconds for c in notes]), 3),
                             "notes_p90": round(percentile([c.seconds for c in notes], 90), 3),
                             "changes_median": round(median([c.seconds for c in questions]), 3)},
    }
    scored = [e for e in exchanges if e.source != "locomo"]
    if scored:
        out["gold"] = _gold_figures(scored)
        languages = sorted({e.language for e in scored})
        if len(languages) > 1:
            out["languages"] = {language: _language_figures([e for e in scored if e.language == language])
                                for language in languages}
    return out


def _gold_figures(scored: list[Exchange]) -> dict[str, Any]:
    writes = [w for e in scored for w in e.writes]
    judged = [w for w in writes if w["action"] in STORED and w["verdict"] != "about_someone"]
    verdicts = Counter(w["verdict"] for w in judged)
    recalled, missed = sum(len(e.recalled) for e in scored), sum(len(e.missed) for e in scored)
    refusals = [t for e in scored for t in e.refused_texts]
    traps = [w for w in judged if w["verdict"] == "trap"]
    nothing = [e for e in scored if e.none]
    return {
        "stored_values": len(judged),
        "precision": round(verdicts["correct"] / len(judged), 3) if judged else None,
        "verdicts": {v: verdicts[v] for v in ("correct", "stale", "trap", "unmatched")},
        "about_someone": sum(w["verdict"] == "about_someone" for w in writes),
        "recall": round(recalled / (recalled + missed), 3) if recalled + missed else None,
        "gold_facts": recalled + missed,
        "changes": _changes(scored),
        "changes_not_in_gold": sum(1 for w in writes if w["replaced"] is not None and not w["change_in_gold"]),
        "instructions_not_given": sum(w["instruction_not_given"] for w in judged),
        "traps_stored": len(traps),
        "traps_stored_by_kind": dict(Counter(w["trap_kind"] for w in traps)),
        "nothing_turns": len(nothing),
        "nothing_turns_with_a_write": sum(any(w["action"] in STORED for w in e.writes) for e in nothing),
        "key_stability": key_stability(judged),
        "true_facts_refused": dict(Counter(t["reason"] for t in refusals if t["match"] == "gold")),
        "traps_refused": dict(Counter(t["reason"] for t in refusals if t["match"] == "trap")),
        "examples": {
            "true_facts_refused": [{k: t[k] for k in ("reason", "text", "why", "gold")}
                                   for t in refusals if t["match"] == "gold"][:EXAMPLES],
            "traps_stored": [{"value": w["value"], "kind": w["trap_kind"], "trap": w["match"], "quote": w["quote"]}
                             for w in traps][:EXAMPLES]},
    }


def _changes(scored: list[Exchange]) -> dict[str, int]:
    changes = Counter(v for e in scored for v in e.changes.values())
    return {"total": sum(changes.values()), "correct": changes["correct"], "both_active": changes["both_active"],
            "missed": changes["missed"]}


def _language_figures(scored: list[Exchange]) -> dict[str, Any]:
    gold = _gold_figures(scored)
    return {"exchanges": len(scored), "precision": gold["precision"], "recall": gold["recall"],
            "changes": gold["changes"], "traps_stored": gold["traps_stored"]}


def key_stability(writes: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the gold subjects (a conversation's category/key: a fact and its changes) with two or more stored values,
    the share whose values were all stored in one slot (category and key, keys of one slot counted as one)."""
    slots: dict[str, set[tuple[str, str | None]]] = {}
    counts: Counter[str] = Counter()
    for w in writes:
        if w.get("subject"):
            slots.setdefault(w["subject"], set()).add((w["category"], canonical_key(w["key"])))
            counts[w["subject"]] += 1
    many = [s for s in slots if counts[s] >= 2]
    stable = sum(len(slots[s]) == 1 for s in many)
    return {"subjects": len(many), "one_slot": stable, "share": round(stable / len(many), 3) if many else None}


def report(exchanges: list[Exchange], meta: dict[str, Any]) -> dict[str, Any]:
    sources = sorted({e.source for e in exchanges}, key=("gold", "profile", "locomo").index)
    return {**meta, "all": summarise(exchanges),
            "sources": {s: summarise([e for e in exchanges if e.source == s]) for s in sources},
            "exchanges": [asdict(e) for e in exchanges]}


def print_report(result: dict[str, Any]) -> None:
    script = f", script {result['script_mode']}" if result.get("script_mode") else ""
    print(f"Extraction benchmark: model {result['model']} ({result['json_mode']}{script}), "
          f"embedder {result['embedder']}")
    print(f"  commit {result['commit']}, {result['date']}; {result['machine']}")
    for name, s in result["sources"].items():
        c, per, q = s["calls"], s["calls_per_exchange"], s["changes_asked"]
        print(f"\n  {name}: {s['exchanges']} exchanges ({s['failed']} failed), {c['notes']} notes calls, "
              f"{c['changes']} extra questions ({q['named']} named a fact, {q['applied']} changes applied)"
              + (f", {c['other']} other calls" if c["other"] else ""))
        share = per["share"]
        print(f"    calls per exchange      median {per['median']:g}, max {per['max']}; exchanges with 0 / 1 / 2 / "
              f"more: {' / '.join(_fmt(share[k]) for k in ('0', '1', '2', 'more'))}")
        t = s["tokens_per_exchange"]
        print(f"    tokens per exchange     median {t['median']:g}, mean {t['mean']:g}, max {t['max']} (estimated, "
              "about 4 characters a token)")
        print(f"    JSON usable             {_fmt(s['json_usable'])} of calls; unusable: notes "
              f"{s['json_unusable']['notes']}, changes {s['json_unusable']['changes']}; call errors "
              f"{s['call_errors']}")
        st = s["stored"]
        print(f"    proposals               {s['proposals']}: stored {st['added']} added + {st['superseded']} "
              f"superseding + {st['updated']} updates, {st['retired']} retired, {s['known']} already known")
        refused = ", ".join(f"{r} {n}" for r, n in s["refused"].items() if n) or "none"
        print(f"    refused                 {refused}; not stored, no reason counted: {s['not_stored_no_reason']}")
        print(f"    assistant's words       {s['assistant_words_stored']} stored")
        sec = s["seconds_per_call"]
        print(f"    seconds per call        notes median {sec['notes_median']:.2f} (p90 {sec['notes_p90']:.2f}), "
              f"changes median {sec['changes_median']:.2f}")
        g = s.get("gold")
        if g:
            _print_gold(g)
        for language, figures in (s.get("languages") or {}).items():
            ch = figures["changes"]
            print(f"    {language:<23} {figures['exchanges']} exchanges: precision {_fmt(figures['precision'])}, "
                  f"recall {_fmt(figures['recall'])}, changes {ch['correct']} of {ch['total']}, traps stored "
                  f"{figures['traps_stored']}")


def _print_gold(g: dict[str, Any]) -> None:
    v = g["verdicts"]
    print(f"    precision               {_fmt(g['precision'])} of {g['stored_values']} stored values "
          f"(stale {v['stale']}, traps {v['trap']}, unmatched {v['unmatched']}); filed under another person "
          f"{g['about_someone']}")
    print(f"    recall of stated facts  {_fmt(g['recall'])} of {g['gold_facts']}")
    c = g["changes"]
    print(f"    changes                 {c['correct']} of {c['total']} correct (both active {c['both_active']}, "
          f"missed {c['missed']}); changes not in the gold {g['changes_not_in_gold']}")
    print(f"    instructions not given  {g['instructions_not_given']}; traps stored {g['traps_stored']} "
          f"{g['traps_stored_by_kind'] or ''}; turns that must yield nothing: {g['nothing_turns_with_a_write']} "
          f"of {g['nothing_turns']} stored something")
    k = g["key_stability"]
    print(f"    key stability           {_fmt(k['share'])}: {k['one_slot']} of {k['subjects']} subjects "
          "with two or more stored values kept one slot")
    print(f"    refused, gold facts     {g['true_facts_refused'] or '-'}; traps {g['traps_refused'] or '-'}")
    for t in g["examples"]["true_facts_refused"]:
        print(f"      true fact refused     [{t['reason']}] {t['text']!r}: {t['why']}")
    for t in g["examples"]["traps_stored"]:
        print(f"      trap stored           [{t['kind']}] {t['value']!r} (from {t['quote']!r})")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "coop"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes in coop/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gold", type=Path, default=DEFAULT_GOLD, help="the gold conversations (default: %(default)s)")
    parser.add_argument("--no-gold", action="store_true", help="leave the gold conversations out")
    parser.add_argument("--profile", type=Path, help="a profile data file (personas with facts and histories)")
    parser.add_argument("--data", type=Path, help="a LoCoMo-shaped file")
    parser.add_argument("--limit", type=int, default=None, help="at most N exchanges from each source")
    parser.add_argument("--model", default="scripted", help="'scripted', or a litellm model name (openai/NAME)")
    parser.add_argument("--script", choices=SCRIPTS, default="honest",
                        help="how the scripted model reads the gold (default: %(default)s)")
    parser.add_argument("--replay", type=Path, help="answer with the replies recorded in an earlier run's --json; "
                        "with --model and --api-base, an extra question the recording lacks goes to that model")
    parser.add_argument("--api-base", default="", help="the model's OpenAI-compatible server")
    parser.add_argument("--json-mode", choices=("auto", "json_schema", "json_object_schema", "json_object", "prompt"),
                        default="auto",
                        help="start from this JSON mode (coop remembers the one that worked; a llama.cpp server "
                             "needs json_object or prompt)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a model request is abandoned")
    parser.add_argument("--embedder", choices=("fastembed", "hash"), default="fastembed")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument("--json", type=Path, help="also write the figures and every exchange to this file")
    parser.add_argument("--verbose", action="store_true", help="coop's log (INFO) on stderr")
    args = parser.parse_args(argv)

    dialogues = [] if args.no_gold else load_gold(args.gold)
    dialogues += load_profile(args.profile) if args.profile else []
    dialogues += load_locomo(args.data) if args.data else []
    if not dialogues:
        raise BenchError("nothing to run: give --gold, --profile or --data")
    embedder = load_embedder(args.embedder, args.model_path)
    commit = _commit()  # the code measured: the checkout as the run starts
    coop_log = logging.getLogger("coop")
    coop_log.addHandler(logging.StreamHandler() if args.verbose else logging.NullHandler())
    coop_log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    refused_log = RefusalLog()
    logging.getLogger("coop.memory.refused").setLevel(logging.DEBUG)
    logging.getLogger("coop.memory.refused").addHandler(refused_log)

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COOP_HOME"] = tmp  # the JSON mode coop remembers, and no user config, stay in here
        from coop.memory.storage.database import open_database

        script: Script | None = None
        server = None
        api_base, model = args.api_base, args.model
        if args.replay is not None:  # with a model too: the questions the recording lacks go to it
            live = (args.api_base, args.model, args.timeout) if args.model != "scripted" else None
            script, model = Replay(args.replay, live), "scripted"
        if model == "scripted":
            script = script or Script(args.script)
            server, api_base = serve_script(script)
            model = "openai/scripted"
        config, complete = fast_model(model, api_base, args.timeout)
        if args.json_mode != "auto":
            complete.modes.set(model, args.json_mode)
        recorder = Recorder(complete)
        db = open_database(str(Path(tmp) / "extraction.db"))
        started = time.perf_counter()
        try:
            exchanges = run(dialogues, config=config, recorder=recorder, embedder=embedder, db=db, script=script,
                            limit=args.limit, log=refused_log)
        finally:
            db.close()
            if server is not None:
                server.shutdown()
    meta = {"model": args.model, "api_base": args.api_base or None, "json_mode": args.json_mode,
            "script_mode": script.mode if script else None,
            "replayed": str(args.replay) if args.replay else None,
            "embedder": embedder.id, "limit": args.limit, "commit": commit, "date": date.today().isoformat(),
            "machine": machine(), "seconds": round(time.perf_counter() - started, 1),
            "gold_file": None if args.no_gold else str(args.gold),
            "profile_file": str(args.profile) if args.profile else None,
            "locomo_file": str(args.data) if args.data else None,
            "script": dict(script.proposed) if script else None,
            "asked_live": script.asked_live if isinstance(script, Replay) else None}
    result = report(exchanges, meta)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_report(result)
    if meta["asked_live"] is not None:
        print(f"\n  questions the recording lacked, asked of {args.model}: {meta['asked_live']}")
    print(f"\n  {result['seconds']:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
