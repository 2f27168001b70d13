"""What a chat says while its memory server cannot be reached, kept on this machine until it can.

On Postgres the server may go away mid-session (a restart, a network drop). The chat goes on without memory, and
each message of the exchange (already masked) is appended to `COOP_HOME/unsent/<user>.jsonl` (0600, a line per
message with the time it was said). When the server answers again (the next turn, or the next `coop chat`), the
messages are written in order, with their own times, and the file goes. Nothing is lost; the user is told once.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coop.files.writing import private_dir, private_file

if TYPE_CHECKING:
    from coop.memory.tools.exchange import ExchangeRecorder


class Unsent:
    """One user's messages waiting for the server, in the order they were said."""

    def __init__(self, home: Path, user_id: str) -> None:
        self.path = home / "unsent" / (hashlib.sha256(user_id.encode()).hexdigest()[:16] + ".jsonl")

    def add(self, role: str, text: str, at: float | None = None) -> None:
        private_dir(self.path.parent)
        line = json.dumps({"role": role, "content": text, "at": time.time() if at is None else at},
                          ensure_ascii=False) + "\n"
        descriptor = private_file(self.path)
        try:
            os.write(descriptor, line.encode())
        finally:
            os.close(descriptor)

    def pending(self) -> list[dict[str, Any]]:
        """The messages waiting (a line cut short by a crash is left out)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        waiting = []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("role") in ("user", "assistant") \
                    and isinstance(record.get("content"), str):
                waiting.append(record)
        return waiting

    def deliver(self, recorder: "ExchangeRecorder") -> list[tuple[int | None, int | None]]:
        """Write the waiting messages into the recorder's session, in one transaction, and remove the file; the
        (user message, reply) id pairs written, for learning from them. A `StoreUnreachable` leaves the file."""
        waiting = self.pending()
        if not waiting:
            return []
        pairs: list[tuple[int | None, int | None]] = []
        with recorder.memory.transaction():
            for record in waiting:
                at = float(record.get("at") or time.time())
                made = recorder.said(record["role"], record["content"], created_at=at)
                if record["role"] == "user":
                    pairs.append((made, None))
                elif pairs and pairs[-1][1] is None:
                    pairs[-1] = (pairs[-1][0], made)
        self.path.unlink(missing_ok=True)
        return pairs
