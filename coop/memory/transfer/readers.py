"""Readers for conversation exports: coop's own JSON Lines, ChatGPT's and Claude's `conversations.json`.

Each reader turns a file into `ImportedConversation`s (a session with its messages) and `Problem`s (a record
that could not be used, with where it is), one conversation at a time: a multi-gigabyte export is streamed
element by element from its top-level JSON array, never loaded whole, so it is not held in memory twice (as text
and as objects). ZIP archives (as ChatGPT and Claude deliver them) are read in place.

ChatGPT: each conversation has a `mapping` tree of nodes; edits and regenerations make branches, and the one the
user saw last ends at `current_node`, so we walk from there up through `parent` links and reverse. Nodes without
a message, hidden system scaffolding, empty messages and non-text parts (images, files) are skipped or reduced to
a marker. Claude: `chat_messages` in order, `sender` human/assistant, text from `text` or the `content` blocks,
attachments kept as their extracted text.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

MAX_ATTACHMENT_CHARS = 20_000
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
    """Unix seconds from a number or an ISO 8601 string; None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.timestamp()
    return None


# -- streaming JSON ---------------------------------------------------------------------------------------------


def iter_json_array(stream: IO[str], chunk_size: int = 1 << 20) -> Iterator[Any]:
    """The elements of a top-level JSON array, decoded one at a time from a text stream."""
    decoder = json.JSONDecoder()
    buffer = ""
    position = 0
    eof = False

    def fill() -> bool:
        nonlocal buffer, position, eof
        chunk = stream.read(chunk_size)
        if not chunk:
            eof = True
            return False
        buffer = buffer[position:] + chunk
        position = 0
        return True

    def skip_space() -> None:
        nonlocal position
        while True:
            while position < len(buffer) and buffer[position] in " \t\r\n":
                position += 1
            if position < len(buffer) or not fill():
                return

    skip_space()
    if position >= len(buffer) or buffer[position] != "[":
        raise ValueError("the file is not a JSON array")
    position += 1
    while True:
        skip_space()
        if position >= len(buffer):
            raise ValueError("the JSON array is not closed (the file may be truncated)")
        if buffer[position] == "]":
            return
        if buffer[position] == ",":
            position += 1
            continue
        while True:
            try:
                value, end = decoder.raw_decode(buffer, position)
            except json.JSONDecodeError as exc:
                if eof or not fill():
                    raise ValueError(f"invalid JSON near character {exc.pos}: {exc.msg} "
                                     "(is the file truncated?)") from None
                continue
            # A number cut by the chunk boundary ("1." then "5"): read on before taking it.
            if (not eof and isinstance(value, (int, float)) and not isinstance(value, bool)
                    and (end == len(buffer) or buffer[end] in "0123456789.eE+-") and fill()):
                continue
            position = end
            yield value
            break


class Source:
    """An export opened for reading as text, with how far into it we are (for a progress bar).

    The position is that of the underlying bytes (the file, or the member inside a ZIP), so it runs from 0 to
    `size` whatever the text decoding does.
    """

    def __init__(self, path: Path) -> None:
        self._archive: zipfile.ZipFile | None = None
        if zipfile.is_zipfile(path):
            self._archive = zipfile.ZipFile(path)
            names = [n for n in self._archive.namelist() if n.endswith(("conversations.json", ".jsonl"))]
            if not names:
                self._archive.close()
                raise ValueError("the ZIP archive has no conversations.json")
            self.size = self._archive.getinfo(names[0]).file_size
            self._raw: IO[bytes] = self._archive.open(names[0])
        else:
            self.size = path.stat().st_size
            self._raw = open(path, "rb")  # noqa: SIM115 -- kept open for the Source's life; close() closes it
        self.text: IO[str] = io.TextIOWrapper(self._raw, encoding="utf-8", errors="replace", newline="")

    def position(self) -> int:
        try:
            return min(self._raw.tell(), self.size)
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.text.close()
        if self._archive is not None:
            self._archive.close()

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def detect_format(path: Path) -> str:
    """coop (JSON Lines with a coop header), chatgpt (`mapping` trees) or claude (`chat_messages`)."""
    with Source(path) as source:
        head = source.text.read(1 << 16)
    stripped = head.lstrip()
    if stripped.startswith("{"):
        first_line = stripped.splitlines()[0] if stripped else ""
        try:
            if json.loads(first_line).get("format") == "coop":
                return "coop"
        except (json.JSONDecodeError, AttributeError):
            pass
    if stripped.startswith("["):
        if '"mapping"' in head:
            return "chatgpt"
        if '"chat_messages"' in head:
            return "claude"
    raise ValueError("cannot tell the format: not a coop export, nor a ChatGPT or Claude conversations.json")


# -- ChatGPT ----------------------------------------------------------------------------------------------------


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        pieces = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                label = part.get("content_type", "attachment")
                pieces.append(f"[{label.replace('_asset_pointer', '')}]")
        return "\n".join(p for p in pieces if p).strip()
    if kind == "code":
        return str(content.get("text") or "").strip()
    if kind in ("execution_output", "tether_quote", "tether_browsing_display"):
        return str(content.get("text") or content.get("result") or "").strip()
    return ""


def _chatgpt_conversation(raw: dict[str, Any], index: int) -> tuple[ImportedConversation | None, list[Problem]]:
    title = raw.get("title") if isinstance(raw.get("title"), str) else None
    where = f"conversation {index + 1}" + (f" ({title!r})" if title else "")
    mapping = raw.get("mapping")
    conversation_id = raw.get("conversation_id") or raw.get("id")
    if not isinstance(mapping, dict) or not conversation_id:
        return None, [Problem(where, "no mapping or id: skipped")]
    problems: list[Problem] = []
    node_id = raw.get("current_node")
    if node_id not in mapping:  # no current node: follow the first child from the root
        roots = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("parent")]
        node_id = roots[0] if roots else None
        while node_id and mapping.get(node_id, {}).get("children"):
            node_id = mapping[node_id]["children"][0]
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            problems.append(Problem(f"{where}, node {node_id}", "not an object: skipped"))
            break
        chain.append(node)
        node_id = node.get("parent")
    conversation = ImportedConversation(f"chatgpt:{conversation_id}", title, to_timestamp(raw.get("create_time")),
                                        to_timestamp(raw.get("update_time")), where=where)
    for node in reversed(chain):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        if role == "system" and (metadata.get("is_visually_hidden_from_conversation") or not _chatgpt_text(message)):
            continue
        if role not in ("user", "assistant", "tool", "system"):
            problems.append(Problem(f"{where}, message {message.get('id')}", f"unknown role {role!r}: skipped"))
            continue
        text = _chatgpt_text(message)
        if not text:
            continue  # empty, or a part type with no text (an image alone, a hidden step)
        conversation.messages.append(ImportedMessage(
            f"chatgpt:{message.get('id') or node.get('id')}", role, text, to_timestamp(message.get("create_time")),
            tool_name=(message.get("author") or {}).get("name") if role == "tool" else None))
    return conversation, problems


# -- Claude -----------------------------------------------------------------------------------------------------


def _claude_text(message: dict[str, Any]) -> str:
    raw_text = message.get("text")
    text = raw_text if isinstance(raw_text, str) else ""
    if not text.strip():
        blocks = message.get("content") or []
        text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                         and isinstance(b.get("text"), str))
    pieces = [text.strip()] if text.strip() else []
    for attachment in message.get("attachments") or []:
        if not isinstance(attachment, dict):
            continue
        name = attachment.get("file_name") or "attachment"
        extracted = attachment.get("extracted_content")
        body = f"\n{str(extracted)[:MAX_ATTACHMENT_CHARS]}" if extracted else ""
        pieces.append(f"[attachment: {name}]{body}")
    for item in message.get("files") or []:
        if isinstance(item, dict) and item.get("file_name"):
            pieces.append(f"[file: {item['file_name']}]")
    return "\n\n".join(pieces).strip()


_CLAUDE_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _claude_conversation(raw: dict[str, Any], index: int) -> tuple[ImportedConversation | None, list[Problem]]:
    title = raw.get("name") if isinstance(raw.get("name"), str) else None
    where = f"conversation {index + 1}" + (f" ({title!r})" if title else "")
    messages = raw.get("chat_messages")
    if not raw.get("uuid") or not isinstance(messages, list):
        return None, [Problem(where, "no uuid or chat_messages: skipped")]
    conversation = ImportedConversation(f"claude:{raw['uuid']}", title or None, to_timestamp(raw.get("created_at")),
                                        to_timestamp(raw.get("updated_at")), where=where)
    problems = []
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(Problem(f"{where}, message {position + 1}", "not an object: skipped"))
            continue
        sender = message.get("sender")
        role = _CLAUDE_ROLES.get(sender) if isinstance(sender, str) else None
        if role is None:
            problems.append(Problem(f"{where}, message {message.get('uuid', position + 1)}",
                                    f"unknown sender {message.get('sender')!r}: skipped"))
            continue
        text = _claude_text(message)
        if not text:
            continue
        identifier = message.get("uuid") or f"{raw['uuid']}:{position}"
        conversation.messages.append(ImportedMessage(f"claude:{identifier}", role, text,
                                                     to_timestamp(message.get("created_at"))))
    return conversation, problems


def read_conversations(source: Source, fmt: str, name: str = "the file") -> Iterator[ImportedConversation | Problem]:
    """ChatGPT or Claude conversations, one at a time, with problems interleaved where they occur."""
    parse = _chatgpt_conversation if fmt == "chatgpt" else _claude_conversation
    try:
        for index, raw in enumerate(iter_json_array(source.text)):
            if not isinstance(raw, dict):
                yield Problem(f"conversation {index + 1}", "not an object: skipped")
                continue
            try:
                conversation, problems = parse(raw, index)
            except Exception as exc:  # one odd record never stops the import
                yield Problem(f"conversation {index + 1}", f"unreadable ({type(exc).__name__}: {exc}): skipped")
                continue
            yield from problems
            if conversation is not None:
                yield conversation
    except ValueError as exc:
        yield Problem(name, f"{exc}; the conversations before it were imported")
