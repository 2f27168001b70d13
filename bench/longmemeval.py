"""LongMemEval-S through coop's own pipeline: each question's ~50 dated sessions in a fresh memory, the question
asked as the first message of a new session at its own date (no LLM, offline).

    .venv/bin/python bench/longmemeval.py --data ../shared/data/longmemeval/longmemeval-s-dev.json.gz
        [--limit N] [--throughput N] [--cache FILE] [--model-path DIR] [--set KEY=VALUE] [--json]

The protocol of the data's README (`../shared/data/longmemeval/README.md`; Wu et al., ICLR 2025, MIT): every
haystack session is a session dated by `haystack_dates` (kept as given, even out of order), every turn a message
with its role; abstention questions have no evidence and are left out. Levels scored (see `field.py` for how):
- `session`: the `answer_` sessions holding a user evidence turn (the paper's setting; questions with one);
- `turn-user`: the user turns marked `has_answer` (the same questions), ranked among every message, since coop
  stores assistant turns too (the reference figures index user turns only);
- `turn-all`: every `has_answer` turn (all non-abstention questions): the prompt figure here is "the evidence is
  in what `coop chat` would send";
- `evidence sessions`: every `answer_` session; its `prompt_all` says a question got a turn of each session it
  needs (the dated sessions of a temporal question).
For knowledge-update questions with two or more evidence sessions, `knowledge_update` counts the prompts that show
the latest session's evidence, and of those that also show an earlier one, those that show the latest first.
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

DATE_FORM = "%Y/%m/%d (%a) %H:%M"


def parse_date(text: str) -> float:
    return datetime.strptime(text.strip(), DATE_FORM).timestamp()


def read_question(raw: dict[str, Any]) -> field.Case:
    """One question of the official schema as a case: sessions keyed by their haystack id, turns by `<id>#<n>`."""
    history: list[field.Session] = []
    user_gold: set[str] = set()
    all_gold: set[str] = set()
    gold_sessions: set[str] = set()
    evidence_sessions: set[str] = set()
    for number, (sid, date, turns) in enumerate(
        zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"], strict=True)
    ):
        key = sid if all(s.key != sid for s in history) else f"{sid}@{number}"
        messages = []
        for n, turn in enumerate(turns):
            message = field.Message(f"{key}#{n}", turn["role"], turn["content"])
            messages.append(message)
            if turn.get("has_answer"):
                all_gold.add(message.key)
                if turn["role"] == "user":
                    user_gold.add(message.key)
                    gold_sessions.add(key)
        if sid.startswith("answer_"):
            evidence_sessions.add(key)
        history.append(field.Session(key, parse_date(date), messages))
    return field.Case(
        str(raw["question_id"]),
        raw["question_type"],
        str(raw["question"]),
        parse_date(raw["question_date"]),
        history,
        turns={"turn-user": frozenset(user_gold), "turn-all": frozenset(all_gold)},
        sessions={"session": frozenset(gold_sessions), "evidence sessions": frozenset(evidence_sessions)},
    )


def load(path: Path) -> list[field.Case]:
    """The non-abstention questions of a LongMemEval-shaped file (abstention ones have no evidence to find)."""
    raw = field.read_json(path)
    try:
        return [read_question(q) for q in raw if not q.get("abstention") and not str(q["question_id"]).endswith("_abs")]
    except (KeyError, TypeError, ValueError) as exc:
        raise BenchError(f"{path} is not in LongMemEval's shape ({type(exc).__name__}: {exc})") from None


def knowledge_update(rows: list[field.Row]) -> dict[str, Any]:
    """Does the prompt show the latest value, and ahead of a former one shown beside it? (Every past line is
    dated, so the order is what remains to check.)"""
    latest_shown = ahead = both = n = 0
    for row in rows:
        case = row.case
        dates = {s.key: s.started for s in case.history}
        sessions = sorted({k.split("#", 1)[0] for k in case.turns["turn-all"]}, key=lambda key: dates[key])
        if row.case.group != "knowledge-update" or len(sessions) < 2:
            continue
        n += 1
        evidence = [k for k in row.shown if k in case.turns["turn-all"]]
        order = [row.session_of[k] for k in evidence]
        latest = sessions[-1]
        if latest in order:
            latest_shown += 1
            if any(s != latest for s in order):
                both += 1
                ahead += order.index(latest) < min(order.index(s) for s in order if s != latest)
    return {"knowledge_update": {"n": n, "latest_shown": latest_shown, "with_former_too": both, "latest_first": ahead}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    field.add_arguments(parser)
    args = parser.parse_args(argv)
    cases = field.stratified(load(args.data), args.limit)
    result = field.main(args, cases, "LongMemEval-S", extra=knowledge_update)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        field.print_report(f"LongMemEval-S: {args.data}", result)
        ku = result["knowledge_update"]
        print(
            f"  knowledge update ({ku['n']} questions with 2+ evidence sessions): latest shown {ku['latest_shown']}, "
            f"latest first {ku['latest_first']} of the {ku['with_former_too']} that also show a former one"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
