"""MCP items of issue 27: a 3 MB `memory_record` is refused with the limit named; an argument of the wrong type is
one line naming the argument and what it takes (not pydantic's report); `memory_forget` scrubs coop's files (the
prompt history, coop.log, the trace) as `coop memory forget` does and answers with the same receipt."""

from __future__ import annotations

import json
import logging

from coop.files.logs import logging_to_file
from coop.memory.storage.items import MAX_MESSAGE_CHARS
from tests.mcp.test_mcp import call, make_server, seed, text


def test_a_3_mb_record_is_refused_with_the_limit_named(memory):
    server, _ = make_server(memory, allow_writes=True)
    result = call(server, "memory_record", {"user_message": "x" * 3_000_000, "assistant_reply": "ok"})
    assert result.is_error
    said = text(result)
    assert "see coop.log" not in said and "UsageError" not in said
    assert "user_message is too long (3,000,000 characters; the limit is" in said
    assert f"at most {MAX_MESSAGE_CHARS:,} characters" in said and "\n" not in said
    assert memory.stats()["messages"] == 0  # nothing half-written


def test_an_argument_of_the_wrong_type_is_one_line_naming_it(memory):
    seed(memory)
    server, _ = make_server(memory)
    for name, arguments, expected in [
        ("memory_search", {"query": "Lisbon", "limit": "x"}, "memory_search: limit takes a whole number, e.g. 8; "
                                                             "it was given text"),
        ("memory_timeline", {"id": "m1", "before": [1]}, "memory_timeline: before takes a whole number, e.g. 8; "
                                                         "it was given a list"),
        ("memory_get", {}, "memory_get: missing argument: id"),
    ]:
        result = call(server, name, arguments)
        assert result.is_error
        said = text(result)
        assert said.endswith(expected), said
        assert "\n" not in said and "validation error" not in said and "pydantic" not in said
        assert "input_value" not in said and "'x'" not in said
    assert not call(server, "memory_search", {"query": "Lisbon", "limit": 3}).is_error  # still serving


def test_forget_over_mcp_scrubs_coops_files_and_answers_with_a_receipt(coop_home, memory):
    marker = "qvzr5521"
    session = memory.sessions.start()
    said = memory.messages.add(session, "user", f"My gate code is {marker}")
    fact = memory.facts.add(f"Gate code is {marker}", category="general").fact_id
    memory.sources.link(fact, [said])
    with logging_to_file(coop_home):
        logging.getLogger("coop.test").info("a careless line quoting %s", f"Gate code is {marker}")
    (coop_home / "history").write_text(f"\n# 2026-01-01 10:00:00.000000\n+My gate code is {marker}\n"
                                       "\n# 2026-01-01 10:01:00.000000\n+what is the weather like?\n")
    assert marker in (coop_home / "coop.log").read_text()
    server, _ = make_server(memory, allow_writes=True)
    answer = json.loads(text(call(server, "memory_forget", {"id": f"f{fact}", "reason": "the user asked"})))
    assert answer["forgotten"] == f"f{fact}" and f"m{said}" in answer["with_it"]
    cleaned = answer["receipt"][0]
    assert cleaned.startswith("cleaned: ") and "prompt history entries 1" in cleaned and "coop.log lines 1" in cleaned
    assert marker not in (coop_home / "coop.log").read_text()
    assert marker not in (coop_home / "history").read_text()
    assert "what is the weather like?" in (coop_home / "history").read_text()


def test_a_5_mb_remember_is_refused_with_the_limit_named_and_nothing_kept(memory):
    # cutting it to its first characters, unsaid, stored a fact nobody wrote; the host is told, in one line
    server, _ = make_server(memory, allow_writes=True)
    result = call(server, "memory_remember", {"text": "Never share my address. " * 220_000})
    assert result.is_error
    said = text(result)
    assert "memory_remember: text is too long (5,280,000 characters; the limit is 1,000)" in said
    assert "memory was not changed" in said and "hint: give text in at most 1,000 characters" in said
    assert "\n" not in said
    assert memory.facts.active() == []
    fits = call(server, "memory_remember", {"text": "Keeps bees on the roof", "category": "hobby"})
    assert not fits.is_error and [f.text for f in memory.facts.active()] == ["Keeps bees on the roof"]
