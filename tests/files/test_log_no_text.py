"""coop.log never quotes message or fact text above DEBUG (issue 27): a chat whose extraction goes every way (no
JSON, a note that is not one, an invalid value, a question, a note without evidence, a fact learned, a summary
that fails) leaves ids,
counts and reasons in coop.log at the default level, and the marker from the user's words nowhere; with --debug
the same run does quote it (so the test would see a leak)."""

from __future__ import annotations

import pytest

from tests.notes import note, notes
from tests.scripted_model import said_in

MARKER = "wqpx4471"


def run_turns(run_cli, openai_server, *extra: str):
    said = [f"My locker code is {MARKER} and my badge is {MARKER}7", f"I moved to {MARKER}ville with my cat"]
    first = notes(note(f"Locker code is {MARKER}", f"My locker code is {MARKER}"),  # learned
                  note(f"Is {MARKER} a code?", said[0]),                              # a question: refused
                  note(f"Owns a boat called {MARKER}", f"my boat {MARKER}"),          # cites no clause: refused
                  note(f"{MARKER}\u0000", said[0]),                                   # an invalid value: refused
                  note(" ", said[0]))                                                 # not a note: dropped

    def background(body):
        last = body["messages"][-1]["content"]
        if said_in(last) == said[0]:
            return first(body)
        if said_in(last) == said[1]:
            return f"Sure! The user said {MARKER}, nothing in JSON."  # every JSON mode: no usable JSON
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
    for sign in ("no usable notes JSON", "memory refused [value]", "memory refused [evidence]",
                 "an entry that is not a note was dropped",
                 "consolidating span"):  # the run went every way
        assert sign in logged, sign
    assert MARKER not in logged, [line for line in logged.splitlines() if MARKER in line]


@pytest.mark.parametrize("flag", ["--debug"])
def test_at_debug_the_same_run_quotes_it(run_cli, openai_server, coop_home, flag):
    run_turns(run_cli, openai_server, flag)
    assert MARKER in (coop_home / "coop.log").read_text()
