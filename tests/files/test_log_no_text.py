"""coop.log never quotes message or fact text above DEBUG (issue 27): a chat whose extraction goes every way (no
JSON, an invalid fact, a question, a fact without evidence, a fact learned, a summary that fails) leaves ids,
counts and reasons in coop.log at the default level, and the marker from the user's words nowhere; with --debug
the same run does quote it (so the test would see a leak)."""

from __future__ import annotations

import json

import pytest

from tests.scripted_model import said_in

MARKER = "wqpx4471"


def facts(*entries: tuple[str, str, str]) -> str:
    return json.dumps({"facts": [{"category": c, "key": None, "value": v, "importance": 0.8, "evidence": e,
                                  "stance": "asserted"} for c, v, e in entries]})


def run_turns(run_cli, openai_server, *extra: str):
    said = [f"My locker code is {MARKER} and my badge is {MARKER}7", f"I moved to {MARKER}ville with my cat"]
    first = facts(("general", f"Locker code is {MARKER}", f"My locker code is {MARKER}"),  # learned
                  ("general", f"Is {MARKER} a code?", said[0]),                              # a question: refused
                  ("general", f"Owns a boat called {MARKER}", f"my boat {MARKER}"),          # no evidence: refused
                  ("general", f"{MARKER}\u0000", said[0]))                                   # invalid: dropped

    def background(body):
        last = body["messages"][-1]["content"]
        if said_in(last) == said[0]:
            return first
        if said_in(last) == said[1]:
            return f"Sure! The user said {MARKER}, nothing in JSON."  # every JSON mode: no usable JSON
        if "EXISTING" in last:
            return '{"action": "ADD", "target": null, "confidence": 0.9, "reason": "new"}'
        return f"A summary that is not JSON, about {MARKER}."

    openai_server.replies = [f"Noted, {MARKER}.", f"Enjoy {MARKER}ville."]
    openai_server.background_default = background
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base}
    result = run_cli(*extra, "chat", "--user", "ana", input="\n".join(said) + "\n", env=env)
    assert result.exit_code == 0, result.stderr
    listed = run_cli("memory", "list", "--kind", "fact", "--user", "ana", "--json").json()
    assert [f["text"] for f in listed] == [f"Locker code is {MARKER}"]
    return result


def test_no_info_line_quotes_the_users_words(run_cli, openai_server, coop_home):
    run_turns(run_cli, openai_server)
    logged = (coop_home / "coop.log").read_text()
    for sign in ("no usable sheet JSON", "memory refused [value]", "memory refused [evidence]", "a fact dropped",
                 "consolidating span"):  # the run went every way
        assert sign in logged, sign
    assert MARKER not in logged, [line for line in logged.splitlines() if MARKER in line]


@pytest.mark.parametrize("flag", ["--debug"])
def test_at_debug_the_same_run_quotes_it(run_cli, openai_server, coop_home, flag):
    run_turns(run_cli, openai_server, flag)
    assert MARKER in (coop_home / "coop.log").read_text()
