"""Arguments of the wrong type, said in one line: the MCP SDK checks a call's arguments against the tool's
signature with pydantic before coop sees them, and would answer with pydantic's own report ("1 validation error for
memory_searchArguments ... [type=int_parsing, input_value='x', ...] For further information visit ..."). The host
model gets instead the argument's name and what it takes ("memory_search: limit takes a whole number, e.g. 8; it
was given text"), never the value it sent back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from pydantic import ValidationError

_TAKES = {"integer": "a whole number, e.g. 8", "number": "a number", "string": "text", "boolean": "true or false",
          "array": "a list", "object": "an object"}
_GIVEN = {str: "text", int: "a whole number", float: "a number", bool: "true or false", list: "a list",
          dict: "an object", type(None): "null"}


def _types(schema: dict[str, Any]) -> list[str]:
    if "type" in schema:
        return [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
    return [t for option in schema.get("anyOf", []) for t in _types(option) if t != "null"]


def describe(tool: str, schema: dict[str, Any], error: "ValidationError") -> str:
    """One line for the first argument that is wrong: its name and what it takes."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
    if first.get("type") == "missing":
        return f"{tool}: missing argument: {name}"
    if first.get("type") == "extra_forbidden":
        return f"{tool}: unknown argument: {name}"
    prop = schema.get("properties", {}).get(str(first.get("loc", ("",))[0]), {})
    takes = " or ".join(_TAKES.get(t, t) for t in _types(prop)) or "another value"
    given = _GIVEN.get(type(first.get("input")), "another kind of value")
    return f"{tool}: {name} takes {takes}; it was given {given}"


def plain_argument_errors(server: "MCPServer") -> None:
    """Make `server` answer a call with arguments of the wrong type with `describe`'s one line."""
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError

    call_tool = server.call_tool

    async def checked(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            tool = server._tool_manager.get_tool(name)
            raise ToolError(describe(name, tool.parameters if tool else {}, exc.__cause__)) from exc.__cause__

    server.call_tool = checked  # type: ignore[method-assign]
