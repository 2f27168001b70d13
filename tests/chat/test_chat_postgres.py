"""`coop chat` and the memory commands on a Postgres server, unchanged: what one device stores, another device's
chat finds and puts in the prompt; a fact learned in one session is in the next; consolidation and MCP's store are
the same code (tests/memory runs those parts on both backends)."""

from __future__ import annotations

import pytest

from tests.chat.test_chat_pipe import run_chat


@pytest.mark.postgres
@pytest.mark.slow  # runs `coop chat` as a process, which imports litellm: seconds each
def test_two_devices_share_one_memory_on_the_server(openai_server, coop_home, tmp_path, postgres_url, run_cli,
                                                    monkeypatch):
    server = {"COOP_MEMORY_BACKEND": "postgres", "COOP_DATABASE_URL": postgres_url}
    for name, value in server.items():
        monkeypatch.setenv(name, value)
    # the laptop: a fact added by hand
    assert run_cli("memory", "add", "I live in Porto and cycle to work", "--user", "sam").exit_code == 0
    # the desktop: another COOP_HOME (its own config, logs, history), the same server
    desktop = tmp_path / "desktop"
    env = {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
           "COOP_HOME": str(desktop), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", **server}
    openai_server.replies = ["Porto, by bike."]
    result = run_chat(["--user", "sam"], "where do I live and how do I get to work?\n", env)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "Porto, by bike."
    system = openai_server.chat_requests()[0]["messages"][0]["content"]
    assert "I live in Porto and cycle to work" in system
    assert not (desktop / "coop.db").exists(), "nothing was written to a local SQLite file"
    # the laptop sees the desktop's conversation
    listed = run_cli("memory", "list", "--user", "sam", "--json").json()
    texts = [item["text"] for item in (listed if isinstance(listed, list) else listed.get("items", []))]
    assert "where do I live and how do I get to work?" in texts and "Porto, by bike." in texts
