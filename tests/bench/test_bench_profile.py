"""bench/profile.py: the profile benchmark reads what a prompt shows and counts it right.

A tiny data file written here (two people, facts with earlier values, indirect, direct and current-value
questions, questions that need no memory) is run through the benchmark as a script with the hash embedder; the
figures it reports must agree with the prompts it saw, whatever coop's recall chooses. Recall per kind is checked
exactly on prompts the test scripts itself; the detector of stale values on a prompt text written by hand; the
extra-fact generator for its count, variety, seed and the names and keys it must avoid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import REPO
from tests.bench._bench import load_bench

BENCH = REPO / "bench" / "profile.py"

DATA = {
    "description": "two people for the test",
    "personas": [
        {"id": "ana", "name": "Ana", "about": "moved from Lyon to Berlin",
         "facts": [
             {"id": "ana-01", "category": "location", "key": "home_city", "value": "Lives in Berlin",
              "importance": 0.7, "since": "2025-01-01",
              "history": [{"value": "Lives in Lyon", "since": "2019-01-01"}]},
             {"id": "ana-02", "category": "pets", "key": "cat", "value": "Has a grey cat named Mochi",
              "importance": 0.7},
             {"id": "ana-03", "category": "work", "key": "employer", "value": "Works at Nordlicht, a bakery",
              "importance": 0.7, "since": "2024-05-01",
              "history": [{"value": "Works at a bank", "since": "2015-01-01"},
                          {"value": "Works at a school", "since": "2020-01-01"}]},
             {"id": "ana-04", "category": "instruction", "key": None, "value": "Answer in British English",
              "importance": 0.7},
         ],
         "questions": [
             {"text": "What's the weather like in my city today?", "needs": ["ana-01"], "kind": "indirect"},
             {"text": "Which houseplants are dangerous for my pet?", "needs": ["ana-02"], "kind": "indirect"},
             {"text": "Is Mochi old enough for a dental check?", "needs": ["ana-02"], "kind": "direct"},
             {"text": "Who do I work for now?", "needs": ["ana-03"], "kind": "direct"},
             {"text": "Plan a walk near home with my pet", "needs": ["ana-01", "ana-02"], "kind": "indirect"},
         ]},
        {"id": "ben", "name": "Ben", "about": "a nurse in Leeds",
         "facts": [
             {"id": "ben-01", "category": "work", "key": "job_title", "value": "Works as a nurse",
              "importance": 0.7},
             {"id": "ben-02", "category": "possessions", "key": "car", "value": "Drives a Ford Focus",
              "importance": 0.5, "since": "2023-02-01",
              "history": [{"value": "Drives a Fiat Panda", "since": "2016-01-01"}]},
         ],
         "questions": [
             {"text": "How should I prepare for a long shift?", "needs": ["ben-01"], "kind": "indirect"},
             {"text": "When is my car due a service?", "needs": ["ben-02"], "kind": "direct"},
         ]},
    ],
    "no_memory_questions": ["Hello!", "What is the capital of Mongolia?", "How do I reverse a list in Python?"],
}


def _bench():
    return load_bench("profile")


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(DATA), encoding="utf-8")
    return path


def test_the_script_reports_what_its_prompts_showed(tmp_path):
    """End to end, through coop's write path and turn: the counts follow from the data, every earlier value was
    superseded by the pipeline, and the figures agree with the per-question rows they are made of."""
    out = tmp_path / "figures.json"
    run = subprocess.run([sys.executable, str(BENCH), "--data", str(_data(tmp_path)), "--embedder", "hash",
                          "--extra-facts", "20", "--json", str(out)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "COOP_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert "Profile benchmark" in run.stdout and "stale values shown as current" in run.stdout
    f = json.loads(out.read_text(encoding="utf-8"))
    people = {p["person"]: p for p in f["people"]}
    assert people["ana"]["writes"]["SUPERSEDE"] == 3 and people["ben"]["writes"]["SUPERSEDE"] == 1
    assert all(p["chains_not_superseded"] == [] and p["extra_facts"] == 20 for p in people.values())
    assert {k: f["kinds"][k]["questions"] for k in f["kinds"]} == {"indirect": 4, "direct": 3, "current": 4,
                                                                   "all": 7}
    assert f["kinds"]["indirect"]["needed"] == 5 and f["kinds"]["current"]["needed"] == 4
    assert f["prompts"] == 7 + 2 * 3 and f["no_memory"]["prompts"] == 6
    assert f["prepare_calls"] == f["prompts"] - 2  # each person's first call is the warm-up
    rows = f["rows"]
    for kind in ("indirect", "direct"):
        needs = [n for r in rows if r["kind"] == kind for n in r["needs"]]
        assert f["kinds"][kind]["found"] == sum(n["found"] for n in needs)
        assert sum(f["kinds"][kind]["by_reason"].values()) == f["kinds"][kind]["found"]
    assert f["stale_shown"] == sum(len(r["stale"]) for r in rows)
    off = [r for r in rows if r["kind"] == "no_memory"]
    assert f["no_memory"]["facts_mean"] == round(sum(r["facts_shown"] for r in off) / len(off), 2)
    assert all(r["instruction_lines"] == (1 if r["person"] == "ana" else 0) for r in rows)


def test_recall_per_kind_is_counted_from_the_prompt_text(tmp_path):
    """Prompts scripted by the test: what each shows decides found, missing and stale, exactly."""
    from coop.config.loading import Config
    from coop.memory.storage.database import open_database
    from coop.memory.storage.store import MemoryStore

    bench = _bench()
    from common import load_embedder

    personas, no_memory = bench.load(_data(tmp_path))
    ana = personas[0]
    embedder = load_embedder("hash")
    db = open_database(str(tmp_path / "ana.db"))
    memory = MemoryStore(db).user(bench.USER)
    built = bench.write_facts(memory, ana, [], embedder, Config())
    berlin, mochi, employer = (built.current[i] for i in ("ana-01", "ana-02", "ana-03"))
    lyon = next(i for i, (_, text) in built.former.items() if text == "Lives in Lyon")
    school = next(i for i, (_, text) in built.former.items() if text == "Works at a school")
    assert db.scalar("SELECT superseded_by FROM facts WHERE id = $1", (lyon,)) == berlin
    shows = {  # question -> the fact lines its prompt shows
        "What's the weather like in my city today?": [f"- f{berlin} (since 2026-01-01): Lives in Berlin",
                                                      f"- f{lyon} (former, until 2025): Lives in Lyon"],
        "Which houseplants are dangerous for my pet?": [],
        "Is Mochi old enough for a dental check?": [f"- f{mochi}: Has a grey cat named Mochi"],
        "Who do I work for now?": [f"- f{school}: Works at a school"],           # an earlier value as current
        "Plan a walk near home with my pet": [f"- f{mochi}: Has a grey cat named Mochi (now f{berlin})"],
        "Hello!": ["- Lives in Lyon"],                                          # by its text, as current
    }

    def scripted(memory, config, embedder, text):
        system = "You are coop.\n\nKnown about the user:\n" + "\n".join(shows.get(text, []))
        recalled = [SimpleNamespace(item=SimpleNamespace(kind="fact", item_id=mochi), reason="relevance")]
        return SimpleNamespace(messages=[{"role": "system", "content": system}], recalled=recalled,
                               tokens={"memory": 10}), 1.0

    original = bench.ask
    bench.ask = scripted
    try:
        result = bench.evaluate_person(memory, ana, built, no_memory, embedder, Config())
    finally:
        bench.ask = original
        db.close()
    figures = bench.report(result["rows"], result["prepare_ms"])
    kinds = figures["kinds"]
    # indirect: Berlin found; Mochi missed; Mochi found but Berlin only referenced ("now f..."): 2 of 4
    assert (kinds["indirect"]["found"], kinds["indirect"]["needed"]) == (2, 4)
    assert kinds["indirect"]["fact_recall"] == 0.5 and kinds["indirect"]["all_needed"] == pytest.approx(1 / 3, 0.01)
    assert kinds["indirect"]["by_reason"] == {"unlisted": 1, "relevance": 1}
    assert (kinds["direct"]["found"], kinds["direct"]["needed"]) == (1, 2)
    assert (kinds["current"]["found"], kinds["current"]["needed"], kinds["current"]["questions"]) == (1, 3, 3)
    assert figures["stale_shown"] == 2 and figures["stale_values"] == {"Works at a school": 1, "Lives in Lyon": 1}
    assert figures["former_shown"] == 1
    missed = {m["question"]: m["missing"] for m in figures["missed"]}
    assert missed["Plan a walk near home with my pet"] == ["Lives in Berlin"]
    assert figures["no_memory"]["facts_mean"] == 0.0 and figures["prepare_calls"] == len(result["rows"]) - 1


def test_the_stale_detector_reads_lines():
    bench = _bench()
    former = {2: "Lives in Lisbon", 3: "Works at a bank"}
    current = ["Lives in Porto", "Works at a bank in Porto"]  # an earlier value's text inside a current one
    system = "\n".join([
        "Known about the user (id, since when):",
        "- f4 (since 2026-11-25): Lives in Porto",
        "- f7 (since 2026-11-25): Works at a bank in Porto",
        "Earlier values:",
        "- f2 (since 2018-10-01, former, until 2024-03-15; now f4): Lives in Lisbon",
    ])
    shown, stale, as_former = bench.read_prompt(system, {2, 3, 4, 7}, former, current)
    assert set(shown) == {2, 4, 7} and stale == [] and as_former == [2]
    shown, stale, _ = bench.read_prompt(system + "\n- f3 (since 2020-01-01): Works at a bank", {2, 3, 4, 7},
                                        former, current)
    assert stale == [3]
    _, stale, _ = bench.read_prompt("- the user said “I still live in Lisbon”\n- Lives in Lisbon, formerly", {4},
                                    former, current)
    assert stale == []  # not its exact text; and a "formerly" line is history
    _, stale, _ = bench.read_prompt("Relevant past:\n- [2024-01-01] user: Lives in Lisbon", set(), former, current)
    assert stale == [2]
    shown, _, _ = bench.read_prompt("- f12 (since 2026-11-25, newer than f4): Lives in Porto", {4, 12}, former,
                                    current)
    assert set(shown) == {12}  # f4 is only named


def test_extra_facts_are_many_varied_seeded_and_avoid_the_persons_names_and_keys():
    _bench()  # puts bench/ on the path
    from profile_facts import FRIENDS, IMPORTANCE, TEMPLATE_SHARE, extra_facts, names_in

    avoid = {"oskar", "priya", "sunday"}
    taken = {("media", "podcast_urban_legends"), ("tech", "browser")}
    for n in (30, 300, 1000):
        facts = extra_facts(n, "ana", avoid=avoid, avoid_keys=taken)
        assert len(facts) == n
        assert len({f.value.casefold() for f in facts}) == n
        keys = [(f.category, f.key) for f in facts if f.key]
        assert len(keys) == len(set(keys)) and not set(keys) & taken
        assert all(not names_in([f.value]) & avoid for f in facts)
        assert all(f.importance in IMPORTANCE and 0.3 <= f.importance <= 0.5 for f in facts)
    facts = extra_facts(1000, "ana")
    templates = {f.template for f in facts}
    assert len(templates) >= 40 and len({f.category for f in facts}) >= 12
    assert max(sum(f.template == t for f in facts) for t in templates) <= 1000 * TEMPLATE_SHARE
    assert 50 <= sum(f.key is not None for f in facts) <= 500
    assert len({f.value.split()[0] for f in facts}) >= 25   # sentences start in many ways
    assert sum(any(name in f.value for name in FRIENDS) for f in facts) <= 600  # not a list of friends
    assert extra_facts(300, "ana") == extra_facts(300, "ana")
    assert extra_facts(300, "ana") != extra_facts(300, "ben")


def test_a_persons_names_are_kept_out_of_the_extra_facts(tmp_path):
    bench = _bench()
    personas, _ = bench.load(_data(tmp_path))
    ana = personas[0]
    names = bench.person_names(ana)
    assert {"berlin", "lyon", "mochi", "nordlicht", "british", "english"} <= names
    extras = bench.extras_for(ana, 300)
    assert len(extras) == 300 and not any(bench.names_in([e.value]) & names for e in extras)
    assert not {(e.category, e.key) for e in extras} & {(f.category, f.key) for f in ana.facts if f.key}
