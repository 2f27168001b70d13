"""`coop mcp install` run with `COOP_HOME`, other `COOP_*` settings and a `./coop.toml` in force: the entry it
writes, started as a host starts it (its own environment without any COOP_* variable, another working
directory), opens the same memory, so the host finds a fact written before."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters

from coop.mcp.install import config_path


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COOP_")}
    return {**env, **extra}


def test_the_installed_entry_finds_the_users_memory_from_another_environment(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    # the user's settings: a config in the working directory (found as ./coop.toml), a relative database path in
    # the environment, COOP_HOME for the rest, and the embedder chosen by a variable
    (project / "coop.toml").write_text('[chat]\nuser = "ana"\n', encoding="utf-8")
    home = tmp_path / "user-home"
    user_env = clean_env(COOP_HOME=str(tmp_path / "coop-home"), COOP_MEMORY_EMBEDDER_PROVIDER="hash",
                         COOP_MEMORY_DB_PATH="memory.db", HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))

    def coop(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "coop", *args], capture_output=True, text=True, env=user_env,
                              cwd=project, timeout=120)

    assert coop("memory", "add", "Keeps bees on the balcony").returncode == 0
    installed = coop("mcp", "install", "cursor")
    assert installed.returncode == 0, installed.stderr
    database = project / "memory.db"
    assert database.is_file()
    assert f"ana's memory in {database}" in installed.stdout.replace("\n", "")
    entry = json.loads(config_path("cursor", home=home).read_text(encoding="utf-8"))["mcpServers"]["coop"]
    assert entry["env"] == {"COOP_HOME": str(tmp_path / "coop-home"), "COOP_MEMORY_DB_PATH": str(database),
                            "COOP_MEMORY_EMBEDDER_PROVIDER": "hash"}
    assert entry["args"][-4:] == ["--user", "ana", "--config", str(project / "coop.toml")]

    elsewhere = tmp_path / "host-cwd"
    elsewhere.mkdir()
    # as a host starts it: the entry's command, args and env over the host's own environment, in its own directory
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=elsewhere)

    async def session() -> tuple[str, str]:
        async with Client(params, read_timeout_seconds=60) as client:
            found = await client.call_tool("memory_search", {"query": "bees balcony"})
            profile = await client.call_tool("memory_profile", {})
            return found.content[0].text, profile.content[0].text

    found, profile = anyio.run(session)
    assert "Keeps bees on the balcony" in found
    assert "Keeps bees on the balcony" in profile
    assert not (elsewhere / "memory.db").exists()  # no new, empty database beside the host


def test_nothing_set_means_no_env_in_the_entry(tmp_path):
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    shown = subprocess.run([sys.executable, "-m", "coop", "mcp", "install", "cursor", "--user", "ana", "--print"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert shown.returncode == 0, shown.stderr
    entry = json.loads(shown.stdout)["mcpServers"]["coop"]
    assert "env" not in entry and "--config" not in entry["args"]
    assert "the host will use ana's memory in" in shown.stderr.replace("\n", "")


def test_the_entry_names_the_postgres_server_without_its_password(tmp_path):
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"), COOP_MEMORY_BACKEND="postgres",
                    COOP_DATABASE_URL="postgresql://coop:hunter2@db.example.com:5432/coop")
    shown = subprocess.run([sys.executable, "-m", "coop", "mcp", "install", "cursor", "--user", "ana", "--print"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert shown.returncode == 0, shown.stderr
    carried = json.loads(shown.stdout)["mcpServers"]["coop"]["env"]
    assert carried["COOP_MEMORY_BACKEND"] == "postgres"
    assert carried["COOP_DATABASE_URL"] == "postgresql://coop@db.example.com:5432/coop"
    assert "hunter2" not in shown.stdout + shown.stderr
