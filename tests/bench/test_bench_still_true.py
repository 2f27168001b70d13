"""bench/still_true.py: coop's still-true question asked of a model for each pair of a file, and counted. The model
is the scripted server on 127.0.0.1 (tests/conftest.py), which says "changed" only for one known fact; the bench
runs as a script, as it is run by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests import REPO

BENCH = REPO / "bench" / "still_true.py"
PAIRS = {"pairs": [
    {"said": "I live in Berlin now.", "new": "Lives in Berlin", "known": "Lives in Lyon", "changed": True},
    {"said": "I take metformin twice a day now.", "new": "Takes metformin twice a day",
     "known": "Takes metformin every morning", "changed": True},
    {"said": "I also play the cello.", "new": "Plays the cello", "known": "Lives in Lyon", "changed": False},
    {"said": "We have a dog, Rex.", "new": "Has a dog called Rex", "known": "Has a cat called Mochi",
     "changed": False}]}


def test_each_pair_is_asked_once_with_the_users_words_and_counted(tmp_path, openai_server):
    def reply(body):
        asked = body["messages"][-1]["content"]
        answer = "same_thing_changed" if "Lyon" in asked or "Mochi" in asked else "different_things"
        return json.dumps({"known_is_about": "", "new_is_about": "", "answer": answer})

    openai_server.background_default = reply
    pairs, out = tmp_path / "pairs.json", tmp_path / "verdicts.json"
    pairs.write_text(json.dumps(PAIRS), encoding="utf-8")
    run = subprocess.run([sys.executable, str(BENCH), "--model", "openai/test-model", "--api-base",
                          openai_server.api_base, "--pairs", str(pairs), "--json", str(out)],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "COOP_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    # Lyon changed (found), metformin not said to change (missed), cello vs Lyon and Rex vs Mochi: false changes
    assert (result["changes_found"], result["changes"], result["false_changes"], result["both_true"]) == (1, 2, 2, 2)
    assert "changes found 1 of 2, false changes 2 of 2" in run.stdout
    asked = [r["body"]["messages"][-1]["content"] for r in openai_server.requests
             if r["path"].endswith("/chat/completions")]
    assert asked[-4:] == [f'KNOWN FACT: {p["known"]}\nTHE USER JUST SAID: "{p["said"]}"' for p in PAIRS["pairs"]]
