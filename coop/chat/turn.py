"""The model's part of a turn (steps 3-6 of session.py's docstring): the user's message committed before the model
is called, the reply streamed (tool calls run between rounds, native or written as text), committed when complete
or marked when it stopped short, and the exchange handed to the background to be learned from."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from coop.chat import textcalls
from coop.chat.toolrun import run_calls
from coop.chat.tools import TOOL_NAMES, TOOL_SPECS
from coop.errors import CoopError, ErrorKind, ModelError
from coop.memory.retrieval.context import HistoryMessage, Prompt
from coop.model import llm, reply_limit

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 4
INTERRUPTED_MARK = " [interrupted]"
INCOMPLETE_MARK = " [incomplete]"


@dataclass
class TurnResult:
    reply: str
    prompt: Prompt | None = None
    interrupted: bool = False
    incomplete: str | None = None  # why the reply stopped short (stored with INCOMPLETE_MARK), when it did
    error: CoopError | None = None
    user_message_id: int | None = None
    reply_message_id: int | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def run_turn(session: Any, text: str, model: llm.ChatModel, on_text: Callable[[str], None]) -> TurnResult:
    """One turn of `session` (a ChatSession) with `model`. Model failures come back in `TurnResult.error`; Ctrl-C
    keeps the partial reply (marked) and returns with `interrupted`."""
    prompt = session.prepare(text)
    user_id = session.said("user", text)
    if user_id is not None and session.session_id is not None and session.working.anchor is None:
        session.memory.sessions.set_title(session.session_id, " ".join(text.split()))  # cut there, after masking
    session.working.add(HistoryMessage("user", text, user_id))
    if user_id is not None:
        _touch_recalled(session, prompt)
    result = TurnResult(reply="", prompt=prompt, user_message_id=user_id)
    session.tools.start_turn()
    messages = list(prompt.messages)
    parts: list[str] = []
    started = time.perf_counter()
    first_token: float | None = None
    try:
        for _ in range(MAX_TOOL_ROUNDS + 1):
            if session.tools_enabled is None:
                session.tools_enabled = session.config.chat.tools and session.can_call_tools()
            tools = TOOL_SPECS if session.tools_enabled else None
            calls: list[llm.ToolCall] = []
            finish: str | None = None
            gate = textcalls.TextGate(on_text)  # a call written as text is never shown as the answer
            for delta in _stream(session, model, messages, tools):
                if delta.text:
                    if first_token is None:
                        first_token = time.perf_counter()
                    parts.append(delta.text)
                    (gate.feed if tools else on_text)(delta.text)
                calls.extend(delta.tool_calls)
                finish = delta.finish_reason
            native = bool(calls)
            if tools and not native:  # a model without native tool calling writes the call in its text
                text, calls = textcalls.parse_calls("".join(parts), TOOL_NAMES)
                parts = [text] if calls else parts
            if (native or not calls) and gate.release(TOOL_NAMES):  # an unreadable call: kept as its note
                parts = [gate.emitted]
            if calls:
                session.tool_support.set(session.model_name, "native" if native else "text")
            if not calls:
                result.incomplete = llm.stopped_short(finish)
                break
            messages += run_calls(session, calls, "".join(parts), result)
            parts = []  # text before a tool call was kept with the call's message
        else:
            log.warning("the model kept calling tools; stopped after %d rounds", MAX_TOOL_ROUNDS)
    except KeyboardInterrupt:
        result.interrupted = True
    except ModelError as exc:
        result.error = exc
        if parts:  # the model failed mid-reply: what came is kept, marked
            result.incomplete = "the model failed mid-reply"
    reply = "".join(parts)
    session.tracer.event("model", model=session.model_name,
                         latency_ms=round((time.perf_counter() - started) * 1000, 1),
                         first_token_ms=None if first_token is None else round((first_token - started) * 1000, 1),
                         reply_chars=len(reply), interrupted=result.interrupted,
                         error=type(result.error).__name__ if result.error else None,
                         tool_calls=len(result.tool_calls))
    if result.interrupted and reply:
        reply += INTERRUPTED_MARK
    elif result.incomplete and reply:
        reply += reply_limit.mark_for(result.incomplete)  # [incomplete], or [truncated] at the limit
    if reply.strip():
        result.reply_message_id = session.said("assistant", reply)
        session.working.add(HistoryMessage("assistant", reply, result.reply_message_id))
    result.reply = reply
    if user_id is not None:
        session.learn(user_id, result.reply_message_id)
    return result


def _stream(session: Any, model: llm.ChatModel, messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None) -> Iterator[llm.Delta]:
    """Stream one model call; a model that refuses tools is asked again without them, once per session."""
    try:
        yield from model.stream(messages, tools=tools)
    except ModelError as exc:
        if tools and exc.kind is ErrorKind.TOOLS_UNSUPPORTED:
            session.tools_enabled = False
            session.tool_support.set(session.model_name, "none")
            yield from model.stream(messages, tools=None)
        else:
            raise


def _touch_recalled(session: Any, prompt: Prompt) -> None:
    """Mark recalled facts as used now: retention archives by last use, not by age."""
    ids = [r.item.item_id for r in prompt.recalled if r.item.kind == "fact"]
    if ids:
        session.memory.facts.touch(ids)
