"""Streamed JSON with limits: the elements of a top-level array (ChatGPT and Claude exports) and the lines of a
JSON Lines file (coop exports), one bounded record at a time.

An element that lies whole in the chunk at hand is decoded at once (`raw_decode`, the common case: most
conversations are far smaller than the 1 MB chunks). Any other (cut by the chunk's end, invalid, very deep) goes
to a scanner that finds where it ends before anything is decoded: it follows strings (with their escapes) and
brackets through the text, one regular-expression step per string or bracket, chunk after chunk, keeping only
this element's text, which is then decoded once. So:

- memory holds at most one record (`MAX_RECORD_CHARS`) plus one chunk, whatever the file holds: a record that
  grows past the limit stops being kept and is skipped to its end (a 1.5 GB string, or gigabytes of junk inside
  an element, are read through, never held);
- a record nested deeper than `MAX_DEPTH` is skipped (one nested past what Python can decode is never decoded:
  no RecursionError);
- a record that is not valid JSON but closes its brackets is skipped alone; the rest of the file is read.

A bad record is yielded as `BadRecord` (why), for the caller to report with where it is. Only a break in the
array itself (no `[`, junk between elements, the end of the file inside an element) stops the reading, with a
ValueError. `MAX_RECORD_CHARS` counts characters, which for the ASCII that JSON mostly is are bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

MAX_RECORD_CHARS = 64 * 1024 * 1024  # one conversation, or one JSON Lines record: real ones are a few MB at most
MAX_DEPTH = 100  # real exports nest about 10 levels (conversation, mapping, node, message, content, parts, ...)
CHUNK_CHARS = 1 << 20

# Outside strings: a whole string, a bracket, or the opening quote of a string that runs past the chunk's end.
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]|"', re.DOTALL)
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)  # inside a string: up to its closing quote
_BETWEEN = re.compile(r"[\s,]*+")  # between elements: white space and commas
_SCALAR = re.compile(r"[^\s,\]]*+")  # a number, true, false or null at the top level
_SCALAR_START = frozenset("-0123456789tfn")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class BadRecord:
    """A record that was skipped, and why (ends with ": skipped")."""

    reason: str


def too_large_reason() -> str:
    return f"larger than {MAX_RECORD_CHARS // (1024 * 1024)} MB (the most one record may hold): skipped"


def too_deep_reason() -> str:
    return f"nested deeper than {MAX_DEPTH} levels: skipped"


class _Element:
    """The element being scanned: its text so far (None once it is too large or too deep), size and state."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "container", "string" or "scalar"
        self.pieces: list[str] | None = []
        self.size = 0
        self.depth = 0
        self.deepest = 0
        self.in_string = kind == "string"
        self.escaped = False  # a string's backslash was the last character of the previous chunk

    def keep(self, text: str) -> None:
        self.size += len(text)
        if self.pieces is not None:
            if self.size > MAX_RECORD_CHARS or self.deepest > MAX_DEPTH:
                self.pieces = None
            else:
                self.pieces.append(text)

    def result(self) -> Any:
        if self.deepest > MAX_DEPTH:
            return BadRecord(too_deep_reason())
        if self.pieces is None or self.size > MAX_RECORD_CHARS:
            return BadRecord(too_large_reason())
        return decode("".join(self.pieces), "not valid JSON")

    def scan(self, buffer: str, position: int) -> int | None:
        """Scan `buffer` from `position`; the position just after the element's end, or None if it goes on."""
        end = len(buffer)
        if self.kind == "scalar":
            stop = _end(_SCALAR, buffer, position)
            return stop if stop < end else None
        if self.escaped and position < end:
            position += 1
            self.escaped = False
        while position < end:
            if self.in_string:
                position = _end(_STRING_REST, buffer, position)
                if position >= end:
                    return None
                if buffer[position] == "\\":  # the last character: what it escapes is in the next chunk
                    self.escaped = True
                    return None
                position += 1
                self.in_string = False
                if self.depth == 0:
                    return position
                continue
            for match in _TOKEN.finditer(buffer, position):
                token = match.group()
                if token[0] == '"':
                    if len(token) == 1:  # a string that runs past the chunk's end: go on inside it
                        self.in_string = True
                        position = match.end()
                        break
                    continue
                if token in "[{":
                    self.depth += 1
                    if self.depth > self.deepest:
                        self.deepest = self.depth
                else:
                    self.depth -= 1
                    if self.depth <= 0:
                        return match.end()
            else:
                return None
        return None


def _end(pattern: re.Pattern[str], text: str, position: int) -> int:
    """Where a pattern that also matches the empty string stops matching, from `position`."""
    match = pattern.match(text, position)
    return position if match is None else match.end()


def decode(text: str, invalid: str) -> Any:
    """`json.loads`, with failures as a BadRecord."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return BadRecord(f"{invalid} ({exc.msg}): skipped")
    except RecursionError:
        return BadRecord(too_deep_reason())


def iter_json_array(stream: IO[str], chunk_size: int = CHUNK_CHARS) -> Iterator[Any]:
    """The elements of a top-level JSON array, decoded one at a time from a text stream; a bad element is a
    `BadRecord`. A ValueError when the text is not an array or the array breaks off."""
    buffer = ""
    position = 0
    started = False
    element: _Element | None = None
    while True:
        if position >= len(buffer):
            buffer = stream.read(chunk_size)
            position = 0
            if not buffer:
                if not started:
                    raise ValueError("the file is not a JSON array")
                raise ValueError("the JSON array is not closed (the file may be truncated)")
        if not started:
            position = _end(_BETWEEN, buffer, position)
            if position >= len(buffer):
                continue
            if buffer[position] != "[":
                raise ValueError("the file is not a JSON array")
            started = True
            position += 1
            continue
        if element is None:
            position = _end(_BETWEEN, buffer, position)
            if position >= len(buffer):
                continue
            first = buffer[position]
            if first == "]":
                return
            if first in '[{"':  # the common case first: an element whole in the buffer, decoded in one pass
                try:
                    value, end = _DECODER.raw_decode(buffer, position)
                except (json.JSONDecodeError, RecursionError):
                    pass  # cut by the chunk's end, invalid, or very deep: the scanner finds its end
                else:
                    size, position = end - position, end
                    if size > MAX_RECORD_CHARS:  # only when the limit is below the chunk size
                        yield BadRecord(too_large_reason())
                    else:
                        yield BadRecord(too_deep_reason()) if _deeper_than(value, MAX_DEPTH) else value
                    continue
            if first in "[{":
                element = _Element("container")
            elif first == '"':
                element = _Element("string")
                element.keep('"')
                position += 1
            elif first in _SCALAR_START:
                element = _Element("scalar")
            else:
                raise ValueError(f"the array holds {first!r} where a value should start (is the file damaged?)")
        start = position
        stop = element.scan(buffer, position)
        element.keep(buffer[start:stop if stop is not None else len(buffer)])
        if stop is None:
            position = len(buffer)
            continue
        position = stop
        finished, element = element, None
        yield finished.result()


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a decoded value nests containers more than `limit` deep (walked level by level, no recursion)."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            below.extend(v for v in (item.values() if isinstance(item, dict) else item) if isinstance(v, (dict, list)))
        level = below
    return False


def depth_of(text: str) -> int:
    """How deep the brackets of a JSON text nest (outside strings)."""
    element = _Element("container")
    element.scan(text, 0)
    return element.deepest


def iter_json_lines(stream: IO[str]) -> Iterator[tuple[int, Any]]:
    """The records of a JSON Lines text, each with its line number (blank lines skipped); a line longer than
    `MAX_RECORD_CHARS`, nested deeper than `MAX_DEPTH` or not JSON is a `BadRecord`, read past without being
    held."""
    number = 0
    while True:
        pieces: list[str] | None = []
        size = 0
        while True:  # one line, a chunk at a time: past the limit its text is no longer kept
            part = stream.readline(CHUNK_CHARS)
            size += len(part)
            if pieces is not None and size > MAX_RECORD_CHARS:
                pieces = None
            elif pieces is not None:
                pieces.append(part)
            if not part or part.endswith("\n"):
                break
        if size == 0:
            return
        number += 1
        if pieces is None:
            yield number, BadRecord(too_large_reason())
            continue
        line = pieces[0] if len(pieces) == 1 else "".join(pieces)
        if not line.strip():
            continue
        if line.count("[") + line.count("{") > MAX_DEPTH and depth_of(line) > MAX_DEPTH:
            yield number, BadRecord(too_deep_reason())
            continue
        yield number, decode(line, "not JSON")
