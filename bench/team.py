"""Many clients on one memory store: users and devices taking turns at once, Postgres beside SQLite.

    .venv/bin/python bench/team.py [--backend both|sqlite|postgres] [--url postgresql://...] [--users 4]
        [--devices 2] [--seconds 60] [--history 500] [--embedder hash|fastembed] [--model-path DIR] [--json]

`--users` x `--devices` client processes run for `--seconds`, with no pause between turns (the load is as high as
the machine allows). A device is a process of its own with its own connection, as a second laptop of the same
person would be. Postgres: every client on one server (a throwaway one started for the run, or a fresh database
on the server of `--url`). SQLite: the same load on one file per user (a user's devices share that file, as two
coop processes of one person share `memory.db`). `--backend both` (the default) runs SQLite, then Postgres, in
the same session.

Each user first holds `--history` past messages (synthetic English from the embedding model's vocabulary, as
`bench/latency.py` makes them), embedded and indexed. A turn, through coop's own calls:
- the user's message stored (`memory.messages.add`, importance as `coop chat` weighs it);
- retrieval and the prompt: `ChatSession.prepare`, the memory part of a chat turn (what `bench/latency.py` times);
- the assistant's reply stored; an extraction job recorded (`memory.jobs.record`), as the chat records one before
  the background extraction runs; the two messages embedded (`growth.embedding.embed_pending`, the worker's call);
- every fifth turn, a fact added (`memory.facts.add`), as an extraction or /remember would.
Figures: turns per second (all clients), p50/p95 of the memory part of a turn (all of the above, no model call),
of `prepare` alone and of each write (a message, a job, a fact, the embedding of a turn), and errors (any
exception in a turn; the target is 0). `--embedder hash` (the default) keeps the two cores for the stores: the real
model's query and message embeddings would dominate every figure alike on both backends.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, Stores, load_embedder, machine, median, percentile

FACT_EVERY = 5


def texts_for(model_path: str | None, seed: int):
    from latency import Texts, model_dir_of

    return Texts(model_dir_of(model_path), seed=seed)


def seed_user(memory, texts, embedder, history: int) -> None:
    """`history` past messages in sessions of 40, embedded, full text indexed."""
    from coop.memory.growth.embedding import embed_pending

    now = time.time()
    batch = texts.make(history)
    with memory.db.atomic():
        session = None
        for i, text in enumerate(batch):
            if i % 40 == 0:
                session = memory.sessions.start(f"past {i // 40}", started_at=now - (history - i) * 600.0)
            memory.messages.add(session, "user" if i % 2 == 0 else "assistant", text,
                                created_at=now - (history - i) * 600.0)
    embed_pending(memory, embedder, batch_size=64)
    Stores.settle(memory)


def client(backend: str, location: str, user_id: str, device: int, seconds: float, start_at: float,
           embedder_kind: str, model_path: str | None, out) -> None:
    """One device of one user: turns until the time is up; its timings and errors put on `out`."""
    import dataclasses

    from coop.chat.session import ChatSession
    from coop.config.loading import Config, ImportanceConfig
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.importance import message_importance
    from coop.memory.storage.backends import open_store

    result: dict = {"user": user_id, "device": device, "turns": 0, "memory_ms": [], "prepare_ms": [],
                    "writes": {"message": [], "job": [], "fact": [], "embed": []}, "errors": []}
    try:
        embedder = load_embedder(embedder_kind, model_path)
        texts = texts_for(model_path, seed=hash((user_id, device)) & 0xFFFF)
        store = open_store(backend, location)
        memory = store.user(user_id)
        config = Config()
        where = {"db_path": location} if backend == "sqlite" else {"backend": "postgres", "url": location}
        config = dataclasses.replace(config, memory=dataclasses.replace(config.memory, **where))
        chat = ChatSession(memory, config, embedder=lambda: embedder, incognito=True)
        weights = ImportanceConfig()
        session = memory.sessions.start(f"device {device}")
        chat.session_id = session
        rng = random.Random(f"{user_id}:{device}")
        questions = texts.make(2000, low=4, high=16)
        replies = texts.make(2000, low=8, high=30)
        writes = result["writes"]
        time.sleep(max(0.0, start_at - time.time()))
        end = start_at + seconds
        n = 0
        while time.time() < end:
            question, reply = questions[n % len(questions)], replies[n % len(replies)]
            n += 1
            try:
                t0 = time.perf_counter()
                message_id = memory.messages.add(session, "user", question,
                                                 importance=message_importance("user", question, weights))
                t1 = time.perf_counter()
                chat.prepare(question)
                t2 = time.perf_counter()
                reply_id = memory.messages.add(session, "assistant", reply,
                                               importance=message_importance("assistant", reply, weights))
                t3 = time.perf_counter()
                memory.jobs.record("extraction", session_id=session, message_id=int(message_id or 0),
                                   reply_id=reply_id)
                t4 = time.perf_counter()
                embed_pending(memory, embedder, batch_size=8, kinds=("message",))
                t5 = time.perf_counter()
                fact_ms = None
                if n % FACT_EVERY == 0:
                    memory.facts.add(f"{user_id} mentioned {question}", category="general",
                                     importance=round(rng.uniform(0.3, 0.8), 2), source="extraction")
                    fact_ms = (time.perf_counter() - t5) * 1000
                done = time.perf_counter()
            except Exception as exc:  # an error is a figure: counted, the first few kept
                if len(result["errors"]) < 5:
                    result["errors"].append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                result["error_count"] = result.get("error_count", 0) + 1
                continue
            result["turns"] += 1
            result["memory_ms"].append((done - t0) * 1000)
            result["prepare_ms"].append((t2 - t1) * 1000)
            writes["message"] += [(t1 - t0) * 1000, (t3 - t2) * 1000]
            writes["job"].append((t4 - t3) * 1000)
            writes["embed"].append((t5 - t4) * 1000)
            if fact_ms is not None:
                writes["fact"].append(fact_ms)
        result["wall_s"] = time.time() - start_at
        store.close()
    except Exception:
        result["errors"].append("client failed: " + traceback.format_exc().strip().splitlines()[-1][:300])
        result["error_count"] = result.get("error_count", 0) + 1
    out.put(result)


def run(backend: str, args, stores: Stores) -> dict:
    """The load on one backend: stores made and seeded, the clients run, their figures gathered."""
    embedder = load_embedder(args.embedder, args.model_path)
    users = [f"user-{i + 1}" for i in range(args.users)]
    locations: dict[str, str] = {}
    started = time.perf_counter()
    if backend == "postgres":
        shared = stores.location("team")
        locations = {u: shared for u in users}
    else:
        locations = {u: stores.location(f"team-{u}") for u in users}
    from coop.memory.storage.backends import open_store

    for number, user_id in enumerate(users):
        store = open_store(backend, locations[user_id])
        seed_user(store.user(user_id), texts_for(args.model_path, seed=number + 1), embedder, args.history)
        store.close()
    seeded_s = time.perf_counter() - started
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    start_at = time.time() + 8.0 + 1.0 * len(users) * args.devices  # every client loaded before the clock starts
    procs = [context.Process(target=client, args=(backend, locations[u], u, d, args.seconds, start_at,
                                                  args.embedder, args.model_path, out))
             for u in users for d in range(args.devices)]
    for p in procs:
        p.start()
    results = [out.get(timeout=args.seconds + 600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    turns = sum(r["turns"] for r in results)
    memory_ms = [x for r in results for x in r["memory_ms"]]
    prepare_ms = [x for r in results for x in r["prepare_ms"]]
    writes: dict[str, list[float]] = {}
    for r in results:
        for kind, values in r["writes"].items():
            writes.setdefault(kind, []).extend(values)
    all_writes = [x for values in writes.values() for x in values]
    errors = sum(r.get("error_count", 0) for r in results)

    def spread(values: list[float]) -> dict:
        return {"n": len(values), "p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}

    return {
        "backend": backend, "store": ("one Postgres database for every user" if backend == "postgres"
                                      else "one SQLite file per user"),
        "clients": len(procs), "users": len(users), "devices": args.devices, "seconds": args.seconds,
        "history_per_user": args.history, "seeding_s": round(seeded_s, 1),
        "turns": turns, "turns_per_s": round(turns / args.seconds, 2),
        "memory_ms": spread(memory_ms), "prepare_ms": spread(prepare_ms),
        "write_ms": spread(all_writes), "writes": {k: spread(v) for k, v in writes.items()},
        "turns_per_client_median": median([r["turns"] for r in results]),
        "errors": errors, "error_samples": sorted({e for r in results for e in r["errors"]})[:10],
    }


def print_table(report: dict) -> None:
    print(f"coop team load: {report['users']} users x {report['devices']} devices, {report['seconds']} s, "
          f"{report['history']} past messages per user; embedder {report['embedder']}; {report['machine']}")
    print(f"  {'backend':<10}{'turns/s':>9}{'turn memory p50/p95':>22}{'prepare p50/p95':>18}{'write p50/p95':>16}"
          f"{'errors':>8}")
    for row in report["runs"]:
        print(f"  {row['backend']:<10}{row['turns_per_s']:>9.2f}{row['memory_ms']['p50']:>12.1f}/"
              f"{row['memory_ms']['p95']:<6.1f}ms{row['prepare_ms']['p50']:>9.1f}/{row['prepare_ms']['p95']:<6.1f}ms"
              f"{row['write_ms']['p50']:>7.1f}/{row['write_ms']['p95']:<6.1f}ms{row['errors']:>8}")
        each = ", ".join(f"{k} {v['p50']:.1f}/{v['p95']:.1f}" for k, v in row["writes"].items())
        print(f"  {'':<10}writes p50/p95 ms: {each}; {row['turns']} turns ({row['store']})")
        for sample in row["error_samples"]:
            print(f"  {'':<10}error: {sample}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--url", default=None, metavar="URL",
                        help="a postgresql:// URL: the Postgres run makes its database on that server")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--devices", type=int, default=2, help="client processes per user")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--history", type=int, default=500, help="past messages per user before the load")
    parser.add_argument("--embedder", choices=("hash", "fastembed"), default="hash")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory (its word list "
                                                          "makes the texts; with --embedder fastembed, its vectors)")
    parser.add_argument("--json", default=None, type=Path, metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args(argv)
    if args.users < 1 or args.devices < 1 or args.seconds <= 0:
        raise BenchError("--users, --devices and --seconds must be positive")
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    embedder = load_embedder(args.embedder, args.model_path)
    runs = []
    for backend in backends:
        print(f"{backend}: seeding {args.users} users, then {args.users * args.devices} clients for "
              f"{args.seconds:g} s", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp, Stores(backend, args.url if backend == "postgres" else None,
                                                           tmp) as stores:
            runs.append(run(backend, args, stores))
    report = {"embedder": embedder.id, "machine": machine(), "history": args.history, "users": args.users,
              "devices": args.devices, "seconds": args.seconds, "runs": runs}
    print_table(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
