"""Retrieval as memory grows: the LoCoMo protocol of `bench/locomo.py` with N extra messages of real English in
each user's memory, coop's search beside exact vector search in the same run.

    .venv/bin/python bench/scale.py --data ../shared/data/locomo/locomo-dev.json [--distractors 0,20000,100000]
        [--cache DIR] [--keep DIR] [--set KEY=VALUE] [--no-exact] [--model-path DIR] [--json]

Each conversation is one user (as in bench/locomo.py) with a database of its own, as a person's coop keeps one
memory in its file: the full-text index's statistics (IDF, and the postings budget that leaves out a query's most
common words) are then that user's, not those of five users' memories together. After its turns, N distractor
messages are stored through coop's own writes (`add_message`, `embed_pending`): sessions of real text said by the
conversation's two speakers (`"<speaker>: <text>"`, speaker A as the user), dated evenly across the conversation's
own span (first to last session), so that they compete on words, meaning and dates. The text comes from
`bench/distractors.py` (the other conversations of the file, Debian's fortunes, WordNet's example sentences; install
the two packages with `apt-get install fortunes wordnet-base`). Every question is searched twice: with coop's
defaults (the sign-bit pre-selection and exact re-rank), and with the vector leg's exact search
(`nearest(exact=True)`), so a loss can be told apart as ranking or as the approximate index. Search p50/p95 are
coop's.

Embedding 100,000 texts takes minutes: vectors are cached by text in `--cache` (default
`~/.cache/coop-bench/vectors.sqlite`), so only the first run pays. `--keep DIR` keeps the databases built for
each size and searches them again on the next run (a minute or two instead of a quarter of an hour; delete DIR
after changing how messages are stored). The observation and summary fields of the data are never read.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import distractors
import locomo
from common import BenchError, load_embedder, machine, median

DEFAULT_SIZES = (0, 20_000, 100_000)


class CachedEmbedder:
    """The real embedder, with each text's vector kept on disk (keyed by embedder id and text), so a rerun embeds
    nothing it has embedded before. Same id and vectors as the embedder it wraps."""

    def __init__(self, inner, path: Path) -> None:
        self.inner, self.id, self.dims = inner, inner.id, inner.dims
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, vec BLOB)")
        self.computed = 0

    def _key(self, text: str) -> str:
        return hashlib.sha1(f"{self.id}\n{text}".encode()).hexdigest()

    def embed(self, texts):
        import numpy as np

        keys = [self._key(t) for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows = self.db.execute(f"SELECT key, vec FROM v WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            found.update(rows.fetchall())
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = self.inner.embed([texts[i] for i in missing])
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)",
                                [(keys[i], vectors[j].astype("float32").tobytes()) for j, i in enumerate(missing)])
            self.db.commit()
            found.update({keys[i]: vectors[j].astype("float32").tobytes() for j, i in enumerate(missing)})
            self.computed += len(missing)
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys]) if keys else \
            np.zeros((0, self.dims), dtype=np.float32)

    def prefetch(self, texts: list[str], batch: int = 64) -> None:
        """Embed whichever of `texts` are not cached yet, shortest first: the model pads a batch to its longest
        text, so batches of like lengths waste far less work than the order the texts come in."""
        todo = sorted(set(texts), key=len)
        for start in range(0, len(todo), batch * 16):
            chunk = todo[start:start + batch * 16]
            self.embed(chunk)

    def embed_query(self, text: str):
        return self.inner.embed_query(text)


def add_distractors(memory, conv, sessions: list, embedder) -> int:
    """Store the distractor sessions in this user's memory, dated across the conversation's span; embed them."""
    from coop.config.loading import ImportanceConfig
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.growth.importance import message_importance

    dates = [s.date for s in conv.sessions if s.date is not None]
    first, last = (min(dates), max(dates)) if dates else (0.0, 86400.0 * 30)
    weights = ImportanceConfig()
    names = (conv.speaker_a, conv.speaker_b)
    added = 0
    if hasattr(embedder, "prefetch"):
        embedder.prefetch([f"{names[who]}: {text}" for session in sessions for who, text in session])
    for number, session in enumerate(sessions):
        started = first + (last - first) * (number + 0.5) / len(sessions)
        with memory.db.atomic():
            session_id = memory.sessions.start(f"extra {number}", started_at=started)
            for offset, (who, utterance) in enumerate(session):
                role = "user" if who == 0 else "assistant"
                text = f"{names[who]}: {utterance}"
                memory.messages.add(session_id, role, text, created_at=started + 30 * offset,
                                   importance=message_importance(role, text, weights))
                added += 1
    embed_pending(memory, embedder, batch_size=128)
    return added


def run(conversations: list, embedder, n: int, pool: list, *, keep: Path | None = None, tag: str = "",
        settings: dict | None = None, exact: bool = True) -> dict:
    """Every conversation in a database of its own (one person's memory, as coop keeps it) plus `n` distractors;
    every question searched with coop's defaults and, unless `exact` is off, with exact vector search.
    `keep`: the databases are kept there as `scale-<tag>-<n>-<conversation>.db` and reused by the next run with
    the same `n` and `tag` (which names the data file and the conversations taken, so a kept database is never
    reused with other distractors); searching kept ones takes a minute or two, building them many."""
    from coop.config.loading import MemoryConfig
    from coop.memory.retrieval import search as search_module
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore
    from coop.memory.storage.vector_index import SqliteVectorIndex

    retrieval = RetrievalSettings.from_config(MemoryConfig()).but(**(settings or {}))
    rows: dict[str, list[dict]] = {"coop": [], "exact": []}
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, conv in enumerate(conversations):
            path = (keep or Path(tmp)) / f"scale-{tag}-{n}-{conv.sample_id}.db"
            done = Path(f"{path}.done")
            reuse = keep is not None and path.exists() and done.exists()
            if keep is not None and not reuse:
                keep.mkdir(parents=True, exist_ok=True)
                for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    stale.unlink(missing_ok=True)
            db = open_database(str(path))
            store = MemoryStore(db)
            if reuse:
                memory = store.user(conv.sample_id)
                ids = dict(memory.db.execute("SELECT id, external_id FROM messages WHERE user_id = ? "
                                             "AND external_id IS NOT NULL", (memory.user_id,)))
            else:
                memory, ids = locomo.ingest(store, conv, embedder, 128)
                if n:
                    add_distractors(memory, conv, distractors.take(pool[index], n, conv.sample_id), embedder)
                if keep is not None:
                    done.touch()
            for mode in ("coop", "exact") if exact else ("coop",):
                approx = SqliteVectorIndex.nearest  # search's vector leg calls memory.vectors.nearest
                if mode == "exact":
                    SqliteVectorIndex.nearest = functools.partialmethod(approx, exact=True)  # type: ignore[method-assign,assignment]
                try:
                    for question in conv.questions:
                        started = time.perf_counter()
                        result = search_module.search(memory, question.text, embedder=embedder,
                                                      limit=max(locomo.KS), settings=retrieval)
                        if mode == "coop":
                            latencies.append((time.perf_counter() - started) * 1000)
                        ranked = [ids.get(h.item.item_id) if h.kind == "message" else None for h in result.hits]
                        rows[mode].append({"hits": {k: sorted(question.evidence & set(ranked[:k]))
                                                    for k in locomo.KS}, "evidence": sorted(question.evidence)})
                finally:
                    SqliteVectorIndex.nearest = approx  # type: ignore[method-assign]
            db.close()
    ordered = sorted(latencies)
    return {"distractors_per_user": n, "questions": len(rows["coop"]),
            "coop": locomo.recall(rows["coop"]), "exact": locomo.recall(rows["exact"]) if exact else None,
            "search_ms_p50": round(median(latencies), 1),
            "search_ms_p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1) if ordered else 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--distractors", default=",".join(map(str, DEFAULT_SIZES)),
                        help="comma-separated extra messages per user (default 0,20000,100000)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "coop-bench" / "vectors.sqlite",
                        help="where the vectors of the texts are kept between runs")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory")
    parser.add_argument("--embedder", choices=("fastembed", "hash"), default="fastembed",
                        help="hash: coop's test embedder (no meaning; for checking the benchmark itself)")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep each size's database in DIR and reuse it on the next run (no ingest)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one retrieval setting of [memory], as in bench/locomo.py (the figures of "
                             "record use the defaults)")
    parser.add_argument("--no-exact", action="store_true",
                        help="skip the exact-vector pass (faster; the figures of record keep it)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args(argv)
    settings = locomo._overrides(args.set)
    try:
        sizes = [int(s) for s in args.distractors.split(",") if s.strip()]
    except ValueError:
        raise BenchError(f"--distractors {args.distractors!r}: give numbers, e.g. 0,20000") from None
    conversations = locomo.load(args.data)[:args.limit_conversations]
    if max(sizes) and not (distractors.FORTUNES.is_dir() or distractors.WORDNET.is_dir()):
        raise BenchError("the distractor text is not installed: apt-get install fortunes wordnet-base")
    embedder = CachedEmbedder(load_embedder(args.embedder, args.model_path), args.cache)
    pools = [distractors.pool([c for j, c in enumerate(conversations) if j != i]) if max(sizes) else []
             for i in range(len(conversations))]
    results = []
    for n in sizes:
        started = time.perf_counter()
        result = run(conversations, embedder, n, pools, keep=args.keep, settings=settings,
                     tag=f"{args.data.stem}-{len(conversations)}", exact=not args.no_exact)
        result["seconds"] = round(time.perf_counter() - started, 1)
        results.append(result)
        if not args.json:
            print_row(result, embedder.computed)
    pool = distractors.pool_report(pools[0]) if pools[0] else "none"
    figures = {"data": str(args.data), "embedder": embedder.id, "pool": pool, "results": results, "machine": machine()}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"  pool for the first user: {figures['pool']}; {machine()}")
    return 0


def print_row(result: dict, computed: int) -> None:
    metrics = ("R_any@5", "R_all@5", "R_any@10", "R_all@10")
    print(f"N = {result['distractors_per_user']:>7,} extra messages per user, {result['questions']} questions "
          f"({result['seconds']} s; {computed:,} texts embedded so far, the rest from the cache)")
    for mode in ("coop", "exact") if result["exact"] else ("coop",):
        print(f"  {mode:<6}" + "".join(f"  {m} {result[mode][m]:.3f}" for m in metrics))
    print(f"  search p50 {result['search_ms_p50']} ms, p95 {result['search_ms_p95']} ms")


if __name__ == "__main__":
    sys.exit(main())
