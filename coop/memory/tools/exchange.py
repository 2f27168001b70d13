"""Recording an exchange, once for every front end: the chat's turns and an MCP host's `memory_record`.

A message is stored in the current session (started with the first one, titled by the user's words), weighed
when it is said rather than plumbing (`said`), marked with where it came from (an MCP host's account is
"host", and facts learned from it carry that source). After the exchange (`learn`) its messages are embedded
and, with a fast model and extraction on, an extraction job is recorded first (an exit before it runs leaves it
to the next start) and then handed to the background.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coop.errors import CoopError
from coop.memory.growth.importance import message_importance
from coop.memory.storage.items import MAX_MESSAGE_CHARS
from coop.memory.text import check_text
from coop.memory.tools.guard import NO_GUARD, Guard
from coop.memory.tools.registry import ToolArgumentError

if TYPE_CHECKING:
    from coop.memory.growth.jobs import MemoryJobs
    from coop.memory.storage.interface import UserStore

Submit = Callable[[str, Any], None]  # hands a named background job to the worker (or runs it inline)


@dataclass
class ExchangeRecorder:
    """Writes one session's messages for one user and starts what learns from them. `submit` None: no
    background jobs (a read-only or in-memory MCP server has no worker)."""

    memory: "UserStore"
    jobs: "MemoryJobs"
    submit: Submit | None
    origin: str | None = None
    session_id: int | None = None
    guard: Guard = NO_GUARD

    @property
    def learns(self) -> bool:
        """Whether facts are extracted from an exchange: a fast model is configured and extraction is on."""
        return self.jobs.complete is not None and self.jobs.config.memory.extraction.enabled

    def message(self, role: str, text: str, **fields: Any) -> int | None:
        """Store one message (a tool call, a tool result: `fields` as `memory.messages.add` takes them)."""
        with self.guard.database():
            if self.session_id is None:
                self.session_id = self.memory.sessions.start(" ".join(text.split())[:80] if role == "user" else None)
            return self.memory.messages.add(self.session_id, role, text, **fields)

    def said(self, role: str, text: str, **fields: Any) -> int | None:
        """A user's message or an assistant's reply: stored with its importance (growth/importance.py); `fields`
        as `memory.messages.add` takes them (a time it was said)."""
        importance = message_importance(role, text, self.jobs.config.memory.importance)
        if self.origin is not None:
            return self.message(role, text, importance=importance, origin=self.origin, **fields)
        return self.message(role, text, importance=importance, **fields)

    def learn(self, message_id: int | None = None, reply_id: int | None = None) -> None:
        """Embed what was added, then extract facts from the exchange (`message_id`: the user's message), both in
        the background. Without a message, only the embedding (what a crash or an offline embedder left)."""
        if self.submit is None:
            return
        self.submit("embed new messages", self.jobs.embedding(self.memory.user_id))
        if message_id is not None and self.learns:
            with self.guard.database():
                job_id = self.memory.jobs.record("extraction", session_id=self.session_id, message_id=message_id,
                                                reply_id=reply_id)
            self.submit("extract facts", self.jobs.extraction(self.memory.user_id, job_id))

    def exchange(self, user_message: str, assistant_reply: str) -> dict[str, Any]:
        """`memory_record`: both texts checked (none stored unless both are good), stored, and learned from. The
        session is the one this recorder began, or a new one if that was forgotten since."""
        texts = {}
        for name, value in (("user_message", user_message), ("assistant_reply", assistant_reply)):
            if not isinstance(value, str) or not value.strip():
                raise ToolArgumentError(f"{name} must be non-empty text")
            try:
                texts[name] = check_text(value, name, MAX_MESSAGE_CHARS)
            except CoopError as exc:
                raise ToolArgumentError(exc.message, hint=f"record a shorter account of the exchange (each text "
                                                          f"at most {MAX_MESSAGE_CHARS:,} characters)") from None
        with self.guard.database():
            if self.session_id is not None and not self.memory.sessions.exists(self.session_id):
                self.session_id = None
        user_id = self.said("user", texts["user_message"])
        reply_id = self.said("assistant", texts["assistant_reply"])
        self.learn(user_id, reply_id)
        return {"recorded": [f"m{user_id}", f"m{reply_id}"], "session_id": self.session_id,
                "learning": "facts are extracted in the background" if self.learns else
                "no fast model is configured: the exchange is kept and searchable, no facts are extracted"}
