"""A session's working memory (its recent messages, held in memory so a turn reads no history from the
database) and what a message is searched by."""

from __future__ import annotations

from collections import deque

from coop.memory.retrieval.context import HistoryMessage


def retrieval_query(text: str, limit: int = 2000) -> str:
    """What a message is searched by: all of it when short; for a long paste its start and its end, where the
    question usually is (the embedder reads only the first few hundred tokens anyway)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n…\n" + text[-half:]


class WorkingMemory:
    """The session's recent messages, held in memory so a turn needs no database read for them."""

    def __init__(self, cap: int) -> None:
        self.messages: deque[HistoryMessage] = deque(maxlen=cap)
        self.anchor: HistoryMessage | None = None

    def add(self, message: HistoryMessage) -> None:
        if self.anchor is None and message.role == "user":
            self.anchor = message
        self.messages.append(message)

    def recent(self, count: int) -> list[HistoryMessage]:
        """The last `count` messages: the recency leg, read from memory rather than the database."""
        return list(self.messages)[-count:] if count > 0 else []

    def ids(self, count: int) -> set[int]:
        """Ids of what the prompt shows as history (the last `count` messages and the anchor), so retrieval
        does not inject them twice; older messages can still come back through relevance."""
        ids = {m.message_id for m in self.recent(count) if m.message_id is not None}
        if self.anchor is not None and self.anchor.message_id is not None:
            ids.add(self.anchor.message_id)
        return ids

    def clear(self) -> None:
        self.messages.clear()
        self.anchor = None
