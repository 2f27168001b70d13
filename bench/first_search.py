"""The first search of a process, with and without the sign bits loaded beside it (what `coop chat` does in the
embedder's loading thread, `bit_index.load_beside`), on the databases `bench/latency.py --keep DIR` built.

    .venv/bin/python bench/first_search.py DIR [--repeat 3] [--json]

For each `latency-*.db` in DIR: a fresh process-like start (a new connection) searches at once, then again; and
a fresh start that first loads the bits beside it, then searches. The first run of a database also pays for
reading it from disk; later repeats find it in the page cache. Medians of `--repeat` starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, machine, median


def starts(path: Path, repeat: int) -> dict[str, float]:
    import numpy as np

    from coop.memory.storage import bit_index
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore

    times: dict[str, list[float]] = {"first": [], "second": [], "load_beside": [], "first_after": []}
    for _ in range(repeat):
        for beside in (False, True):
            db = open_database(str(path))
            try:
                user, embedder, _ = db.one("SELECT user_id, embedder, count FROM embedding_counts "
                                           "ORDER BY count DESC LIMIT 1")
                dims = len(db.scalar("SELECT vector FROM embeddings WHERE embedder = ? LIMIT 1", (embedder,))) // 4
                query = np.random.default_rng(len(times["first"])).standard_normal(dims).astype(np.float32)
                query /= np.linalg.norm(query)
                memory = MemoryStore(db).user(user)
                if beside:
                    started = time.perf_counter()
                    bit_index.load_beside(db, user, embedder)
                    times["load_beside"].append(time.perf_counter() - started)
                started = time.perf_counter()
                memory.embedder.vectors.nearest(dims, query, k=10)
                times["first_after" if beside else "first"].append(time.perf_counter() - started)
                if not beside:
                    started = time.perf_counter()
                    memory.embedder.vectors.nearest(dims, query, k=10)
                    times["second"].append(time.perf_counter() - started)
            finally:
                db.close()
    return {name: round(median(values) * 1000, 1) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="the --keep directory of bench/latency.py")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args(argv)
    paths = sorted(args.dir.glob("latency-*.db"), key=lambda p: int(p.name.split("-")[1]))
    if not paths:
        raise BenchError(f"no latency-*.db in {args.dir}: run bench/latency.py --keep {args.dir} first")
    figures = {path.name: starts(path, args.repeat) for path in paths}
    if args.json:
        print(json.dumps({"milliseconds": figures, "repeat": args.repeat, "machine": machine()}, indent=2))
        return 0
    print(f"first search of a process, medians of {args.repeat} starts ({machine()})")
    for path in paths:
        f = figures[path.name]
        print(f"  {path.name}: first {f['first']} ms, second {f['second']} ms; with the bits loaded beside "
              f"({f['load_beside']} ms, off the turn): first {f['first_after']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
