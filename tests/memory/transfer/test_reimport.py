"""Re-importing your own coop export into the database it came from adds nothing, after a life of real use:
chats with tool calls and /remember, an ended and consolidated session, a forgotten fact. The next prompt holds
each past message once."""

from __future__ import annotations

import json


def test_a_used_memory_exported_and_imported_back_is_unchanged(run_cli, openai_server, coop_home, tmp_path):
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
           "COOP_MEMORY_CONSOLIDATION_MIN_AGE_MINUTES": "0"}
    openai_server.replies = [
        "Nice to meet you, Ana.",
        {"tool_calls": [{"name": "memory_search", "arguments": json.dumps({"query": "sister"})}]},
        "I found nothing about your sister yet.",
        "Lyon is lovely in spring.",
    ]

    def background(body: dict) -> object:
        if body["messages"][0]["content"].startswith("You consolidate"):
            return json.dumps({"summary": "Ana introduced herself and talked about Lyon.", "notes": []})
        return '{"notes": []}'

    openai_server.background_default = background
    lines = "hi, I am Ana\nwhat do you know about my sister?\n/remember my sister Lea lives in Lyon\n/end\n" \
            "I am going to Lyon in April\n"
    assert run_cli("chat", "--user", "ana", "--commands-from-pipe", input=lines, env=env).exit_code == 0
    assert run_cli("memory", "consolidate", "--user", "ana", env=env).exit_code == 0
    doomed = run_cli("memory", "add", "my old PIN is 1234", "--user", "ana", "--json").json()["id"]
    assert run_cli("memory", "forget", doomed, "--yes", "--user", "ana").exit_code == 0
    before = run_cli("memory", "stats", "--user", "ana", "--json").json()
    assert before["messages"] >= 8 and before["summaries"] >= 1 and before["sessions"] == 2

    exported = tmp_path / "ana.jsonl"
    assert run_cli("memory", "export", "--user", "ana", "--output", str(exported)).exit_code == 0
    first = run_cli("memory", "import", str(exported), "--user", "ana")
    second = run_cli("memory", "import", str(exported), "--user", "ana")
    assert first.exit_code == second.exit_code == 0
    assert "imported 0 sessions, 0 messages, 0 facts, 0 summaries" in first.stdout.replace("\n", " ")
    after = run_cli("memory", "stats", "--user", "ana", "--json").json()
    assert {k: after[k] for k in ("messages", "sessions", "facts_active", "summaries", "forgotten")} == \
        {k: before[k] for k in ("messages", "sessions", "facts_active", "summaries", "forgotten")}

    openai_server.replies = ["April in Lyon, then."]
    assert run_cli("chat", "--user", "ana", input="when am I going to Lyon?\n", env=env).exit_code == 0
    system = openai_server.system_prompt()
    assert system.count("I am going to Lyon in April") <= 1
