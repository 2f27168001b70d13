"""An in-process `ChatModel` for unit tests: answers from a script and records what it was sent, so a test of the
turn, of memory growth or of the tools needs no HTTP server. (The scripted HTTP server in conftest.py stays for the
tests whose subject is the HTTP path through litellm: the model client, errors and retries, streaming, processes.)

A script entry is a reply text, a dict with `content` and/or `tool_calls` ([{"name", "arguments"}]) and optionally
`sleep` (seconds before answering), an exception to raise (e.g. a `ModelError` of some `ErrorKind`), or a callable
taking the messages and returning one of those. An entry only the HTTP server can play (an HTTP status, a cut or
malformed stream) fails the test at once: such a test belongs on the server.

The same object is the chat model (`stream`, taking `replies`) and the fast model the memory jobs call (`__call__`,
the engine's `complete(messages, schema=...)`, taking `completions`), and it answers to the scripted server's names
(`default_reply`, `background_replies`, `background_default`, `chat_requests()`, `background_requests()`,
`system_prompt()`), so a test reads the same on either. The `scripted` fixture (conftest.py) makes one and
`scripted.session(memory, config)` a `ChatSession` on it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from coop.model.llm import Delta, ToolCall

HTTP_ONLY = ("status", "malformed", "empty", "cut", "error_midway", "chunk_delay", "finish")


@dataclass
class ScriptedModel:
    name: str = "scripted/model"
    replies: list[Any] = field(default_factory=list)
    default: Any = "ok"
    completions: list[Any] = field(default_factory=list)
    completion_default: Any = '{"notes": []}'
    requests: list[dict[str, Any]] = field(default_factory=list)     # each stream call: messages and tools
    completion_requests: list[dict[str, Any]] = field(default_factory=list)
    # A callable entry is given {"messages", "tools"} (the scripted server's request body) instead of the messages.
    body_callables: bool = False
    api_base: str = "http://127.0.0.1:9/v1"  # never called: a config that names a server is still valid
    takes_schema = True  # the memory engine passes the JSON schema it wants to `__call__`

    def _next(self, queue: list[Any], default: Any, messages: list[dict[str, Any]],
              tools: list[dict[str, Any]] | None = None) -> Any:
        entry = queue.pop(0) if queue else default
        if callable(entry) and not isinstance(entry, BaseException):
            entry = entry({"messages": messages, "tools": tools} if self.body_callables else messages)
        if isinstance(entry, BaseException):
            raise entry
        entry = {"content": entry} if isinstance(entry, str) else entry
        played = [key for key in HTTP_ONLY if key in entry]
        assert not played, f"the scripted server plays {played}, not the in-process model"
        if entry.get("sleep"):
            time.sleep(entry["sleep"])
        return entry

    def stream(self, messages: list[dict[str, Any]], *,
               tools: list[dict[str, Any]] | None = None) -> Iterator[Delta]:
        self.requests.append({"messages": [dict(m) for m in messages], "tools": tools})
        reply = self._next(self.replies, self.default, messages, tools)
        content = reply.get("content", "")
        size = reply.get("chunk_size", 7)
        for start in range(0, len(content), size):
            yield Delta(text=content[start:start + size])
        calls = [ToolCall(f"call_{i}", c["name"], c["arguments"]) for i, c in enumerate(reply.get("tool_calls", []))]
        yield Delta(tool_calls=calls, finish_reason="tool_calls" if calls else "stop")

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> str:
        self.completion_requests.append({"messages": [dict(m) for m in messages], "json_mode": json_mode})
        return str(self._next(self.completions, self.completion_default, messages).get("content", ""))

    def __call__(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None = None) -> str:
        """The fast model as the memory engine calls it (extraction, reconciliation, summaries)."""
        self.completion_requests.append({"messages": [dict(m) for m in messages], "schema": schema})
        return str(self._next(self.completions, self.completion_default, messages).get("content", ""))

    def system_prompt(self, index: int = -1) -> str:
        return str(self.requests[index]["messages"][0]["content"])

    # --- the scripted server's names -------------------------------------------------------------------------

    @property
    def default_reply(self) -> Any:
        return self.default

    @default_reply.setter
    def default_reply(self, value: Any) -> None:
        self.default = value

    @property
    def background_replies(self) -> list[Any]:
        return self.completions

    @background_replies.setter
    def background_replies(self, value: list[Any]) -> None:
        self.completions = value

    @property
    def background_default(self) -> Any:
        return self.completion_default

    @background_default.setter
    def background_default(self, value: Any) -> None:
        self.completion_default = value

    def chat_requests(self) -> list[dict[str, Any]]:
        """What each turn sent the chat model: {"messages", "tools"}."""
        return self.requests

    def background_requests(self) -> list[dict[str, Any]]:
        """What the memory jobs sent the fast model: {"messages", "schema"}."""
        return self.completion_requests

    def session(self, memory: Any, config: Any, **kwargs: Any) -> Any:
        """A `ChatSession` whose chat model and fast model are this one (`/model NAME` switches to it too)."""
        from coop.chat.session import ChatSession
        from coop.memory.growth.jobs import MemoryJobs

        embedder = kwargs.pop("embedder")
        kwargs.setdefault("jobs", MemoryJobs(config, self, embedder))
        return ChatSession(memory, config, embedder=embedder, model=self, models=lambda name: self, **kwargs)


def session_on(model: Any, memory: Any, config: Any, **kwargs: Any) -> Any:
    """A `ChatSession` on `model`: the in-process `ScriptedModel` (chat and fast model), or the scripted HTTP server
    (`openai_server`, which `config` names as `model.api_base`), reached through litellm as in production."""
    if isinstance(model, ScriptedModel):
        return model.session(memory, config, **kwargs)
    from coop.chat.session import ChatSession

    return ChatSession(memory, config, **kwargs)


def said_in(content: str) -> str | None:
    """The user's message a pointing request carries (its clauses joined again), or None when `content` is not an
    extraction request (`tests/notes.py`)."""
    from tests.notes import said_in as listed

    return listed(content)
