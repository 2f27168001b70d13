"""What an import reports: progress while it runs, and what it added, skipped and could not read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coop.memory.transfer.readers import Problem


@dataclass
class ImportProgress:
    """Where an import is: bytes of the file read, and what was written so far."""

    position: int
    size: int
    conversations: int
    messages: int


@dataclass
class ImportReport:
    format: str
    conversations: int = 0
    sessions_added: int = 0
    messages_added: int = 0
    messages_skipped: int = 0
    facts_added: int = 0
    facts_skipped: int = 0
    summaries_added: int = 0
    problems: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "conversations": self.conversations, "sessions_added": self.sessions_added,
                "messages_added": self.messages_added, "messages_skipped": self.messages_skipped,
                "facts_added": self.facts_added, "facts_skipped": self.facts_skipped,
                "summaries_added": self.summaries_added,
                "problems": [{"where": p.where, "reason": p.reason} for p in self.problems]}


ProgressCallback = Callable[[ImportProgress], None]
