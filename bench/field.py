"""The field's benchmarks through coop's own pipeline: the part `longmemeval.py`, `prefeval.py` and `locomo_plus.py`
share (one module, three thin readers: the three suites differ only in how a file becomes cases and in a few
checks of their own; ingest, asking, scoring, timing and the vector cache are the same code, so a change to how
coop is driven moves all three alike).

A *case* is one question with its own history: a list of dated sessions of messages, each message with a key the
data set names it by (a turn id). Each case gets a fresh store holding one user (`Stores.new`), written as coop's
importer writes (`transfer.batches.Batches`: bounded transactions; `sessions.start`, `messages.add` with the
importance `coop chat` scores, `sessions.end`), then embedded by `growth.embedding.embed_pending` (the chat
worker's code: each message and its sentence parts). With `--extract MODEL`, facts are then learned from each user
message as `coop chat` learns them after a turn (`MemoryJobs.extraction`, with the assistant's reply after it), by
that model; its replies are kept by request (`--replies`), so a rerun, and the filler turns many cases share, cost
one call each. The question is then asked twice:
- `search` (what `coop memory search` returns): turn-level recall from its top 10, session-level recall from the
  distinct sessions of its top 50 messages (k sessions for R@k, as the LongMemEval authors score a message
  ranker);
- `ChatSession.prepare` as the first message of a new session, at the case's own date (`clock`): which evidence
  turns the prompt shows (prompt recall), where (the order of the lines), and the memory tokens it spends.

Vectors are cached by text (`scale.CachedEmbedder`), so a rerun embeds nothing it has embedded before; a case's
texts (messages and sentence parts) are embedded before it is timed, shortest first. The ingest time per case is
then the writes plus cached vectors; `--throughput N` measures the real thing in the same run: coop's ingest of
the first N cases with the uncached model against fastembed's own `TextEmbedding.embed` of the same message texts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, Stores, add_backend_arguments, load_embedder, machine, median

KS = (5, 10)
SESSION_DEPTH = 50  # messages searched to rank sessions: enough for 10 distinct ones in a ~50-session history
MESSAGE_GAP_SECONDS = 30  # a session's messages, one after the other, from its start (the data dates sessions only)


@dataclass(frozen=True)
class Message:
    key: str
    role: str  # "user" | "assistant"
    text: str


@dataclass(frozen=True)
class Session:
    key: str
    started: float
    messages: list[Message]


@dataclass(frozen=True)
class Case:
    """One question and the history it is asked of. `turns`: gold message keys per level (a level with no keys
    is not scored for this case); `sessions`: gold session keys per level; `group`: the type or form it is
    reported under."""

    id: str
    group: str
    question: str
    asked_at: float
    history: list[Session]
    turns: dict[str, frozenset[str]] = field(default_factory=dict)
    sessions: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass
class Row:
    """What one case's search and prompt held, by the data set's keys, and what it cost."""

    case: Case
    searched: list[str | None]  # message keys of search's top 10 (None: not a message)
    searched_sessions: list[str]  # distinct session keys, in the order of search's top SESSION_DEPTH messages
    shown: list[str]  # message keys the prompt shows, in the order of their lines
    session_of: dict[str, str]  # message key -> session key, for the shown ones
    memory_tokens: int
    ingest_s: float
    search_ms: float
    prepare_ms: float
    system: str = ""  # the prompt's system message (kept only when a bench asks for it)
    cut: list[str] = field(default_factory=list)  # message keys recall chose but the memory budget left out
    learned: list[str] | None = None  # message keys the prompt's facts and instructions rest on (`--extract` only)
    instructions: list[list[str]] | None = None  # each standing instruction the prompt follows: the keys it rests on
    failed_jobs: int = 0  # extraction jobs whose model call failed (`--extract` only): their facts are missing


def stratified(cases: Sequence[Case], limit: int | None) -> list[Case]:
    """The first `limit` cases taken in turn from each group (groups by name, cases in file order), so a quick run
    covers every type; all of them, in that order, without a limit."""
    groups: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        groups[case.group].append(case)
    ordered: list[Case] = []
    queues = [list(groups[name]) for name in sorted(groups)]
    while any(queues):
        ordered.extend(queue.pop(0) for queue in queues if queue)
    return ordered[:limit] if limit is not None else ordered


# -- writing a case's history ---------------------------------------------------------------------------------


def stored_texts(case: Case) -> list[str]:
    """Every text coop will ask the model to embed for this history: each message as stored (secrets masked)
    that the model reads whole, and the sentence parts of each."""
    from coop.memory.growth.embedding import texts_read
    from coop.memory.text import visible
    from coop.privacy.secrets import mask

    return texts_read([mask(m.text) for s in case.history for m in s.messages if visible(m.text)])


def ingest(store: Any, case: Case, embedder: Any) -> tuple[Any, dict[int, str], dict[str, str]]:
    """The case's history as one user's memory, written as the importer writes; returns the user's memory, message
    id -> key, and message key -> session key."""
    from coop.config.loading import ImportanceConfig
    from coop.errors import UsageError
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.importance import message_importance
    from coop.memory.transfer.batches import Batches

    memory = store.user(f"case-{case.id}")
    weights = ImportanceConfig()
    ids: dict[int, str] = {}
    session_of: dict[str, str] = {}
    with Batches(memory) as batches:
        for session in case.history:
            with batches.record(savepoint=False):
                session_id = memory.sessions.start(session.key, started_at=session.started, external_id=session.key)
            at = session.started
            for offset, message in enumerate(session.messages):
                at = session.started + MESSAGE_GAP_SECONDS * offset
                try:
                    with batches.record(savepoint=False):
                        added = memory.messages.add(
                            session_id,
                            message.role,
                            message.text,
                            created_at=at,
                            importance=message_importance(message.role, message.text, weights),
                            external_id=message.key,
                        )
                except UsageError:  # as the importer does: a message that cannot be stored (empty) is skipped
                    continue
                if added is not None:
                    ids[added] = message.key
                    session_of[message.key] = session.key
            with batches.record(savepoint=False):
                memory.sessions.end(session_id, at=at, last_activity_at=at)
    embed_pending(memory, embedder, batch_size=64)
    Stores.settle(memory)
    return memory, ids, session_of


class KeptReplies:
    """The fast model's `complete`, with each reply kept by the request it answers (messages and schema) in a JSON
    Lines file, one line appended per call: a request asked before is answered from the file, so a rerun costs no
    call and the filler turns that many cases share are read by the model once. A last line cut short by a
    stopped run is skipped; every whole line before it is kept."""

    takes_schema = True

    def __init__(self, inner: Any, path: Path) -> None:
        import json

        self.inner, self.path, self.calls, self.kept = inner, path, 0, 0
        self.replies: dict[str, str] = {}
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines:
            try:
                entry = json.loads(line)
                self.replies[entry["request"]] = entry["reply"]
            except (ValueError, KeyError, TypeError):
                continue

    def __call__(self, messages: list[dict[str, Any]], schema: Any = None) -> str:
        import hashlib
        import json

        key = hashlib.sha256(json.dumps([messages, schema], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        if key in self.replies:
            self.kept += 1
            return self.replies[key]
        reply = str(self.inner(messages, schema=schema) if schema is not None else self.inner(messages))
        self.calls += 1
        self.replies[key] = reply
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"request": key, "reply": reply}, ensure_ascii=False) + "\n")
        return reply


def learn(store: Any, memory: Any, case: Case, ids: dict[int, str], jobs: Any) -> int:
    """Facts learned from each user message of the history, in order, as `coop chat` learns them after a turn: an
    extraction job for the message and the assistant's reply after it, run by `MemoryJobs.extraction`; then the
    embedding job gives the new facts their vectors. A job whose model call fails (a timeout, a refusal) is
    counted and skipped, as the chat's worker skips it, so one slow reply does not end an hours-long run; returns
    how many failed."""
    from coop.errors import ModelError

    by_key = {key: message_id for message_id, key in ids.items()}
    ordered = [(m.role, by_key.get(m.key)) for s in case.history for m in s.messages]
    session_of = memory.messages.session_ids([i for _, i in ordered if i is not None])
    failed = 0
    for at, (role, message_id) in enumerate(ordered):
        if role != "user" or message_id is None:
            continue
        after = ordered[at + 1] if at + 1 < len(ordered) else None
        reply_id = after[1] if after is not None and after[0] == "assistant" and after[1] is not None \
            and session_of.get(after[1]) == session_of[message_id] else None
        job = memory.jobs.record("extraction", session_id=session_of[message_id], message_id=message_id,
                                 reply_id=reply_id)
        try:
            jobs.extraction(memory.user_id, job)(store)
        except ModelError as exc:
            failed += 1
            print(f"  case {case.id}: the extraction of {ids.get(message_id, message_id)} failed: {exc}",
                  file=sys.stderr)
    jobs.embedding(memory.user_id)(store)
    return failed


def learned_keys(memory: Any, prompt: Any, ids: dict[int, str]) -> tuple[list[str], list[list[str]]]:
    """The message keys that the facts the prompt shows, and the standing instructions it follows, were learned
    from (each fact's sources); and, for each of those instructions, the keys it rests on."""
    from coop.memory.kinds import INSTRUCTION

    system = prompt.messages[0]["content"]
    followed = [f.item_id for f in memory.facts.active(INSTRUCTION, limit=1000) if " ".join(f.text.split()) in system]

    def sources(fact_id: int) -> list[str]:
        found = (ids.get(s.message_id) for s in memory.sources.provenance(fact_id) if s.message_id is not None)
        return list(dict.fromkeys(key for key in found if key is not None))

    facts = [r.item.item_id for r in prompt.recalled if r.item.kind == "fact"] + followed
    keys = list(dict.fromkeys(key for fact_id in dict.fromkeys(facts) for key in sources(fact_id)))
    return keys, [sources(fact_id) for fact_id in followed]


# -- asking ---------------------------------------------------------------------------------------------------


def config_with(overrides: dict[str, Any]) -> Any:
    """coop's default configuration with `[memory]` overrides (`--set`, for ablations only)."""
    from coop.config.loading import Config

    config = Config()
    return dataclasses.replace(config, memory=dataclasses.replace(config.memory, **overrides)) if overrides else config


def ask(
    memory: Any,
    case: Case,
    ids: dict[int, str],
    session_of: dict[str, str],
    embedder: Any,
    config: Any,
    ingest_s: float,
    keep_system: bool,
    learn_facts: bool = False,
) -> Row:
    """Search, then the first turn of a new session at the case's date, through coop's own code."""
    from coop.chat.session import ChatSession
    from coop.memory.retrieval.context import past_line
    from coop.memory.retrieval.search import search
    from coop.memory.retrieval.settings import RetrievalSettings

    settings = RetrievalSettings.from_config(config.memory)
    started = time.perf_counter()
    top = search(memory, case.question, embedder=embedder, limit=max(KS), settings=settings)
    search_ms = (time.perf_counter() - started) * 1000
    searched = [ids.get(h.item.item_id) if h.kind == "message" else None for h in top.hits]
    deep = search(memory, case.question, embedder=embedder, limit=SESSION_DEPTH, settings=settings)
    searched_sessions: list[str] = []
    for hit in deep.hits:
        key = ids.get(hit.item.item_id) if hit.kind == "message" else None
        if key is not None and session_of[key] not in searched_sessions:
            searched_sessions.append(session_of[key])
    chat = ChatSession(memory, config, embedder=lambda: embedder, clock=lambda: case.asked_at)
    started = time.perf_counter()
    prompt = chat.prepare(case.question)
    prepare_ms = (time.perf_counter() - started) * 1000
    system = prompt.messages[0]["content"]
    placed = sorted(
        (system.find(past_line(r)), ids[r.item.item_id])
        for r in prompt.recalled
        if r.item.kind == "message" and r.item.item_id in ids
    )
    shown = [key for _, key in placed]
    cut = [ids[r.item.item_id] for r in prompt.left_out if r.item.kind == "message" and r.item.item_id in ids]
    learned, instructions = learned_keys(memory, prompt, ids) if learn_facts else (None, None)
    return Row(
        case,
        searched,
        searched_sessions,
        shown,
        {k: session_of[k] for k in shown},
        prompt.tokens["memory"],
        ingest_s,
        search_ms,
        prepare_ms,
        system if keep_system else "",
        cut,
        learned,
        instructions,
    )


def run(
    cases: Sequence[Case],
    embedder: Any,
    *,
    config: Any,
    stores: Stores,
    keep_system: bool = False,
    progress: Callable[[Row], None] | None = None,
    jobs: Any = None,
) -> list[Row]:
    """Each case in a fresh store of its own: embed its texts (cache), ingest (timed), learn facts with `jobs`'s
    model when given (not timed), ask."""
    rows = []
    for case in cases:
        if hasattr(embedder, "prefetch"):
            embedder.prefetch(stored_texts(case))
        store = stores.new(f"case-{case.id}")
        try:
            started = time.perf_counter()
            memory, ids, session_of = ingest(store, case, embedder)
            ingest_s = time.perf_counter() - started
            failed = learn(store, memory, case, ids, jobs) if jobs is not None else 0
            row = ask(memory, case, ids, session_of, embedder, config, ingest_s, keep_system, jobs is not None)
            rows.append(dataclasses.replace(row, failed_jobs=failed))
        finally:
            store.close()
        if progress is not None:
            progress(rows[-1])
    return rows


# -- scoring --------------------------------------------------------------------------------------------------


def share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return round(sum(values) / len(values), 3) if values else None


def level_figures(rows: Sequence[Row], level: str) -> dict[str, Any]:
    """R_any@k of search and the share of prompts that show a gold item, over the rows that have gold at
    `level` (message keys, or session keys for a session level); for sessions also R_all in the prompt; for
    turns, `cut`: the share whose gold recall chose but the memory budget left out (none shown), which tells a
    miss of ranking from one of the budget."""
    if any(level in r.case.sessions for r in rows):
        scored = [(r, r.case.sessions[level]) for r in rows if r.case.sessions.get(level)]
        figures: dict[str, Any] = {"n": len(scored)}
        for k in KS:
            figures[f"R_any@{k}"] = share(bool(gold & set(r.searched_sessions[:k])) for r, gold in scored)
        in_prompt = [(gold, set(r.session_of.values())) for r, gold in scored]
        figures["prompt"] = share(bool(gold & shown) for gold, shown in in_prompt)
        figures["prompt_all"] = share(gold <= shown for gold, shown in in_prompt)
        return figures
    scored = [(r, r.case.turns[level]) for r in rows if r.case.turns.get(level)]
    figures = {"n": len(scored)}
    for k in KS:
        figures[f"R_any@{k}"] = share(bool(gold & set(r.searched[:k])) for r, gold in scored)
    figures["prompt"] = share(bool(gold & set(r.shown)) for r, gold in scored)
    figures["cut"] = share(bool(gold & set(r.cut)) and not gold & set(r.shown) for r, gold in scored)
    if any(r.learned is not None for r, _ in scored):  # facts learned by a model (`--extract`): from these turns
        figures["learned"] = share(bool(gold & set(r.learned or ())) for r, gold in scored)
        figures["either"] = share(bool(gold & (set(r.shown) | set(r.learned or ()))) for r, gold in scored)
    return figures


def instruction_figures(rows: Sequence[Row]) -> dict[str, Any]:
    """With `--extract`: the standing instructions a prompt follows that were learned from the history (mean per
    prompt), and those resting on no gold turn of the case: an instruction the data's user never gave (a one-off
    request kept for good), which every prompt after would follow."""
    learned = [r for r in rows if r.instructions is not None]
    if not learned:
        return {}

    def gold(row: Row) -> set[str]:
        return set().union(*row.case.turns.values())

    stray = [sum(1 for keys in r.instructions or [] if keys and not set(keys) & gold(r)) for r in learned]
    return {"instructions_mean": round(sum(len(r.instructions or []) for r in learned) / len(learned), 2),
            "stray_instructions_mean": round(sum(stray) / len(learned), 2),
            "prompts_with_a_stray_instruction": share(n > 0 for n in stray)}


def levels(rows: Sequence[Row]) -> list[str]:
    names: list[str] = []
    for row in rows:
        for name in [*row.case.sessions, *row.case.turns]:
            if name not in names:
                names.append(name)
    return names


def report(rows: Sequence[Row]) -> dict[str, Any]:
    """Every level overall and per group, with tokens and timings."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row.case.group].append(row)
    return {
        "cases": len(rows),
        "levels": {
            level: {"all": level_figures(rows, level), **{g: level_figures(groups[g], level) for g in sorted(groups)}}
            for level in levels(rows)
        },
        "memory_tokens_median": median([r.memory_tokens for r in rows]),
        "memory_tokens_mean": round(sum(r.memory_tokens for r in rows) / len(rows), 1) if rows else 0.0,
        "items_shown_mean": round(sum(len(r.shown) for r in rows) / len(rows), 2) if rows else 0.0,
        **instruction_figures(rows),
        **({"failed_extraction_jobs": sum(r.failed_jobs for r in rows)} if any(r.learned is not None for r in rows)
           else {}),
        "ingest_s_median": round(median([r.ingest_s for r in rows]), 2),
        "search_ms_median": round(median([r.search_ms for r in rows]), 1),
        "prepare_ms_median": round(median([r.prepare_ms for r in rows]), 1),
        "machine": machine(),
        "load_average": os.getloadavg(),
    }


def print_report(title: str, result: dict[str, Any]) -> None:
    print(title)
    print(f"  {result['cases']} cases; embedder {result.get('embedder', '?')}; {result['machine']}")
    columns = ("R_any@5", "R_any@10", "prompt", "prompt_all", "cut", "learned", "either")
    for level, by_group in result["levels"].items():
        print(f"\n  {level:<28}{'n':>5}" + "".join(f"{c:>11}" for c in columns))
        for group, figures in by_group.items():
            if not figures["n"]:
                continue
            cells = "".join(f"{figures[c]:>11.3f}" if figures.get(c) is not None else f"{'':>11}" for c in columns)
            print(f"  {group:<28}{figures['n']:>5}" + cells)
    print(
        f"\n  memory tokens per prompt: median {result['memory_tokens_median']}, mean {result['memory_tokens_mean']};"
        f" messages shown (mean) {result['items_shown_mean']}"
    )
    print(
        f"  ingest per case (cached vectors) median {result['ingest_s_median']} s; search median "
        f"{result['search_ms_median']} ms; prepare median {result['prepare_ms_median']} ms; load average "
        + " ".join(f"{v:.2f}" for v in result["load_average"])
    )
    if "instructions_mean" in result:
        print(
            f"  standing instructions learned, per prompt: {result['instructions_mean']} (mean), of which on no gold "
            f"turn {result['stray_instructions_mean']}; prompts with one {result['prompts_with_a_stray_instruction']}"
        )
    if "failed_extraction_jobs" in result:
        print(f"  extraction jobs whose model call failed (facts missing): {result['failed_extraction_jobs']}")
    if result.get("throughput"):
        t = result["throughput"]
        print(
            f"  ingest with the uncached model: {t['coop_messages_per_s']} messages/s against fastembed's "
            f"{t['raw_messages_per_s']} (ratio {t['ratio']}); coop embeds {t['coop_texts']} texts for "
            f"{t['messages']} messages (sentence parts)"
        )


# -- ingest against raw fastembed -----------------------------------------------------------------------------


def throughput(cases: Sequence[Case], embedder: Any, model_path: str | None, stores: Stores) -> dict[str, Any]:
    """coop's ingest of each case with the uncached model, and fastembed's `TextEmbedding.embed` (its defaults) of
    the same message texts, taking turns in this run: messages per second of each, and their ratio."""
    from fastembed import TextEmbedding

    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import resolve_model_path

    path = model_path or resolve_model_path(EmbedderConfig())
    raw = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=path, local_files_only=True)
    coop_s = raw_s = 0.0
    messages = texts = 0
    for case in cases:
        store = stores.new(f"throughput-{case.id}")
        try:
            started = time.perf_counter()
            ingest(store, case, embedder)
            coop_s += time.perf_counter() - started
        finally:
            store.close()
        plain = [m.text for s in case.history for m in s.messages]
        started = time.perf_counter()
        list(raw.embed(plain))
        raw_s += time.perf_counter() - started
        messages += len(plain)
        texts += len(stored_texts(case))
    coop_rate, raw_rate = messages / coop_s, messages / raw_s
    return {
        "cases": len(cases),
        "messages": messages,
        "coop_texts": texts,
        "coop_seconds": round(coop_s, 1),
        "raw_seconds": round(raw_s, 1),
        "coop_messages_per_s": round(coop_rate, 1),
        "raw_messages_per_s": round(raw_rate, 1),
        "ratio": round(coop_rate / raw_rate, 3),
    }


# -- the command line -----------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every field bench takes."""
    parser.add_argument("--data", required=True, type=Path, help="the data file (JSON, or gzip of JSON)")
    parser.add_argument(
        "--limit", type=int, default=None, help="only the first N cases, taken in turn from each type (a quick run)"
    )
    parser.add_argument(
        "--case", action="append", default=[], metavar="ID",
        help="only this case (repeat for more; of those --limit leaves)",
    )
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument(
        "--embedder",
        choices=("fastembed", "hash"),
        default="fastembed",
        help="hash: coop's test embedder (no meaning; for checking the benchmark itself)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "coop-bench" / "vectors.sqlite",
        help="where the vectors of the texts are kept between runs",
    )
    parser.add_argument(
        "--throughput",
        type=int,
        default=0,
        metavar="N",
        help="also ingest the first N cases with the uncached model beside raw fastembed",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one [memory] setting for an ablation (the figures of record use none)",
    )
    parser.add_argument(
        "--extract",
        metavar="MODEL",
        default=None,
        help="also learn facts from each user message with this model (litellm name, e.g. openai/qwen-1.5b), as "
        "`coop chat` does after a turn; slow with a local model: use --limit",
    )
    parser.add_argument("--api-base", default=None, help="the model server for --extract")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a call of --extract may take")
    parser.add_argument(
        "--replies",
        type=Path,
        default=Path.home() / ".cache" / "coop-bench" / "replies.jsonl",
        help="where --extract keeps the model's replies by request (a rerun asks nothing twice)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    parser.add_argument("--quiet", action="store_true", help="no line per case on stderr")
    add_backend_arguments(parser)


def memory_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """`--set key=value` pairs for `[memory]`, typed and checked by coop's own validation."""
    from coop.config.loading import MemoryConfig, validate_value
    from coop.errors import ConfigError

    fields = {f.name: f for f in dataclasses.fields(MemoryConfig)}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if (
            key not in fields
            or isinstance(fields[key].default, dict | list)
            or dataclasses.is_dataclass(fields[key].default)
        ):
            raise BenchError(f"--set {pair}: not a plain [memory] setting")
        want: Any = type(fields[key].default)
        try:
            value: Any = raw if want is str else (raw.lower() in ("1", "true", "yes")) if want is bool else want(raw)
            out[key] = validate_value(fields[key], value, f"memory.{key}", "--set")
        except (ValueError, ConfigError) as exc:
            raise BenchError(f"--set {pair}: {getattr(exc, 'message', exc)}") from None
    return out


def read_json(path: Path) -> Any:
    """A JSON file, gzipped or not; a clear error when it cannot be read."""
    import gzip
    import json

    try:
        with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise BenchError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BenchError(f"{path} is not JSON: {exc}") from None


def main(
    args: argparse.Namespace,
    cases: Sequence[Case],
    title: str,
    extra: Callable[[list[Row]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run `cases` (already read and cut) and return the figures; the benches print them."""
    from scale import CachedEmbedder

    if args.case:
        missing = set(args.case) - {case.id for case in cases}
        if missing:
            raise BenchError(f"--case {', '.join(sorted(missing))}: no such case in {args.data}")
        cases = [case for case in cases if case.id in args.case]
    if not cases:
        raise BenchError(f"{args.data} holds no case to score")
    os.environ["COOP_HOME"] = tempfile.mkdtemp(prefix="coop-field-")  # nothing of the user's own coop is read
    inner = load_embedder(args.embedder, args.model_path)
    embedder = CachedEmbedder(inner, args.cache)
    config = config_with(memory_overrides(args.set))
    jobs = replies = None
    if args.extract:
        from common import fast_model

        from coop.memory.growth.jobs import MemoryJobs

        model_config, complete = fast_model(args.extract, args.api_base, args.timeout)
        replies = KeptReplies(complete, args.replies)
        jobs = MemoryJobs(dataclasses.replace(model_config, memory=config.memory), replies, embedder=lambda: embedder)

    def show(row: Row) -> None:
        if not args.quiet:
            print(
                f"{row.case.id} {row.case.group}: search {row.searched_sessions[:1]} shown {len(row.shown)} "
                f"ingest {row.ingest_s:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    with Stores.from_args(args) as stores:
        rows = run(cases, embedder, config=config, stores=stores, keep_system=extra is not None, progress=show,
                   jobs=jobs)
        result = {
            "data": str(args.data),
            "title": title,
            "embedder": embedder.id,
            "settings": args.set,
            "backend": stores.describe(),
            **report(rows),
        }
        if replies is not None:
            result["extract"] = {"model": args.extract, "calls": replies.calls, "answered_from_kept": replies.kept}
        if extra is not None:
            result.update(extra(rows))
        if args.throughput:
            result["throughput"] = throughput(cases[: args.throughput], inner, args.model_path, stores)
    return result
