"""Speed at scale: search and the memory part of a chat turn at 10k, 100k and 1M messages; ingest throughput.

    .venv/bin/python bench/latency.py [--sizes 10000,100000,1000000] [--queries 200] [--keep DIR] [--json]
    .venv/bin/python bench/latency.py --backend postgres [--url postgresql://...] --sizes 100000 --others 9 \
        --other-users 9 [--keep DIR]

For each size, one user ("me") has that many messages (sessions of 40, ten minutes apart) and four other users
hold `--others` (default 20%) as many again, so every query runs beside rows it must never see. Texts are
synthetic English: 6-29 words drawn with a Zipf law from the embedding model's own word list (a realistic
spread of common and rare words for the full-text leg). Vectors come from the real all-MiniLM-L6-v2 model for
sizes below `--blend-from` (default 1,000,000); the 1M memory's vectors are blends of them, each the normalised
`0.7 x + 0.3 y` of two of the pool's real-model vectors drawn at random (embedding a million texts takes over an
hour on two cores; `bench/vectorleg.py` says why blends behave like real vectors where random unit vectors do
not), said so in the output; queries are always embedded by the real model.

The databases are filled with the rows coop writes (bulk inserts into `messages`, whose triggers keep both
full-text indexes in step; vectors through `vectors.store_vectors`).
Each size is then measured in a fresh process (so its peak memory is that of a coop process serving queries at
that size, model loaded): after a few warm-up queries,
- search: `search.search` with `[memory]`'s retrieval settings (query embedding, vector leg, full-text leg,
  exact cosines for full-text candidates, fusion, reading the hits), limit 10;
- turn: `ChatSession.prepare`, the memory part of a chat turn exactly as `coop chat` runs it (salience leg,
  the search above with limit 20, de-duplication, standing instructions, building the prompt within budget);
- recall of the sign-bit pre-selection: the vector leg's top 10 against exact cosine search over the same user.
Ingest: new messages stored with `memory.messages.add` and embedded by `growth.embedding.embed_pending` (what the
chat's background worker runs), against the raw throughput of fastembed's `TextEmbedding` (and of coop's lean
runner) on the same texts in the same run, interleaved three times; medians reported. Targets: turn p95 <= 50 ms
at 100k and <= 150 ms at 1M; ingest >= 80% of raw fastembed throughput.

`--backend postgres` builds each size in a database of a throwaway Postgres server started for the run (`--url`:
on that server), bulk-loaded by `build_postgres` (COPY; the other users' messages copied from the main user's
with vectors of their own; `--other-users` of them), and measures it in the same child process. `--keep` then
keeps only the pool of embedded texts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, Stores, add_backend_arguments, load_embedder, machine, median, peak_rss_mb, percentile
from vectorleg import blends

MAIN_USER = "me"
OTHER_USERS = 4
SESSION_MESSAGES = 40
TURN_TARGET_MS = {100_000: 50.0, 1_000_000: 150.0}
# "Needles": real-model messages spread through the main user's memory (also among the blends at 1M); a
# query that rewords one should find it, as a person searching for something they said would.
NEEDLES = 100
NEEDLE_SEED = 4242
INGEST_TARGET = 0.8


# -- texts ------------------------------------------------------------------------------------------------------


class Texts:
    """Deterministic synthetic messages: Zipf-distributed words from the model's vocabulary."""

    def __init__(self, model_dir: str, seed: int = 1) -> None:
        import numpy as np

        self.model_dir = model_dir
        vocab = (Path(model_dir) / "vocab.txt").read_text(encoding="utf-8").split("\n")
        # BERT's vocabulary lists whole words roughly by frequency after its ~2000 special and single-character
        # entries; a Zipf law over that order gives common words that match everywhere and rare ones that do not.
        self.words = [w for w in vocab[1996:] if re.fullmatch(r"[a-z]{2,}", w)]
        ranks = np.arange(len(self.words), dtype=np.float64)
        weights = 1.0 / (ranks + 20.0) ** 1.05
        self.p = weights / weights.sum()
        self.rng = np.random.default_rng(seed)

    def make(self, n: int, low: int = 6, high: int = 30) -> list[str]:
        lengths = self.rng.integers(low, high, n)
        picks = self.rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)
        out, at = [], 0
        for length in lengths:
            out.append(" ".join(self.words[i] for i in picks[at:at + length]))
            at += length
        return out


def model_dir_of(model_path: str | None) -> str:
    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import resolve_model_path

    path = resolve_model_path(EmbedderConfig(model_path=model_path or
                                             os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")))
    if path is None:
        raise BenchError("no local model directory: run ../shared/tools/provision-embedder-model, or pass "
                         "--model-path DIR")
    return path


def text_pool(texts: Texts, embedder, size: int, cache: Path | None) -> tuple[list[str], "object"]:
    """`size` texts and their real-model vectors (cached in `cache` when given: embedding 100k takes minutes)."""
    import numpy as np

    if cache is not None:
        text_file, vector_file = cache / f"pool-{size}.json", cache / f"pool-{size}-{embedder.id.replace('/', '_')}.npy"
        if text_file.is_file() and vector_file.is_file():
            return json.loads(text_file.read_text()), np.load(vector_file)
    pool = texts.make(size)
    started = time.perf_counter()
    vectors = embedder.embed(pool)
    print(f"  embedded {size:,} texts with the real model in {time.perf_counter() - started:.0f} s",
          file=sys.stderr)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        text_file.write_text(json.dumps(pool))
        np.save(vector_file, vectors)
    return pool, vectors


# -- building a database ----------------------------------------------------------------------------------------


class _VectorsOf:
    """Stands in for the embedder when storing precomputed vectors: `store_vectors` needs only id and dims."""

    def __init__(self, embedder_id: str, dims: int) -> None:
        self.id, self.dims = embedder_id, dims


def build(path: str, size: int, others: float, pool: list[str], vectors, embedder, blended: bool,
          texts: Texts) -> dict:
    """A database with `size` messages of the main user and `others * size` of four other users."""
    import numpy as np

    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore
    from coop.memory.storage.vectors import store_vectors
    from coop.memory.text import estimate_tokens

    rng = np.random.default_rng(size)
    needle_texts = Texts(texts.model_dir, seed=NEEDLE_SEED).make(NEEDLES, low=8, high=20)
    needle_vectors = embedder.embed(needle_texts)
    spacing = max(1, size // NEEDLES)
    needle_at = {i * spacing + spacing // 2: i for i in range(min(NEEDLES, size))}
    needles: list[dict] = []
    db = open_database(path)
    store = MemoryStore(db)
    plan = [(MAIN_USER, size)] + [(f"other-{i + 1}", int(size * others / OTHER_USERS)) for i in range(OTHER_USERS)]
    started = time.perf_counter()
    stored = _VectorsOf(embedder.id, embedder.dims)
    for user_id, count in plan:
        memory = store.user(user_id)
        memory.ensure_user()
        t0 = time.time() - count * 600.0
        chunk = 20_000
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            if blended:  # fresh texts for every message: no pool of a million embedded texts to draw on
                batch_texts = texts.make(n)
            else:  # the main user's messages are the pool in order; other users' are drawn from it
                order = [(start + j) % len(pool) if user_id == MAIN_USER else int(rng.integers(len(pool)))
                         for j in range(n)]
                batch_texts = [pool[i] for i in order]
            with db.atomic():
                sessions = {}
                for j in range(start, start + n, SESSION_MESSAGES):
                    sessions[j // SESSION_MESSAGES] = memory.sessions.start(
                        f"session {j // SESSION_MESSAGES}", started_at=t0 + j * 600.0)
                planted = [(j, needle_at[start + j]) for j in range(n)
                           if user_id == MAIN_USER and start + j in needle_at]
                for j, which in planted:
                    batch_texts[j] = needle_texts[which]
                rows = [(user_id, sessions[(start + j) // SESSION_MESSAGES], "user" if (start + j) % 2 == 0
                         else "assistant", batch_texts[j], t0 + (start + j) * 600.0, 0.5 if (start + j) % 2 == 0
                         else 0.3, estimate_tokens(batch_texts[j])) for j in range(n)]
                first = int(db.scalar("SELECT coalesce(max(id), 0) FROM messages")) + 1
                db.conn.executemany("INSERT INTO messages (user_id, session_id, role, content, created_at, "
                                    "importance, token_count) VALUES (?,?,?,?,?,?,?)", rows)
                ids = list(range(first, first + n))
                if blended:
                    matrix = blends(vectors, n, seed=size + start)
                else:
                    matrix = vectors[order]
                for j, which in planted:
                    matrix[j] = needle_vectors[which]
                    needles.append({"id": ids[j], "text": needle_texts[which]})
                store_vectors(memory, "message", ids, stored.id, matrix)
            print(f"  {user_id}: {start + n:,}/{count:,} messages ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, end="\r")
        print(file=sys.stderr)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("ANALYZE")
    db.close()
    Path(path + ".needles.json").write_text(json.dumps(needles))
    return {"build_seconds": round(time.perf_counter() - started, 1)}


def build_postgres(url: str, size: int, others: float, other_users: int, pool: list[str], vectors, embedder,
                   texts: Texts, needles_file: Path) -> dict:
    """The same memory on a Postgres server: `size` messages of the main user (the pool in order, needles planted
    as `build` plants them) and `others * size` more spread over `other_users` users, bulk-loaded.

    Bulk loading goes around the store's per-row writes (measured: see docs/benchmarks.md) with COPY on a
    connection of its own, triggers off (`session_replication_role = replica`, so `embedding_counts` is not
    upserted once per row) and their work done in SQL afterwards. Each user's full text is then indexed by
    `coop_fulltext_rebuild` (what `coop memory reindex` runs: the terms the write's own triggers make, in bulk);
    the other users' messages are copies of the main user's first ones (same texts, sessions and dates) with
    vectors of their own (blends of the pool's real-model vectors: `vectorleg.blends`). Each user's HNSW index is
    built at the end by `PgVectorIndex.ensure_index`, as the embedding worker makes it once a user has enough
    vectors."""
    import numpy as np
    import psycopg

    from coop.memory.storage.backends import open_store
    from coop.memory.text import estimate_tokens

    started = time.perf_counter()
    timings: dict[str, float] = {}
    needle_texts = Texts(texts.model_dir, seed=NEEDLE_SEED).make(NEEDLES, low=8, high=20)
    needle_vectors = embedder.embed(needle_texts)
    spacing = max(1, size // NEEDLES)
    needle_at = {i * spacing + spacing // 2: i for i in range(min(NEEDLES, size))}
    store = open_store("postgres", url)  # makes the schema
    users = [MAIN_USER] + [f"other-{i + 1}" for i in range(other_users)]
    for user_id in users:
        store.user(user_id).ensure_user()
    per_other = int(size * others / other_users) if other_users else 0
    if per_other > size:
        raise BenchError(f"--others {others} with {other_users} users gives {per_other:,} messages per other user: "
                         f"more than the main user's {size:,} they are copied from (add --other-users)")
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SELECT set_config('coop.user_id', '*', false)")
    conn.execute("SET session_replication_role = replica")
    t0 = time.time() - size * 600.0
    sessions = (size + SESSION_MESSAGES - 1) // SESSION_MESSAGES
    with conn.cursor().copy("COPY sessions (id, user_id, title, started_at, last_activity_at) FROM STDIN") as cp:
        for n in range(sessions):
            at = t0 + n * SESSION_MESSAGES * 600.0
            cp.write_row((n + 1, MAIN_USER, f"session {n}", at, at + (SESSION_MESSAGES - 1) * 600.0))
    needles = []
    chunk = 20_000
    emb_id = 0
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        order = [(start + j) % len(pool) for j in range(n)]
        batch_texts = [pool[i] for i in order]
        matrix = np.array(vectors[order], dtype=np.float32)
        for j in range(n):
            which = needle_at.get(start + j)
            if which is not None:
                batch_texts[j] = needle_texts[which]
                matrix[j] = needle_vectors[which]
                needles.append({"id": start + j + 1, "text": needle_texts[which]})
        with conn.transaction():
            cur = conn.cursor()
            with cur.copy("COPY messages (id, user_id, session_id, role, content, created_at, importance, "
                          "token_count, embedder) FROM STDIN") as cp:
                for j in range(n):
                    i = start + j
                    cp.write_row((i + 1, MAIN_USER, i // SESSION_MESSAGES + 1, "user" if i % 2 == 0 else "assistant",
                                  batch_texts[j], t0 + i * 600.0, 0.5 if i % 2 == 0 else 0.3,
                                  estimate_tokens(batch_texts[j]), embedder.id))
            emb_id = _copy_vectors(cur, MAIN_USER, embedder.id, range(start + 1, start + n + 1), matrix, emb_id)
        print(f"  {MAIN_USER}: {start + n:,}/{size:,} messages ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, end="\r")
    print(file=sys.stderr)
    timings["main_copy_s"] = time.perf_counter() - started
    t = time.perf_counter()
    conn.execute("SELECT coop_fulltext_rebuild(%s)", (MAIN_USER,))
    timings["main_fulltext_s"] = time.perf_counter() - t
    print(f"  {MAIN_USER}: full text indexed in {timings['main_fulltext_s']:.0f} s", file=sys.stderr)
    t = time.perf_counter()
    rng_seed = size
    for number, user_id in enumerate(users[1:]):
        offset = (number + 1) * 10 * size  # ids of copies: main id + offset (sessions likewise)
        with conn.transaction():
            conn.execute("INSERT INTO sessions (id, user_id, title, started_at, last_activity_at) SELECT id + %s, %s, "
                         "title, started_at, last_activity_at FROM sessions WHERE user_id = %s AND id <= %s",
                         (offset, user_id, MAIN_USER, (per_other + SESSION_MESSAGES - 1) // SESSION_MESSAGES))
            conn.execute("INSERT INTO messages (id, user_id, session_id, role, content, created_at, importance, "
                         "token_count, embedder) SELECT id + %s, %s, session_id + %s, role, content, created_at, "
                         "importance, token_count, embedder FROM messages WHERE user_id = %s AND id <= %s",
                         (offset, user_id, offset, MAIN_USER, per_other))
            conn.execute("SELECT coop_fulltext_rebuild(%s)", (user_id,))
        for start in range(0, per_other, chunk):
            n = min(chunk, per_other - start)
            with conn.transaction():
                emb_id = _copy_vectors(conn.cursor(), user_id, embedder.id,
                                       range(offset + start + 1, offset + start + n + 1),
                                       blends(vectors, n, seed=rng_seed + number * 1000 + start), emb_id)
        print(f"  {user_id}: {per_other:,} messages ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    timings["others_copy_s"] = time.perf_counter() - t
    for table in ("sessions", "messages", "embeddings"):
        conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    conn.execute("INSERT INTO embedding_counts (user_id, embedder, count) SELECT user_id, embedder, count(*) "
                 "FROM embeddings GROUP BY user_id, embedder")
    conn.execute("VACUUM ANALYZE")
    t = time.perf_counter()
    store.db.run("SET maintenance_work_mem = '6GB'")
    for user_id in users:  # each user's own index, as the embedding worker makes it past EXACT_BELOW vectors
        store.user(user_id).vectors.ensure_index(embedder.id, embedder.dims)
    timings["hnsw_build_s"] = time.perf_counter() - t
    print(f"  HNSW indexes of {len(users)} users built in {timings['hnsw_build_s']:.0f} s", file=sys.stderr)
    rows = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    conn.close()
    store.close()
    needles_file.write_text(json.dumps(needles))
    return {"build_seconds": round(time.perf_counter() - started, 1), "rows_in_server": int(rows),
            "build_parts_seconds": {k: round(v, 1) for k, v in timings.items()}}


def _copy_vectors(cursor, user_id: str, embedder_id: str, item_ids, matrix, last_id: int) -> int:
    """COPY one vector per message into `embeddings` and `embedding_points` (ids from last_id + 1); the last id."""
    import numpy as np

    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    ids = list(item_ids)
    with cursor.copy("COPY embeddings (id, user_id, kind, item_id, embedder, vector) FROM STDIN") as cp:
        for j, item_id in enumerate(ids):
            cp.write_row((last_id + j + 1, user_id, "message", item_id, embedder_id, matrix[j].tobytes()))
    with cursor.copy("COPY embedding_points (embedding_id, user_id, embedder, kind, point) FROM STDIN") as cp:
        for j in range(len(ids)):
            cp.write_row((last_id + j + 1, user_id, embedder_id, "message",
                          "[" + ",".join(map(repr, matrix[j].tolist())) + "]"))
    return last_id + len(ids)


def pg_size(url: str) -> dict:
    """The database's size, its largest tables (with their indexes), and all of the full-text tables together."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        parts = conn.execute("SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
                             "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public' "
                             "ORDER BY 2 DESC LIMIT 6").fetchall()
        fulltext = conn.execute("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
                                "AND n.nspname = 'public' AND c.relname LIKE 'fulltext%'").fetchone()[0]
    return {"bytes": int(total), "parts": {name: int(size) for name, size in parts}, "fulltext_bytes": int(fulltext)}


def db_size(path: str) -> dict:
    """The file's size and, where SQLite has dbstat, the share of the largest tables and indexes."""
    import apsw

    total = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    parts: dict[str, int] = {}
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            group = ("full-text (messages_fts)" if name.startswith("messages_fts") else
                     "full-text (message_context_fts)" if name.startswith("message_context_fts") else
                     "embeddings (float32)" if name.startswith(("embeddings", "sqlite_autoindex_embeddings")) else
                     "messages" if name.startswith("messages") else "other")
            parts[group] = parts.get(group, 0) + int(size)
    except apsw.Error:
        pass
    finally:
        conn.close()
    return {"bytes": total, "parts": dict(sorted(parts.items(), key=lambda kv: -kv[1]))}


# -- measuring (in a fresh process per size) --------------------------------------------------------------------


def measure(path: str, queries: int, model_path: str | None, seed: int, backend: str = "sqlite",
            needles_file: str | None = None) -> dict:
    import dataclasses

    from coop.chat.session import ChatSession
    from coop.config.loading import Config
    from coop.memory.retrieval.search import search
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.backends import open_store

    embedder = load_embedder("fastembed", model_path)
    config = Config()
    where = {"db_path": path} if backend == "sqlite" else {"backend": "postgres", "url": path}
    config = dataclasses.replace(config, memory=dataclasses.replace(config.memory, **where))
    store = open_store(backend, path)
    db = store.db
    memory = store.user(MAIN_USER)
    nearest = memory.vectors.nearest
    retrieval = RetrievalSettings.from_config(config.memory)
    texts = Texts(model_dir_of(model_path), seed=seed)
    asked = texts.make(queries + 10, low=4, high=16)
    chat = ChatSession(memory, config, embedder=lambda: embedder, incognito=True)
    first_turns = []  # a new process's first turns: a plan a server has not cached yet shows here
    for query in asked[:10]:  # warm-up: the model's first runs, SQLite's page cache
        search(memory, query, embedder=embedder, limit=10, settings=retrieval)
        started = time.perf_counter()
        chat.prepare(query)
        first_turns.append((time.perf_counter() - started) * 1000)
    load_before = os.getloadavg()[0]
    search_ms, turn_ms, legs = [], [], {}
    for query in asked[10:]:
        started = time.perf_counter()
        result = search(memory, query, embedder=embedder, limit=10, settings=retrieval)
        search_ms.append((time.perf_counter() - started) * 1000)
        for stage, ms in result.timings_ms.items():
            legs.setdefault(stage, []).append(ms)
        started = time.perf_counter()
        chat.prepare(query)
        turn_ms.append((time.perf_counter() - started) * 1000)
    # The high-water mark of a process serving queries, before the exact searches below read every vector.
    peak_mb = peak_rss_mb()
    load = (load_before, os.getloadavg()[0])  # other programs' work on the machine skews every figure
    overlap, approx_ms, exact_ms = [], [], []
    rows = int(db.scalar("SELECT count(*) FROM messages WHERE user_id = $1", (MAIN_USER,)))
    for query in asked[10:10 + min(50 if rows <= 200_000 else 15, queries)]:  # exact search at 1M: seconds each
        vector = embedder.embed_query(query)
        started = time.perf_counter()
        approx = nearest(embedder.id, embedder.dims, vector, k=10)
        approx_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        exact = nearest(embedder.id, embedder.dims, vector, k=10, exact=True)
        exact_ms.append((time.perf_counter() - started) * 1000)
        overlap.append(len({(h.kind, h.item_id) for h in approx} & {(h.kind, h.item_id) for h in exact})
                       / max(1, len(exact)))
    found, found_search, above_floor = 0, 0, 0
    needle_file = Path(needles_file or path + ".needles.json")
    needles = json.loads(needle_file.read_text()) if needle_file.is_file() else []
    for needle in needles:
        words = needle["text"].split()
        reworded = " ".join(w for i, w in enumerate(words) if i % 4 != 1)  # a quarter of the words left out
        vector = embedder.embed_query(reworded)
        hits = nearest(embedder.id, embedder.dims, vector, k=10)
        found += any(h.item_id == needle["id"] for h in hits)
        above_floor += any(h.item_id == needle["id"] and h.similarity >= (retrieval.floor or -1.0) for h in hits)
        result = search(memory, reworded, embedder=embedder, limit=10, settings=retrieval)
        found_search += any(h.kind == "message" and h.item.item_id == needle["id"] for h in result.hits)
    store.close()
    return {
        "queries": len(search_ms),
        "needles": {"planted": len(needles), "vector_leg_top10": found, "above_floor": above_floor,
                    "search_top10": found_search},
        "search_ms": {"p50": round(percentile(search_ms, 50), 1), "p95": round(percentile(search_ms, 95), 1)},
        "turn_ms": {"p50": round(percentile(turn_ms, 50), 1), "p95": round(percentile(turn_ms, 95), 1)},
        "first_turns_ms": {"p50": round(percentile(first_turns[1:], 50), 1), "max": round(max(first_turns[1:]), 1)},
        "stage_ms_median": {k: round(median(v), 2) for k, v in legs.items()},
        "vector_recall_at_10": round(sum(overlap) / len(overlap), 3) if overlap else None,
        "vector_ms_median": {"bit_preselect_rerank": round(median(approx_ms), 1), "exact": round(median(exact_ms), 1)},
        "peak_rss_mb": round(peak_mb, 1),
        "load_average_1min": [round(x, 2) for x in load],
    }


def measure_in_child(path: str, queries: int, model_path: str | None, seed: int, backend: str = "sqlite",
                     needles_file: str | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", path, "--queries", str(queries),
           "--seed", str(seed), "--backend", backend] + (["--model-path", model_path] if model_path else []) + \
        (["--needles", needles_file] if needles_file else [])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise BenchError(f"measuring {path} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


# -- ingest -----------------------------------------------------------------------------------------------------


def ingest(path: str, embedder, model_dir: str, texts: Texts, per_round: int, rounds: int,
           batch_size: int) -> dict:
    """Messages stored and embedded per second through coop, against raw embedding of the same texts."""
    from fastembed import TextEmbedding

    from coop.memory.growth.embedding import embed_pending
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore

    raw_fastembed = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=model_dir)
    db = open_database(path)
    memory = MemoryStore(db).user(MAIN_USER)
    fast, lean, coop = [], [], []
    load_before = os.getloadavg()[0]
    for _ in range(rounds):
        batch = texts.make(per_round)
        started = time.perf_counter()
        list(raw_fastembed.embed(batch, batch_size=batch_size))
        fast.append(per_round / (time.perf_counter() - started))
        started = time.perf_counter()
        embedder.embed(batch)
        lean.append(per_round / (time.perf_counter() - started))
        started = time.perf_counter()
        session = None
        for i, text in enumerate(batch):
            if i % SESSION_MESSAGES == 0:
                session = memory.sessions.start("ingest")
            memory.messages.add(session, "user" if i % 2 == 0 else "assistant", text)
        embed_pending(memory, embedder, batch_size=batch_size)
        coop.append(per_round / (time.perf_counter() - started))
    db.close()
    return {"messages_per_round": per_round, "rounds": rounds, "batch_size": batch_size,
            "raw_fastembed_per_s": round(median(fast), 1), "raw_coop_embedder_per_s": round(median(lean), 1),
            "coop_ingest_per_s": round(median(coop), 1),
            "ratio_to_raw_fastembed": round(median(coop) / median(fast), 3),
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


# -- the run ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="the main user's message counts")
    parser.add_argument("--others", type=float, default=0.2, help="other users' rows, as a share of the size")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size (default 200)")
    parser.add_argument("--blend-from", type=int, default=1_000_000,
                        help="sizes from this up get blends of the model's vectors (default 1M)")
    parser.add_argument("--keep", default=None, help="keep (and reuse) the built databases and embedded texts here")
    parser.add_argument("--ingest", type=int, default=1000, help="messages per ingest round (3 rounds; 0: skip)")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory "
                                                          "(default: coop's own model resolution)")
    parser.add_argument("--seed", type=int, default=11, help=argparse.SUPPRESS)
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # the child process's mode
    parser.add_argument("--needles", default=None, help=argparse.SUPPRESS)  # the child's needles (Postgres)
    parser.add_argument("--other-users", type=int, default=OTHER_USERS,
                        help=f"how many other users share --others' rows (default {OTHER_USERS}); e.g. "
                             "--others 9 --other-users 9 puts 1,000,000 messages in a Postgres server at 100,000")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    add_backend_arguments(parser)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.queries, args.model_path, args.seed,
                                 backend=args.backend or "sqlite", needles_file=args.needles)))
        return 0
    stores = Stores.from_args(args)
    if stores.postgres:
        return main_postgres(args, stores)
    if args.other_users != OTHER_USERS:
        raise BenchError("--other-users is for --backend postgres (SQLite's build keeps four other users)")
    try:
        sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        raise BenchError(f"--sizes must be numbers separated by commas, not {args.sizes!r}") from None
    embedder = load_embedder("fastembed", args.model_path)
    model_dir = model_dir_of(args.model_path)
    from coop.config.loading import EmbedderConfig

    batch_size = EmbedderConfig().batch_size
    keep = Path(args.keep).resolve() if args.keep else None
    tmp = tempfile.TemporaryDirectory() if keep is None else None
    where = keep or Path(tmp.name)
    where.mkdir(parents=True, exist_ok=True)
    texts = Texts(model_dir)
    real_sizes = [s for s in sizes if s < args.blend_from]
    pool_size = max(real_sizes, default=100_000 if sizes else 0)  # blends need real vectors to blend
    pool, vectors = text_pool(texts, embedder, pool_size, keep) if pool_size else ([], None)
    results = []
    try:
        for size in sizes:
            blended = size >= args.blend_from
            path = str(where / f"latency-{size}-{'blend' if blended else 'model'}.db")
            built: dict = {"build_seconds": "reused"}
            if not (keep and os.path.exists(path)):
                print(f"building {size:,} messages ({'blended' if blended else 'real-model'} vectors)",
                      file=sys.stderr)
                for stale in (path, path + "-wal", path + "-shm"):
                    if os.path.exists(stale):
                        os.remove(stale)
                built = build(path, size, args.others, pool, vectors, embedder, blended, texts)
            print(f"measuring {size:,}", file=sys.stderr)
            figures = measure_in_child(path, args.queries, args.model_path, args.seed)
            results.append({"size": size, "other_users_rows": int(size * args.others),
                            "vectors": "blends of real-model vectors" if blended else "real model", **built,
                            **figures, "db": db_size(path), "turn_target_p95_ms": TURN_TARGET_MS.get(size)})
        ingest_figures = None
        if args.ingest and sizes:
            at = min(sizes, key=lambda s: abs(s - 100_000))
            path = str(where / f"latency-{at}-{'blend' if at >= args.blend_from else 'model'}.db")
            if keep:  # do not grow a kept database: ingest into a copy
                import shutil

                copy = str(where / "ingest.db")
                shutil.copyfile(path, copy)
                path = copy
            print(f"ingest into the {at:,}-message memory", file=sys.stderr)
            ingest_figures = {"into_size": at, **ingest(path, embedder, model_dir, texts, args.ingest, 3, batch_size)}
    finally:
        if tmp is not None:
            tmp.cleanup()
    report = {"embedder": embedder.id, "machine": machine(), "queries_per_size": args.queries,
              "others_share": args.others, "sizes": results, "ingest": ingest_figures,
              "ingest_target_ratio": INGEST_TARGET}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def main_postgres(args, stores: Stores) -> int:
    """The run on a Postgres server (`--backend postgres` / `--url`): a database per size, built by
    `build_postgres`, measured in a child process as SQLite's are. No ingest rounds (`bench/team.py` measures
    writes on both backends), no blends: sizes are of real-model vectors from the pool."""
    try:
        sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        raise BenchError(f"--sizes must be numbers separated by commas, not {args.sizes!r}") from None
    if any(size >= args.blend_from for size in sizes):
        raise BenchError("blended sizes are SQLite's only for now: give --sizes below --blend-from")
    embedder = load_embedder("fastembed", args.model_path)
    model_dir = model_dir_of(args.model_path)
    keep = Path(args.keep).resolve() if args.keep else None  # the pool's cache only: the server goes with the run
    texts = Texts(model_dir)
    pool, vectors = text_pool(texts, embedder, max(sizes), keep)
    results = []
    with stores:
        for size in sizes:
            url = stores.location(f"latency_{size}")
            needles_file = str(stores.directory / f"latency-{size}.needles.json")
            print(f"building {size:,} messages on {stores.describe()}", file=sys.stderr)
            built = build_postgres(url, size, args.others, args.other_users, pool, vectors, embedder, texts,
                                   Path(needles_file))
            print(f"measuring {size:,}", file=sys.stderr)
            figures = measure_in_child(url, args.queries, args.model_path, args.seed, "postgres", needles_file)
            results.append({"size": size, "other_users_rows": int(size * args.others), "vectors": "real model",
                            **built, **figures, "db": pg_size(url), "turn_target_p95_ms": TURN_TARGET_MS.get(size)})
            stores.drop(url)
    report = {"embedder": embedder.id, "machine": machine(), "queries_per_size": args.queries,
              "others_share": args.others, "other_users": args.other_users, "backend": stores.describe(),
              "sizes": results, "ingest": None, "ingest_target_ratio": INGEST_TARGET}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def print_report(report: dict) -> None:
    print(f"coop latency ({report['embedder']}; {report['machine']}; {report['queries_per_size']} queries per size"
          + (f"; {report['backend']}" if report.get("backend") else "") + ")")
    print(f"  {'messages':>10} {'vectors':>8} {'search p50/p95':>16} {'turn p50/p95':>16} {'target':>7} "
          f"{'recall@10':>9} {'db MB':>7} {'peak MB':>8}   (recall@10: vector leg vs exact search)")
    for row in report["sizes"]:
        target = row["turn_target_p95_ms"]
        mark = "" if target is None else ("ok" if row["turn_ms"]["p95"] <= target else "MISS")
        print(f"  {row['size']:>10,} {'model' if row['vectors'] == 'real model' else 'blend':>8} "
              f"{row['search_ms']['p50']:>7.1f}/{row['search_ms']['p95']:<6.1f}ms "
              f"{row['turn_ms']['p50']:>7.1f}/{row['turn_ms']['p95']:<6.1f}ms "
              f"{(f'{target:.0f} ' + mark) if target else '-':>7} {row['vector_recall_at_10']:>9.3f} "
              f"{row['db']['bytes'] / 1e6:>7.0f} {row['peak_rss_mb']:>8.0f}")
        stages = ", ".join(f"{k} {v:.1f}" for k, v in row["stage_ms_median"].items())
        vec = row["vector_ms_median"]
        print(f"  {'':>10} stages (median ms): {stages}; vector leg bit+rerank {vec['bit_preselect_rerank']:.1f} "
              f"vs exact {vec['exact']:.1f} ms; load average {row['load_average_1min'][0]:.2f} -> "
              f"{row['load_average_1min'][1]:.2f} on {os.cpu_count()} cores")
        needles = row["needles"]
        print(f"  {'':>10} reworded needles found: {needles['vector_leg_top10']}/{needles['planted']} in the vector "
              f"leg's top 10 ({needles['above_floor']} above the floor), {needles['search_top10']}/"
              f"{needles['planted']} in search's top 10")
        print(f"  {'':>10} db: " + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in row["db"]["parts"].items())
              + (f"; full-text tables together {row['db']['fulltext_bytes'] / 1e6:.0f} MB"
                 if "fulltext_bytes" in row["db"] else ""))
        if "rows_in_server" in row:
            print(f"  {'':>10} {row['rows_in_server']:,} messages in the server; built in {row['build_seconds']} s "
                  f"(" + ", ".join(f"{k} {v}" for k, v in row["build_parts_seconds"].items()) + ")")
    ing = report["ingest"]
    if ing:
        verdict = "ok" if ing["ratio_to_raw_fastembed"] >= report["ingest_target_ratio"] else "MISS"
        print(f"  ingest into {ing['into_size']:,}: coop {ing['coop_ingest_per_s']:.0f} msg/s (add_message + "
              f"embed_pending), raw fastembed {ing['raw_fastembed_per_s']:.0f}/s, coop's embedder alone "
              f"{ing['raw_coop_embedder_per_s']:.0f}/s: {ing['ratio_to_raw_fastembed']:.0%} of raw fastembed "
              f"(target >= {report['ingest_target_ratio']:.0%}: {verdict}); medians of {ing['rounds']} rounds "
              f"of {ing['messages_per_round']}")


if __name__ == "__main__":
    sys.exit(main())
