"""PrefEval through coop's own pipeline: a preference, N unrelated turns, then a request that must respect it,
asked as the first message of a new session (no LLM, offline).

    .venv/bin/python bench/prefeval.py --data ../shared/data/prefeval/prefeval-dev.json.gz [--n 10,300]
        [--limit N] [--throughput N] [--cache FILE] [--model-path DIR] [--set KEY=VALUE] [--json]

The protocol of the data's README (`../shared/data/prefeval/README.md`; Zhao et al., ICLR 2025, CC BY-NC 4.0):
one item and one N are one user's memory holding `preference_messages + distractor_messages[:2N]`, message by
message. The data has no dates and is one conversation: it is stored as one session, from a fixed date
(`START`), and the question comes a day after its last message (`ASKED_AFTER`), as a new session's first message.
Levels: `preference turn` (the messages marked `pref_turn`) and `preference block` (any message of the
preference), reported per form; each N is a run of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import field
from common import BenchError

START = datetime(2024, 1, 1, 9, 0).timestamp()
ASKED_AFTER = 86400.0


def read_item(item: dict[str, Any], distractors: list[dict[str, Any]], n: int) -> field.Case:
    """conversation(N) of one item as one session; the question a day after it."""
    said = [field.Message(f"pref:{m['id']}", m["role"], m["content"]) for m in item["preference_messages"]]
    said += [field.Message(f"filler:{m['id']}", m["role"], m["content"]) for m in distractors[: 2 * n]]
    last = START + field.MESSAGE_GAP_SECONDS * (len(said) - 1)
    turn = frozenset(f"pref:{m['id']}" for m in item["preference_messages"] if m.get("pref_turn"))
    block = frozenset(f"pref:{m['id']}" for m in item["preference_messages"])
    return field.Case(
        f"{item['id']}@{n}",
        item["form"],
        str(item["question"]),
        last + ASKED_AFTER,
        [field.Session("conversation", START, said)],
        turns={"preference turn": turn, "preference block": block},
    )


def load(path: Path, n: int) -> list[field.Case]:
    raw = field.read_json(path)
    try:
        return [read_item(item, raw["distractor_messages"], n) for item in raw["items"]]
    except (KeyError, TypeError) as exc:
        raise BenchError(f"{path} is not in the built PrefEval shape ({type(exc).__name__}: {exc})") from None


def n_values(path: Path, given: str | None) -> list[int]:
    if given:
        try:
            return [int(v) for v in given.split(",") if v.strip()]
        except ValueError:
            raise BenchError(f"--n {given!r}: give numbers, e.g. 10,300") from None
    return [int(v) for v in field.read_json(path).get("n_values", [10, 300])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    field.add_arguments(parser)
    parser.add_argument(
        "--n", default=None, help="the numbers of unrelated turns, comma-separated (default: the file's n_values)"
    )
    args = parser.parse_args(argv)
    results = []
    for n in n_values(args.data, args.n):
        result = field.main(args, field.stratified(load(args.data, n), args.limit), f"PrefEval, N = {n}")
        result["n"] = n
        results.append(result)
        if not args.json:
            field.print_report(f"PrefEval, N = {n}: {args.data}", result)
            print()
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
