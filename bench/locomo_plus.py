"""LoCoMo-Plus through coop's own pipeline: a cue in a LoCoMo conversation, and a later trigger that needs it
without sharing its words, asked as the first message of a new session at its own date (no LLM, offline).

    .venv/bin/python bench/locomo_plus.py --data ../shared/data/locomo-plus/locomo-plus-dev.json.gz
        [--limit N] [--throughput N] [--cache FILE] [--model-path DIR] [--set KEY=VALUE] [--json]

The protocol of the data's README (`../shared/data/locomo-plus/README.md`; Li et al., 2026, evaluation use with
attribution): one item is one user's memory holding every turn of its conversation, stored as `bench/locomo.py`
stores LoCoMo (`"<speaker>: <text>"` plus the image caption, speaker A as the user, speaker B as the assistant,
each session dated by its own date); the query is `trigger.query`, dated `trigger.date_time`. Level `cue`: the cue
turns (`cue.dia_ids`), reported per relation type.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import field
import locomo
from common import BenchError


def sessions_of(conv: dict[str, Any]) -> list[field.Session]:
    """The conversation's sessions in their numbered order, each at its date (a missing date: a day later)."""
    numbered = sorted(
        (int(m.group(1)), key) for key in conv if (m := locomo._SESSION.fullmatch(key)) and isinstance(conv[key], list)
    )
    out: list[field.Session] = []
    previous = 0.0
    for _, key in numbered:
        started = locomo.parse_date(conv.get(f"{key}_date_time")) or previous + 86400
        previous = started
        out.append(
            field.Session(
                key,
                started,
                [
                    field.Message(
                        t["dia_id"],
                        "assistant"
                        if t.get("speaker") == conv["speaker_b"] and conv["speaker_b"] != conv["speaker_a"]
                        else "user",
                        locomo.turn_text(t),
                    )
                    for t in conv[key]
                ],
            )
        )
    return out


def read_item(item: dict[str, Any]) -> field.Case:
    history = sessions_of(item["conversation"])
    asked = locomo.parse_date(item["trigger"]["date_time"]) or max(s.started for s in history) + 86400
    return field.Case(
        str(item["sample_id"]),
        str(item["relation_type"]),
        str(item["trigger"]["query"]),
        asked,
        history,
        turns={"cue": frozenset(item["cue"]["dia_ids"])},
    )


def load(path: Path) -> list[field.Case]:
    raw = field.read_json(path)
    try:
        return [read_item(item) for item in raw]
    except (KeyError, TypeError, AttributeError) as exc:
        raise BenchError(f"{path} is not in LoCoMo-Plus's shape ({type(exc).__name__}: {exc})") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    field.add_arguments(parser)
    args = parser.parse_args(argv)
    result = field.main(args, field.stratified(load(args.data), args.limit), "LoCoMo-Plus")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        field.print_report(f"LoCoMo-Plus: {args.data}", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
