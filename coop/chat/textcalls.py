"""Tool calls written as text, by models without native tool calling.

A local server without native tool calling (llama-cpp-python's, many Ollama and LM Studio models) renders the
tool specs into the prompt, and the model answers with the call as text: Hermes/Qwen `<tool_call>{"name": ...,
"arguments": {...}}</tool_call>`, `<tools>...</tools>`, a JSON code fence, or the bare JSON object (and a
`<tool_response>` block, a tool's result echoed back, is never shown either). Printed as
it came, the user would see the raw call as the answer; so:
- `parse_calls` finds such calls of the tools coop offered (any other JSON in a reply stays text) and returns the
  reply's text without them, and the calls, which the turn runs like native ones;
- `TextGate` holds back streamed text that may be the start of such a call until it is clear that it is not
  (then it is shown at once) or the reply ends (then the turn decides);
- `ToolSupport` remembers per model how it calls tools (`native`, `text`, or `none` when the provider refuses
  tools), in `$COOP_HOME/model-tools.json` like the JSON modes: a model remembered as `none` is not offered tools.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection
from typing import Any

from coop.model.json_modes import ModeMemory
from coop.model.llm import ToolCall

TOOLS_FILE = "model-tools.json"
SUPPORT = ("native", "text", "none")
_TAGGED = re.compile(r"<(tool_call|tools|function_call|functioncall|tool_response)>\s*(.*?)\s*(?:</\1>|$)",
                     re.DOTALL | re.IGNORECASE)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*(\{.*?\})\s*```", re.DOTALL)
_MARKERS = ("<tool_call>", "<tools>", "<function_call>", "<functioncall>", "<tool_response>")
_HOLD_FROM = _MARKERS + ("```json", "```tool", "```\n{")  # from here on, the rest of a reply may be a call
_OPENINGS = ("```json", "```tool", "```\n{", "{", "[{", "[\n") + _MARKERS  # a reply that opens so may be a call


def _calls_in(payload: Any, names: Collection[str]) -> list[ToolCall]:
    """The calls of known tools in a parsed JSON value: an object with a name and arguments, or a list of them."""
    items = payload if isinstance(payload, list) else [payload]
    calls = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("function"), dict):  # {"type": "function", "function": {...}}
            item = item["function"]
        name = item.get("name")
        arguments = item.get("arguments", item.get("parameters", {}))
        if not isinstance(name, str) or name not in names:
            continue
        if isinstance(arguments, str):  # JSON in a string, with what a small model adds after it cut off
            try:
                text = json.dumps(json.JSONDecoder().raw_decode(arguments.strip())[0], ensure_ascii=False)
            except json.JSONDecodeError:
                text = arguments
        else:
            text = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:12]}", name, text))
    return calls


def _json(text: str) -> Any:
    """The JSON in `text`, also when a small model left its closing braces off (Qwen2.5-Coder-1.5B did)."""
    from coop.model.jsonreply import ModelReplyError, parse_json_reply

    for closing in ("", "}", "}}", "]}", "}]"):
        try:
            return parse_json_reply(text.strip() + closing)
        except ModelReplyError:
            continue
    return None


_NAMED = re.compile(r'"name"\s*:\s*"([\w.-]+)"')


def unreadable_call(text: str, names: Collection[str]) -> str | None:
    """The tool a reply asks for in a form that could not be read (a call of a known tool, but not valid JSON)."""
    found = _NAMED.search(text)
    return found.group(1) if found and found.group(1) in names else None


def parse_calls(text: str, names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """The reply's text without the tool calls written in it, and those calls (only of tools in `names`)."""
    calls: list[ToolCall] = []

    def take(match: re.Match[str], body: str) -> str:
        found = _calls_in(_json(body), names)
        calls.extend(found)
        return "" if found else match.group(0)

    rest = _TAGGED.sub(lambda m: take(m, m.group(2)), text)
    rest = _FENCED.sub(lambda m: take(m, m.group(1)), rest)
    stripped = rest.strip()
    if stripped.startswith(("{", "[")):  # the whole reply is the call, bare
        found = _calls_in(_json(stripped), names)
        if found:
            calls.extend(found)
            rest = ""
    return (rest.strip() if calls else text), calls


class TextGate:
    """Streams text on to `emit`, except what may be a tool call written as text: a reply that opens like one (a
    tag, a fence, a JSON object) is held until it is clearly prose, and from a tag onwards everything is held.
    `release()` passes on what was held (the reply was no call after all)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.held = ""
        self.shown = 0
        self.emitted = ""
        self.holding_all = False

    def feed(self, text: str) -> None:
        self.held += text
        if self.holding_all:
            return
        if self.shown == 0:
            start = self.held.lstrip()
            if start.startswith(_OPENINGS):
                self.holding_all = True
                return
            if not start or any(m.startswith(start) for m in _OPENINGS):
                return  # it may still open like a call
        tag = min((i for i in (self.held.find(m) for m in _HOLD_FROM) if i >= 0), default=-1)
        if tag >= 0:
            self._show(self.held[:tag])
            self.held = self.held[tag:]
            self.holding_all = True
            return
        keep = next((n for n in range(min(len(self.held), 16), 0, -1)  # a marker may be arriving in pieces
                     if any(m.startswith(self.held[-n:]) for m in _HOLD_FROM)), 0)
        self._show(self.held[:len(self.held) - keep])
        self.held = self.held[len(self.held) - keep:]

    def _show(self, text: str) -> None:
        if text:
            self.shown += len(text)
            self.emitted += text
            self.emit(text)

    def release(self, names: Collection[str] = ()) -> bool:
        """The reply was no call of a known tool: what was held is shown, less any tagged call of a tool coop
        does not have (never shown raw); a call of a known tool that could not be read is named, not shown."""
        self.holding_all = False
        held, self.held = self.held, ""
        text = _TAGGED.sub("", held)
        tool = unreadable_call(text, names) if text.lstrip().startswith(_OPENINGS) else None
        if tool is not None:
            text = f"(the model asked for {tool} in a form coop could not read; ask again, or use --no-tools)"
        elif held and not text.strip() and not self.shown:  # a small model echoing a tool's result as its answer
            text, tool = "(the model answered with a tool's output only; ask again, or use --no-tools)", "echo"
        self._show(text if self.shown else text.lstrip())
        return tool is not None  # the reply is then what was shown (`emitted`), not the raw text


def tool_support(path: Any) -> ModeMemory:
    """How each model calls tools, remembered across runs (`native`, `text`, `none`)."""
    return ModeMemory(path, allowed=SUPPORT)
