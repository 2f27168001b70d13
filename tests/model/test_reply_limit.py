"""A reply is bounded (issue 27): past `model.max_reply_chars` the stream stops, what came is kept and marked
`[truncated]`, a tool call cut at the limit is not run, and the process does not grow with what the server sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from coop.model.reply_limit import TRUNCATED_MARK


def chat_env(openai_server, **extra: str) -> dict[str, str]:
    return {"COOP_MODEL_NAME": "openai/test-model", "COOP_MODEL_API_BASE": openai_server.api_base,
            "COOP_MEMORY_EXTRACTION_ENABLED": "false", **extra}


def stored_replies(run_cli) -> list[str]:
    listed = run_cli("memory", "list", "--kind", "message", "--user", "ana", "--json").json()
    return [m["text"] for m in listed if m["role"] == "assistant"]


def test_a_reply_past_the_limit_is_cut_kept_and_marked_truncated(run_cli, openai_server):
    openai_server.replies = [{"content": "abcdefghij" * 300_000, "chunk_size": 4096}]  # 3 MB
    result = run_cli("chat", "--user", "ana", input="go on forever\n",
                     env=chat_env(openai_server, COOP_MODEL_MAX_REPLY_CHARS="5000"))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == ("abcdefghij" * 500)
    notes = [line for line in result.stderr.splitlines() if "truncated" in line]
    assert notes == ["note: the reply reached model.max_reply_chars; it is kept, marked [truncated]"]
    assert stored_replies(run_cli) == ["abcdefghij" * 500 + TRUNCATED_MARK]


def test_a_cut_reply_says_so_in_json_and_a_whole_one_is_not_marked(run_cli, openai_server):
    openai_server.replies = ["short and whole", {"content": "y" * 20_000, "chunk_size": 1000}]
    result = run_cli("chat", "--user", "ana", "--json", input="one\ntwo\n",
                     env=chat_env(openai_server, COOP_MODEL_MAX_REPLY_CHARS="1000"))
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["incomplete"] for t in turns] == [None, "the reply reached model.max_reply_chars"]
    assert turns[1]["reply"] == "y" * 1000 + TRUNCATED_MARK
    assert stored_replies(run_cli) == ["y" * 1000 + TRUNCATED_MARK, "short and whole"]


def test_a_tool_call_cut_at_the_limit_is_not_run(run_cli, openai_server):
    arguments = json.dumps({"text": "I live in Lyon " + "z" * 5000})
    openai_server.replies = [{"content": "Saving that.", "tool_calls": [{"name": "memory_write",
                                                                         "arguments": arguments}]}]
    result = run_cli("chat", "--user", "ana", input="remember where I live\n",
                     env=chat_env(openai_server, COOP_MODEL_MAX_REPLY_CHARS="1000"))
    assert result.exit_code == 0, result.stderr
    assert len(openai_server.chat_requests()) == 1  # no second round: the cut call was never run
    assert stored_replies(run_cli) == ["Saving that." + TRUNCATED_MARK]
    facts = run_cli("memory", "list", "--kind", "fact", "--user", "ana", "--json").json()
    assert facts == []


PEAK_RSS = ("import atexit, resource, sys; "
            "atexit.register(lambda: print('peak-rss-kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "file=sys.stderr)); "
            "from coop.cli.app import main; sys.argv = ['coop', 'chat', '--user', 'ana']; main()")


def peak_rss_kb(openai_server, coop_home, reply) -> tuple[int, subprocess.CompletedProcess]:
    openai_server.replies = [reply]
    env = {**os.environ, **chat_env(openai_server), "COOP_HOME": str(coop_home),
           "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}
    done = subprocess.run([sys.executable, "-c", PEAK_RSS], input=b"talk\n", capture_output=True, env=env,
                          timeout=240)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    [line] = [line for line in done.stderr.decode().splitlines() if line.startswith("peak-rss-kb")]
    return int(line.split()[1]), done


@pytest.mark.slow  # two `coop chat` processes (litellm's import) and 30 MB offered over HTTP
def test_a_30_mb_reply_does_not_grow_the_process(openai_server, coop_home, run_cli):
    small, _ = peak_rss_kb(openai_server, coop_home, "a short reply")
    big, done = peak_rss_kb(openai_server, coop_home, {"content": "0123456789" * 3_000_000, "chunk_size": 512})
    assert len(done.stdout.decode().strip()) == 200_000  # the default limit
    replies = stored_replies(run_cli)
    assert replies[0] == "0123456789" * 20_000 + TRUNCATED_MARK and replies[1] == "a short reply"
    # before the limit the process grew to about 735 MB on such a reply; now it stays near a short reply's size
    # (a loose bound: the 200,000 characters kept, litellm's last chunks, the render)
    assert big - small < 120_000, (small, big)
