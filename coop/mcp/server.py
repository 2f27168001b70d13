"""`coop mcp`: one user's memory as an MCP server over stdio, so Claude Desktop, Claude Code, Cursor and any other
MCP host read (and, when allowed, grow) the same memory `coop chat` uses, at the same time.

The tools are the chat's own memory tools (`coop.chat.tools.MemoryTools`): the same argument checks, bounds and
result limits, the same retrieval settings, the one fact write pipeline and the same forgetting. A bad call is a
tool error the host model can read and correct ("memory_get: missing argument: id"), never a crash. The server is
read-only unless started with `--allow-writes`; its write tools are still listed, saying so, and refuse with a
hint. The host is the one who asks its user before a tool runs, so a write the user allowed is not asked again.

Nothing but the protocol goes to stdout (the SDK diverts fd 1 while serving); coop's records go to coop.log.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from coop.chat.tools import MemoryTools
    from coop.memory.embedder import Embedder
    from coop.memory.growth.forgetting import Forgotten
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.growth.worker import BackgroundWorker
    from coop.memory.storage.store import UserMemory

log = logging.getLogger(__name__)

PROFILE_URI = "coop://profile"
MAX_PROFILE_FACTS = 200
MAX_QUESTION_CHARS = 4000
READ_ONLY_NOTE = ("This server is read-only: the call is refused. (Start it with `coop mcp --allow-writes` to let "
                  "the assistant change memory.) ")
INSTRUCTIONS = (
    "coop is the user's long-term memory: facts about them, standing instructions, and their past conversations "
    "with any assistant. Read the profile (memory_profile, or the coop://profile resource) at the start of a "
    "conversation. Before answering anything that may depend on what the user said or did before (their plans, "
    "people, preferences, earlier decisions), call memory_search. Use memory_get and memory_timeline to read an "
    "item in full or the conversation around a message. Ids look like f12 (fact), m345 (message), s7 (summary).")

DESCRIPTIONS = {
    "memory_search": "Search the user's long-term memory (facts, past messages from any session, summaries) by "
                     "meaning and by words. Call it before answering anything that may depend on the user's past: "
                     "their plans, people, preferences, earlier decisions. Returns items with ids and dates.",
    "memory_get": "Read one memory item in full by its id (f12 fact, m345 message, s7 summary), e.g. a search "
                  "result that was cut short.",
    "memory_timeline": "The messages around one past message (same session), to see what was said before and "
                       "after it. Takes a message id such as m345.",
    "memory_profile": "What is known about the user: their standing instructions and active facts, each with its "
                      "id and since when it holds. Read it at the start of a conversation.",
    "memory_context": "What coop would put in a prompt for a message now: the user's profile (the facts that "
                      "describe them), the facts and past conversation relevant to the message, each with why it "
                      "is there. Call it with the user's message before answering one that may depend on who they "
                      "are or what they said before.",
    "memory_remember": "Remember one durable fact about the user, in a sentence, only when they said it or clearly "
                       "want it kept (\"remember that I'm vegetarian\"). Duplicates are merged; a new value for "
                       "the same thing (same category and key) replaces the old one, which stays in its history.",
    "memory_forget": "Forget one memory item by id, only when the user asked for it. A fact is forgotten with the "
                     "messages and summaries that said it.",
    "memory_record": "Record one exchange of this conversation (the user's message and your reply) in the user's "
                     "memory, so coop can learn durable facts from it and recall it in later conversations. Call "
                     "it after an exchange that told you something worth keeping about the user.",
}
WRITE_TOOLS = ("memory_remember", "memory_forget", "memory_record")


class McpToolError(Exception):
    """A call the host model can correct: the message and hint go back as the tool's error result."""


@dataclass
class MemoryServer:
    """The tools' behaviour, apart from the protocol: one user's memory, the chat's tools over it, and the
    background worker that embeds and extracts what `memory_record` stores. Calls are serialised (one database
    connection); each call is its own "turn" for the tools' change limit."""

    memory: "UserMemory"
    tools: "MemoryTools"
    jobs: "MemoryJobs"
    embedder: Callable[[], "Embedder | None"]
    allow_writes: bool = False
    worker: "BackgroundWorker | None" = None
    session_id: int | None = None  # the session `memory_record` writes into, made with its first exchange
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _gone: list["Forgotten"] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tools.on_forget = self._gone.append  # scrubbed from coop's files after the call (`_forget_receipt`)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The tool's JSON result; McpToolError when the call cannot be carried out."""
        if name in WRITE_TOOLS and not self.allow_writes:
            raise McpToolError(f"{name}: memory is read-only in this server; hint: start it with "
                               "`coop mcp --allow-writes` (the host config's args) to allow changes")
        with self._lock:
            if name == "memory_profile":
                return self.profile_json()
            if name == "memory_record":
                return self._record(arguments)
            if name == "memory_context":
                return self._context(arguments)
            chat_name = {"memory_remember": "memory_write"}.get(name, name)
            self.tools.start_turn()
            result = self.tools.run(chat_name, json.dumps(arguments, ensure_ascii=False))
            data = json.loads(result)
            if self._gone:
                return self._forget_receipt(data)
        if isinstance(data, dict) and "error" in data:
            hint = f"; hint: {data['hint']}" if data.get("hint") else ""
            raise McpToolError(f"{data['error']}{hint}")
        return result

    def _forget_receipt(self, data: dict[str, Any]) -> str:
        """A forget reaches coop's files as the CLI's does (the prompt history, coop.log, the trace: growth/scrub.py),
        and the answer carries the same receipt of every place cleaned."""
        from coop.memory.growth.forgetting import receipt
        from coop.memory.growth.scrub import forget_in_files

        gone, self._gone[:] = list(self._gone), []
        files = forget_in_files(gone, self.jobs.config.trace.file or None)
        return json.dumps({**data, "receipt": receipt(gone, files)}, ensure_ascii=False)

    # -- the profile ------------------------------------------------------------------------------------------

    def profile_lines(self) -> tuple[list[str], list[str]]:
        """Standing instructions, and the profile as the chat's prompt chooses it (`coop/memory/retrieval/
        profile.py`: best first, marked when it may be out of date), each with its id and since when."""
        from coop.memory.kinds import INSTRUCTION
        from coop.memory.retrieval import profile
        from coop.memory.retrieval.context import Recalled, fact_line

        instructions = [fact_line(Recalled(f, "profile"))
                        for f in self.memory.active_facts(INSTRUCTION, limit=MAX_PROFILE_FACTS, newest_first=True)]
        chosen, _ = profile.best(self.memory, {}, time.time(), pool=MAX_PROFILE_FACTS)
        marks = profile.out_of_date(self.memory, [r.item for r in chosen])
        known = [fact_line(Recalled(r.item, "profile", note=marks.get(r.item.item_id, ""))) for r in chosen]
        return instructions, known

    def _context(self, arguments: dict[str, Any]) -> str:
        from coop import output
        from coop.memory.retrieval.turn import turn_context

        unknown = sorted(set(arguments) - {"question"})
        if unknown:
            raise McpToolError(f"memory_context: unknown argument(s): {', '.join(unknown)}")
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            raise McpToolError("memory_context: question must be non-empty text")
        question = question[:MAX_QUESTION_CHARS]
        context = turn_context(self.memory, question, cfg=self.jobs.config.memory, embedder=self.embedder())
        return json.dumps(output.recall_json(question, context), ensure_ascii=False)

    def profile_json(self) -> str:
        from coop.chat.tools import MAX_RESULT_CHARS

        instructions, known = self.profile_lines()
        payload: dict[str, Any] = {"user": self.memory.user_id, "instructions": instructions, "facts": known}
        while len(json.dumps(payload, ensure_ascii=False)) > MAX_RESULT_CHARS and payload["facts"]:
            payload["facts"] = payload["facts"][:-1]
            payload["truncated"] = True
        return json.dumps(payload, ensure_ascii=False)

    def profile_text(self) -> str:
        instructions, known = self.profile_lines()
        parts = [f"# What coop knows about {self.memory.user_id}"]
        if instructions:
            parts += ["", "Standing instructions:", *instructions]
        parts += ["", "Known about the user (id, since when):", *(known or ["- nothing yet"])]
        return "\n".join(parts) + "\n"

    # -- recording an exchange --------------------------------------------------------------------------------

    def _record(self, arguments: dict[str, Any]) -> str:
        from coop.errors import CoopError
        from coop.memory.growth.importance import message_importance
        from coop.memory.storage.items import MAX_MESSAGE_CHARS
        from coop.memory.text import check_text

        unknown = sorted(set(arguments) - {"user_message", "assistant_reply"})
        if unknown:
            raise McpToolError(f"memory_record: unknown argument(s): {', '.join(unknown)}")
        texts = {}
        for key in ("user_message", "assistant_reply"):
            value = arguments.get(key)
            if not isinstance(value, str) or not value.strip():
                raise McpToolError(f"memory_record: {key} must be non-empty text")
            try:
                texts[key] = check_text(value, key, MAX_MESSAGE_CHARS)
            except CoopError as exc:
                raise McpToolError(f"memory_record: {exc.message}; hint: record a shorter account of the exchange "
                                   f"(each text at most {MAX_MESSAGE_CHARS:,} characters)") from None
        importance = self.jobs.config.memory.importance
        if self.session_id is None or not self.memory.session_exists(self.session_id):
            self.session_id = self.memory.start_session(" ".join(texts["user_message"].split())[:80])
        # The host's account of its conversation, not words typed into coop: marked, and facts learned from it
        # have the source "host" (`coop memory why` says so).
        user_id = self.memory.add_message(self.session_id, "user", texts["user_message"], origin="host",
                                          importance=message_importance("user", texts["user_message"], importance))
        reply_id = self.memory.add_message(self.session_id, "assistant", texts["assistant_reply"], origin="host",
                                           importance=message_importance("assistant", texts["assistant_reply"],
                                                                         importance))
        learning = self.jobs.complete is not None and self.jobs.config.memory.extraction.enabled
        if self.worker is not None:
            self.worker.submit("embed new messages", self.jobs.embedding(self.memory.user_id))
            if learning and user_id is not None:
                job = self.memory.record_job("extraction", session_id=self.session_id, message_id=user_id,
                                             reply_id=reply_id)
                self.worker.submit("extract facts", self.jobs.extraction(self.memory.user_id, job))
        return json.dumps({"recorded": [f"m{user_id}", f"m{reply_id}"], "session_id": self.session_id,
                           "learning": "facts are extracted in the background" if learning else
                           "no fast model is configured: the exchange is kept and searchable, no facts are "
                           "extracted"})


def build_server(core: MemoryServer) -> "MCPServer":
    """The MCP server around `core`: its tools (with descriptions for the host model) and the profile resource."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from coop.errors import CoopError
    from coop.mcp.arguments import plain_argument_errors

    server: MCPServer = MCPServer("coop", instructions=INSTRUCTIONS, log_level="WARNING")

    def describe(name: str) -> str:
        text = DESCRIPTIONS[name]
        return READ_ONLY_NOTE + text if name in WRITE_TOOLS and not core.allow_writes else text

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

    def memory_search(query: str, limit: int = 8, kind: str | None = None) -> str:
        return run("memory_search", {"query": query, "limit": limit, "kind": kind})

    def memory_get(id: str) -> str:
        return run("memory_get", {"id": id})

    def memory_timeline(id: str, before: int = 3, after: int = 3) -> str:
        return run("memory_timeline", {"id": id, "before": before, "after": after})

    def memory_profile() -> str:
        return run("memory_profile", {})

    def memory_context(question: str) -> str:
        return run("memory_context", {"question": question})

    def memory_remember(text: str, category: str | None = None, key: str | None = None) -> str:
        return run("memory_remember", {"text": text, "category": category, "key": key})

    def memory_forget(id: str, reason: str | None = None) -> str:
        return run("memory_forget", {"id": id, "reason": reason})

    def memory_record(user_message: str, assistant_reply: str) -> str:
        return run("memory_record", {"user_message": user_message, "assistant_reply": assistant_reply})

    for function in (memory_search, memory_get, memory_timeline, memory_profile, memory_context, memory_remember,
                     memory_forget, memory_record):
        server.add_tool(function, name=function.__name__, description=describe(function.__name__),
                        structured_output=False)

    plain_argument_errors(server)

    @server.resource(PROFILE_URI, name="profile", mime_type="text/markdown",
                     description="The user's standing instructions and known facts, with ids and dates.")
    def profile() -> str:
        with core._lock:
            return core.profile_text()

    return server
