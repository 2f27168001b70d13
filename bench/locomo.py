"""Retrieval quality on LoCoMo conversations, through coop's own ingest and search (no LLM, offline).

    .venv/bin/python bench/locomo.py --data ../shared/data/locomo/locomo-dev.json [--json] [--model-path DIR]
                                     [--backend sqlite|postgres] [--url postgresql://...]

The protocol is the one in `../shared/data/locomo/README.md`: one conversation is one user's memory; each turn is
stored as one message `"<speaker>: <text>"` (plus `" [image: <caption>]"`) dated with its session's date; each
question of categories 1-4 with at least one valid evidence id is searched with coop's retrieval, and a hit is a
returned message whose turn is an evidence id. R_any@k: at least one evidence turn in the top k; R_all@k: all.

Messages are written with `memory.messages.add` (speaker A's turns as the user, speaker B's as the assistant,
each session a session) and embedded by `growth.embedding.embed_pending`, the code the chat's background worker runs;
questions go through `search.search` with the retrieval settings of `[memory]` at their defaults: the same path as
`coop chat` and `coop memory search`. Every conversation is a separate user of one database, so each search also
proves that no other user's rows leak in. The `observation`, `session_summary` and `event_summary` fields are
never read.

`--backend postgres` keeps that database on a throwaway Postgres server started for the run (`--url URL`: in that
empty database); full text, indexed lazily there, is indexed at the end of each conversation's ingest.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, Stores, add_backend_arguments, load_embedder, machine, median

KS = (5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION = re.compile(r"session_(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    date: float | None
    turns: list[Turn]


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    questions: list[Question]


def parse_date(text: str | None) -> float | None:
    """LoCoMo's '1:56 pm on 8 May, 2023' as a Unix time; None when absent or in another form."""
    if not text:
        return None
    for form in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(text.strip(), form).timestamp()
        except ValueError:
            continue
    return None


def turn_text(turn: dict) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def load(path: Path) -> list[Conversation]:
    """The conversations of a LoCoMo-shaped file; malformed evidence ids are split, unknown ones dropped."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BenchError(f"{path} is not JSON: {exc}") from None
    if isinstance(raw, dict):
        raw = [raw]
    conversations = []
    for index, entry in enumerate(raw):
        try:
            conv = entry["conversation"]
            sessions = []
            for key, turns in conv.items():
                match = _SESSION.fullmatch(key)
                if not match or not isinstance(turns, list):
                    continue
                number = int(match.group(1))
                sessions.append(Session(number, parse_date(conv.get(f"{key}_date_time")),
                                        [Turn(t["dia_id"], t.get("speaker", ""), turn_text(t)) for t in turns]))
            sessions.sort(key=lambda s: s.number)
            known = {t.dia_id for s in sessions for t in s.turns}
            questions = []
            for qa in entry.get("qa", []):
                category = qa.get("category")
                if category not in CATEGORIES:
                    continue
                evidence = frozenset(e for item in qa.get("evidence", []) for e in _EVIDENCE_SPLIT.split(str(item))
                                     if e in known)
                if evidence:
                    questions.append(Question(str(qa["question"]), category, evidence))
            conversations.append(Conversation(str(entry.get("sample_id", f"conv-{index}")), conv.get("speaker_a", ""),
                                              conv.get("speaker_b", ""), sessions, questions))
        except (KeyError, TypeError, AttributeError) as exc:
            raise BenchError(f"{path}: conversation {index} is not in the LoCoMo shape "
                             f"({type(exc).__name__}: {exc})") from None
    return conversations


def ingest(store, conv: Conversation, embedder, batch_size: int) -> tuple[object, dict[int, str]]:
    """Store one conversation as one user's memory, through coop's own writes; returns the user and id -> dia_id."""
    from coop.config.loading import ImportanceConfig
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.importance import message_importance

    memory = store.user(conv.sample_id)
    weights = ImportanceConfig()
    ids: dict[int, str] = {}
    previous = 0.0
    for session in conv.sessions:
        started = session.date if session.date is not None else previous + 86400
        previous = started
        session_id = memory.sessions.start(f"session {session.number}", started_at=started,
                                          external_id=f"{conv.sample_id}:session_{session.number}")
        for offset, turn in enumerate(session.turns):
            role = "assistant" if turn.speaker == conv.speaker_b and turn.speaker != conv.speaker_a else "user"
            message_id = memory.messages.add(session_id, role, turn.text, created_at=started + offset,
                                            importance=message_importance(role, turn.text, weights),
                                            external_id=turn.dia_id)
            if message_id is not None:
                ids[message_id] = turn.dia_id
    embed_pending(memory, embedder, batch_size=batch_size)
    Stores.settle(memory)
    return memory, ids


def evaluate(conversations: list[Conversation], embedder, *, batch_size: int = 32, db_path: str | None = None,
             settings: dict | None = None, stores: Stores | None = None) -> dict:
    """Ingest every conversation, search every question; returns the figures (see `report`)."""
    from coop.config.loading import MemoryConfig
    from coop.memory.retrieval.search import search
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.backends import open_store

    retrieval = RetrievalSettings.from_config(MemoryConfig()).but(**(settings or {}))
    options = retrieval.as_dict()
    with tempfile.TemporaryDirectory() as tmp, (stores or Stores(directory=tmp)) as where:
        store = open_store("sqlite", db_path) if db_path else where.one("locomo")
        per_question: list[dict] = []
        ingest_s = search_s = 0.0
        latencies: list[float] = []
        messages = 0
        for conv in conversations:
            started = time.perf_counter()
            memory, ids = ingest(store, conv, embedder, batch_size)
            ingest_s += time.perf_counter() - started
            messages += len(ids)
            for question in conv.questions:
                started = time.perf_counter()
                result = search(memory, question.text, embedder=embedder, limit=max(KS), settings=retrieval)
                latencies.append((time.perf_counter() - started) * 1000)
                ranked = [ids.get(hit.item.item_id) if hit.kind == "message" else None for hit in result.hits]
                per_question.append({"conversation": conv.sample_id, "category": question.category,
                                     "hits": {k: sorted(question.evidence & set(ranked[:k])) for k in KS},
                                     "evidence": sorted(question.evidence)})
            search_s += sum(latencies[-len(conv.questions):]) / 1000 if conv.questions else 0.0
        store.close()
    return {"questions": per_question, "messages": messages, "ingest_seconds": ingest_s,
            "search_ms_median": median(latencies), "options": options}


def recall(rows: list[dict]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in KS:
        out[f"R_any@{k}"] = sum(bool(r["hits"][k]) for r in rows) / len(rows) if rows else 0.0
        out[f"R_all@{k}"] = sum(len(r["hits"][k]) == len(r["evidence"]) for r in rows) / len(rows) if rows else 0.0
    return out


def report(figures: dict, embedder_id: str, data: Path) -> dict:
    rows = figures["questions"]
    by_category: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row)
    return {
        "data": str(data),
        "conversations": len({r["conversation"] for r in rows}),
        "questions": len(rows),
        "messages": figures["messages"],
        "embedder": embedder_id,
        "settings": {**figures["options"], "limit": max(KS)},
        "overall": recall(rows),
        "categories": {f"{c} {CATEGORIES[c]}": {"questions": len(by_category[c]), **recall(by_category[c])}
                       for c in sorted(by_category)},
        "ingest_seconds": round(figures["ingest_seconds"], 2),
        "search_ms_median": round(figures["search_ms_median"], 2),
        "machine": machine(),
    }


def print_table(result: dict) -> None:
    metrics = ["R_any@5", "R_all@5", "R_any@10", "R_all@10"]
    print(f"LoCoMo retrieval: {result['data']}")
    print(f"  {result['conversations']} conversations, {result['messages']} messages, "
          f"{result['questions']} questions (categories 1-4 with evidence)")
    print(f"  embedder: {result['embedder']}")
    print("  settings: " + ", ".join(f"{k}={v}" for k, v in result["settings"].items()))
    print()
    print(f"  {'':<18}{'n':>5}" + "".join(f"{m:>10}" for m in metrics))
    print(f"  {'overall':<18}{result['questions']:>5}" + "".join(f"{result['overall'][m]:>10.3f}" for m in metrics))
    for name, row in result["categories"].items():
        print(f"  {name:<18}{row['questions']:>5}" + "".join(f"{row[m]:>10.3f}" for m in metrics))
    print()
    print(f"  ingest {result['ingest_seconds']:.1f} s, search median {result['search_ms_median']:.1f} ms; "
          f"{result['machine']}")
    if result.get("backend"):
        print(f"  store: {result['backend']}")


def _overrides(pairs: list[str]) -> dict:
    """`--set key=value` pairs, checked against `[memory]`'s retrieval keys with coop's own validation."""
    import dataclasses

    from coop.config.loading import MemoryConfig, validate_value
    from coop.errors import ConfigError

    fields = {f.name: f for f in dataclasses.fields(MemoryConfig)}
    names = {"similarity_floor": "floor", "rrf_k": "rrf_k", "fusion": "fusion", "vector_weight": "vector_weight",
             "context_weight": "context_weight", "word_similarity_floor": "word_floor", "bm25_floor": "bm25_floor",
             "session_weight": "session_weight", "agreement_weight": "agreement_weight",
             "neighbour_weight": "neighbour_weight", "assistant_weight": "assistant_weight"}
    out = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if key not in names:
            raise BenchError(f"--set {pair}: not a retrieval setting (one of {', '.join(names)})")
        want = type(fields[key].default)
        try:
            value = raw if want is str else want(raw)
            out[names[key]] = validate_value(fields[key], value, f"memory.{key}", "--set")
        except (ValueError, ConfigError) as exc:
            raise BenchError(f"--set {pair}: {getattr(exc, 'message', exc)}") from None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory "
                                                          "(default: coop's own model resolution)")
    parser.add_argument("--embedder", choices=("fastembed", "hash"), default="fastembed",
                        help="hash: coop's test embedder (no meaning; for checking the benchmark itself)")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one retrieval setting of [memory] for an ablation, e.g. --set fusion=rrf "
                             "--set context_weight=0 (the figures of record use the defaults)")
    add_backend_arguments(parser)
    args = parser.parse_args(argv)
    settings = _overrides(args.set)
    conversations = load(args.data)[:args.limit_conversations]
    if not any(c.questions for c in conversations):
        raise BenchError(f"{args.data} has no question of categories 1-4 with valid evidence")
    embedder = load_embedder(args.embedder, args.model_path)
    stores = Stores.from_args(args)
    result = report(evaluate(conversations, embedder, settings=settings, stores=stores), embedder.id, args.data)
    result["backend"] = stores.describe()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
