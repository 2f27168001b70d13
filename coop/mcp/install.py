"""`coop mcp install HOST`: add coop to an MCP host's config file (Claude Desktop, Claude Code, Cursor), so the
host starts `coop mcp` itself. The file is read as JSON and only its `mcpServers.coop` entry is touched; a copy of
the file as it was is kept beside it (`.bak`) before the first change; installing twice changes nothing; a file
that is not valid JSON is reported and left alone.

A host starts the server with its own environment and working directory, not the user's shell: so the entry
carries what decides which memory coop opens (the config file found, `COOP_HOME` and every other `COOP_*` setting
in force), with relative paths made absolute. Without them the host would get an empty, newly created database."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop.errors import UsageError
from coop.memory.storage.backends import THROWAWAY

if TYPE_CHECKING:
    from coop.config.loading import Config

HOSTS = ("claude-desktop", "claude-code", "cursor")
SERVER_NAME = "coop"


def config_path(host: str, *, home: Path | None = None, platform: str | None = None,
                environ: Mapping[str, str] | None = None) -> Path:
    """Where `host` keeps its MCP servers on this platform."""
    home = home or Path.home()
    platform = platform or sys.platform
    environ = os.environ if environ is None else environ
    if host == "claude-desktop":
        if platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if platform.startswith("win"):
            return Path(environ.get("APPDATA") or home / "AppData" / "Roaming") / "Claude" / \
                "claude_desktop_config.json"
        return Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"
    if host == "claude-code":
        return home / ".claude.json"  # the user scope: coop in every project
    if host == "cursor":
        return home / ".cursor" / "mcp.json"
    raise UsageError(f"unknown MCP host {host!r}", hint=f"use one of: {', '.join(HOSTS)}")


def server_entry(*, user: str, config: str | None, allow_writes: bool, allow_instructions: bool = False,
                 command: list[str] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The host's entry for coop: the running coop's own executable (absolute, since hosts start servers without
    the user's shell PATH), `mcp --user USER`, the config file when one was found, and the `COOP_*` settings
    (`host_environment`) when any are in force."""
    command = command or coop_command()
    args = [*command[1:], "mcp", "--user", user]
    if config:
        args += ["--config", str(Path(config).expanduser().resolve())]
    if allow_writes:
        args.append("--allow-writes")
    if allow_instructions:
        args.append("--allow-instructions")
    entry: dict[str, Any] = {"command": command[0], "args": args}
    if env:
        entry["env"] = dict(sorted(env.items()))
    return entry


# Settings that hold a path: a relative one means another file from the host's working directory.
PATH_SETTINGS = ("memory.db_path", "memory.embedder.model_path", "trace.file")
# Variables that are not settings but change which files coop uses or how it reads them.
CARRIED_VARIABLES = ("COOP_HOME", "COOP_MODEL_CACHE", "COOP_EMBEDDER_FASTEMBED",
                     "COOP_DATABASE_URL")


def host_environment(config: "Config", environ: Mapping[str, str]) -> dict[str, str]:
    """The `COOP_*` variables the host must start coop with to open the memory this shell's coop opens: every
    setting variable set here, `COOP_HOME` (absolute), the Postgres server (`COOP_DATABASE_URL`, without a
    password), and each path setting (from the environment or the config file) that is relative, made absolute
    from here. API keys and passwords are never carried: they stay in the environment."""
    from coop.config.loading import env_var_name, iter_keys

    names = [env_var_name(dotted) for dotted, _ in iter_keys()] + list(CARRIED_VARIABLES)
    env = {name: environ[name] for name in names if name in environ}
    if env.get("COOP_HOME"):
        env["COOP_HOME"] = str(Path(env["COOP_HOME"]).expanduser().resolve())
    if env.get("COOP_DATABASE_URL"):  # the server, never its password: that stays in ~/.pgpass or PGPASSWORD
        from coop.memory.storage.backends import describe

        env["COOP_DATABASE_URL"] = describe("postgres", env["COOP_DATABASE_URL"])

    for dotted in PATH_SETTINGS:
        value: Any = config
        for part in dotted.split("."):
            value = getattr(value, part)
        if value and value != THROWAWAY and not Path(value).expanduser().is_absolute():
            env[env_var_name(dotted)] = str(Path(value).expanduser().resolve())
    return env


def coop_command() -> list[str]:
    """The `coop` script beside this interpreter (a venv's bin/), else this interpreter with `-m coop`."""
    script = Path(sys.executable).parent / ("coop.exe" if os.name == "nt" else "coop")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "coop"]


@dataclass(frozen=True)
class Installed:
    path: Path
    changed: bool
    backup: Path | None
    document: dict[str, Any]


def merged(path: Path, entry: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The host's config with coop's entry in it, and whether that differs from the file."""
    document: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path} is not valid JSON ({exc}); it was left as it is",
                             hint="fix or move the file, then run the install again, or add the entry by hand "
                                  "(`coop mcp install HOST --print` shows it)") from None
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}", hint="check the file's permissions") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"{path} does not hold a JSON object; it was left as it is",
                             hint="fix or move the file, then run the install again")
        document = loaded
    servers = document.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise UsageError(f"{path}: mcpServers is not an object; it was left as it is", hint="fix the file")
    if (servers or {}).get(SERVER_NAME) == entry:
        return document, False
    return {**document, "mcpServers": {**(servers or {}), SERVER_NAME: entry}}, True


def install(path: Path, entry: dict[str, Any]) -> Installed:
    """Write coop's entry into the host's config at `path`: a backup first, then the new file atomically."""
    from coop.files.writing import replace_file

    document, changed = merged(path, entry)
    if not changed:
        return Installed(path, False, None, document)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    replace_file(path, lambda handle: handle.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n"),
                 mode=mode)
    return Installed(path, True, backup, document)
