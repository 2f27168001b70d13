"""`coop mcp`: serve one user's memory to MCP hosts over stdio; `coop mcp install HOST` adds coop to a host."""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer

from coop import output
from coop.cli.context import state
from coop.cli.memory import UserOption

app = typer.Typer(help="Your memory in other assistants: an MCP server over stdio, and installing it in a host.",
                  invoke_without_command=True)


def check_instruction_flags(allow_writes: bool, allow_instructions: bool) -> None:
    if allow_instructions and not allow_writes:
        from coop.errors import UsageError

        raise UsageError("--allow-instructions lets a host write standing instructions, which needs --allow-writes",
                         hint="add --allow-writes, or leave --allow-instructions out")


@app.callback()
def serve(
    ctx: typer.Context,
    user: UserOption = None,
    allow_writes: Annotated[bool, typer.Option("--allow-writes", help="let the host's model remember, forget and "
                                                                        "record (default: read-only)")] = False,
    allow_instructions: Annotated[bool, typer.Option(
        "--allow-instructions", help="with --allow-writes: let the host give and remove standing instructions "
                                     "(never ones that widen what is revealed)")] = False,
) -> None:
    """Serve your memory over stdio (MCP) to Claude Desktop, Claude Code, Cursor or any MCP host. Read-only
    unless --allow-writes. What the host writes is kept as the host's, never as your own words. Hosts start this
    command themselves: see `coop mcp install`."""
    if ctx.invoked_subcommand is not None:
        return
    check_instruction_flags(allow_writes, allow_instructions)
    import anyio

    from coop.config.loading import coop_home
    from coop.files.logs import logging_to_file
    from coop.mcp.server import MemoryServer, build_server
    from coop.memory.retrieval.settings import RetrievalSettings

    app_state = state(ctx)
    config = app_state.config()
    services = app_state.services()
    log = logging.getLogger("coop.mcp")
    # never onto stdout, the protocol's: a failed embedder load (it loads with the first search) goes to coop.log
    services.warn = lambda message, hint: log.warning("%s (%s)", message, hint)
    memory = services.memory(user)
    worker = services.worker() if allow_writes else None
    jobs = services.jobs()
    core = MemoryServer(memory, jobs, services.embedder, allow_writes=allow_writes,
                        allow_instructions=allow_instructions, worker=worker,
                        settings=RetrievalSettings.from_config(config.memory))
    secrets = [value for name, value in os.environ.items() if name.endswith("_API_KEY")]
    try:
        with logging_to_file(coop_home(), secrets=secrets, debug=app_state.debug):
            log.info("serving %s's memory over stdio (%s)", memory.user_id,
                     "read and write" if allow_writes else "read-only")
            if worker is not None and jobs.complete is not None and memory.jobs.pending(1):
                worker.submit("finish earlier extractions", jobs.pending(memory.user_id))
            anyio.run(build_server(core).run_stdio_async)
    finally:
        if worker is not None:
            jobs.stopping.set()
            worker.stop(timeout=2.0)


@app.command()
def install(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="claude-desktop, claude-code or cursor")],
    user: UserOption = None,
    allow_writes: Annotated[bool, typer.Option("--allow-writes", help="let the host's model change memory")] = False,
    allow_instructions: Annotated[bool, typer.Option(
        "--allow-instructions", help="with --allow-writes: let the host give standing instructions")] = False,
    print_only: Annotated[bool, typer.Option("--print", help="show the JSON to add instead of writing it")] = False,
) -> None:
    """Add coop to an MCP host's config file (a backup of the file is kept; twice changes nothing). The entry
    carries the config file and the COOP_* settings in force, so the host opens the memory you use here."""
    import json

    from coop.config.loading import resolve_store
    from coop.mcp.install import config_path, host_environment, install, server_entry
    from coop.memory.storage.backends import THROWAWAY, describe
    from coop.memory.storage.items import whose

    check_instruction_flags(allow_writes, allow_instructions)
    app_state = state(ctx)
    path = config_path(host)
    config = app_state.config()
    user_id = app_state.services().user_id(user)
    entry = server_entry(user=user_id, config=config.source or None, allow_writes=allow_writes,
                         allow_instructions=allow_instructions, env=host_environment(config, os.environ))
    backend, database = resolve_store(config)
    uses = (f"the host will use {whose(user_id)} memory at {describe(backend, database)}" if backend == "postgres" else
            f"the host will use {whose(user_id)} memory in {os.path.abspath(database)}" if database != THROWAWAY else
            "the host will use a throwaway in-memory database (memory.db_path is ':memory:')")
    if print_only:
        output.out().print(json.dumps({"mcpServers": {"coop": entry}}, indent=2), soft_wrap=True, markup=False,
                           highlight=False)
        output.info(f"(add it to {path}; `coop mcp install {host}` does it for you; {uses})")
        return
    done = install(path, entry)
    if not done.changed:
        output.out().print(f"coop is already in {path}; nothing changed; {uses}", soft_wrap=True, markup=False)
        return
    saved = f"; the old file is kept as {done.backup}" if done.backup else ""
    output.out().print(f"added coop ({'read and write' if allow_writes else 'read-only'}) to {path}{saved}. "
                       f"{uses[0].upper()}{uses[1:]}. Restart {host} to use it.", soft_wrap=True, markup=False)
