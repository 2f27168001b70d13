"""The JSON the fast model is asked for (the notes of a message, the one question about changes, a summary): reading
it out of a reply, and telling a usable reply from prose or an echo of the schema. Shared by the memory engine,
which asks, and the model client (`coop.model.json_modes`), which picks how to ask (a JSON schema, JSON mode, or the
prompt alone) and falls back when a model cannot do better; neither imports the other."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypedDict


class ModelReplyError(ValueError):
    """The model's reply held no usable JSON."""


class Schema(TypedDict):
    """A named JSON Schema, as OpenAI-style `response_format: {"type": "json_schema", "json_schema": ...}` takes."""

    name: str
    schema: dict[str, Any]


def parse_json_reply(text: str) -> Any:
    """The first JSON value in a model reply: code fences and text before or after it are tolerated, and so are
    what small models add to JSON: `//` and `/* */` comments (`"importance": 0.9 // high conf`) and trailing
    commas."""
    if not isinstance(text, str) or not text.strip():
        raise ModelReplyError("empty reply")
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    body = fenced.group(1) if fenced else text
    for candidate in (body, lenient(body)):
        value = _first_value(candidate)
        if value is not None:
            return value[0]
    raise ModelReplyError(f"no JSON in a reply of {len(text):,} characters")  # the reply is not quoted: logs say this


def _first_value(body: str) -> tuple[Any] | None:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", body):
        try:
            value, _ = decoder.raw_decode(body, match.start())
            return (value,)
        except json.JSONDecodeError:
            continue
    return None


_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?(?:\*/|$)', re.DOTALL)
_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])')


def lenient(body: str) -> str:
    """`body` with comments outside strings removed and commas before a closing bracket dropped."""
    without = _STRING_OR_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else " ", body)
    return _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), without)


def usable(text: str, schema: Schema) -> bool:
    """Whether `text` holds JSON with the schema's required top-level keys: prose, an empty reply and an echo of
    the schema itself (`{"type": "object", "properties": ...}`, which small models return) are not usable."""
    try:
        data = parse_json_reply(text)
    except ModelReplyError:
        return False
    if not isinstance(data, dict):
        return False
    return all(key in data for key in schema["schema"].get("required", []))


def ask(complete: Callable[..., str], messages: list[dict[str, Any]], schema: Schema) -> str:
    """The reply of `complete` to `messages`, asking for `schema` when the callable takes one (the model client's
    does; a test's plain function need not)."""
    if getattr(complete, "takes_schema", False):
        return complete(messages, schema=schema)
    return complete(messages)
