"""Running the tool calls of one model reply (native, or written as text: `textcalls.py`): each call and its
result are stored as messages, kept in working memory and returned for the next model call."""

from __future__ import annotations

import json
import logging
from typing import Any

from coop.memory.retrieval.context import HistoryMessage
from coop.memory.tools.registry import MAX_ARGUMENT_CHARS
from coop.model.llm import ToolCall

log = logging.getLogger(__name__)

MAX_CALLS_PER_ROUND = 8  # tool calls run from one model reply; the rest are dropped (and logged)


def run_calls(session: Any, calls: list[ToolCall], text: str, result: Any) -> list[dict[str, Any]]:
    """Run the model's tool calls, store the call and each result as messages, and return them for the
    next model call. At most `MAX_CALLS_PER_ROUND` calls of one reply are run (and kept); a call's name and
    arguments are kept at most `MAX_ARGUMENT_CHARS` long (longer arguments are refused by the tool anyway)."""
    if len(calls) > MAX_CALLS_PER_ROUND:
        log.warning("the model asked for %d tool calls in one reply; only %d run", len(calls), MAX_CALLS_PER_ROUND)
        calls = calls[:MAX_CALLS_PER_ROUND]
    call_dicts: list[dict[str, Any]] = [
        {"id": (c.id or f"call_{i}")[:100], "type": "function",
         "function": {"name": c.name[:100], "arguments": c.arguments[:MAX_ARGUMENT_CHARS + 1]}}
        for i, c in enumerate(calls)]
    added: list[dict[str, Any]] = [{"role": "assistant", "content": text, "tool_calls": call_dicts}]
    assistant_id = session._commit("assistant", text, tool_calls=json.dumps(call_dicts))
    session.working.add(HistoryMessage("assistant", text, assistant_id, tool_calls=call_dicts))
    for call, spec in zip(calls, call_dicts):
        output = session.tools.run(call.name, call.arguments)
        name = spec["function"]["name"]
        result.tool_calls.append({"name": name, "arguments": spec["function"]["arguments"], "result": output})
        session.tracer.event("tool", tool=name, result_chars=len(output))
        tool_id = session._commit("tool", output, tool_name=name, tool_call_id=spec["id"])
        session.working.add(HistoryMessage("tool", output, tool_id, tool_call_id=spec["id"], name=name))
        added.append({"role": "tool", "tool_call_id": spec["id"], "name": name, "content": output})
    return added
