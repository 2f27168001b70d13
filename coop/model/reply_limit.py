"""A reply is bounded: past `model.max_reply_chars` characters the stream stops, and what came is kept, marked.

A model that runs away (a small model repeating itself, a broken server that streams forever) would otherwise
grow the process with the reply: coop keeps its parts, and litellm keeps every chunk of a stream (for usage
accounting coop never reads) besides the text so far. `Limited` wraps litellm's stream: it counts the text and
the tool calls' names and arguments as they come, cuts the chunk that crosses the limit, stops reading (the HTTP
stream is closed) and trims litellm's chunk list as it goes, so what a reply costs in memory is bounded by the
setting, not by what the server sends. A tool call cut at the limit is never run (its arguments are not whole).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

TRUNCATED = "truncated"  # the finish reason of a reply cut at the limit
TRUNCATED_REASON = "the reply reached model.max_reply_chars"
TRUNCATED_MARK = " [truncated]"
INCOMPLETE_MARK = " [incomplete]"
_KEEP_CHUNKS = 2  # litellm compares the last two chunks to spot a model repeating itself


def mark_for(reason: str | None) -> str:
    """The mark a reply that stopped short for `reason` is stored with."""
    return TRUNCATED_MARK if reason == TRUNCATED_REASON else INCOMPLETE_MARK


class Limited:
    """litellm's stream of chunks, cut at `limit` characters of text and tool-call arguments."""

    def __init__(self, stream: Any, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.count = 0
        self.truncated = False

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.stream:
            kept = getattr(self.stream, "chunks", None)
            if isinstance(kept, list) and len(kept) > _KEEP_CHUNKS:
                del kept[:-_KEEP_CHUNKS]
            self._count(chunk)
            yield chunk
            if self.truncated:
                self._close()
                return

    def finish(self, finish: str | None) -> str | None:
        """The stream's finish reason, or TRUNCATED when the limit cut it."""
        return TRUNCATED if self.truncated else finish

    def _count(self, chunk: Any) -> None:
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            text = getattr(delta, "content", None)
            if text:
                delta.content = self._take(text)
            for call in getattr(delta, "tool_calls", None) or []:
                function = getattr(call, "function", None)
                for part in ("name", "arguments"):  # a name that runs on is counted as its arguments are
                    if function is not None and getattr(function, part, None):
                        setattr(function, part, self._take(getattr(function, part)))

    def _take(self, text: str) -> str:
        room = max(self.limit - self.count, 0)
        if len(text) > room:
            if not self.truncated:
                log.warning("a reply passed model.max_reply_chars (%d characters); the rest was not read", self.limit)
            self.truncated = True
            text = text[:room]
        self.count += len(text)
        return text

    def _close(self) -> None:
        """Stop the server's stream: nothing more is read or kept."""
        inner = getattr(self.stream, "completion_stream", None)
        close = getattr(inner, "close", None) or getattr(getattr(inner, "response", None), "close", None)
        try:
            if callable(close):
                close()
        except Exception as exc:  # the connection is dropped with the stream anyway
            log.debug("closing a cut stream failed: %s", exc)
