"""Start-up time: `coop --help`, and a cold `coop memory search` with the real embedding model.

    .venv/bin/python bench/startup.py [--runs 7] [--json] [--model-path DIR]

Each run is a new process (what a person typing the command waits for), timed from spawn to exit. The search
runs against a memory of `--messages` messages (stored and embedded with the real model through coop's own
code before timing starts), with `COOP_HOME` pointing at a temporary directory, so no config or data of the
machine is read. "Cold" means a fresh process that must import coop, open the database and load the model;
the operating system's file cache is left as it is (it is warm after the first run, as it is for a person
who uses coop daily). Targets: `coop --help` median <= 0.3 s, cold search median <= 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BenchError, load_embedder, machine, median

HELP_TARGET_S = 0.3
SEARCH_TARGET_S = 1.5
QUERIES = ["what did I say about hiking trails", "my sister's birthday present", "which database did we pick",
           "the recipe with lentils", "when is the dentist appointment", "books I wanted to read",
           "train tickets to Lyon", "how do I reset the router"]


def coop_command() -> list[str]:
    """The `coop` console script beside this Python (a venv's bin/), else `python -m coop`."""
    script = Path(sys.executable).parent / "coop"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "coop"]


def clean_env(home: Path, model_dir: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COOP_")}
    env.update({"COOP_HOME": str(home), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"})
    if model_dir:
        env["COOP_MEMORY_EMBEDDER_MODEL_PATH"] = model_dir
    return env


def fill_memory(home: Path, embedder, messages: int) -> str:
    """A memory of `messages` short messages over sessions of 40 (and one on each query's topic), embedded with
    the real model; returns the user id."""
    from coop.config import load_config, resolve_db_path
    from coop.memory.growth.embedding import embed_pending
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore

    os.environ["COOP_HOME"] = str(home)
    config = load_config(env={"COOP_HOME": str(home)})
    db = open_database(resolve_db_path(config))
    memory = MemoryStore(db).user(os.environ.get("USER") or "bench")
    rng = random.Random(7)
    words = ["trail", "lentils", "router", "dentist", "sister", "birthday", "Lyon", "tickets", "database", "novel",
             "garden", "bicycle", "meeting", "invoice", "guitar", "recipe", "holiday", "flight", "cousin", "laptop"]
    session = None
    for i in range(messages):
        if i % 40 == 0:
            session = memory.start_session(f"session {i // 40}")
        text = f"message {i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(6, 18)))
        memory.add_message(session, "user" if i % 2 == 0 else "assistant", text)
    for query in QUERIES:  # something to find by meaning, so the run proves the model was loaded and used
        memory.add_message(session, "user", f"about {query}: noted")
    embed_pending(memory, embedder, batch_size=64)
    db.close()
    return memory.user_id


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - started, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="processes timed per command (default 7)")
    parser.add_argument("--messages", type=int, default=2000, help="messages in the searched memory (default 2000)")
    parser.add_argument("--model-path", default=None, help="local all-MiniLM-L6-v2 model directory "
                                                          "(default: coop's own model resolution)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args(argv)
    embedder = load_embedder("fastembed", args.model_path)
    from coop.config import EmbedderConfig
    from coop.memory.growth.embedders import resolve_model_path

    model_dir = resolve_model_path(EmbedderConfig(model_path=args.model_path or
                                                  os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")))
    coop = coop_command()
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp)
        user = fill_memory(home, embedder, args.messages)
        env = clean_env(home, model_dir)
        help_times, search_times = [], []
        for _ in range(args.runs):
            seconds, done = timed(coop + ["--help"], env, cwd)
            if done.returncode != 0:
                raise BenchError(f"`coop --help` failed: {done.stderr.strip()[:200]}")
            help_times.append(seconds)
        for i in range(args.runs):
            seconds, done = timed(coop + ["memory", "search", QUERIES[i % len(QUERIES)], "--json", "--user", user],
                                  env, cwd)
            if done.returncode != 0:
                raise BenchError(f"`coop memory search` failed: {done.stderr.strip()[:200]}")
            if '"vector"' not in done.stdout:  # the model must really have been loaded and used
                raise BenchError("`coop memory search` did not use the vector leg: the model did not load")
            search_times.append(seconds)
    result = {
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(coop)),
        "runs": args.runs,
        "messages": args.messages,
        "embedder": embedder.id,
        "help_median_s": round(median(help_times), 3),
        "help_s": [round(t, 3) for t in help_times],
        "help_target_s": HELP_TARGET_S,
        "search_median_s": round(median(search_times), 3),
        "search_s": [round(t, 3) for t in search_times],
        "search_target_s": SEARCH_TARGET_S,
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        ok = lambda value, target: "meets" if value <= target else "MISSES"  # noqa: E731
        print(f"coop start-up ({result['command']}, {args.runs} runs each; {result['machine']})")
        print(f"  coop --help:                     median {result['help_median_s']:.3f} s "
              f"(min {min(help_times):.3f}, max {max(help_times):.3f}); target <= {HELP_TARGET_S} s: "
              f"{ok(result['help_median_s'], HELP_TARGET_S)}")
        print(f"  cold coop memory search (model): median {result['search_median_s']:.3f} s "
              f"(min {min(search_times):.3f}, max {max(search_times):.3f}); target <= {SEARCH_TARGET_S} s: "
              f"{ok(result['search_median_s'], SEARCH_TARGET_S)}")
        print(f"  memory: {args.messages} messages embedded by {embedder.id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
