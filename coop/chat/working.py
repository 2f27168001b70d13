"""A session's working memory (its recent messages, held in memory so a turn reads no history from the
database) and what a message is searched by."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

from coop.memory.retrieval.context import HistoryMessage
from coop.privacy.secrets import mask


def retrieval_query(text: str, limit: int = 2000) -> str:
    """What a message is searched by: all of it when short; for a long paste its start and its end, where the
    question usually is (the embedder reads only the first few hundred tokens anyway)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n…\n" + text[-half:]


class WorkingMemory:
    """The session's recent messages, held in memory so a turn needs no database read for them. Every later
    request of the session is made of them, so they are kept masked (`privacy.secrets.mask`), as the database
    keeps them: a secret said once (by the user, a tool result, the model) is not sent again."""

    def __init__(self, cap: int) -> None:
        self.messages: deque[HistoryMessage] = deque(maxlen=cap)
        self.anchor: HistoryMessage | None = None

    def add(self, message: HistoryMessage) -> None:
        content = mask(message.content)
        if content != message.content:
            message = replace(message, content=content)
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

    def drop(self, message_ids: set[int]) -> None:
        """Forgotten messages leave the session's history too (with the tool calls that carried them)."""
        dropped_calls: set[str | None] = {m.tool_call_id for m in self.messages
                                          if m.message_id in message_ids and m.tool_call_id}
        for message in self.messages:  # a call whose result goes takes its stub and its other results along
            calls: set[str | None] = {c.get("id") for c in message.tool_calls or []}
            if calls & dropped_calls:
                dropped_calls |= calls
                if message.message_id is not None:
                    message_ids = message_ids | {message.message_id}
        kept = [m for m in self.messages if m.message_id not in message_ids and m.tool_call_id not in dropped_calls]
        self.messages.clear()
        self.messages.extend(kept)
        if self.anchor is not None and self.anchor.message_id in message_ids:
            self.anchor = next((m for m in kept if m.role == "user"), None)

    def clear(self) -> None:
        self.messages.clear()
        self.anchor = None
