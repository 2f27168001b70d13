"""Memory tools the model may call: memory_search, memory_get, memory_timeline, memory_write.

Every call is checked before it runs: arguments must be a JSON object with only the known keys and the right
types, numbers are clamped to their bounds, and results are cut to `MAX_RESULT_CHARS`, so a model cannot flood
its own context or the database. A bad call gets a JSON error result (the model can correct itself); it never
raises into the turn. The tools only ever see the session's own `UserMemory`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from coop.errors import CoopError
from coop.memory.store import iso_time

if TYPE_CHECKING:
    from coop.memory.embed import Embedder
    from coop.memory.reconcile import FactWriter
    from coop.memory.store import Item, UserMemory

MAX_RESULT_CHARS = 6000
MAX_ITEM_CHARS = 600
MAX_ARGUMENT_CHARS = 4000

TOOL_SPECS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "memory_search",
        "description": "Search the user's long-term memory (facts, past messages, summaries) by meaning and words.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "limit": {"type": "integer", "description": "how many results, 1-20", "minimum": 1, "maximum": 20},
            "kind": {"type": "string", "enum": ["fact", "message", "summary"]}},
            "required": ["query"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "memory_get",
        "description": "Read one memory item in full by its id (f12, m345, s7).",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                       "required": ["id"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "memory_timeline",
        "description": "The messages around one past message (same session), to see its context.",
        "parameters": {"type": "object", "properties": {
            "id": {"type": "string", "description": "a message id such as m345"},
            "before": {"type": "integer", "minimum": 0, "maximum": 10},
            "after": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["id"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "memory_write",
        "description": "Remember a durable fact about the user (only what they said or clearly want kept).",
        "parameters": {"type": "object", "properties": {
            "text": {"type": "string", "description": "the fact, one sentence"},
            "category": {"type": "string"}, "key": {"type": "string"}},
            "required": ["text"], "additionalProperties": False}}},
]
TOOL_NAMES = {spec["function"]["name"] for spec in TOOL_SPECS}


class ToolArgumentError(ValueError):
    pass


def _args(raw: str, allowed: dict[str, type], required: tuple[str, ...]) -> dict[str, Any]:
    if len(raw or "") > MAX_ARGUMENT_CHARS:
        raise ToolArgumentError(f"arguments longer than {MAX_ARGUMENT_CHARS} characters")
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ToolArgumentError(f"unknown argument(s): {', '.join(unknown)}")
    for name in required:
        if name not in data:
            raise ToolArgumentError(f"missing argument: {name}")
    for name, value in data.items():
        want = allowed[name]
        if want is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ToolArgumentError(f"{name} must be an integer")
        if want is str and not isinstance(value, str):
            raise ToolArgumentError(f"{name} must be a string")
    return data


def _clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _item(item: "Item") -> dict[str, Any]:
    data: dict[str, Any] = {"id": item.ref, "kind": item.kind, "text": _clip(item.text),
                            "created_at": iso_time(item.created_at)}
    if item.kind == "message":
        data.update(role=item.role, session_id=item.session_id)
    if item.kind == "fact":
        data.update(category=item.category, key=item.key)
    return data


def _bounded(payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=False)
    if len(text) <= MAX_RESULT_CHARS:
        return text
    if isinstance(payload, dict) and isinstance(payload.get("results"), list):
        results = list(payload["results"])
        while results and len(json.dumps({**payload, "results": results}, ensure_ascii=False)) > MAX_RESULT_CHARS:
            results.pop()
        return json.dumps({**payload, "results": results, "truncated": True}, ensure_ascii=False)
    return json.dumps({"error": "result too large"})


@dataclass
class MemoryTools:
    """Runs the model's tool calls against one user's memory."""

    memory: "UserMemory"
    embedder: Callable[[], "Embedder | None"]
    writer: Callable[[], "FactWriter"]  # the one fact write pipeline
    floor: float = 0.655
    read_only: bool = False  # incognito: the model may read memory but not write it

    def run(self, name: str, arguments: str) -> str:
        """The JSON result of one call; errors are results too, so the model can recover."""
        handler = {"memory_search": self._search, "memory_get": self._get, "memory_timeline": self._timeline,
                   "memory_write": self._write}.get(name)
        if handler is None:
            return json.dumps({"error": f"unknown tool {name!r}; known: {', '.join(sorted(TOOL_NAMES))}"})
        try:
            return _bounded(handler(arguments))
        except ToolArgumentError as exc:
            return json.dumps({"error": f"{name}: {exc}"})
        except CoopError as exc:
            return json.dumps({"error": exc.message, "hint": exc.hint})

    def _search(self, raw: str) -> Any:
        from coop.memory.search import search

        args = _args(raw, {"query": str, "limit": int, "kind": str}, ("query",))
        limit = max(1, min(20, args.get("limit", 8)))
        kinds = (args["kind"],) if args.get("kind") else ("fact", "message", "summary")
        result = search(self.memory, args["query"][:2000], embedder=self.embedder(), limit=limit, kinds=kinds,
                        floor=self.floor)
        return {"results": [{**_item(hit.item), "score": round(hit.score, 4)} for hit in result.hits]}

    def _get(self, raw: str) -> Any:
        from coop.memory.store import parse_ref

        args = _args(raw, {"id": str}, ("id",))
        kind, number = parse_ref(args["id"])
        item = self.memory.get(kind, number)
        return {**_item(item), "text": _clip(item.text, 4000)}

    def _timeline(self, raw: str) -> Any:
        from coop.memory.store import parse_ref

        args = _args(raw, {"id": str, "before": int, "after": int}, ("id",))
        kind, number = parse_ref(args["id"])
        if kind != "message":
            raise ToolArgumentError("memory_timeline takes a message id (m...)")
        before = max(0, min(10, args.get("before", 3)))
        after = max(0, min(10, args.get("after", 3)))
        items = self.memory.around(number, before=before, after=after)
        return {"results": [_item(item) for item in items]}

    def _write(self, raw: str) -> Any:
        args = _args(raw, {"text": str, "category": str, "key": str}, ("text",))
        if self.read_only:
            return {"error": "memory is read-only in this session (incognito)"}
        from coop.memory.reconcile import Candidate

        result = self.writer().write(Candidate(args["text"][:1000], category=args.get("category") or "general",
                                               key=args.get("key"), importance=0.7, source="model"))
        if result is None:
            return {"error": "not stored (the user forgot this, or it is not allowed as an instruction)"}
        return {"id": f"f{result.fact_id}", "action": result.action}
