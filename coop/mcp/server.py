"""`coop mcp`: one user's memory as an MCP server over stdio, so Claude Desktop, Claude Code, Cursor and any other
MCP host read (and, when allowed, grow) the same memory `coop chat` uses, at the same time.

The tools are the engine's (coop/memory/tools/): the one registry gives each its name, description and argument
schema, for the chat and for this server alike; the host's typed arguments go through the same checks, bounds and
result limits and straight to the engine, with the chat's retrieval settings, the one fact write pipeline, the
same forgetting and the same recording of an exchange. A bad call is a tool error the host model can read and
correct ("memory_get: missing argument: id"), never a crash. The server is read-only unless started with
`--allow-writes`; its write tools are still listed, saying so, and refuse with a hint. The host is the one who
asks its user before a tool runs, so a write the user allowed is not asked again.

The SDK runs each call on a thread of its own; the server's one connection is used by one at a time (the
toolbox's guard), and never held through an embedding or a model call (coop/memory/tools/guard.py).

Nothing but the protocol goes to stdout (the SDK diverts fd 1 while serving); coop's records go to coop.log.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coop import __version__
from coop.memory.kinds import HOST, INSTRUCTION
from coop.memory.tools import registry
from coop.memory.tools.exchange import ExchangeRecorder
from coop.memory.tools.guard import Guard
from coop.memory.tools.registry import ToolArgumentError, check_arguments
from coop.memory.tools.toolbox import NOT_STORED, MemoryToolbox, NotStored, bounded

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from coop.memory.embedder import Embedder
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.growth.worker import BackgroundWorker
    from coop.memory.retrieval.settings import RetrievalSettings
    from coop.memory.storage.interface import UserStore

log = logging.getLogger(__name__)

PROFILE_URI = "coop://profile"
INSTRUCTIONS = (
    "coop is the user's long-term memory: facts about them, standing instructions, and their past conversations "
    "with any assistant. Read the profile (memory_profile, or the coop://profile resource) at the start of a "
    "conversation. Before answering anything that may depend on what the user said or did before (their plans, "
    "people, preferences, earlier decisions), call memory_search. Use memory_get and memory_timeline to read an "
    "item in full or the conversation around a message. Ids look like f12 (fact), m345 (message), s7 (summary).")
TOOLS = registry.tools_for(registry.MCP)
WRITE_TOOLS = tuple(tool.name for tool in TOOLS if tool.writes)


class McpToolError(Exception):
    """A call the host model can correct: the message and hint go back as the tool's error result."""


@dataclass
class MemoryServer:
    """The tools' behaviour, apart from the protocol: one user's memory, the engine's tools over it, and the
    background worker that embeds and extracts what `memory_record` stores. Database work is serialised (one
    connection: `guard`); each call is its own turn."""

    memory: "UserStore"
    jobs: "MemoryJobs"
    embedder: Callable[[], "Embedder | None"]
    allow_writes: bool = False
    allow_instructions: bool = False  # the user lets this host give standing instructions (never widening ones)
    worker: "BackgroundWorker | None" = None
    settings: "RetrievalSettings | None" = None  # default: from the config's [memory], as the chat's
    guard: Guard = field(default_factory=lambda: Guard(threading.Lock()))

    def __post_init__(self) -> None:
        from coop.memory.retrieval.settings import RetrievalSettings

        settings = self.settings or RetrievalSettings.from_config(self.jobs.config.memory)
        self.jobs.host_may_instruct = self.allow_instructions
        # The host is not the user: what it writes is the host's ("host"), may change only what a host wrote,
        # and gives no standing instruction unless the user allowed it (`reconcile.py`).
        self.toolbox = MemoryToolbox(self.memory, self.embedder, lambda: self.jobs.writer(self.memory),
                                     settings=settings, write_source=HOST, guard=self.guard)
        # The host's account of its conversation, not words typed into coop: marked "host", and so are the facts
        # learned from it (`coop memory why` says so).
        self.recorder = ExchangeRecorder(self.memory, self.jobs, self.worker.submit if self.worker else None,
                                         origin="host", guard=self.guard)

    @property
    def session_id(self) -> int | None:
        """The session `memory_record` writes into, made with its first exchange."""
        return self.recorder.session_id

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The tool's JSON result; McpToolError when the call cannot be carried out."""
        tool = registry.find(registry.MCP, name)
        if tool is None:
            raise McpToolError(f"unknown tool {name[:100]!r}")
        if tool.writes and not self.allow_writes:
            raise McpToolError(f"{name}: memory is read-only in this server; hint: start it with "
                               "`coop mcp --allow-writes` (the host config's args) to allow changes")
        try:
            return self._run(tool, check_arguments(tool, arguments))
        except ToolArgumentError as exc:
            raise McpToolError(f"{name}: {exc}" + (f"; hint: {exc.hint}" if exc.hint else "")) from None
        except NotStored:
            raise McpToolError(NOT_STORED) from None

    def _run(self, tool: registry.Tool, args: dict[str, Any]) -> str:
        box = self.toolbox
        if tool.name == "memory_context":
            from coop import output

            context = box.context(args["question"], self.jobs.config.memory)
            return json.dumps(output.recall_json(args["question"], context), ensure_ascii=False)
        if tool.name == "memory_profile":
            return json.dumps(box.profile(), ensure_ascii=False)
        if tool.name == "memory_record":
            return json.dumps(self.recorder.exchange(**args), ensure_ascii=False)
        if tool.name == "memory_forget":
            return self._forget(**args)
        runs: dict[str, Callable[..., dict[str, Any]]] = {
            "memory_search": box.search, "memory_get": box.get, "memory_timeline": box.timeline,
            "memory_remember": box.remember}
        run = runs[tool.name]
        return bounded(run(**args))

    def _forget(self, id: str, reason: str | None = None) -> str:
        """A forget reaches coop's files as the CLI's does (the prompt history, coop.log, the trace: growth/scrub.py),
        and the answer carries the same receipt of every place cleaned."""
        from coop.memory.growth.forgetting import receipt
        from coop.memory.growth.scrub import forget_in_files

        item = self.toolbox.forget_target(id)
        if item.category == INSTRUCTION and not self.allow_instructions:
            raise McpToolError(f"memory_forget: {item.ref} is a standing instruction, which a host may not remove; "
                               "hint: the user removes it with `coop memory forget` (or installs the host with "
                               "--allow-instructions)")
        gone = self.toolbox.forget(item, "forgotten by the model", reason)
        files = forget_in_files([gone], self.jobs.config.trace.file or None)
        return json.dumps({"forgotten": item.ref, "with_it": [trace.ref for trace in gone.traces],
                           "receipt": receipt([gone], files)}, ensure_ascii=False)


def build_server(core: MemoryServer) -> "MCPServer":
    """The MCP server around `core`: the registry's tools (descriptions for the host model, argument schemas) and
    the profile resource."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from coop.errors import CoopError
    from coop.mcp.arguments import plain_argument_errors

    server: MCPServer = MCPServer("coop", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    def run(name: str, arguments: dict[str, Any]) -> str:
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            return core.call(name, given)
        except McpToolError as exc:
            raise ToolError(str(exc)) from None
        except CoopError as exc:  # what coop refuses, said as the CLI says it: a line and a hint
            raise ToolError(f"{name}: {exc.message}" + (f"; hint: {exc.hint}" if exc.hint else "")) from None
        except Exception as exc:  # a bug: the host gets a readable error, the server goes on
            log.warning("mcp tool %s failed: %s: %s", name, type(exc).__name__, exc)
            raise ToolError(f"{name} failed ({type(exc).__name__}); see coop.log") from None

    for tool in TOOLS:
        server.add_tool(_function(tool, run), name=tool.name,
                        description=registry.mcp_description(tool, allow_writes=core.allow_writes),
                        structured_output=False)
        # The host reads the registry's schema (bounds, defaults, descriptions), as the chat's model does; the
        # SDK checks types against the function's signature, made from the same schema.
        added = server._tool_manager.get_tool(tool.name)
        assert added is not None
        added.parameters = json.loads(json.dumps(tool.parameters))

    plain_argument_errors(server)

    @server.resource(PROFILE_URI, name="profile", mime_type="text/markdown",
                     description="The user's standing instructions and known facts, with ids and dates.")
    def profile() -> str:
        return core.toolbox.profile_text()

    return server


_PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int}


def _function(tool: registry.Tool, run: Callable[[str, dict[str, Any]], str]) -> Callable[..., str]:
    """A function whose signature is the tool's schema (a required argument has no default; the others default
    to None, and the engine fills in the registry's default), for the SDK to check a call's types against."""
    required = set(tool.parameters["required"])
    parameters = []
    for name, schema in tool.parameters["properties"].items():
        kind = _PYTHON_TYPES[schema["type"]]
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind) if name in required
                          else inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                                 annotation=kind | None))

    def call(**arguments: Any) -> str:
        return run(tool.name, arguments)

    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__name__ = tool.name
    return call
