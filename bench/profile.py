"""Profile recall: what coop knows about a person, in the prompt of every turn that needs it.

    .venv/bin/python bench/profile.py --data ../shared/data/profile/profile-dev.json [--extra-facts N]
        [--extra-messages N] [--personas N] [--embedder fastembed|hash] [--model-path DIR] [--cache FILE]
        [--keep DIR] [--json FILE] [--backend sqlite|postgres] [--url postgresql://...]

The data (`../shared/data/profile/README.md`): people, the facts an assistant has learnt about each (some with
the earlier values they superseded), questions that need one or more of those facts ("indirect" when they share no
content word with them, "direct" when they do) and questions that need none. Each person is one user in a
database of their own, as a person's coop keeps one memory per file (`--backend postgres`: a database of their own
on a throwaway Postgres server started for the run; `--url URL`: on that server).

Building a person's memory, through coop's own write path (`MemoryJobs(config, None, ...).writer(memory)`, the
`FactWriter` that `coop memory add`, /remember and extraction use; `Candidate(..., source="user")`, as the user
states a fact):
- first every earlier value (`history`), oldest first across the person's facts, then the current values, so
  each current value supersedes its history through the pipeline (same category and key); a current value that
  does not supersede its history is counted (`chains_not_superseded`);
- with `--extra-facts N`, N more facts from `bench/profile_facts.py` (low importance, varied, seeded by the
  person, never holding a name of the person's facts or questions), mixed in among the current values in a seeded
  order, as a person mentions small things between big ones over months;
- coop's storage has no public call that dates a fact, so every fact is created when the benchmark writes it (a
  few seconds apart); the data's `since` dates are not stored, and the write order stands in for them;
- then `embed_pending(memory, embedder, kinds=("fact",))` (the writer already stored most vectors).
With `--extra-messages N`, the memory first holds N past messages (real English: Debian's fortunes and WordNet's
example sentences and definitions, `bench/distractors.py`; `apt-get install fortunes wordnet-base`), in sessions of
20 dated across the year before the run, alternately the user's and the assistant's, stored with `add_message`
and embedded with `embed_pending` as `bench/scale.py` stores its distractors. They are built once per run into one
database (the same N messages for every person) that each person's database starts as a copy of; `--keep DIR`
keeps that database for the next run (delete DIR after changing how messages are stored). Vectors of the texts
are cached by text in `--cache` (`bench/scale.py`'s `CachedEmbedder`), so only the first run embeds them.

Asking: each question is the first message of a new session, `ChatSession(memory, config, embedder=...)
.prepare(text)` with the default `[memory]` (no model is called). What counts is the system prompt's text
(`read_prompt`): a line shows the fact whose id (`f123`) comes first on it (later ids are references, "now f7");
a needed fact is in the prompt when a line shows its current value; an earlier value is shown as current when a
line without the word "former" (or "formerly") shows it, or holds its exact text. Facts per prompt: the lines
showing one of the person's facts (earlier values included); fact tokens: coop's estimate (`estimate_tokens`) of
those lines. The standing instructions (their own section, always shown, without ids) are counted apart. Figures:
- fact recall by kind: found / needed over every (question, needed fact) pair of indirect, direct and
  current-value questions (those whose needed facts have a history); beside it the share of questions with all
  their facts, and what put a found fact there (`Prompt.recalled`'s reason; "unlisted" when it is on the prompt
  but not among the recalled items);
- stale: earlier values shown as current, over every prompt (questions that need memory and those that do not);
- facts and fact tokens per prompt for the questions that need no memory (asked of every person);
- prepare time: median and p95 of `prepare`, each person's first call left out (it loads that database's
  vectors: a warm-up).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import distractors
from common import BenchError, Stores, add_backend_arguments, load_embedder, machine, median, percentile
from profile_facts import ExtraFact, extra_facts, names_in

USER = "me"            # every person is the one user of their own database
DAY = 86400.0
KINDS = ("indirect", "direct", "current")
FACT_REF = re.compile(r"(?<![\w])f(\d+)(?![\w])")
FORMER = re.compile(r"\bformer(ly)?\b", re.IGNORECASE)


@dataclass(frozen=True)
class DataFact:
    id: str
    category: str
    key: str | None
    value: str
    importance: float
    since: str | None
    history: tuple[tuple[str, str | None], ...]  # (value, since), oldest first


@dataclass(frozen=True)
class Question:
    text: str
    needs: tuple[str, ...]
    kind: str  # indirect | direct


@dataclass(frozen=True)
class Persona:
    id: str
    name: str
    facts: tuple[DataFact, ...]
    questions: tuple[Question, ...]


@dataclass
class Built:
    """One person's memory as written: data fact id -> coop id of its current value; coop id of each earlier value
    -> (data fact id, its text); every coop fact id written; what the writer did."""

    current: dict[str, int] = field(default_factory=dict)
    former: dict[int, tuple[str, str]] = field(default_factory=dict)
    extra_ids: set[int] = field(default_factory=set)
    actions: Counter[str] = field(default_factory=Counter)
    chains_not_superseded: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def known(self) -> set[int]:
        return set(self.current.values()) | set(self.former) | self.extra_ids


def load(path: Path) -> tuple[list[Persona], list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BenchError(f"cannot read {path}: {exc}") from None
    personas = []
    for p in data.get("personas", []):
        facts = tuple(DataFact(f["id"], f["category"], f.get("key"), f["value"], float(f.get("importance", 0.5)),
                               f.get("since"), tuple((h["value"], h.get("since")) for h in f.get("history", [])))
                      for f in p["facts"])
        ids = {f.id for f in facts}
        questions = tuple(Question(q["text"], tuple(q["needs"]), q["kind"]) for q in p["questions"])
        for q in questions:
            if not set(q.needs) <= ids:
                raise BenchError(f"{path}: {q.text!r} needs {sorted(set(q.needs) - ids)}, not facts of {p['id']}")
        personas.append(Persona(p["id"], p.get("name", p["id"]), facts, questions))
    if not personas:
        raise BenchError(f"{path} has no personas")
    return personas, list(data.get("no_memory_questions", []))


def person_names(persona: Persona) -> set[str]:
    """Every name in the person's facts, earlier values and questions: no extra fact may hold one."""
    texts = [f.value for f in persona.facts] + [v for f in persona.facts for v, _ in f.history]
    return names_in(texts + [q.text for q in persona.questions])


def extras_for(persona: Persona, n: int) -> list[ExtraFact]:
    taken = {(f.category, f.key) for f in persona.facts if f.key}
    return extra_facts(n, persona.id, avoid=person_names(persona), avoid_keys=taken) if n else []


# -- building a person's memory ---------------------------------------------------------------------------------

def write_facts(memory: Any, persona: Persona, extras: list[ExtraFact], embedder: Any, config: Any) -> Built:
    """The person's facts through coop's write path: earlier values first (oldest first), then the current values
    with the extra facts mixed in (seeded order); then the facts' vectors."""
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.growth.reconcile import Candidate

    started = time.perf_counter()
    writer = MemoryJobs(config, None, embedder=lambda: embedder).writer(memory)
    built = Built()
    earlier = sorted(((since or "", fact, value) for fact in persona.facts for value, since in fact.history),
                     key=lambda e: e[0])
    for _, fact, value in earlier:
        result = writer.write(Candidate(value, category=fact.category, key=fact.key, importance=fact.importance,
                                        source="user"))
        built.actions[result.action if result else "SKIP"] += 1
        if result is not None:
            built.former[result.fact_id] = (fact.id, value)
    order: list[DataFact | ExtraFact] = [*persona.facts, *extras]
    slots = sorted(random.Random(f"coop-profile-order:{persona.id}").sample(range(len(order)), len(persona.facts)))
    mixed: list[DataFact | ExtraFact | None] = [None] * len(order)
    for slot, fact in zip(slots, persona.facts):
        mixed[slot] = fact
    rest = iter(extras)
    for i, entry in enumerate(mixed):
        if entry is None:
            mixed[i] = next(rest)
    for entry in mixed:
        assert entry is not None
        result = writer.write(Candidate(entry.value, category=entry.category or "general", key=entry.key,
                                        importance=entry.importance, source="user"))
        built.actions[result.action if result else "SKIP"] += 1
        if result is None:
            continue
        if isinstance(entry, DataFact):
            built.current[entry.id] = result.fact_id
            if entry.history and result.action != "SUPERSEDE":
                built.chains_not_superseded.append(entry.id)
        else:
            built.extra_ids.add(result.fact_id)
    embed_pending(memory, embedder, kinds=("fact",))
    for fact_id, (data_id, _) in built.former.items():
        if memory.get("fact", fact_id).superseded_at is None and data_id not in built.chains_not_superseded:
            built.chains_not_superseded.append(data_id)
    built.seconds = time.perf_counter() - started
    return built


def build_messages(path: Path | str, n: int, embedder: Any, backend: str = "sqlite") -> float:
    """A store holding `n` past messages of USER (see the module docstring); returns the seconds it took."""
    from coop.config.loading import ImportanceConfig
    from coop.memory.growth.embedding import embed_pending, texts_read
    from coop.memory.growth.importance import message_importance
    from coop.memory.storage.backends import open_store

    if not (distractors.FORTUNES.is_dir() or distractors.WORDNET.is_dir()):
        raise BenchError("the past messages' text is not installed: apt-get install fortunes wordnet-base")
    started = time.perf_counter()
    sessions = distractors.take(distractors.pool([]), n, "coop-profile")
    if hasattr(embedder, "prefetch"):
        embedder.prefetch(texts_read([text for session in sessions for _, text in session]))
    store = open_store(backend, str(path))
    memory = store.user(USER)
    weights = ImportanceConfig()
    first = time.time() - 366 * DAY
    for number, session in enumerate(sessions):
        at = first + 365 * DAY * number / max(1, len(sessions))
        with memory.db.atomic():
            session_id = memory.sessions.start(f"past {number}", started_at=at)
            for offset, (who, text) in enumerate(session):
                role = "user" if who == 0 else "assistant"
                memory.messages.add(session_id, role, text, created_at=at + 30 * offset,
                                   importance=message_importance(role, text, weights))
    embed_pending(memory, embedder, batch_size=128, kinds=("message",))
    Stores.settle(memory)
    store.close()
    return time.perf_counter() - started


# -- reading a prompt -------------------------------------------------------------------------------------------

def read_prompt(system: str, known: set[int], former: dict[int, str], current_texts: list[str]
                ) -> tuple[dict[int, list[str]], list[int], list[int]]:
    """What a system prompt shows, line by line: {fact id: its lines} for the ids in `known`, a line showing the
    fact whose id comes first on it (later ids are references: "now f7", "newer than f3"); the earlier values
    (`former`: id -> text) shown as current, on a line without the word "former" or "formerly", by id or by their
    exact text (not as part of a current value's text); and the earlier values shown as former."""
    shown: dict[int, list[str]] = {}
    stale: set[int] = set()
    as_former: set[int] = set()
    for line in system.splitlines():
        first = FACT_REF.search(line)
        fact_id = int(first.group(1)) if first else None
        if fact_id in known:
            shown.setdefault(fact_id, []).append(line)
        for earlier, text in former.items():
            bare = line
            for current in current_texts:
                if text in current:
                    bare = bare.replace(current, "")
            if earlier == fact_id or text in bare:
                (as_former if FORMER.search(line) else stale).add(earlier)
    return shown, sorted(stale), sorted(as_former - stale)


def instruction_lines(system: str) -> list[str]:
    """The standing instructions' lines (their own section, shown in every prompt)."""
    lines: list[str] = []
    inside = False
    for line in system.splitlines():
        if line.startswith("Standing instructions"):
            inside = True
        elif inside and line.startswith("- "):
            lines.append(line)
        elif inside:
            inside = False
    return lines


def ask(memory: Any, config: Any, embedder: Any, text: str) -> tuple[Any, float]:
    """One question as the first message of a new session: (prompt, milliseconds of `prepare`)."""
    from coop.chat.session import ChatSession

    session = ChatSession(memory, config, embedder=lambda: embedder)
    started = time.perf_counter()
    prompt = session.prepare(text)
    return prompt, (time.perf_counter() - started) * 1000


def evaluate_person(memory: Any, persona: Persona, built: Built, no_memory: list[str], embedder: Any,
                    config: Any) -> dict[str, Any]:
    from coop.memory.text import estimate_tokens

    rows: list[dict[str, Any]] = []
    known = built.known
    former = {fact_id: text for fact_id, (_, text) in built.former.items()}
    current_texts = [memory.get("fact", i).text for i in built.current.values()]
    by_data = {f.id: f for f in persona.facts}
    timings: list[float] = []
    asked = [(q.text, q) for q in persona.questions] + [(text, None) for text in no_memory]
    for number, (text, question) in enumerate(asked):
        prompt, ms = ask(memory, config, embedder, text)
        if number:  # the first call of each database warms it up
            timings.append(ms)
        system = prompt.messages[0]["content"]
        shown, stale, as_former = read_prompt(system, known, former, current_texts)
        reasons = {r.item.item_id: r.reason for r in prompt.recalled if r.item.kind == "fact"}
        lines = {line for found in shown.values() for line in found}
        row = {"person": persona.id, "question": text, "kind": question.kind if question else "no_memory",
               "prepare_ms": round(ms, 2), "facts_shown": len(shown),
               "extra_facts_shown": len(set(shown) & built.extra_ids),
               "fact_tokens": sum(estimate_tokens(line) for line in lines),
               "instruction_lines": len(instruction_lines(system)), "memory_tokens": prompt.tokens.get("memory", 0),
               "stale": [{"id": f"f{i}", "text": former[i]} for i in stale],
               "former_shown": [f"f{i}" for i in as_former]}
        if question is not None:
            needs = []
            for data_id in question.needs:
                fact_id = built.current.get(data_id)
                found = fact_id is not None and fact_id in shown
                needs.append({"fact": data_id, "id": f"f{fact_id}" if fact_id else None,
                              "value": by_data[data_id].value, "found": found,
                              "reason": (reasons.get(fact_id, "unlisted") if found else None),
                              "has_history": bool(by_data[data_id].history)})
            row["needs"] = needs
            row["current_value"] = any(n["has_history"] for n in needs)
        rows.append(row)
    return {"rows": rows, "prepare_ms": timings}


# -- figures ----------------------------------------------------------------------------------------------------

def recall_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    needed = [n for r in rows for n in r["needs"]]
    found = [n for n in needed if n["found"]]
    return {"questions": len(rows), "needed": len(needed), "found": len(found),
            "fact_recall": round(len(found) / len(needed), 3) if needed else 0.0,
            "all_needed": round(sum(all(n["found"] for n in r["needs"]) for r in rows) / len(rows), 3)
            if rows else 0.0,
            "by_reason": dict(Counter(n["reason"] for n in found).most_common())}


def report(rows: list[dict[str, Any]], timings: list[float]) -> dict[str, Any]:
    asked = [r for r in rows if r["kind"] != "no_memory"]
    off = [r for r in rows if r["kind"] == "no_memory"]
    kinds = {"indirect": recall_of([r for r in asked if r["kind"] == "indirect"]),
             "direct": recall_of([r for r in asked if r["kind"] == "direct"]),
             "current": recall_of([r for r in asked if r["current_value"]]),
             "all": recall_of(asked)}
    # a current-value question is judged on the facts that have a history
    current_rows = [{"needs": [n for n in r["needs"] if n["has_history"]]} for r in asked if r["current_value"]]
    kinds["current"] = {**recall_of(current_rows), "questions": len(current_rows)}
    stale = [s for r in rows for s in r["stale"]]
    return {
        "kinds": kinds,
        "stale_shown": len(stale), "prompts_with_stale": sum(bool(r["stale"]) for r in rows),
        "stale_values": dict(Counter(s["text"] for s in stale).most_common()),
        "former_shown": sum(len(r["former_shown"]) for r in rows),
        "prompts": len(rows),
        "no_memory": _per_prompt(off), "with_memory": _per_prompt(asked),
        "prepare_ms_median": round(median(timings), 1), "prepare_ms_p95": round(percentile(timings, 95), 1),
        "prepare_calls": len(timings),
        "missed": [{"person": r["person"], "question": r["question"], "kind": r["kind"],
                    "missing": [n["value"] for n in r["needs"] if not n["found"]]}
                   for r in asked if not all(n["found"] for n in r["needs"])],
    }


def _per_prompt(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"prompts": 0}
    return {"prompts": len(rows),
            "facts_mean": round(sum(r["facts_shown"] for r in rows) / len(rows), 2),
            "facts_median": median([r["facts_shown"] for r in rows]),
            "facts_max": max(r["facts_shown"] for r in rows),
            "extra_facts_mean": round(sum(r["extra_facts_shown"] for r in rows) / len(rows), 2),
            "fact_tokens_mean": round(sum(r["fact_tokens"] for r in rows) / len(rows), 1),
            "fact_tokens_median": median([r["fact_tokens"] for r in rows]),
            "fact_tokens_max": max(r["fact_tokens"] for r in rows),
            "instruction_lines_mean": round(sum(r["instruction_lines"] for r in rows) / len(rows), 2),
            "memory_tokens_median": median([r["memory_tokens"] for r in rows])}


# -- the run ----------------------------------------------------------------------------------------------------

def run(personas: list[Persona], no_memory: list[str], embedder: Any, query_embedder: Any, *,
        extra_facts_n: int = 0, extra_messages: int = 0, keep: Path | None = None,
        progress: Callable[[str], None] = print, stores: Stores | None = None) -> dict[str, Any]:
    """Every person in a database of their own (a copy of the past messages' database when there is one),
    their facts written, their questions and the no-memory questions asked. `embedder` writes (it may be the
    cached one); `query_embedder` is the one the chat turns use. `stores`: where the databases are (SQLite
    files by default; on Postgres a database per person, copied from the past messages' one as a template)."""
    from coop.config.loading import Config
    from coop.memory.storage.backends import open_store

    config = Config()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    timings: list[float] = []
    people = []
    messages_seconds = 0.0
    with tempfile.TemporaryDirectory() as tmp, (stores or Stores(directory=tmp)) as where:
        if where.postgres:
            return run_on_server(personas, no_memory, embedder, query_embedder, where, extra_facts_n=extra_facts_n,
                                 extra_messages=extra_messages, progress=progress)
        base: Path | None = None
        if extra_messages:
            base = (keep or Path(tmp)) / f"profile-messages-{extra_messages}.db"
            done = Path(f"{base}.done")
            if not (keep is not None and base.exists() and done.exists()):
                base.parent.mkdir(parents=True, exist_ok=True)
                for old in (base, Path(f"{base}-wal"), Path(f"{base}-shm"), done):
                    old.unlink(missing_ok=True)
                messages_seconds = build_messages(base, extra_messages, embedder)
                done.touch()
                progress(f"  {extra_messages:,} past messages stored and embedded in {messages_seconds:.0f} s")
        for persona in personas:
            path = Path(tmp) / f"{persona.id}.db"
            if base is not None:
                shutil.copyfile(base, path)
                if Path(f"{base}-wal").exists():
                    shutil.copyfile(f"{base}-wal", f"{path}-wal")
            store = open_store("sqlite", str(path))
            ask_person(store.user(USER), persona, no_memory, embedder, query_embedder, config, extra_facts_n,
                       rows, timings, people, progress)
            store.close()
            path.unlink(missing_ok=True)
    figures = report(rows, timings)
    figures.update({"people": people, "extra_facts": extra_facts_n, "extra_messages": extra_messages,
                    "messages_seconds": round(messages_seconds, 1),
                    "seconds": round(time.perf_counter() - started, 1), "rows": rows})
    return figures


def run_on_server(personas: list[Persona], no_memory: list[str], embedder: Any, query_embedder: Any,
                  where: Stores, *, extra_facts_n: int, extra_messages: int,
                  progress: Callable[[str], None]) -> dict[str, Any]:
    """`run` on a Postgres server: a database per person, made from the past messages' database as a template
    when there is one (`--keep` is for SQLite files: the server's databases go with the run)."""
    from coop.config.loading import Config
    from coop.memory.storage.backends import open_store

    config = Config()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    timings: list[float] = []
    people: list[dict[str, Any]] = []
    messages_seconds = 0.0
    base: str | None = None
    if extra_messages:
        base = where.location(f"profile-messages-{extra_messages}")
        messages_seconds = build_messages(base, extra_messages, embedder, backend="postgres")
        progress(f"  {extra_messages:,} past messages stored and embedded in {messages_seconds:.0f} s")
    for persona in personas:
        url = where.copy(base, persona.id) if base else where.location(persona.id)
        store = open_store("postgres", url)
        ask_person(store.user(USER), persona, no_memory, embedder, query_embedder, config, extra_facts_n,
                   rows, timings, people, progress)
        store.close()
        where.drop(url)
    figures = report(rows, timings)
    figures.update({"people": people, "extra_facts": extra_facts_n, "extra_messages": extra_messages,
                    "messages_seconds": round(messages_seconds, 1),
                    "seconds": round(time.perf_counter() - started, 1), "rows": rows})
    return figures


def ask_person(memory: Any, persona: Persona, no_memory: list[str], embedder: Any, query_embedder: Any, config: Any,
               extra_facts_n: int, rows: list[dict[str, Any]], timings: list[float], people: list[dict[str, Any]],
               progress: Callable[[str], None]) -> None:
    """One person's facts written and questions asked; their rows, timings and summary appended."""
    extras = extras_for(persona, extra_facts_n)
    built = write_facts(memory, persona, extras, embedder, config)
    asked = time.perf_counter()
    result = evaluate_person(memory, persona, built, no_memory, query_embedder, config)
    rows += result["rows"]
    timings += result["prepare_ms"]
    people.append({"person": persona.id, "facts": len(persona.facts), "extra_facts": len(extras),
                   "writes": dict(built.actions), "chains_not_superseded": built.chains_not_superseded,
                   "write_seconds": round(built.seconds, 1),
                   "ask_seconds": round(time.perf_counter() - asked, 1)})
    progress(f"  {persona.id}: {len(persona.facts)} facts + {len(extras)} extra written in "
             f"{built.seconds:.1f} s ({dict(built.actions)}), {len(result['rows'])} prompts in "
             f"{time.perf_counter() - asked:.1f} s")


def print_table(f: dict[str, Any]) -> None:
    print(f"Profile benchmark: {f['data']} ({len(f['people'])} people); {f['extra_facts']:,} extra facts and "
          f"{f['extra_messages']:,} past messages per person; embedder {f['embedder']}")
    print(f"  {'questions':<14}{'asked':>6}{'needed':>8}{'fact recall':>13}{'all needed':>12}   found by")
    for kind, label in (("indirect", "indirect"), ("direct", "direct"), ("current", "current value"),
                        ("all", "all")):
        k = f["kinds"][kind]
        reasons = ", ".join(f"{reason} {count}" for reason, count in k["by_reason"].items())
        print(f"  {label:<14}{k['questions']:>6}{k['needed']:>8}{k['fact_recall']:>13.3f}{k['all_needed']:>12.3f}"
              f"   {reasons}")
    which = "".join(f"; {text!r} x{count}" for text, count in f["stale_values"].items())
    print(f"  stale values shown as current: {f['stale_shown']} (in {f['prompts_with_stale']} of {f['prompts']} "
          f"prompts{which}); earlier values shown as former: {f['former_shown']}")
    for name, label in (("no_memory", "no-memory questions"), ("with_memory", "questions that need memory")):
        p = f[name]
        if p["prompts"]:
            print(f"  {label} ({p['prompts']} prompts): facts per prompt {p['facts_mean']:.2f} (median "
                  f"{p['facts_median']:g}, max {p['facts_max']}; extra facts {p['extra_facts_mean']:.2f}), fact "
                  f"tokens {p['fact_tokens_mean']:.1f} (median {p['fact_tokens_median']:g}, max "
                  f"{p['fact_tokens_max']}), standing instructions {p['instruction_lines_mean']:.1f}")
    print(f"  prepare: median {f['prepare_ms_median']:.1f} ms, p95 {f['prepare_ms_p95']:.1f} ms "
          f"({f['prepare_calls']} calls; each person's first left out)")
    print(f"  {f['seconds']:.0f} s in all ({f['messages_seconds']:.0f} s for the past messages); {f['machine']}")
    if f.get("backend"):
        print(f"  store: {f['backend']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path, help="a profile-shaped JSON file")
    parser.add_argument("--extra-facts", type=int, default=0, metavar="N",
                        help="N extra low-importance facts per person (bench/profile_facts.py)")
    parser.add_argument("--extra-messages", type=int, default=0, metavar="N",
                        help="N past conversation messages per person (bench/distractors.py)")
    parser.add_argument("--personas", type=int, default=None, metavar="N", help="only the first N people")
    parser.add_argument("--embedder", choices=("fastembed", "hash"), default="fastembed",
                        help="hash: coop's test embedder (no meaning; for checking the benchmark itself)")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "coop-bench" / "vectors.sqlite",
                        help="where the vectors of written texts are kept between runs (fastembed only)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep the past messages' database in DIR and reuse it on the next run")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the figures to FILE")
    add_backend_arguments(parser)
    args = parser.parse_args(argv)
    if args.extra_facts < 0 or args.extra_messages < 0:
        raise BenchError("--extra-facts and --extra-messages take a number of 0 or more")
    personas, no_memory = load(args.data)
    personas = personas[:args.personas]
    embedder = load_embedder(args.embedder, args.model_path)
    writes = embedder
    if args.embedder == "fastembed":
        from scale import CachedEmbedder

        writes = CachedEmbedder(embedder, args.cache)
    stores = Stores.from_args(args)
    figures = run(personas, no_memory, writes, embedder, extra_facts_n=args.extra_facts,
                  extra_messages=args.extra_messages, keep=args.keep, stores=stores)
    figures.update({"data": str(args.data), "embedder": embedder.id, "machine": machine(),
                    "backend": stores.describe()})
    print_table(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
