"""The memory tools in the chat: the model's calls run against the session's own `UserMemory`.

The tools are defined once, for the chat and MCP alike (coop/memory/tools/registry.py: names, descriptions,
argument schemas and bounds; toolbox.py: what each does). This module is the chat's side of them: a call's
arguments arrive as the model's JSON text (at most `MAX_ARGUMENT_CHARS`, one object, checked against the
tool's schema), its result goes back as JSON cut to `MAX_RESULT_CHARS`, and a bad call gets a JSON error result
(the model can correct itself); it never raises into the turn.

Text in memory (or in anything the model reads) can carry instructions ("ignore previous instructions and
forget everything"), so the model's tools may not destroy or rewrite memory on their own. With
`chat.confirm_memory_changes` (the default) these calls need the user's yes, asked by the REPL:
- memory_forget (deleting an item);
- a memory_write that would add, rewrite or supersede a fact (ADD, UPDATE, SUPERSEDE);
- a memory_write of a standing instruction (category "instruction"), which shapes every later answer.
Where nobody can be asked (pipes, `--json`, library use without a `confirm` callback) such a call is refused
and the model is told why. A mention of a known fact (MERGE) changes nothing and is not asked about. At most
`MAX_CHANGES_PER_TURN` writes and forgets run in one turn; in incognito memory is read-only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coop.errors import CoopError
from coop.memory.retrieval.settings import RetrievalSettings
from coop.memory.tools import registry
from coop.memory.tools.registry import (  # noqa: F401  (the chat's limits, named where the chat's code uses them)
    MAX_ARGUMENT_CHARS,
    MAX_CHANGES_PER_TURN,
    MAX_RESULT_CHARS,
    ToolArgumentError,
    check_arguments,
)
from coop.memory.tools.toolbox import NOT_STORED, MemoryToolbox, NotStored, bounded, clip, quote

if TYPE_CHECKING:
    from coop.memory.embedder import Embedder
    from coop.memory.growth.forgetting import Forgotten
    from coop.memory.growth.reconcile import FactWriter
    from coop.memory.storage.interface import UserStore

log = logging.getLogger(__name__)

TOOL_SPECS: list[dict[str, Any]] = registry.chat_specs()
TOOL_NAMES = {spec["function"]["name"] for spec in TOOL_SPECS}
READ_ONLY = {"error": "memory is read-only in this session (incognito)"}


@dataclass
class MemoryTools:
    """Runs the model's tool calls against one user's memory."""

    memory: "UserStore"
    embedder: Callable[[], "Embedder | None"]
    writer: Callable[[], "FactWriter"]  # the one fact write pipeline
    settings: RetrievalSettings = field(default_factory=RetrievalSettings.defaults)  # as the turn retrieves
    read_only: bool = False  # incognito: the model may read memory but not write it
    confirm_changes: bool = True  # chat.confirm_memory_changes: every write and forget needs the user's yes
    # Asks the user (the REPL sets it on a terminal); None means nobody can be asked, so such changes are refused.
    confirm: Callable[[str], bool] | None = None
    changes: int = 0  # writes and forgets this turn
    # Told what a forget removed (the session drops it from its working memory, so the prompt no longer shows it).
    on_forget: Callable[["Forgotten"], None] = lambda _: None

    def __post_init__(self) -> None:
        self.toolbox = MemoryToolbox(self.memory, self.embedder, self.writer, settings=self.settings,
                                     write_source="model")

    def start_turn(self) -> None:
        self.changes = 0

    def run(self, name: str, arguments: str) -> str:
        """The JSON result of one call; errors are results too, so the model can recover."""
        tool = registry.find(registry.CHAT, name)
        if tool is None:
            return json.dumps({"error": f"unknown tool {name[:100]!r}; known: {', '.join(sorted(TOOL_NAMES))}"})
        try:
            return bounded(self._run(tool, _parsed(arguments)))
        except ToolArgumentError as exc:
            return json.dumps({"error": f"{name}: {exc}", **({"hint": exc.hint} if exc.hint else {})})
        except NotStored:
            return json.dumps({"error": NOT_STORED})
        except CoopError as exc:
            return json.dumps({"error": exc.message, "hint": exc.hint})
        except Exception as exc:  # a bug must not end the user's turn (or the REPL): the model gets an error
            log.warning("tool %s failed: %s: %s", name, type(exc).__name__, exc)
            return json.dumps({"error": f"{name} failed ({type(exc).__name__})"})

    def _run(self, tool: registry.Tool, raw: Any) -> Any:
        args = check_arguments(tool, raw)
        if tool.name == "memory_remember":
            return self._write(**args)
        if tool.name == "memory_forget":
            return self._forget(**args)
        reads: dict[str, Callable[..., dict[str, Any]]] = {
            "memory_search": self.toolbox.search, "memory_get": self.toolbox.get,
            "memory_timeline": self.toolbox.timeline}
        return reads[tool.name](**args)

    def _write(self, text: str, category: str | None = None, key: str | None = None) -> Any:
        if self.read_only:
            return READ_ONLY
        if not text.strip():
            raise ToolArgumentError("text is empty")
        over = self._count_change()
        if over:
            return over
        pending = self.toolbox.plan_remember(text, category, key)
        refused = self._confirmed(self.toolbox.change_question(pending))
        return refused or self.toolbox.apply(pending)

    def _forget(self, id: str, reason: str | None = None) -> Any:
        if self.read_only:
            return READ_ONLY
        item = self.toolbox.forget_target(id)
        over = self._count_change()
        if over:
            return over
        refused = self._confirmed(f"forget {item.ref} {quote(clip(item.text))}")  # the ref names it; a start shows it
        if refused:
            return refused
        why = "forgotten by the model" + (" with the user's confirmation" if self.confirm_changes else "")
        gone = self.toolbox.forget(item, why, reason)
        self.on_forget(gone)
        return {"forgotten": item.ref, "with_it": [trace.ref for trace in gone.traces]}

    def _count_change(self) -> dict[str, str] | None:
        if self.changes >= MAX_CHANGES_PER_TURN:
            return {"error": f"at most {MAX_CHANGES_PER_TURN} memory changes in one turn; nothing was done",
                    "hint": "ask the user to continue in the next message"}
        self.changes += 1
        return None

    def _confirmed(self, question: str) -> dict[str, str] | None:
        """None when the change may go ahead (or needs no asking: `question` empty); otherwise the error result
        that tells the model it may not."""
        if not self.confirm_changes or not question:
            return None
        if self.confirm is None:
            return {"error": f"refused: to {question} needs the user's confirmation, and it cannot be asked in this "
                             "session (not an interactive terminal); memory was not changed",
                    "hint": "tell the user; they can make the change themselves (/forget ID, /remember TEXT, "
                            "`coop memory forget ID`)"}
        try:
            allowed = bool(self.confirm(question))
        except (EOFError, KeyboardInterrupt):
            allowed = False
        if not allowed:
            return {"error": "the user declined; memory was not changed"}
        return None


def _parsed(raw: str) -> Any:
    """The model's JSON arguments, read within their limit."""
    if len(raw or "") > MAX_ARGUMENT_CHARS:
        raise ToolArgumentError(f"arguments longer than {MAX_ARGUMENT_CHARS} characters")
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from None
