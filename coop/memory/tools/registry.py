"""Every memory tool, defined once: its name, the description the model reads, its JSON argument schema (the
bounds a number is clamped to, its default, where a text is cut), whether it writes, and which front ends offer
it. The chat's tool specs (`chat_specs`) and the MCP server's tools (coop/mcp/server.py) are both made from
`TOOLS`, so a description or a bound changed here changes for every model that calls the tool.

The argument checks live here too (`check_arguments`): one JSON object of known keys of the right types, lone
surrogates and NUL refused, numbers clamped, defaults filled in. A text past its `maxLength` is cut (a search
query finds a little less; a category is cut where every writer cuts it), except a tool's `whole` arguments, the
text it stores: that is refused with the limit named, since a fact cut at its limit is a fact nobody wrote ("Never
share my address, except ...") and the host would believe all of it was kept. The chat runs them on the model's
JSON; MCP on the host's typed arguments, after the SDK's own type check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coop.memory.kinds import MAX_CATEGORY_CHARS, MAX_KEY_CHARS

MAX_RESULT_CHARS = 6000  # a tool's JSON result, at most
MAX_ITEM_CHARS = 600  # an item's text in a list of results
MAX_GET_CHARS = 4000  # an item's text read in full
MAX_ARGUMENT_CHARS = 4000  # the JSON arguments of one chat tool call
MAX_CHANGES_PER_TURN = 5  # memory_write and memory_forget calls carried out (or asked about) in one chat turn

CHAT, MCP = "chat", "mcp"
READ_ONLY_NOTE = ("This server is read-only: the call is refused. (Start it with `coop mcp --allow-writes` to let "
                  "the assistant change memory.) ")


@dataclass(frozen=True)
class Tool:
    """One memory tool. `chat_name`: what the chat's model calls it, where that differs (the chat's models and
    their stored conversations have called `memory_remember` `memory_write` from the start)."""

    name: str
    description: str
    parameters: dict[str, Any]
    writes: bool
    fronts: tuple[str, ...] = (CHAT, MCP)
    chat_name: str | None = None
    whole: tuple[str, ...] = ()  # arguments stored as given: past their maxLength refused, never cut

    def called(self, front: str) -> str:
        return self.chat_name or self.name if front == CHAT else self.name


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_ID = {"type": "string", "description": "an id: f12 (fact), m345 (message), s7 (summary)"}

TOOLS: tuple[Tool, ...] = (
    Tool("memory_search",
         "Search the user's long-term memory (facts, past messages from any session, summaries) by meaning and by "
         "words. Call it before answering anything that may depend on the user's past: their plans, people, "
         "preferences, earlier decisions. Returns items with ids and dates.",
         _object({"query": {"type": "string", "description": "what to look for", "maxLength": 2000},
                  "limit": {"type": "integer", "description": "how many results, 1-20", "minimum": 1, "maximum": 20,
                            "default": 8},
                  "kind": {"type": "string", "enum": ["fact", "message", "summary"]}}, "query"),
         writes=False),
    Tool("memory_get",
         "Read one memory item in full by its id (f12 fact, m345 message, s7 summary), e.g. a search result that "
         "was cut short.",
         _object({"id": _ID}, "id"), writes=False),
    Tool("memory_timeline",
         "The messages around one past message (same session), to see what was said before and after it. Takes a "
         "message id such as m345.",
         _object({"id": {"type": "string", "description": "a message id such as m345"},
                  "before": {"type": "integer", "minimum": 0, "maximum": 10, "default": 3},
                  "after": {"type": "integer", "minimum": 0, "maximum": 10, "default": 3}}, "id"),
         writes=False),
    Tool("memory_profile",
         "What is known about the user: their standing instructions and active facts, each with its id and since "
         "when it holds. Read it at the start of a conversation.",
         _object({}), writes=False, fronts=(MCP,)),  # the chat's prompt holds the profile already
    Tool("memory_context",
         "What coop would put in a prompt for a message now: the user's profile (the facts that describe them), "
         "the facts and past conversation relevant to the message, each with why it is there. Call it with the "
         "user's message before answering one that may depend on who they are or what they said before.",
         _object({"question": {"type": "string", "description": "the user's message", "maxLength": 4000}},
                 "question"),
         writes=False, fronts=(MCP,)),
    Tool("memory_remember",
         "Remember one durable fact about the user, in a sentence, only when they said it or clearly want it kept "
         "(\"remember that I'm vegetarian\"). Duplicates are merged; a new value for the same thing (same category "
         "and key) replaces the old one, which stays in its history.",
         _object({"text": {"type": "string", "description": "the fact, one sentence", "maxLength": 1000},
                  "category": {"type": "string", "maxLength": MAX_CATEGORY_CHARS},
                  "key": {"type": "string", "maxLength": MAX_KEY_CHARS}},
                 "text"),
         writes=True, chat_name="memory_write", whole=("text",)),
    Tool("memory_forget",
         "Forget (delete) one memory item by id, only when the user asked for it. A fact is forgotten with the "
         "messages and summaries that said it. The user confirms it first: without their yes nothing is deleted.",
         _object({"id": _ID, "reason": {"type": "string", "description": "why, in a few words", "maxLength": 200}},
                 "id"),
         writes=True),
    Tool("memory_record",
         "Record one exchange of this conversation (the user's message and your reply) in the user's memory, so "
         "coop can learn durable facts from it and recall it in later conversations. Call it after an exchange "
         "that told you something worth keeping about the user.",
         _object({"user_message": {"type": "string"}, "assistant_reply": {"type": "string"}},
                 "user_message", "assistant_reply"),
         writes=True, fronts=(MCP,)),  # the chat records its own turns
)


def tools_for(front: str) -> list[Tool]:
    return [tool for tool in TOOLS if front in tool.fronts]


def find(front: str, name: str) -> Tool | None:
    """The tool `name` as `front` calls it, or None."""
    return next((tool for tool in tools_for(front) if tool.called(front) == name), None)


def chat_specs() -> list[dict[str, Any]]:
    """The chat model's tool specs (OpenAI's function format, as litellm takes them)."""
    return [{"type": "function", "function": {"name": tool.called(CHAT), "description": tool.description,
                                              "parameters": tool.parameters}} for tool in tools_for(CHAT)]


def mcp_description(tool: Tool, *, allow_writes: bool) -> str:
    """A write tool of a read-only server says so first: the host model then knows why it is refused."""
    return READ_ONLY_NOTE + tool.description if tool.writes and not allow_writes else tool.description


class ToolArgumentError(ValueError):
    """Arguments a model can correct: what is wrong, in a few words, and what to do instead when that helps."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def check_arguments(tool: Tool, data: Any) -> dict[str, Any]:
    """`data` checked against the tool's schema: known keys, required ones present, the right types, text that
    is valid Unicode without NUL; then numbers clamped to their bounds and defaults filled in."""
    if not isinstance(data, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    properties: dict[str, Any] = tool.parameters["properties"]
    unknown = sorted(set(data) - set(properties))
    if unknown:
        raise ToolArgumentError(f"unknown argument(s): {', '.join(unknown)}")
    for name in tool.parameters["required"]:
        if name not in data:
            raise ToolArgumentError(f"missing argument: {name}")
    checked: dict[str, Any] = {}
    for name, schema in properties.items():
        if name not in data:
            if "default" in schema:
                checked[name] = schema["default"]
            continue
        value: Any = data[name]
        if schema["type"] == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ToolArgumentError(f"{name} must be an integer")
            value = max(schema.get("minimum", value), min(schema.get("maximum", value), value))
        elif not isinstance(value, str):  # the only other type a tool takes
            raise ToolArgumentError(f"{name} must be a string")
        else:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # JSON allows lone surrogates ("\ud800"); nothing downstream does
                raise ToolArgumentError(f"{name} is not valid Unicode text") from None
            if "\x00" in value:
                raise ToolArgumentError(f"{name} contains a NUL character")
            limit = schema.get("maxLength", len(value))
            if name in tool.whole and len(value) > limit:
                raise ToolArgumentError(f"{name} is too long ({len(value):,} characters; the limit is {limit:,}); "
                                        "memory was not changed",
                                        hint=f"give {name} in at most {limit:,} characters"
                                             + (f" ({schema['description']})" if "description" in schema else ""))
            value = value[:limit]  # cut, not refused: the model said enough
        checked[name] = value
    return checked
