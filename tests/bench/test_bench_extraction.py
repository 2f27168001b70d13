"""bench/extraction.py: the write-path benchmark counts what coop's extraction jobs did, against a scripted model.

The bench runs as a script (a process of its own, with the scripted model it serves on 127.0.0.1) over a tiny gold
conversation written here, built so that every counter has a known value: two facts, a question that must yield
nothing, a habit worded with "always" that a careless extractor takes for an instruction, and a move that must
supersede the first city. The scripted model fills the extractor's sheet carelessly (every sentence a statement),
adds, on its fixed schedule, a fact made of the assistant's words (exchange 3) and, as reconciler, a target it was
never shown (its first decision that is not the gold change). The matcher and the profile's first-person sentences are checked in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests import REPO
from tests.bench._bench import load_bench

BENCH = REPO / "bench" / "extraction.py"

GOLD = {"conversations": [{"id": "t01", "turns": [
    {"user": "I live in Lyon with my cat and work as a nurse.", "assistant": "Lyon is lovely.",
     "facts": [{"id": "t01-f1", "category": "location", "key": "home_city", "value": "Lives in Lyon",
                "evidence": "I live in Lyon"},
               {"id": "t01-f2", "category": "work", "key": "job_title", "value": "Works as a nurse",
                "evidence": "work as a nurse"}]},
    {"user": "Should I move to Berlin?", "assistant": "Berlin is exciting but rents are rising.",
     "facts": [], "none": "question",
     "traps": [{"id": "t01-t1", "category": "location", "key": "home_city", "value": "Lives in Berlin",
                "evidence": "move to Berlin", "kind": "question"}]},
    {"user": "I always take the tram to work.", "assistant": "The tram is quicker than the bus at rush hour.",
     "facts": [{"id": "t01-f3", "category": "location", "key": "commute", "value": "Takes the tram to work",
                "evidence": "I always take the tram to work"}],
     "traps": [{"id": "t01-t2", "category": "instruction", "key": None, "value": "Always take the tram to work",
                "evidence": "I always take the tram to work", "kind": "habit_not_instruction"}]},
    {"user": "I live in Berlin now, we moved last week.", "assistant": "Welcome to Berlin!",
     "facts": [{"id": "t01-f4", "category": "location", "key": "home_city", "value": "Lives in Berlin",
                "evidence": "I live in Berlin now", "changes": "t01-f1"}]},
]}]}


def _bench():
    return load_bench("extraction")


@pytest.mark.slow
def test_the_bench_counts_what_the_write_path_did_with_a_scripted_model(tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(GOLD), encoding="utf-8")
    out = tmp_path / "figures.json"
    run = subprocess.run([sys.executable, str(BENCH), "--gold", str(gold), "--embedder", "hash", "--json", str(out)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "COOP_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    figures = result["sources"]["gold"]
    assert result["script"] == {"gold": 4, "trap": 2, "assistant_words": 1, "decision_unknown_target": 1,
                                "decision_change": 1, "restate_change": 1}
    assert figures["exchanges"] == 4 and figures["failed"] == 0
    assert figures["extraction_calls"] == 4 and figures["decision_calls"] == 2
    assert figures["json_unusable"] == {"facts": 0, "decision": 0}
    assert figures["proposals"] == 7                       # what the scripted model sent, counted from its replies
    assert figures["stored"] == {"added": 3, "superseded": 1, "updated": 0}
    assert figures["known"] == 0
    # the assistant's words (no clause of the user's says them); the question; the habit taken for an instruction;
    # the reconciler's made-up target (the fact is still added beside, so every proposal is accounted for)
    assert figures["refused"] == {"evidence": 0, "mood": 1, "instruction": 1, "widening": 0, "unsafe": 0,
                                  "change": 0, "target": 1, "forgotten": 0, "value": 1, "known": 0}
    assert figures["refused_by"] == {"evidence": 0, "mood": 1, "instruction_rules": 1, "reconciliation_rules": 1,
                                     "forgotten": 0, "value": 1, "known": 0}
    assert figures["json_usable"] == 1.0
    assert figures["not_stored_no_reason"] == 0
    assert figures["facts_per_exchange"] == 1.0
    assert figures["gold"] == {
        "stored_values": 4, "precision": 1.0, "verdicts": {"correct": 4, "stale": 0, "trap": 0, "unmatched": 0},
        "recall": 1.0, "gold_facts": 4, "changes": {"total": 1, "correct": 1, "both_active": 0, "missed": 0},
        "changes_not_in_gold": 0, "instructions_not_given": 0, "nothing_turns": 1, "nothing_turns_with_a_write": 0,
        "key_stability": {"subjects": 1, "one_slot": 1, "share": 1.0},  # Lyon, then its change, in one slot
        "true_facts_refused": {}, "traps_refused": {"mood": 1, "instruction": 1}}
    by_turn = {e["turn"]: e for e in result["exchanges"]}
    assert [w["action"] for w in by_turn[4]["writes"]] == ["SUPERSEDE"]
    assert by_turn[4]["writes"][0]["replaced"] == "Lives in Lyon" and by_turn[4]["changes"] == {"t01-f4": "correct"}
    # the reconciler's reason, from the history, and the known fact restated (as the gold's change says it)
    assert by_turn[4]["writes"][0]["reason"] == "the gold change; f1 written as it reads now"
    assert figures["restate_calls"] == 1 and figures["restated"] == 1
    assert all(c["seconds"] > 0 and c["reply"] for e in result["exchanges"] for c in e["calls"])  # each reply kept
    assert figures["still_true_calls"] == 0 and figures["changes_asked"] == {}  # no pair shares a slot or a word
    assert "Extraction benchmark" in run.stdout and "precision               1.000 of 4" in run.stdout


def test_the_matcher_and_the_profile_sentences():
    bench = _bench()
    assert bench._verdict('{"known_is_about": "", "new_is_about": "", "answer": "same_thing_changed"}') == \
        "same_thing_changed"
    assert bench._verdict("no JSON here") == "unusable"  # a still-true reply counted as what it is
    assert bench.share("Based in Lyon", "Lives in Lyon") >= bench.MATCH_SHARE
    assert bench.share("Lives in Berlin", "Lives in Lyon") == 0.0              # a name of the gold is missing
    assert bench.share("Likes salmon", "Doesn't like salmon") == 0.0          # one negated, the other not
    assert bench.share("Is not a fan of salmon", "Doesn't like salmon") >= bench.MATCH_SHARE
    assert bench.share("Runs about 20 km a week", "Runs about 35 km a week") == 0.0
    assert bench.share("Starts at the Charité on 2027-03-01", "Starts a job at the Charité on 1 March 2027") > 0.5
    assert bench.share("Said welcome to Berlin, how are you", "Lives in Berlin") < bench.MATCH_SHARE
    fact = bench.GoldFact("f", "location", "home_city", "Lives in Berlin")
    trap = bench.GoldFact("t", "location", "home_city", "Lives in Berlin", kind="question")
    assert bench.best_match("Lives in Berlin", [trap, fact]) is fact             # a fact wins a tie with a trap
    habit = bench.GoldFact("h", "location", "commute", "Takes the tram to work")
    taken = bench.GoldFact("i", "instruction", None, "Always take the tram to work", kind="habit_not_instruction")
    stored = "Always takes the tram to work"
    assert bench.best_match(stored, bench.judged_against([habit, taken], {"i"}, "location")) is habit
    assert bench.best_match(stored, bench.judged_against([habit, taken], {"i"}, "instruction")) is taken
    assert bench.first_person("Lives in Porto", change=True) == "I live in Porto now."
    assert bench.first_person("Her partner is Tiago") == "My partner is Tiago."
    assert bench.first_person("Doesn't drink coffee and prefers rooibos tea") == \
        "I don't drink coffee and prefer rooibos tea."
    assert bench.first_person("Keep answers short unless she asks for detail") == \
        "From now on, please keep answers short unless I ask for detail."


def test_the_gold_file_is_consistent():
    """Every quote is a passage of its turn, every change names an earlier fact (checked by the loader), and the
    file has what it is for: changes, turns that must yield nothing, and traps."""
    bench = _bench()
    dialogues = bench.load_gold(bench.DEFAULT_GOLD)
    turns = [t for d in dialogues for s in d.sessions for t in s]
    assert len(dialogues) >= 12
    assert sum(1 for t in turns for f in t.facts if f.changes) >= 10
    assert sum(1 for t in turns if not t.facts) >= 30
    assert {tr.kind for t in turns for tr in t.traps} >= {"question", "hypothetical", "plan_weighed", "reported",
                                                          "other_person", "negation", "joke",
                                                          "habit_not_instruction", "unsafe", "widening"}
