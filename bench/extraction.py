"""The write path: fact extraction and reconciliation after each exchange, through coop's own jobs, with a model.

    .venv/bin/python bench/extraction.py [--gold bench/data/extraction-dev.json]
                                         [--profile ../shared/data/profile/profile-dev.json]
                                         [--data ../shared/data/locomo/locomo-dev.json]
                                         [--model scripted | --model openai/NAME --api-base URL [--json-mode MODE]]
                                         [--limit N] [--embedder fastembed|hash] [--json FILE]

Each conversation is one user of a fresh database. For each user turn, as `coop chat` does after a reply: the user
message and the assistant's line are stored (`memory.messages.add`), the embedding job runs, the extraction
is recorded (`record_job`) and `MemoryJobs.extraction` runs it with the fast model from the config
(`coop.model.llm.fast_complete`): the extractor's prompt, the evidence and mood checks, dedup, reconciliation by the
model under coop's rules, the writes. The bench only watches: the model's replies (a wrapper around the fast
model's `complete` that times and keeps them), the refusals coop counts by reason (`growth.refusals.counts()`,
a snapshot before and after each exchange, and the texts it logs at DEBUG), and each fact's history
(`memory.facts.history`) before and after.

Sources (each optional; `--limit N` takes at most N exchanges of each):
- `--gold`: `bench/data/extraction-dev.json`, written for this bench: conversations whose user states facts
  among small talk, changes some, asks questions, weighs plans, jokes, reports others; every turn annotated with
  the facts it states, or why it states none, and the traps a careless extractor would take from it.
- `--profile`: the profile data set; it has facts and histories but no messages. Each fact becomes one user turn,
  a first-person sentence made from its value (`first_person`: "Lives in Porto" -> "I live in Porto."; a
  standing instruction -> "From now on, please answer in British English."). A persona is one user with two
  sessions: first every earlier value of a fact with a history (oldest first), then every fact's current value,
  those with a history worded as a change ("I live in Porto now."), which must supersede the earlier value
  through the pipeline. The assistant answers with a short acknowledgement.
- `--data`: LoCoMo conversations: speaker A's lines as the user's turns, each with speaker B's next line as the
  reply. No gold: counts only (proposals, writes, refusals, calls).

The matcher (how a stored fact is judged against the gold): both texts lower-cased, contractions opened
("can't" -> "can not"), ISO dates written out, number words as digits, stop words dropped and the rest lightly
stemmed ("lives", "living" -> "liv"). A fact states a gold fact when their content words overlap with a Dice
coefficient of at least 0.5 (twice the shared words over the two counts: "Based in Lyon" states "Lives in Lyon",
"Said welcome to Berlin, how are you" does not), it holds every name (a capitalised word after the first) and
number of the gold, and both are negated or neither is. A stored fact is assigned to its best match among the
conversation's gold facts and traps so far (one with the same text first, then the highest Dice; on a tie a fact
before a trap, the later of two facts); a trap that is an instruction (a habit taken for one) only to a fact
stored as an instruction.
Precision: the stored values (ADD, UPDATE, SUPERSEDE) assigned to a current gold fact, over all stored values; a
value assigned to a replaced one is "stale", to a trap "trap", to nothing "unmatched". Recall: the gold facts (not
optional) that an active fact is assigned to right after their turn. A change is "correct" when, after its turn,
an active fact is assigned to the new value and none to the old.

`--model scripted` (the default) serves a scripted model on 127.0.0.1 (OpenAI-style HTTP, through litellm like
a real one) that answers from the gold: asked for the extractor's sheet, every gold fact and trap of the turn on
the sentence that holds its evidence, every sentence a statement (an instruction when it holds one), and on a
fixed schedule a fact made of the assistant's words; asked for a plain list of facts, the same with their
quotes, and a quote of three letters; as reconciler, the gold change where
the turn makes one, else now and then a SUPERSEDE of an unrelated fact or of an id it was not shown. It measures
the plumbing and coop's rules against a careless but well-formed extractor, not a model.
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

DEFAULT_GOLD = Path(__file__).resolve().parent / "data" / "extraction-dev.json"
REASONS = ("evidence", "mood", "instruction", "widening", "unsafe", "change", "target", "forgotten", "value", "known")
ACKS = ("Noted, thanks.", "Good to know.", "Thanks for telling me.", "Got it.")


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


@dataclass
class Turn:
    user: str
    assistant: str = ""
    facts: list[GoldFact] = field(default_factory=list)
    traps: list[GoldFact] = field(default_factory=list)
    none: str | None = None         # why the turn states nothing


@dataclass
class Dialogue:
    source: str                     # gold | profile | locomo
    id: str
    sessions: list[list[Turn]]
    scored: bool = True             # has gold facts to score against


def _flat(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


def load_gold(path: Path) -> list[Dialogue]:
    """The gold conversations, checked: each fact's evidence is a passage of its turn, `changes` names an earlier
    fact of the same conversation, ids are unique."""
    raw = _read_json(path)
    dialogues, seen = [], set()
    try:
        for conv in raw["conversations"]:
            turns, earlier = [], set()
            for t in conv["turns"]:
                facts = [GoldFact(**{k: v for k, v in f.items() if k != "kind"}) for f in t.get("facts", [])]
                traps = [GoldFact(**{**f, "kind": f.get("kind", "trap")}) for f in t.get("traps", [])]
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
                turns.append(Turn(t["user"], t.get("assistant", ""), facts, traps, t.get("none")))
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


# --- the matcher -----------------------------------------------------------------------------------------------

STOP = frozenset("""a an the and or but of in on at to for from with by as into about is are am was were be been
being has have had do does did i im me my mine we our us you your he she his her him they their them it its this
that these those there here so very just really also too user users who which what when where how now currently
still some any mostly usually""".split())
NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "without", "nobody", "neither", "nor"})
NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20"}
MONTHS = ("january february march april may june july august september october november december").split()
MATCH_SHARE = 0.5


def _open(text: str) -> str:
    text = text.replace("\u2019", "'")
    text = re.sub(r"\b(\d{4})-(\d{2})-(\d{2})\b",
                  lambda m: f"{int(m.group(3))} {MONTHS[int(m.group(2)) - 1]} {m.group(1)}"
                  if 1 <= int(m.group(2)) <= 12 else m.group(0), text)
    text = re.sub(r"\b(can)'t\b|\b(won)'t\b", lambda m: "can not" if m.group(1) else "will not", text,
                  flags=re.IGNORECASE)
    return re.sub(r"n't\b", " not", re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text))


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    if word.isdigit():
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "e", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]  # running -> run, not runn
            break
    return word


def _tokens(text: str) -> list[str]:
    return [NUMBER_WORDS.get(w, w) for w in re.findall(r"[\w']+", _open(text).casefold())]


def content(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _tokens(text) if w.strip("'") not in STOP and w not in NEGATIONS)


def required(text: str) -> frozenset[str]:
    """Names (capitalised words other than the first) and numbers: a match must have them all."""
    opened = _open(text)
    names = {_stem(w) for m in re.finditer(r"(?<!^)(?<![.!?] )\b[A-Z][\w'-]*", opened.strip())
             for w in _tokens(m.group(0))}
    return frozenset((names | {w for w in (_stem(t) for t in _tokens(text)) if w.isdigit()}) - STOP)


def negated(text: str) -> bool:
    return any(w in NEGATIONS for w in _tokens(text))


def share(fact: str, gold: str) -> float:
    """How well `fact` states `gold`: the Dice coefficient of their content words (twice the shared words over
    the two counts), or 0 when `fact` lacks a name or number of the gold, or one is negated and the other not."""
    want, have = content(gold), content(fact)
    if not want or not have or negated(fact) != negated(gold) or not required(gold) <= have:
        return 0.0
    return 2 * len(want & have) / (len(want) + len(have))


def best_match(fact: str, candidates: list[GoldFact]) -> GoldFact | None:
    """The gold fact or trap `fact` states best, or None below `MATCH_SHARE`: one with the same text first, then
    the highest Dice. On a tie a fact wins over a trap ("Lives in Berlin" said at last, after "Is Berlin
    expensive?"), and the later of two facts wins."""
    ordered = sorted(candidates, key=lambda g: g.kind == "fact")  # stable: traps first, each in their order
    same = [g for g in ordered if _flat(g.value).rstrip(".") == _flat(fact).rstrip(".")]
    if same:
        return same[-1]
    best, best_share = None, MATCH_SHARE
    for gold in ordered:
        s = share(fact, gold.value)
        if s >= best_share:
            best, best_share = gold, s
    return best


# --- the scripted model ----------------------------------------------------------------------------------------

_EXISTING = re.compile(r"^\s*-\s*(?:id\s*)?f?(\d+)\s*\[([^\]]*)\]:?\s*(.*)$", re.MULTILINE)
_NEW = re.compile(r"NEW\s*\[([^\]]*)\]:?\s*(.*)")
_SHORT_STOP = {"the", "and", "but", "for", "you", "are", "was", "not", "can", "has", "had", "his", "her", "our",
               "its", "who", "how", "why", "any", "all", "lol", "yet"}


class Script:
    """The scripted extractor and reconciler (see the module docstring). The bench sets `turn` before each
    exchange; counts of what it proposed are kept by kind."""

    def __init__(self) -> None:
        self.turn: Turn | None = None
        self.gold: dict[str, GoldFact] = {}
        self.exchanges = 0
        self.decisions = 0
        self.judged = 0
        self.proposed: Counter[str] = Counter()
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> str:
        with self.lock:
            name = _schema_name(body)
            if name == "decision":
                return json.dumps(self._decide(str(body["messages"][-1]["content"])))
            if name == "still_true":
                return json.dumps(self._judge(str(body["messages"][-1]["content"])))
            if name == "now_true":
                return json.dumps(self._restate(str(body["messages"][-1]["content"])))
            if name == "sheet":
                return json.dumps({"sentences": self._sheet(str(body["messages"][-1]["content"]))})
            return json.dumps({"facts": self._extract()})

    def _sheet(self, prompt: str) -> list[dict[str, Any]]:
        """The extractor's sheet, filled carelessly: every gold fact and trap on the sentence that holds its
        evidence, each sentence a statement (an instruction when it holds one), and on the fixed schedule a fact
        made of the assistant's words."""
        said = [text for _, text in _NUMBERED.findall(prompt.split("sentence by sentence:", 1)[-1])]
        rows = [{"n": n, "kind": "statement", "facts": []} for n in range(1, len(said) + 1)]
        turn = self.turn
        self.exchanges += 1
        if turn is None or not rows:
            return rows
        for f in turn.facts + turn.traps:
            kind = "trap" if f in turn.traps else "optional" if f.optional else "gold"
            self.proposed[kind] += 1
            n = next((i for i, text in enumerate(said) if _flat(f.evidence) in _flat(text)), 0) if f.evidence else 0
            rows[n]["facts"].append({"fact": f.value, "topic": _topic(f.category, f.key)})
            if f.category == "instruction":
                rows[n]["kind"] = "instruction"
        if self.exchanges % 4 == 3 and len(turn.assistant.split()) >= 4:
            said_by_it = " ".join(turn.assistant.split()[:6]).strip(".,!?")
            self.proposed["assistant_words"] += 1
            rows[0]["facts"].append({"fact": f"Said {said_by_it}", "topic": "other"})
        return rows

    def _extract(self) -> list[dict[str, Any]]:
        turn = self.turn
        self.exchanges += 1
        if turn is None:
            return []
        out = []
        for f in turn.facts + turn.traps:
            kind = "trap" if f in turn.traps else "optional" if f.optional else "gold"
            self.proposed[kind] += 1
            out.append(_proposal(f.category, f.key, f.value, f.evidence or turn.user))
        if self.exchanges % 4 == 1:
            word = next((w for w in re.findall(r"\b[A-Za-z]{3}\b", turn.user) if w.lower() not in _SHORT_STOP), None)
            if word:
                self.proposed["short_quote"] += 1
                out.append(_proposal("general", None, f"Cares about {word}", word))
        if self.exchanges % 4 == 3 and len(turn.assistant.split()) >= 4:
            said = " ".join(turn.assistant.split()[:6]).strip(".,!?")
            self.proposed["assistant_words"] += 1
            out.append(_proposal("general", None, f"Said {said}", said))
        return out

    def _decide(self, prompt: str) -> dict[str, Any]:
        new = _NEW.search(prompt)
        value = new.group(2).strip() if new else ""
        existing = [(int(i), tag, text.strip()) for i, tag, text in _EXISTING.findall(prompt)]
        turn = self.turn
        change = next((f for f in (turn.facts if turn else []) if f.changes and f.value == value), None)
        if change is not None and change.changes in self.gold:
            old = self.gold[change.changes].value
            target = next((i for i, _, text in existing if share(text, old) >= MATCH_SHARE), None)
            if target is not None:
                self.proposed["decision_change"] += 1
                return _decision("SUPERSEDE", target, "the gold change")
        same = next((i for i, _, text in existing if _flat(text) == _flat(value)), None)
        if same is not None:
            self.proposed["decision_none"] += 1
            return _decision("NONE", same, "already known")
        self.decisions += 1
        other = [i for i, tag, _ in existing if new is None or tag != new.group(1)]
        if self.decisions % 3 == 0 and other:
            self.proposed["decision_wrong_supersede"] += 1
            return _decision("SUPERSEDE", other[0], "scripted: a supersede of an unrelated fact")
        if self.decisions % 5 == 1:
            self.proposed["decision_unknown_target"] += 1
            return _decision("UPDATE", 987654, "scripted: a fact it was not shown")
        self.proposed["decision_add"] += 1
        return _decision("ADD", None, "different information")


    def _judge(self, prompt: str) -> dict[str, Any]:
        """Whether a known fact is still true: changed when it is the gold fact this turn's change replaces;
        otherwise, on a fixed schedule, a careless "changed" for a fact that is not."""
        known = _KNOWN.search(prompt)
        text = known.group(1).strip() if known else ""
        turn = self.turn
        old = [self.gold[f.changes].value for f in (turn.facts if turn else []) if f.changes in self.gold]
        self.judged += 1
        if any(share(text, value) >= MATCH_SHARE for value in old):
            self.proposed["judge_change"] += 1
            answer = "same_thing_changed"
        elif self.judged % 4 == 0:
            self.proposed["judge_wrong_change"] += 1
            answer = "same_thing_changed"
        else:
            answer = "different_things"
        return {"known_is_about": text[:30], "new_is_about": "", "answer": answer}

    def _restate(self, prompt: str) -> dict[str, Any]:
        """A known fact as it reads now: the value of this turn's gold change that replaces it; otherwise the known
        fact unchanged (which coop does not take)."""
        known = _KNOWN.search(prompt)
        text = known.group(1).strip() if known else ""
        turn = self.turn
        change = next((f for f in (turn.facts if turn else []) if f.changes in self.gold
                       and share(text, self.gold[f.changes].value) >= MATCH_SHARE), None)
        self.proposed["restate_change" if change else "restate_unchanged"] += 1
        return {"now_true": change.value if change else text}


_KNOWN = re.compile(r"^KNOWN FACT: (.*)$", re.MULTILINE)
_NUMBERED = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def _topic(category: str, key: str | None) -> str:
    """The sheet's topic for a gold fact's category and key: its slot's, else its category's, else "other"."""
    from coop.memory.growth.sameness import canonical_key
    from coop.memory.growth.vocabulary import TOPICS

    slot = (category, canonical_key(key))
    return next((t for t, s in TOPICS.items() if s == slot), None) or \
        next((t for t, s in TOPICS.items() if s == (category, None)), "other")


def _proposal(category: str, key: str | None, value: str, evidence: str) -> dict[str, Any]:
    return {"category": category, "key": key, "value": value, "importance": 0.5, "evidence": evidence,
            "stance": "asserted"}  # a careless extractor: everything asserted


def _decision(action: str, target: int | None, reason: str) -> dict[str, Any]:
    return {"action": action, "target": target, "confidence": 0.9, "reason": reason}


def _schema_name(body: dict[str, Any]) -> str:
    rf = body.get("response_format") or {}
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        return str((rf.get("json_schema") or {}).get("name", ""))
    system = str((body.get("messages") or [{}])[0].get("content", ""))
    if "sentence by sentence" in str(body.get("messages")):
        return "sheet"
    if "Rewrite the known fact" in system:
        return "now_true"
    if "THE USER JUST SAID" in str(body.get("messages")):
        return "still_true"
    return "decision" if "SUPERSEDE" in system and "EXISTING" in str(body.get("messages")) else "facts"


def serve_script(script: Script) -> tuple[ThreadingHTTPServer, str]:
    """The scripted model behind an OpenAI-compatible endpoint on 127.0.0.1 (a free port)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            content = script.reply(body)
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
    schema: str
    seconds: float
    usable: bool
    proposals: int = 0
    error: str | None = None
    reply: str | None = None  # the reply, as the model wrote it (cut at 2,000 characters)


class Recorder:
    """The fast model's `complete`, timed, each reply kept: what the memory jobs are given instead of it."""

    takes_schema = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def __call__(self, messages: list[dict[str, Any]], schema: Any = None) -> str:
        from coop.model.jsonreply import ModelReplyError, parse_json_reply, usable

        name = schema["name"] if schema else "plain"
        started = time.perf_counter()
        try:
            reply = self.inner(messages, schema=schema) if schema is not None else self.inner(messages)
        except Exception as exc:
            self.calls.append(Call(name, time.perf_counter() - started, False, error=f"{type(exc).__name__}: "
                                                                                     f"{str(exc)[:200]}"))
            raise
        call = Call(name, time.perf_counter() - started, usable(reply, schema) if schema else True)
        call.reply = str(reply)[:2000]  # what the model wrote: which fact it named, why, what it read
        if name in ("facts", "sheet"):
            try:
                data = parse_json_reply(reply)
                items = data.get("facts") if isinstance(data, dict) else data
                if isinstance(data, dict) and isinstance(data.get("sentences"), list):
                    items = [f for row in data["sentences"] if isinstance(row, dict)
                             for f in (row.get("facts") if isinstance(row.get("facts"), list) else [])]
                call.proposals = sum(isinstance(i, dict) for i in items) if isinstance(items, list) else 0
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
    """The stored values (ADD, SUPERSEDE, UPDATE) and the mentions (MERGE) since the last call, from each fact's
    history; `seen` holds how many history rows of each fact were already read."""
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
                ex = Exchange(dialogue.source, dialogue.id, number, turn.user, turn.none,
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
                ex.proposals = sum(c.proposals for c in ex.calls)
                ex.writes, ex.known = _events(memory, seen)
                for write in ex.writes:  # the user's words it rests on, as coop kept them
                    write["quote"] = next((p.quote for p in memory.sources.provenance(write["fact"])
                                           if p.message_id == message_id), None)
                texts = log.texts[logged:]
                if dialogue.scored:
                    stated += turn.facts
                    traps += turn.traps
                    changed |= {f.changes for f in turn.facts if f.changes}
                    _score(ex, turn, memory, stated, traps, changed, texts)
                else:
                    ex.refused_texts = [{"reason": r, "text": t, "why": why} for r, t, why in texts]
                out.append(ex)
    return out


def judged_against(candidates: list[GoldFact], trap_ids: set[str], category: str) -> list[GoldFact]:
    """The gold facts and traps a value stored under `category` may be judged against: a trap that is an
    instruction (a habit taken for one) is fallen into only by an instruction, since the habit stored as a fact
    about the user is what the gold wants."""
    return [g for g in candidates if category == "instruction" or g.id not in trap_ids or g.category != "instruction"]


def _score(ex: Exchange, turn: Turn, memory: Any, stated: list[GoldFact], traps: list[GoldFact],
           changed: set[str], texts: list[tuple[str, str, str]]) -> None:
    """Judge the exchange's writes, refusals and the active facts after it against the gold (see the matcher)."""
    candidates = stated + traps
    current = {f.id for f in stated if f.id not in changed}
    facts, trap_ids = {f.id for f in stated}, {f.id for f in traps}

    def verdict(text: str, category: str) -> tuple[str, GoldFact | None]:
        match = best_match(text, judged_against(candidates, trap_ids, category))
        if match is None:
            return "unmatched", None
        if match.id in trap_ids:
            return "trap", match
        return ("correct" if match.id in current else "stale" if match.id in facts else "unmatched"), match

    turn_changes = {f.changes for f in turn.facts if f.changes}
    for write in ex.writes:
        write["verdict"], match = verdict(write["value"], write["category"])
        write["match"] = match.id if match else None
        # the gold subject the value belongs to (a fact and its changes share one category and key in the gold)
        write["subject"] = f"{ex.dialogue}:{match.category}/{match.key}" \
            if match is not None and match.key and match.id not in trap_ids else None
        write["instruction_not_given"] = write["category"] == "instruction" and (
            match is None or match.category != "instruction" or match.id in trap_ids)
        if write["replaced"] is not None:
            old = best_match(write["replaced"], candidates)
            write["change_in_gold"] = old is not None and (old.id in turn_changes or match is old)
    for reason, text, why in texts:
        match = best_match(text, turn.facts + turn.traps)
        kind = "other" if match is None else "trap" if match in turn.traps else \
            "optional" if match.optional else "gold"
        ex.refused_texts.append({"reason": reason, "text": text, "why": why, "match": kind})
    assigned = {m.id for m in (best_match(f.text, candidates) for f in memory.facts.active(limit=100_000)) if m}
    for f in turn.facts:
        if not f.optional:
            (ex.recalled if f.id in assigned else ex.missed).append(f.id)
        if f.changes:
            ex.changes[f.id] = ("both_active" if f.changes in assigned else "correct") if f.id in assigned \
                else "missed"


# --- the report ------------------------------------------------------------------------------------------------


def summarise(exchanges: list[Exchange]) -> dict[str, Any]:
    """The figures of a set of exchanges (one source, or all)."""
    writes = [w for e in exchanges for w in e.writes]
    extraction = [c for e in exchanges for c in e.calls if c.schema in ("facts", "sheet")]
    decision = [c for e in exchanges for c in e.calls if c.schema in ("decision", "still_true", "now_true")]
    pairs = [c for c in decision if c.schema == "still_true"]
    restated = [c for c in decision if c.schema == "now_true"]
    refused = Counter({r: 0 for r in REASONS})
    for e in exchanges:
        refused.update(e.refused)
    actions = Counter(w["action"] for w in writes)
    known = sum(e.known for e in exchanges)
    proposals = sum(e.proposals for e in exchanges)
    out: dict[str, Any] = {
        "exchanges": len(exchanges), "failed": sum(e.error is not None for e in exchanges),
        "extraction_calls": len(extraction), "decision_calls": len(decision) - len(pairs) - len(restated),
        "still_true_calls": len(pairs),
        # known facts asked for as they read now after a change, and those stored so (`restate.accepted`)
        "restate_calls": len(restated),
        "restated": sum("written as it reads now" in (w.get("reason") or "") for w in writes),
        "json_unusable": {"facts": sum(not c.usable for c in extraction),
                          "decision": sum(not c.usable for c in decision)},
        "call_errors": sum(c.error is not None for c in extraction + decision),
        "proposals": proposals,
        "stored": {"added": actions["ADD"], "superseded": actions["SUPERSEDE"], "updated": actions["UPDATE"]},
        "known": known,
        "refused": dict(refused),
        "refused_by": {"evidence": refused["evidence"], "mood": refused["mood"],
                       "instruction_rules": refused["instruction"] + refused["widening"] + refused["unsafe"],
                       "reconciliation_rules": refused["change"] + refused["target"],
                       "forgotten": refused["forgotten"], "value": refused["value"], "known": refused["known"]},
        "json_usable": round(sum(c.usable for c in extraction + decision) / len(extraction + decision), 3)
        if extraction + decision else None,
        "not_stored_no_reason": sum(max(0, e.proposals - len(e.writes) - e.known - sum(e.refused.values()))
                                    for e in exchanges),
        "facts_per_exchange": round(len(writes) / len(exchanges), 3) if exchanges else 0.0,
        "seconds_per_call": {"extraction_median": round(median([c.seconds for c in extraction]), 3),
                             "extraction_p90": round(percentile([c.seconds for c in extraction], 90), 3),
                             "decision_median": round(median([c.seconds for c in decision]), 3)},
        "changes_asked": Counter(_verdict(c.reply) for c in pairs),
    }
    scored = [e for e in exchanges if e.source != "locomo"]
    if scored:
        judged = [w for e in scored for w in e.writes]
        verdicts = Counter(w["verdict"] for w in judged)
        recalled, missed = sum(len(e.recalled) for e in scored), sum(len(e.missed) for e in scored)
        changes = Counter(v for e in scored for v in e.changes.values())
        refused_gold = Counter(t["reason"] for e in scored for t in e.refused_texts if t["match"] == "gold")
        refused_traps = Counter(t["reason"] for e in scored for t in e.refused_texts if t["match"] == "trap")
        nothing = [e for e in scored if e.none]
        out["gold"] = {
            "stored_values": len(judged),
            "precision": round(verdicts["correct"] / len(judged), 3) if judged else None,
            "verdicts": {v: verdicts[v] for v in ("correct", "stale", "trap", "unmatched")},
            "recall": round(recalled / (recalled + missed), 3) if recalled + missed else None,
            "gold_facts": recalled + missed,
            "changes": {"total": sum(changes.values()), "correct": changes["correct"],
                        "both_active": changes["both_active"], "missed": changes["missed"]},
            "changes_not_in_gold": sum(1 for w in judged if w["replaced"] is not None and not w["change_in_gold"]),
            "instructions_not_given": sum(w["instruction_not_given"] for w in judged),
            "nothing_turns": len(nothing),
            "nothing_turns_with_a_write": sum(bool(e.writes) for e in nothing),
            "key_stability": key_stability(judged),
            "true_facts_refused": dict(refused_gold),
            "traps_refused": dict(refused_traps),
        }
    return out


def key_stability(writes: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the gold subjects (a conversation's category/key: a fact and its changes) with two or more stored values,
    the share whose values were all stored in one slot (category and key, keys of one slot counted as one)."""
    from coop.memory.growth.sameness import canonical_key

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
    print(f"Extraction benchmark: model {result['model']} ({result['json_mode']}), embedder {result['embedder']}")
    print(f"  commit {result['commit']}, {result['date']}; {result['machine']}")
    for name, s in result["sources"].items():
        print(f"\n  {name}: {s['exchanges']} exchanges ({s['failed']} failed), {s['extraction_calls']} extraction "
              f"calls, {s['decision_calls']} reconciliation calls + {s['still_true_calls']} still-true questions "
              f"({', '.join(f'{n} {v}' for v, n in sorted(s['changes_asked'].items())) or '-'}) + "
              f"{s['restate_calls']} restatements ({s['restated']} stored)")
        print(f"    JSON usable             {_fmt(s['json_usable'])} of calls; unusable: facts "
              f"{s['json_unusable']['facts']}, decision {s['json_unusable']['decision']}; call errors "
              f"{s['call_errors']}")
        st = s["stored"]
        print(f"    proposals               {s['proposals']}: stored {st['added']} added + {st['superseded']} "
              f"superseding + {st['updated']} updates, {s['known']} already known")
        by = s["refused_by"]
        print(f"    refused                 evidence {by['evidence']}, mood {by['mood']}, instruction rules "
              f"{by['instruction_rules']}, reconciliation rules {by['reconciliation_rules']}, forgotten "
              f"{by['forgotten']}, value {by['value']}, known {by['known']}; not stored, no reason counted: "
              f"{s['not_stored_no_reason']}")
        print(f"    facts per exchange      {s['facts_per_exchange']:.3f}")
        sec = s["seconds_per_call"]
        print(f"    seconds per call        extraction median {sec['extraction_median']:.2f} (p90 "
              f"{sec['extraction_p90']:.2f}), reconciliation median {sec['decision_median']:.2f}")
        g = s.get("gold")
        if g:
            v = g["verdicts"]
            print(f"    precision               {_fmt(g['precision'])} of {g['stored_values']} stored values "
                  f"(stale {v['stale']}, traps {v['trap']}, unmatched {v['unmatched']})")
            print(f"    recall of stated facts  {_fmt(g['recall'])} of {g['gold_facts']}")
            c = g["changes"]
            print(f"    changes                 {c['correct']} of {c['total']} superseded correctly (both active "
                  f"{c['both_active']}, missed {c['missed']}); changes not in the gold {g['changes_not_in_gold']}")
            print(f"    instructions not given  {g['instructions_not_given']}; turns that must yield nothing: "
                  f"{g['nothing_turns_with_a_write']} of {g['nothing_turns']} stored something")
            k = g["key_stability"]
            print(f"    key stability           {_fmt(k['share'])}: {k['one_slot']} of {k['subjects']} subjects "
                  "with two or more stored values kept one slot")
            print(f"    refused, gold facts     {g['true_facts_refused'] or '-'}; traps {g['traps_refused'] or '-'}")


def _verdict(reply: str | None) -> str:
    """A still-true reply's answer, or "unusable"."""
    from coop.memory.growth.still_true import parse_verdict
    from coop.model.jsonreply import ModelReplyError

    try:
        return parse_verdict(reply or "")
    except ModelReplyError:
        return "unusable"


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

        script = server = None
        api_base, model = args.api_base, args.model
        if model == "scripted":
            script = Script()
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
            "embedder": embedder.id, "limit": args.limit, "commit": commit, "date": date.today().isoformat(),
            "machine": machine(), "seconds": round(time.perf_counter() - started, 1),
            "gold_file": None if args.no_gold else str(args.gold),
            "profile_file": str(args.profile) if args.profile else None,
            "locomo_file": str(args.data) if args.data else None,
            "script": dict(script.proposed) if script else None}
    result = report(exchanges, meta)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print_report(result)
    print(f"\n  {result['seconds']:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
