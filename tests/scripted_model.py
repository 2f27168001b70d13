"""An in-process `ChatModel` for unit tests: answers from a script and records what it was sent, so a test of the
turn needs no HTTP server. (The scripted HTTP server in conftest.py stays for end-to-end tests through litellm.)

A script entry is a reply text, a dict with `content` and/or `tool_calls` ([{"name", "arguments"}]), an
exception to raise (e.g. a `ModelError` of some `ErrorKind`), or a callable taking the messages and returning
one of those.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from coop.model.llm import Delta, ToolCall


@dataclass
class ScriptedModel:
    name: str = "scripted/model"
    replies: list[Any] = field(default_factory=list)
    default: Any = "ok"
    completions: list[Any] = field(default_factory=list)
    completion_default: Any = '{"facts": []}'
    requests: list[dict[str, Any]] = field(default_factory=list)     # each stream call: messages and tools
    completion_requests: list[dict[str, Any]] = field(default_factory=list)

    def _next(self, queue: list[Any], default: Any, messages: list[dict[str, Any]]) -> Any:
        entry = queue.pop(0) if queue else default
        if callable(entry):
            entry = entry(messages)
        if isinstance(entry, BaseException):
            raise entry
        return {"content": entry} if isinstance(entry, str) else entry

    def stream(self, messages: list[dict[str, Any]], *,
               tools: list[dict[str, Any]] | None = None) -> Iterator[Delta]:
        self.requests.append({"messages": [dict(m) for m in messages], "tools": tools})
        reply = self._next(self.replies, self.default, messages)
        content = reply.get("content", "")
        for start in range(0, len(content), 7):
            yield Delta(text=content[start:start + 7])
        calls = [ToolCall(f"call_{i}", c["name"], c["arguments"]) for i, c in enumerate(reply.get("tool_calls", []))]
        yield Delta(tool_calls=calls, finish_reason="tool_calls" if calls else "stop")

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> str:
        self.completion_requests.append({"messages": [dict(m) for m in messages], "json_mode": json_mode})
        return str(self._next(self.completions, self.completion_default, messages).get("content", ""))

    def system_prompt(self, index: int = -1) -> str:
        return str(self.requests[index]["messages"][0]["content"])
