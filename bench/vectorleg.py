"""The vector leg against exact search at 100,000 and 1,000,000 vectors, on real-model vectors of real text.

    .venv/bin/python bench/vectorleg.py --data ../shared/data/locomo/locomo-dev.json
        [--sizes 100000,1000000] [--cache FILE] [--keep DIR] [--model-path DIR] [--json]
        [--vec0-k 100,300,1000,4096] [--vec0-questions 200]

Vectors: the real all-MiniLM-L6-v2 vectors of the real English that `bench/scale.py` buries LoCoMo in (the other
conversations, Debian's fortunes, WordNet's example sentences and glosses, said by a conversation's speakers),
read from scale.py's vector cache (`--cache`, filled by running scale.py first; texts missing from it are
embedded here). Where a size needs more vectors than the cache holds, the rest are *blends*: the normalised
`0.7 x + 0.3 y` of two real vectors drawn at random. A blend stays inside the region real vectors occupy (every
MiniLM vector shares a large mean component, cosine about 0.47 with the mean direction; a blend keeps it, a
random unit vector has none), and blends crowd the space around a query the way more real messages do. To check
that claim, a size written `b100000` is 100,000 vectors of which only 20,000 are real and the rest blends of
them: its recall and its neighbours' cosines can be set beside those of 100,000 real vectors. Queries: the LoCoMo
questions of `--data`, embedded by the model.

One user holds the N vectors (written by `vectors.store_vectors`, as coop writes them) beside four others holding
5% as many each. In a fresh process per size: every question goes through `vectors.nearest(k=10)` with coop's
defaults (the in-memory bit scan and exact re-rank, `bit_index.py`) and then through a brute-force float KNN
over the same user's vectors held in memory as one numpy matrix (the same run, the same questions); recall@10
is the share of the brute force's top 10 that coop returns. Reported: recall@10, p50/p95 of both, their ratio,
the first search's time (loading the bits), and the peak RSS of the process serving queries (before the brute
force loads its matrix). Targets (issue 17): recall@10 >= 0.95 at 100k and >= 0.90 at 1M.

Beside it, sqlite-vec's own bit KNN (issue 28: keep whichever wins): the same sign bits in a `vec0` table with a
`bit[384]` column partitioned by user (as coop's old index was), built in a process of its own (its time and
the file's growth reported), then in a fresh process for each `--vec0-k`: `MATCH` with that k inside the user's
partition, the candidates' float vectors read and re-ranked exactly as `vectors.nearest` does, the top 10 kept.
vec0 refuses k above 4,096. Its KNN costs about vectors x k, so it runs on the first `--vec0-questions`
questions; coop's recall on those same questions is reported beside it, and both methods' peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, load_embedder, load_sqlite_vec, machine, peak_rss_mb, percentile

MAIN_USER = "me"
OTHERS, OTHER_SHARE = 4, 0.05
BLEND = 0.7
BLEND_CHECK_REAL = 20_000
RECALL_TARGET = {100_000: 0.95, 1_000_000: 0.90}
EMBEDDER_ID = "fastembed:sentence-transformers/all-MiniLM-L6-v2"


def real_vectors(cache: Path, limit: int):
    """Up to `limit` cached real-model vectors (scale.py's cache), in a fixed order."""
    import numpy as np

    if not cache.is_file():
        raise BenchError(f"no vector cache at {cache}: run bench/scale.py first (it embeds the real text)")
    db = sqlite3.connect(str(cache))
    rows = db.execute("SELECT vec FROM v ORDER BY key LIMIT ?", (limit,)).fetchall()
    db.close()
    return np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1).copy()


def blends(real, count: int, seed: int):
    """`count` normalised blends `BLEND * x + (1 - BLEND) * y` of random pairs of real vectors."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    for start in range(0, count, 100_000):
        n = min(100_000, count - start)
        mixed = BLEND * real[rng.integers(len(real), size=n)] + (1 - BLEND) * real[rng.integers(len(real), size=n)]
        out[start:start + n] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def build(path: str, matrix) -> float:
    """One user with `matrix`'s vectors and four others with OTHER_SHARE as many each, through store_vectors."""
    import numpy as np

    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore
    from coop.memory.storage.vectors import store_vectors

    started = time.perf_counter()
    db = open_database(path)
    store = MemoryStore(db)
    rng = np.random.default_rng(7)
    plan = [(MAIN_USER, matrix)] + [(f"other-{i}", matrix[rng.integers(len(matrix), size=int(len(matrix) *
                                                                                           OTHER_SHARE))])
                                    for i in range(OTHERS)]
    first = 1
    for user_id, vectors in plan:  # item ids are unique across users, as messages' are
        memory = store.user(user_id)
        memory.ensure_user()
        for start in range(0, len(vectors), 20_000):
            chunk = vectors[start:start + 20_000]
            store_vectors(memory, "message", list(range(first, first + len(chunk))), EMBEDDER_ID, chunk)
            first += len(chunk)
        print(f"  {user_id}: {len(vectors):,} vectors ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return time.perf_counter() - started


def measure(path: str, questions_file: str, truth_file: str, subset: int) -> dict:
    """In a fresh process: coop's vector leg, then the brute force, for every question. The brute force's top
    10 ids per question are saved to `truth_file` for the vec0 measurement."""
    import numpy as np

    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore
    from coop.memory.storage.vectors import nearest, partition_size

    queries = np.load(questions_file)
    db = open_database(path)
    memory = MemoryStore(db).user(MAIN_USER)
    dims = queries.shape[1]
    started = time.perf_counter()
    nearest(memory, EMBEDDER_ID, dims, queries[0], k=10)
    first_ms = (time.perf_counter() - started) * 1000
    coop_ms, found = [], []
    for query in queries:
        started = time.perf_counter()
        hits = nearest(memory, EMBEDDER_ID, dims, query, k=10)
        coop_ms.append((time.perf_counter() - started) * 1000)
        found.append([h.item_id for h in hits])
    peak_mb = peak_rss_mb()
    rows = list(db.execute("SELECT item_id, vector FROM embeddings WHERE user_id = ? ORDER BY item_id", (MAIN_USER,)))
    ids = np.array([r[0] for r in rows])
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
    del rows
    brute_ms, recall, tenth, truth = [], [], [], []
    for query, got in zip(queries, found):
        started = time.perf_counter()
        scores = matrix @ query
        best = np.argpartition(-scores, 10)[:10]
        best = best[np.argsort(-scores[best])]
        brute_ms.append((time.perf_counter() - started) * 1000)
        recall.append(len(set(ids[best].tolist()) & set(got)) / 10)
        tenth.append(float(scores[best[-1]]))
        truth.append(ids[best])
    np.save(truth_file, np.array(truth))
    centre = matrix.mean(axis=0)
    centre /= np.linalg.norm(centre)
    size = partition_size(memory, EMBEDDER_ID)
    db.close()
    return {"vectors": size, "questions": len(queries), "recall_at_10": round(float(np.mean(recall)), 4),
            "recall_at_10_vec0_questions": round(float(np.mean(recall[:subset])), 4),
            "coop_ms": {"p50": round(percentile(coop_ms, 50), 2), "p95": round(percentile(coop_ms, 95), 2)},
            "brute_force_ms": {"p50": round(percentile(brute_ms, 50), 2), "p95": round(percentile(brute_ms, 95), 2)},
            "first_search_ms": round(first_ms, 1), "peak_rss_mb_serving": round(peak_mb, 1),
            "median_10th_neighbour_cosine": round(float(np.median(tenth)), 3),
            "mean_cosine_with_mean_direction": round(float(np.mean(matrix[:200_000] @ centre)), 3),
            "load_average_1min": round(os.getloadavg()[0], 2)}


VEC0_TABLE = "bench_vec0"


def build_vec0(path: str) -> dict:
    """In a process of its own: a vec0 table holding every user's sign bits (`embeddings.bits`, packed as coop
    packs them: Hamming distances are the same whatever the bit order), partitioned by user, in one transaction.
    Rows go in id order, each user's together as they were written (an ORDER BY would drop `vec_bit`'s subtype)."""
    from coop.memory.storage.database import open_database

    db = open_database(path)
    load_sqlite_vec(db)
    if db.scalar("SELECT count(*) FROM sqlite_master WHERE name = ?", (VEC0_TABLE,)):
        return {"build_s": "reused"}
    dims = 8 * len(db.scalar("SELECT bits FROM embeddings LIMIT 1"))
    before = os.path.getsize(path)
    started = time.perf_counter()
    with db.atomic():
        db.execute(f"CREATE VIRTUAL TABLE {VEC0_TABLE} USING vec0(embedding_id INTEGER PRIMARY KEY, "
                   f"user_id TEXT PARTITION KEY, kind TEXT, embedding bit[{dims}])")
        db.execute(f"INSERT INTO {VEC0_TABLE} (embedding_id, user_id, kind, embedding) "
                   "SELECT id, user_id, kind, vec_bit(bits) FROM embeddings")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    rows = db.scalar("SELECT count(*) FROM embeddings")
    grown = os.path.getsize(path) - before
    db.close()
    return {"build_s": round(time.perf_counter() - started, 1), "bytes_per_vector": round(grown / rows, 1)}


def measure_vec0(path: str, questions_file: str, truth_file: str, k: int, subset: int) -> dict:
    """In a fresh process: vec0's bit KNN with this `k` in the main user's partition, then the exact re-rank of
    `vectors.nearest` (the same rows read by id, the same cosine), for the first `subset` questions."""
    import numpy as np

    from coop.memory.kinds import active_fact
    from coop.memory.storage.database import open_database

    queries = np.load(questions_file)[:subset]
    truth = np.load(truth_file)[:subset]
    db = open_database(path)
    load_sqlite_vec(db)
    dims = queries.shape[1]
    active = (f" AND NOT (kind = 'fact' AND item_id IN (SELECT f.id FROM facts f WHERE f.user_id = ?1 "
              f"AND NOT ({active_fact('f')})))")

    def search(query) -> list[int]:
        bits = np.packbits(query > 0).tobytes()
        candidates = [row[0] for row in db.execute(
            f"SELECT embedding_id FROM {VEC0_TABLE} WHERE embedding MATCH vec_bit(?) AND k = ? AND user_id = ?",
            (bits, k, MAIN_USER))]
        rows = []
        for start in range(0, len(candidates), 2000):
            chunk = candidates[start:start + 2000]
            rows += list(db.execute(
                f"SELECT kind, item_id, vector FROM embeddings WHERE +user_id = ?1 AND +embedder = ?2 "
                f"AND id IN ({','.join('?' * len(chunk))}){active}", (MAIN_USER, EMBEDDER_ID, *chunk)))
        scores = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), dims) @ query
        return [rows[i][1] for i in np.argsort(-scores)[:10]]

    started = time.perf_counter()
    search(queries[0])
    first_ms = (time.perf_counter() - started) * 1000
    times, recall = [], []
    for query, best in zip(queries, truth):
        started = time.perf_counter()
        got = search(query)
        times.append((time.perf_counter() - started) * 1000)
        recall.append(len(set(best.tolist()) & set(got)) / 10)
    peak_mb = peak_rss_mb()
    db.close()
    return {"k": k, "questions": len(queries), "recall_at_10": round(float(np.mean(recall)), 4),
            "p50": round(percentile(times, 50), 2), "p95": round(percentile(times, 95), 2),
            "first_search_ms": round(first_ms, 1), "peak_rss_mb": round(peak_mb, 1),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def _child(args: list[str], what: str) -> dict:
    """Run this script with `args` in a fresh process and return the JSON it prints."""
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise BenchError(f"{what} failed: {done.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-shaped JSON file (the questions)")
    parser.add_argument("--sizes", default="100000,1000000", help="vectors of the main user")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "coop-bench" / "vectors.sqlite",
                        help="bench/scale.py's vector cache (the real vectors)")
    parser.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the built databases here")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument("--vec0-k", default="100,300,1000,4096",
                        help="the k values of sqlite-vec's bit KNN to measure (at most 4096; empty: none)")
    parser.add_argument("--vec0-questions", type=int, default=200, help="questions the vec0 KNN runs on")
    parser.add_argument("--measure", nargs=4, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--build-vec0", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--measure-vec0", nargs=5, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(*args.measure[:3], int(args.measure[3]))))
        return 0
    if args.build_vec0:
        print(json.dumps(build_vec0(args.build_vec0)))
        return 0
    if args.measure_vec0:
        path, questions, truth, k, subset = args.measure_vec0
        print(json.dumps(measure_vec0(path, questions, truth, int(k), int(subset))))
        return 0
    import locomo
    import numpy as np

    try:
        sizes = [(s.strip().startswith("b"), int(s.strip().lstrip("b"))) for s in args.sizes.split(",") if s.strip()]
        ks = [int(k) for k in args.vec0_k.split(",") if k.strip()]
    except ValueError:
        raise BenchError(f"--sizes {args.sizes!r}: give numbers, e.g. 100000,1000000 (b100000: mostly blends)") \
            from None
    if any(not 1 <= k <= 4096 for k in ks):
        raise BenchError(f"--vec0-k {args.vec0_k!r}: sqlite-vec takes k from 1 to 4096")
    questions = [q.text for conv in locomo.load(args.data) for q in conv.questions]
    embedder = load_embedder("fastembed", args.model_path)
    real = real_vectors(args.cache, max(size for _, size in sizes))
    where = args.keep or Path(tempfile.mkdtemp(prefix="coop-vectorleg-"))
    where.mkdir(parents=True, exist_ok=True)
    questions_file = str(where / "questions.npy")
    np.save(questions_file, embedder.embed(questions))
    results = []
    for blended, size in sizes:
        base = real[:BLEND_CHECK_REAL] if blended else real
        path = str(where / f"vectorleg-{'b' if blended else ''}{size}.db")
        made = min(size, len(base))
        built = "reused"
        if not os.path.exists(path):
            matrix = base[:size] if size <= len(base) else np.concatenate([base, blends(base, size - len(base), size)])
            print(f"building {size:,} vectors ({made:,} real, {size - made:,} blends)", file=sys.stderr)
            built = f"{build(path, matrix):.0f} s"
            del matrix
        truth_file = str(where / f"truth-{'b' if blended else ''}{size}.npy")
        figures = _child(["--data", str(args.data), "--measure", path, questions_file, truth_file,
                          str(args.vec0_questions)], f"measuring {size:,}")
        vec0: dict = {}
        if ks:
            vec0 = {"build": _child(["--data", str(args.data), "--build-vec0", path], f"building vec0 at {size:,}"),
                    "runs": [_child(["--data", str(args.data), "--measure-vec0", path, questions_file, truth_file,
                                     str(k), str(args.vec0_questions)], f"vec0 k={k} at {size:,}") for k in ks]}
        results.append({"size": size, "real": made, "blends": size - made, "build": built, **figures,
                        "target": RECALL_TARGET.get(size), "vec0": vec0})
        if not args.json:
            print_row(results[-1])
    if args.json:
        print(json.dumps({"results": results, "machine": machine()}, indent=2))
    else:
        print(f"  {machine()}")
    return 0


def print_row(row: dict) -> None:
    target = row["target"]
    met = target is not None and row["recall_at_10"] >= target
    verdict = "" if target is None else f" (target >= {target:.2f}: {'met' if met else 'MISSED'})"
    print(f"{row['size']:>9,} vectors ({row['real']:,} real, {row['blends']:,} blends), {row['questions']} "
          f"questions: recall@10 {row['recall_at_10']:.3f}{verdict}")
    print(f"    coop p50/p95 {row['coop_ms']['p50']}/{row['coop_ms']['p95']} ms, brute-force float KNN in memory "
          f"{row['brute_force_ms']['p50']}/{row['brute_force_ms']['p95']} ms (ratio of medians "
          f"{row['coop_ms']['p50'] / max(row['brute_force_ms']['p50'], 1e-9):.2f}); first search "
          f"{row['first_search_ms']} ms; peak RSS serving {row['peak_rss_mb_serving']:.0f} MB")
    print(f"    10th neighbour's median cosine {row['median_10th_neighbour_cosine']}, mean cosine with the mean "
          f"direction {row['mean_cosine_with_mean_direction']}; load {row['load_average_1min']}")
    vec0 = row["vec0"]
    if vec0:
        build = vec0["build"]
        print(f"    sqlite-vec bit KNN + the same re-rank (first {vec0['runs'][0]['questions']} questions; coop's "
              f"recall@10 on them {row['recall_at_10_vec0_questions']:.3f}); vec0 table built in "
              f"{build['build_s']} s, {build.get('bytes_per_vector', '?')} bytes a vector")
        for run in vec0["runs"]:
            print(f"      k={run['k']:>5}: recall@10 {run['recall_at_10']:.3f}, p50/p95 {run['p50']}/{run['p95']} ms, "
                  f"first {run['first_search_ms']} ms, peak RSS {run['peak_rss_mb']:.0f} MB; load "
                  f"{run['load_average_1min']}")


if __name__ == "__main__":
    sys.exit(main())
