"""Readers for conversation exports: ChatGPT's and Claude's `conversations.json` (coop's own JSON Lines are read
by `coop_format.py`).

Each reader turns a file into `ImportedConversation`s (a session with its messages) and `Problem`s (a record
that could not be used, with where it is), one conversation at a time: the top-level JSON array is streamed
element by element (`jsonstream.py`: one bounded record in memory at a time, too large or too deeply nested
records skipped and reported), never loaded whole. ZIP archives (as ChatGPT and Claude deliver them) are read in
place (`source.py`).

ChatGPT: each conversation has a `mapping` tree of nodes; edits and regenerations make branches, and the one the
user saw last ends at `current_node`, so we walk from there up through `parent` links and reverse (without a
`current_node`, down from the root through each node's first child). A loop in either walk is reported and the
branch is cut where it closes. Nodes without a message, hidden system scaffolding, empty messages and non-text
parts (images, files) are skipped or reduced to a marker. A message without a usable id (none, not a string,
or one already used in its conversation) gets one derived from its conversation, its node and its text, so
importing the file again still adds nothing. Claude: `chat_messages` in order, `sender` human/assistant, text
from `text` or the `content` blocks, attachments kept as their extracted text.

Times: a time that is absent, unreadable or outside 1970..2200 (`MIN_TIME`, `MAX_TIME`; -1e20, 9e99 or an
infinity would break every later date) is not used. A message without a usable time takes the time of the
message before it (the conversation's start for the first); a conversation without a usable start takes its first
message's time, without a usable end its last message's. Times that were there but unusable are reported once per
conversation; the messages are imported.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from coop.memory.transfer.jsonstream import BadRecord, iter_json_array
from coop.memory.transfer.source import Source, detect_format

__all__ = ["FORMATS", "ImportedConversation", "ImportedMessage", "Problem", "Source", "detect_format",
           "iter_json_array", "read_conversations", "to_timestamp"]

MAX_ATTACHMENT_CHARS = 20_000
MAX_ID_CHARS = 200
MAX_TITLE_CHARS = 1000
MIN_TIME = 0.0  # 1970-01-01 UTC
MAX_TIME = 7_258_118_400.0  # 2200-01-01 UTC
FORMATS = ("coop", "chatgpt", "claude")


@dataclass
class ImportedMessage:
    external_id: str
    role: str
    content: str
    created_at: float | None
    tool_name: str | None = None
    importance: float | None = None
    consolidated_at: float | None = None


@dataclass
class ImportedConversation:
    external_id: str
    title: str | None
    started_at: float | None
    ended_at: float | None
    messages: list[ImportedMessage] = field(default_factory=list)
    where: str = ""


@dataclass(frozen=True)
class Problem:
    where: str
    reason: str


def to_timestamp(value: Any) -> float | None:
    """Unix seconds from a number or an ISO 8601 string; None when absent, unreadable or outside 1970..2200."""
    if value is None or isinstance(value, bool):
        return None
    seconds: float | None = None
    if isinstance(value, (int, float)):
        seconds = float(value) if not isinstance(value, int) or abs(value) < 10**20 else None
    elif isinstance(value, str) and value.strip() and len(value) < 100:
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        seconds = parsed.timestamp()
    if seconds is None or not math.isfinite(seconds) or not MIN_TIME <= seconds <= MAX_TIME:
        return None
    return seconds


def short(value: Any, limit: int = 60) -> str:
    """A value as it may appear in a one-line problem: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def label(value: Any, limit: int = 60) -> str:
    """An id as it may appear in where a problem is: a string as it is, anything else as its repr; cut short."""
    return value[:limit] if isinstance(value, str) else short(value, limit)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _usable_id(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text if text and len(text) <= MAX_ID_CHARS else None


def _derived_id(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, default=repr).encode("utf-8", "surrogatepass")).hexdigest()[:20]


class _Times:
    """A conversation's times, and how many present ones could not be used (reported once)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.bad: list[str] = []
        self.bad_messages = 0

    def of(self, value: Any, name: str | None = None) -> float | None:
        seconds = to_timestamp(value)
        if seconds is None and value is not None and value != "":
            if name is None:
                self.bad_messages += 1
            else:
                self.bad.append(name)
        return seconds

    def problems(self) -> list[Problem]:
        found = []
        if self.bad:
            verb = "is not a time" if len(self.bad) == 1 else "are not times"
            found.append(Problem(self.where, f"{' and '.join(self.bad)} {verb} in 1970..2200: its messages' "
                                             "times are used instead"))
        if self.bad_messages:
            count = "1 message has" if self.bad_messages == 1 else f"{self.bad_messages} messages have"
            found.append(Problem(self.where, f"{count} no time in 1970..2200: each takes the time of the message "
                                             "before it (the first, the conversation's start)"))
        return found


def _where(index: int, title: str | None) -> str:
    return f"conversation {index + 1}" + (f" ({short(title)})" if title else "")


# -- ChatGPT ----------------------------------------------------------------------------------------------------


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = _dict(message.get("content"))
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        pieces = []
        parts = content.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                label = part.get("content_type")
                label = label if isinstance(label, str) and len(label) <= 60 else "attachment"
                pieces.append(f"[{label.replace('_asset_pointer', '')}]")
        return "\n".join(p for p in pieces if p).strip()
    if kind == "code":
        text = content.get("text")
        return text.strip() if isinstance(text, str) else ""
    if kind in ("execution_output", "tether_quote", "tether_browsing_display"):
        text = content.get("text") or content.get("result")
        return text.strip() if isinstance(text, str) else ""
    return ""


def _chatgpt_branch(mapping: dict[str, Any], current: Any, where: str) -> tuple[list[tuple[str, dict[str, Any]]],
                                                                                list[Problem]]:
    """The nodes from the root to the leaf the user saw last, as (node key, node); loops are cut and reported."""
    problems: list[Problem] = []
    node_id = current if isinstance(current, str) and current in mapping else None
    if node_id is None:  # no current node: follow the first child from the root
        roots = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")]
        node_id = roots[0] if roots else None
        walked = set()
        while node_id is not None:
            walked.add(node_id)
            children = _dict(mapping.get(node_id)).get("children")
            child = children[0] if isinstance(children, list) and children else None
            if not isinstance(child, str) or child not in mapping:
                break
            if child in walked:
                problems.append(Problem(f"{where}, node {label(child)}", "the children form a loop: the branch "
                                                                         "ends before it"))
                break
            node_id = child
    chain: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            problems.append(Problem(f"{where}, node {label(node_id)}", "the parent links form a loop: the branch "
                                                                       "starts after it"))
            break
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            problems.append(Problem(f"{where}, node {label(node_id)}", "not an object: skipped"))
            break
        chain.append((node_id, node))
        node_id = node.get("parent")
    chain.reverse()
    return chain, problems


def _chatgpt_conversation(raw: dict[str, Any], index: int) -> tuple[ImportedConversation | None, list[Problem]]:
    raw_title = raw.get("title")
    title = raw_title[:MAX_TITLE_CHARS] if isinstance(raw_title, str) else None
    where = _where(index, title)
    mapping = raw.get("mapping")
    conversation_id = _usable_id(raw.get("conversation_id")) or _usable_id(raw.get("id"))
    if not isinstance(mapping, dict) or not conversation_id:
        return None, [Problem(where, "no mapping or id: skipped")]
    chain, problems = _chatgpt_branch(mapping, raw.get("current_node"), where)
    times = _Times(where)
    conversation = ImportedConversation(f"chatgpt:{conversation_id}", title, times.of(raw.get("create_time"),
                                                                                      "create_time"),
                                        times.of(raw.get("update_time"), "update_time"), where=where)
    used: set[str] = set()
    for node_key, node in chain:
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        author = _dict(message.get("author"))
        role = author.get("role")
        text = _chatgpt_text(message)
        if role == "system" and (_dict(message.get("metadata")).get("is_visually_hidden_from_conversation")
                                 or not text):
            continue
        if role not in ("user", "assistant", "tool", "system"):
            problems.append(Problem(f"{where}, message {label(message.get('id'))}",
                                    f"unknown role {short(role, 30)}: skipped"))
            continue
        if not text:
            continue  # empty, or a part type with no text (an image alone, a hidden step)
        identifier = next((i for i in (_usable_id(message.get("id")), _usable_id(node.get("id")))
                           if i is not None and i not in used), None)
        if identifier is None:
            identifier = f"{conversation_id}:{_derived_id(node_key, role, text)}"
        used.add(identifier)
        name = author.get("name")
        conversation.messages.append(ImportedMessage(
            f"chatgpt:{identifier}", role, text, times.of(message.get("create_time")),
            tool_name=name[:200] if role == "tool" and isinstance(name, str) else None))
    return conversation, problems + times.problems()


# -- Claude -----------------------------------------------------------------------------------------------------


def _claude_text(message: dict[str, Any]) -> str:
    raw_text = message.get("text")
    text = raw_text if isinstance(raw_text, str) else ""
    if not text.strip():
        blocks = message.get("content")
        text = "\n".join(b["text"] for b in (blocks if isinstance(blocks, list) else [])
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    pieces = [text.strip()] if text.strip() else []
    attachments = message.get("attachments")
    for attachment in attachments if isinstance(attachments, list) else []:
        if not isinstance(attachment, dict):
            continue
        name = attachment.get("file_name")
        name = name[:200] if isinstance(name, str) and name else "attachment"
        extracted = attachment.get("extracted_content")
        body = f"\n{extracted[:MAX_ATTACHMENT_CHARS]}" if isinstance(extracted, str) and extracted else ""
        pieces.append(f"[attachment: {name}]{body}")
    files = message.get("files")
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict) and isinstance(item.get("file_name"), str) and item["file_name"]:
            pieces.append(f"[file: {item['file_name'][:200]}]")
    return "\n\n".join(pieces).strip()


_CLAUDE_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _claude_conversation(raw: dict[str, Any], index: int) -> tuple[ImportedConversation | None, list[Problem]]:
    raw_title = raw.get("name")
    title = raw_title[:MAX_TITLE_CHARS] if isinstance(raw_title, str) else None
    where = _where(index, title)
    messages = raw.get("chat_messages")
    conversation_id = _usable_id(raw.get("uuid"))
    if not conversation_id or not isinstance(messages, list):
        return None, [Problem(where, "no uuid or chat_messages: skipped")]
    times = _Times(where)
    conversation = ImportedConversation(f"claude:{conversation_id}", title or None,
                                        times.of(raw.get("created_at"), "created_at"),
                                        times.of(raw.get("updated_at"), "updated_at"), where=where)
    problems = []
    used: set[str] = set()
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(Problem(f"{where}, message {position + 1}", "not an object: skipped"))
            continue
        sender = message.get("sender")
        role = _CLAUDE_ROLES.get(sender) if isinstance(sender, str) else None
        if role is None:
            problems.append(Problem(f"{where}, message {label(message.get('uuid', position + 1))}",
                                    f"unknown sender {short(sender, 30)}: skipped"))
            continue
        text = _claude_text(message)
        if not text:
            continue
        identifier = _usable_id(message.get("uuid"))
        if identifier is None or identifier in used:
            identifier = f"{conversation_id}:{position}"
        used.add(identifier)
        conversation.messages.append(ImportedMessage(f"claude:{identifier}", role, text,
                                                     times.of(message.get("created_at"))))
    return conversation, problems + times.problems()


Parser = Callable[[dict[str, Any], int], tuple[ImportedConversation | None, list[Problem]]]


def read_conversations(source: Source, fmt: str, name: str = "the file") -> Iterator[ImportedConversation | Problem]:
    """ChatGPT or Claude conversations, one at a time, with problems interleaved where they occur."""
    parse: Parser = _chatgpt_conversation if fmt == "chatgpt" else _claude_conversation
    index = -1
    try:
        for index, raw in enumerate(iter_json_array(source.text)):
            if isinstance(raw, BadRecord):
                yield Problem(f"conversation {index + 1}", raw.reason)
                continue
            if not isinstance(raw, dict):
                yield Problem(f"conversation {index + 1}", "not an object: skipped")
                continue
            try:
                conversation, problems = parse(raw, index)
            except Exception as exc:  # one odd record never stops the import
                yield Problem(f"conversation {index + 1}",
                              f"unreadable ({type(exc).__name__}: {short(str(exc), 200)}): skipped")
                continue
            yield from problems
            if conversation is not None:
                yield conversation
    except (ValueError, OSError) as exc:
        after = f"after conversation {index + 1}" if index >= 0 else "at its start"
        yield Problem(name, f"cannot be read {after}: {exc}; the conversations before it were imported")
