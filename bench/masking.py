"""Masking time: how long `coop.privacy.secrets.mask` takes on a 2 MB message, the size a paste or an import can
bring. Two texts: lines full of words that start a key pattern's scan (ask-, sk-learn, bearer, gh, xox) with one
real key in the middle, and lines full of numbers (dates, phones, amounts, a card-shaped reference that fails its
check) with one real card at the end. Each text is masked `--runs` times in this process; the median is reported.

    .venv/bin/python bench/masking.py [--runs 7] [--json]

Targets (the bounds the tests held before timing left them): median under 0.5 s for the words, under 2.0 s for the
numbers (each card-shaped run is checked). A message is masked before it is stored or sent, on the turn's path.
The tests check what is masked, never how fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, median

TARGETS_S = {"key-pattern words, one key": 0.5, "numbers, one card": 2.0}
SIZE = 2_000_000
KEY = "sk-proj-" + "Zq8LmN3bV7cX1pR4tY6uW9aS2dF5gH0jK"
CARD = "4539 1488 0343 6467"


def texts() -> dict[str, str]:
    words = "An ordinary line: ask-me, a sketch, task-force, the bearer of news, risk-2024, ghost, xoxo, AIDS.\n"
    numbers = "order 12345 on 2024-11-23, phone +49 170 1234567, total 1,234.56 EUR, ref 4539 1488 0343 6468\n"
    with_key = words * (SIZE // len(words))
    cut = with_key.index("\n", SIZE // 2) + 1
    return {"key-pattern words, one key": with_key[:cut] + f"{KEY}\n" + with_key[cut:],
            "numbers, one card": numbers * (SIZE // len(numbers)) + f"card {CARD}\n"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from coop.privacy.secrets import mask

    results = {}
    for name, text in texts().items():
        timings = []
        for _ in range(args.runs):
            start = time.perf_counter()
            masked = mask(text)
            timings.append(time.perf_counter() - start)
        assert KEY not in masked and CARD not in masked, name
        results[name] = {"median_s": round(median(timings), 3), "max_s": round(max(timings), 3),
                         "target_s": TARGETS_S[name], "met": median(timings) < TARGETS_S[name]}
    if args.json:
        print(json.dumps({"machine": machine(), "runs": args.runs, "results": results}, indent=2))
        return
    print(machine())
    for name, row in results.items():
        print(f"{name:28} median {row['median_s']:.3f} s  max {row['max_s']:.3f} s  "
              f"{'met' if row['met'] else 'MISSED'} (target < {row['target_s']} s)")


if __name__ == "__main__":
    main()
