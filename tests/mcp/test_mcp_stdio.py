"""A real `coop mcp` process driven over stdio by the SDK's client, as a host drives it: initialize, list the
tools, call them, while another process writes to the same memory; and `coop mcp install` against a temporary
home: the host's file gains coop's entry, a backup is kept, twice changes nothing, `--print` writes nothing, and a
broken file is reported and left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from coop.mcp.install import config_path


def coop_env(coop_home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COOP_")}
    env.update({"COOP_HOME": str(coop_home), "COOP_MEMORY_EMBEDDER_PROVIDER": "hash", **extra})
    return env


def run_coop(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coop", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_real_server_over_stdio_beside_a_writer_in_another_process(coop_home):
    env = coop_env(coop_home)
    assert run_coop("memory", "add", "Plays the cello on Sundays", "--user", "ana", env=env).returncode == 0
    params = StdioServerParameters(command=sys.executable, args=["-m", "coop", "mcp", "--user", "ana"], env=env)

    async def session() -> dict:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            before = await client.call_tool("memory_search", {"query": "cello"})
            # another process writes while the server runs (as `coop chat` or the CLI would)
            added = await anyio.to_thread.run_sync(lambda: run_coop(
                "memory", "add", "Keeps bees on the balcony", "--user", "ana", env=env))
            after = await client.call_tool("memory_search", {"query": "bees balcony"})
            refused = await client.call_tool("memory_remember", {"text": "Likes jazz"})
            bad = await client.call_tool("memory_get", {"id": "nonsense"})
            return {"tools": tools, "before": before, "added": added, "after": after, "refused": refused,
                    "bad": bad}

    got = anyio.run(session)
    assert "memory_search" in got["tools"] and "memory_record" in got["tools"]
    assert "Plays the cello on Sundays" in got["before"].content[0].text
    assert got["added"].returncode == 0
    assert "Keeps bees on the balcony" in got["after"].content[0].text
    assert got["refused"].is_error and "--allow-writes" in got["refused"].content[0].text
    assert got["bad"].is_error  # a tool error, and the session went on to the end
    log = (coop_home / "coop.log").read_text(encoding="utf-8")
    assert "serving ana's memory over stdio (read-only)" in log


def test_writes_over_stdio_with_allow_writes(coop_home):
    env = coop_env(coop_home)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "coop", "mcp", "--user", "ana", "--allow-writes"], env=env)

    async def session():
        async with Client(params, read_timeout_seconds=60) as client:
            remembered = await client.call_tool("memory_remember", {"text": "Is learning Portuguese"})
            recorded = await client.call_tool("memory_record", {"user_message": "I start a new job on Monday",
                                                                "assistant_reply": "Good luck with it!"})
            return remembered, recorded

    remembered, recorded = anyio.run(session)
    assert not remembered.is_error and not recorded.is_error
    stats = json.loads(run_coop("memory", "stats", "--user", "ana", "--json", env=env).stdout)
    assert stats["facts_active"] == 1 and stats["messages"] == 2


def install(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = coop_env(home / "coop-home", HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return run_coop("mcp", "install", *args, env=env)


def test_install_into_each_host_keeps_a_backup_and_is_idempotent(tmp_path):
    for host in ("claude-desktop", "claude-code", "cursor"):
        home = tmp_path / host
        path = config_path(host, home=home, environ={"XDG_CONFIG_HOME": str(home / ".config")})
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "x"}}}), encoding="utf-8")
        first = install(home, host, "--user", "ana")
        assert first.returncode == 0, first.stderr
        assert str(path) in first.stdout and "backup" not in first.stderr
        written = json.loads(path.read_text(encoding="utf-8"))
        entry = written["mcpServers"]["coop"]
        assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "x"}
        assert Path(entry["command"]).is_absolute() and entry["args"][-3:] == ["mcp", "--user", "ana"]
        assert json.loads(path.with_name(path.name + ".bak").read_text(encoding="utf-8")) == {
            "theme": "dark", "mcpServers": {"other": {"command": "x"}}}
        stamp = path.stat().st_mtime_ns
        second = install(home, host, "--user", "ana")
        assert second.returncode == 0 and "already" in second.stdout and path.stat().st_mtime_ns == stamp


def test_install_print_writes_nothing_and_allow_writes_is_carried(tmp_path):
    shown = install(tmp_path, "cursor", "--user", "ana", "--allow-writes", "--print")
    assert shown.returncode == 0
    entry = json.loads(shown.stdout)["mcpServers"]["coop"]
    assert entry["args"][-4:] == ["mcp", "--user", "ana", "--allow-writes"]
    assert not (tmp_path / ".cursor").exists()


def test_install_leaves_a_broken_file_alone(tmp_path):
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text("{ not json", encoding="utf-8")
    result = install(tmp_path, "cursor")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {path} is not valid JSON") and "hint:" in result.stderr
    assert path.read_text(encoding="utf-8") == "{ not json"
    unknown = install(tmp_path, "vim")
    assert unknown.returncode == 2 and "claude-desktop, claude-code, cursor" in unknown.stderr
