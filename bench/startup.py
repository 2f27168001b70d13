"""Start-up time: a bare interpreter (`python -c pass`), `coop --help`, a cold `coop memory search` with the real
embedding model, and `coop chat` in a real terminal (time to the prompt, first-turn overhead, a first message typed
the moment the prompt shows, exit; see `chat_timing.py`).

    .venv/bin/python bench/startup.py [--runs 7] [--chat-runs 5] [--json] [--model-path DIR] [--compare DIR]

`--compare DIR` times another checkout's coop (a `git worktree add` of an older commit) in the same run, its chat
runs alternating with this checkout's, so both see the same machine; both are then run as `python -m coop`, and each
chats in a home of its own that starts empty (an older coop may not open a database this one has migrated).

Each run is a new process (what a person typing the command waits for), timed from spawn to exit. The search
runs against a memory of `--messages` messages (stored and embedded with the real model through coop's own
code before timing starts), with `COOP_HOME` pointing at a temporary directory, so no config or data of the
machine is read. "Cold" means a fresh process that must import coop, open the database and load the model;
the operating system's file cache is left as it is (it is warm after the first run, as it is for a person
who uses coop daily). Targets: `coop --help` median <= 0.3 s, cold search median <= 1.5 s; `coop chat` (tmux
needed) prompt within 0.5 s, a turn typed after loading adds at most 0.15 s before the request reaches the model, a
first message typed at once reaches it within 1.0 s of Enter, exit within 1 s (also on a Ctrl-D 1 s after the
prompt shows, while the model client may still be warming up).
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
AT_ONCE_TARGET_S = 1.0
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
            session = memory.sessions.start(f"session {i // 40}")
        text = f"message {i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(6, 18)))
        memory.messages.add(session, "user" if i % 2 == 0 else "assistant", text)
    for query in QUERIES:  # something to find by meaning, so the run proves the model was loaded and used
        memory.messages.add(session, "user", f"about {query}: noted")
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
    parser.add_argument("--compare", metavar="DIR", default=None,
                        help="another checkout whose coop is timed too, alternating with this one")
    args = parser.parse_args(argv)
    embedder = load_embedder("fastembed", args.model_path)
    from coop.config.loading import EmbedderConfig
    from coop.memory.growth.embedders import resolve_model_path

    model_dir = resolve_model_path(EmbedderConfig(model_path=args.model_path or
                                                  os.environ.get("COOP_MEMORY_EMBEDDER_MODEL_PATH", "")))
    coop = coop_command()
    checkouts = {"this": Path(__file__).resolve().parent.parent}
    if args.compare:
        checkouts["compare"] = Path(args.compare).resolve()
        if not (checkouts["compare"] / "coop" / "__init__.py").is_file():
            raise BenchError(f"--compare {args.compare}: no coop package there")
        coop = [sys.executable, "-m", "coop"]
    # An installed coop has its bytecode compiled (pip does it at install; an editable install's first run does);
    # where PYTHONDONTWRITEBYTECODE is set that never happens, and every start would compile coop anew.
    for checkout in checkouts.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "coop")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp)
        user = fill_memory(home, embedder, args.messages)
        env = clean_env(home, model_dir)
        if args.compare:
            env["PYTHONPATH"] = str(checkouts["this"])
        help_times, search_times, bare_times = [], [], []
        for _ in range(args.runs):
            seconds, done = timed([sys.executable, "-c", "pass"], env, cwd)
            bare_times.append(seconds)
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
        chat = chat_figures(coop, env, args, checkouts) if args.chat_runs else {}
    result = {
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(coop)),
        "runs": args.runs,
        "messages": args.messages,
        "embedder": embedder.id,
        "bare_median_s": round(median(bare_times), 3),
        "bare_s": [round(t, 3) for t in bare_times],
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
        print(f"  python -c pass:                  median {result['bare_median_s']:.3f} s "
              f"(min {min(bare_times):.3f}, max {max(bare_times):.3f})")
        print(f"  coop --help:                     median {result['help_median_s']:.3f} s "
              f"(min {min(help_times):.3f}, max {max(help_times):.3f}); target <= {HELP_TARGET_S} s: "
              f"{ok(result['help_median_s'], HELP_TARGET_S)}")
        print(f"  cold coop memory search (model): median {result['search_median_s']:.3f} s "
              f"(min {min(search_times):.3f}, max {max(search_times):.3f}); target <= {SEARCH_TARGET_S} s: "
              f"{ok(result['search_median_s'], SEARCH_TARGET_S)}")
        if chat:
            print(f"  coop chat in tmux ({args.chat_runs} runs; bare `python -c` in tmux: median "
                  f"{chat['bare_start_median_s']:.3f} s):")
            for prefix, title in (("", "this checkout"), ("compare_", f"--compare {args.compare}")):
                if prefix + "prompt_s" not in chat:
                    continue
                if args.compare:
                    print(f"   {title}:")
                for key, label, target in CHAT_ROWS:
                    runs = chat[f"{prefix}{key}_s"]
                    value = chat[f"{prefix}{key}_median_s"]
                    print(f"    {label + ':':<52} median {value:.3f} s (min {min(runs):.3f}, max {max(runs):.3f}); "
                          f"target <= {target} s: {ok(value, target)}")
        print(f"  memory: {args.messages} messages embedded by {embedder.id}")
    return 0


CHAT_ROWS = (("prompt", "time to the prompt", PROMPT_TARGET_S),
             ("first_turn_overhead", "first-turn overhead (typed after loading)", OVERHEAD_TARGET_S),
             ("at_once", "first message typed at once: Enter -> request at the server", AT_ONCE_TARGET_S),
             ("exit", "exit after Ctrl-D", EXIT_TARGET_S),
             ("early_exit", "Ctrl-D 1 s after start: exit", EXIT_TARGET_S))


def chat_figures(coop: list[str], env: dict[str, str], args: argparse.Namespace,
                 checkouts: dict[str, Path]) -> dict[str, object]:
    """Medians of `--chat-runs` tmux runs of `coop chat` (and of as many with the first message typed at once) for
    each checkout, the checkouts taking turns; and of as many bare interpreter starts."""
    import shutil

    if shutil.which("tmux") is None:
        raise BenchError("tmux is not installed: the chat figures need a real terminal (--chat-runs 0 skips them)")
    server = chat_timing.InstantServer()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in checkouts}
    bare: list[float] = []
    try:
        for _ in range(args.chat_runs):
            bare.append(chat_timing.bare_start(sys.executable, env))
            for label, checkout in checkouts.items():
                checkout_env = env
                if len(checkouts) > 1:
                    chat_home = Path(env["COOP_HOME"]).parent / f"chat-home-{label}"
                    checkout_env = dict(env, PYTHONPATH=str(checkout), COOP_HOME=str(chat_home))
                run = chat_timing.chat_run(coop, checkout_env, server, args.settle)
                run["at_once_s"] = chat_timing.typed_at_once_run(coop, checkout_env, server)
                run["early_exit_s"] = chat_timing.early_exit_run(coop, checkout_env, server)
                runs[label].append(run)
    except RuntimeError as exc:
        raise BenchError(f"coop chat: {exc}") from None
    finally:
        server.close()
    figures: dict[str, object] = {"bare_start_median_s": round(median(bare), 3),
                                  "bare_start_s": [round(t, 3) for t in bare]}
    for label, checkout_runs in runs.items():
        prefix = "" if label == "this" else "compare_"
        for key, _, _ in CHAT_ROWS:
            values = [run[f"{key}_s"] for run in checkout_runs]
            figures[f"{prefix}{key}_median_s"] = round(median(values), 3)
            figures[f"{prefix}{key}_s"] = [round(t, 3) for t in values]
    return figures


if __name__ == "__main__":
    sys.exit(main())
