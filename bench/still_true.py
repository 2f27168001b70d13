"""Does the fast model tell a known fact that is no longer true from one that still is? (issue 31)

The reconciler's list decision is useless with a 1.5B model (it says UPDATE to nearly everything), so coop asks
about one pair at a time when a change lands on a fact about another thing (`coop/memory/growth/still_true.py`).
This asks coop's own question (`model_judge`, the prompt and schema as shipped) about each pair of
`bench/data/still-true-pairs.json` and counts: changes found (of the pairs whose known fact changed) and false
changes (of the pairs whose two facts are both true). coop's rules after the verdict (one slot or two shared words,
the user's words carry the change) are not applied here: this is the model's part alone.

    .venv/bin/python bench/still_true.py --model openai/qwen-1.5b --api-base http://127.0.0.1:8951/v1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, fast_model, machine, median

PAIRS = ROOT / "bench" / "data" / "still-true-pairs.json"


def judge_all(pairs: list[dict[str, Any]], complete: Any) -> dict[str, Any]:
    """Each pair's verdict and seconds, and the counts."""
    from coop.memory.growth.reconcile import Candidate
    from coop.memory.growth.still_true import CHANGED, model_judge
    from coop.memory.storage.items import Item

    judge = model_judge(complete)
    rows = []
    for pair in pairs:
        candidate = Candidate(pair["new"], evidence=pair["said"], sentence=pair["said"])
        known = Item(kind="fact", item_id=1, text=pair["known"], created_at=0.0)
        started = time.perf_counter()
        try:
            verdict = judge(candidate, known)
        except Exception as exc:  # an unusable reply: the pipeline keeps both, so no change
            verdict = f"error: {type(exc).__name__}"
        rows.append({**pair, "verdict": verdict, "seconds": round(time.perf_counter() - started, 3)})
    changed = [r for r in rows if r["changed"]]
    kept = [r for r in rows if not r["changed"]]
    return {"pairs": len(rows),
            "changes_found": sum(r["verdict"] == CHANGED for r in changed), "changes": len(changed),
            "false_changes": sum(r["verdict"] == CHANGED for r in kept), "both_true": len(kept),
            "errors": sum(r["verdict"].startswith("error") for r in rows),
            "seconds_median": round(median([r["seconds"] for r in rows]), 3), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the fast model, as coop names it (openai/NAME)")
    parser.add_argument("--api-base", required=True, help="its OpenAI-compatible endpoint")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="write every pair's verdict here")
    args = parser.parse_args(argv)
    pairs = json.loads(args.pairs.read_text(encoding="utf-8"))["pairs"]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["COOP_HOME"] = tmp  # the JSON mode coop remembers stays in here
        _, complete = fast_model(args.model, args.api_base, args.timeout)
        result = judge_all(pairs, complete)
    result["meta"] = {"model": args.model, "machine": machine(), "pairs_file": str(args.pairs)}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for row in result["rows"]:
        print(f"  {'change' if row['changed'] else 'both  '}  {row['verdict']:<22} {row['known']}  <-  {row['said']}")
    print(f"\nStill true? model {args.model}: changes found {result['changes_found']} of {result['changes']}, "
          f"false changes {result['false_changes']} of {result['both_true']}, unusable replies {result['errors']}; "
          f"{result['seconds_median']:.2f} s a question (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
