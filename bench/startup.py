"""Start-up time: `coop --help`, a cold `coop memory search` with the real embedding model, and `coop chat` in a
real terminal (time to the prompt, first-turn overhead, exit; see `chat_timing.py`) beside a bare interpreter.

    .venv/bin/python bench/startup.py [--runs 7] [--chat-runs 5] [--json] [--model-path DIR]

Each run is a new process (what a person typing the command waits for), timed from spawn to exit. The search
runs against a memory of `--messages` messages (stored and embedded with the real model through coop's own
code before timing starts), with `COOP_HOME` pointing at a temporary directory, so no config or data of the
machine is read. "Cold" means a fresh process that must import coop, open the database and load the model;
the operating system's file cache is left as it is (it is warm after the first run, as it is for a person
who uses coop daily). Targets: `coop --help` median <= 0.3 s, cold search median <= 1.5 s; `coop chat` (tmux
needed) prompt within 0.5 s, a turn typed after loading adds at most 0.15 s before the request reaches the model,
exit within 1 s.
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

import chat_timing
from common import BenchError, load_embedder, machine, median

HELP_TARGET_S = 0.3
SEARCH_TARGET_S = 1.5
PROMPT_TARGET_S = 0.5
OVERHEAD_TARGET_S = 0.15
EXIT_TARGET_S = 1.0
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
    from coop.config.loading import load_config, resolve_db_path
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
    parser.add_argument("--chat-runs", type=int, default=5, help="`coop chat` runs in tmux (default 5; 0: none)")
    parser.add_argument("--settle", type=float, default=20.0, help="most seconds the chat is left to load "
                                                                    "before the first turn is typed (default 20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    args = parser.parse_args(argv)
    embedder = load_embedder("fastembed", args.model_path)
    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import resolve_model_path

    model_dir = resolve_model_path(EmbedderConfig(model_path=args.model_path or
                                                  os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")))
    coop = coop_command()
    # An installed coop has its bytecode compiled (pip does it at install; an editable install's first run does);
    # where PYTHONDONTWRITEBYTECODE is set that never happens, and every start would compile coop anew.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "coop")],
                   check=True)
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
        chat = chat_figures(coop, env, args) if args.chat_runs else {}
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
        **chat,
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
        if chat:
            print(f"  coop chat in tmux ({args.chat_runs} runs; bare `python -c` in tmux: median "
                  f"{chat['bare_start_median_s']:.3f} s):")
            for key, label, target in (("prompt", "time to the prompt", PROMPT_TARGET_S),
                                       ("first_turn_overhead", "first-turn overhead", OVERHEAD_TARGET_S),
                                       ("exit", "exit after Ctrl-D", EXIT_TARGET_S)):
                runs = chat[f"{key}_s"]
                print(f"    {label + ':':<30} median {chat[key + '_median_s']:.3f} s (min {min(runs):.3f}, max "
                      f"{max(runs):.3f}); target <= {target} s: {ok(chat[key + '_median_s'], target)}")
        print(f"  memory: {args.messages} messages embedded by {embedder.id}")
    return 0


def chat_figures(coop: list[str], env: dict[str, str], args: argparse.Namespace) -> dict[str, object]:
    """Medians of `--chat-runs` tmux runs of `coop chat`, and of as many bare interpreter starts."""
    import shutil

    if shutil.which("tmux") is None:
        raise BenchError("tmux is not installed: the chat figures need a real terminal (--chat-runs 0 skips them)")
    server = chat_timing.InstantServer()
    runs: list[dict[str, float]] = []
    bare: list[float] = []
    try:
        for _ in range(args.chat_runs):
            bare.append(chat_timing.bare_start(sys.executable, env))
            runs.append(chat_timing.chat_run(coop, env, server, args.settle))
    except RuntimeError as exc:
        raise BenchError(f"coop chat: {exc}") from None
    finally:
        server.close()
    figures: dict[str, object] = {"bare_start_median_s": round(median(bare), 3),
                                  "bare_start_s": [round(t, 3) for t in bare]}
    for key in ("prompt", "first_turn_overhead", "exit"):
        values = [run[f"{key}_s"] for run in runs]
        figures[f"{key}_median_s"] = round(median(values), 3)
        figures[f"{key}_s"] = [round(t, 3) for t in values]
    return figures


if __name__ == "__main__":
    sys.exit(main())
