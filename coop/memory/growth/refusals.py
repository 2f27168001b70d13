"""Every proposal the write path turns down is logged and counted, by reason, so a person (coop.log) and a benchmark
(`bench/extraction.py`) can see what a model tried and what coop refused.

Reasons:
- `evidence`: the quote is not a word-bounded passage of the user's own words, too short to state anything, or
  does not hold the fact's content words (`evidence.proves`).
- `mood`: the user did not assert it: a question, a hypothetical or conditional, a plan still being weighed, a
  negated or reported statement, a joke (`mood.stance_of`).
- `instruction`: a standing instruction from words that do not address the assistant as one.
- `widening`: an instruction that widens what the assistant may reveal or do (share, reveal, ignore, send).
- `unsafe`: an instruction to drop a safety behaviour.
- `change`: a change (UPDATE, SUPERSEDE, a duplicate claim) that coop's rules do not allow on the fact the model
  named; the new fact is kept beside the old one, or dropped when it adds nothing.
- `target`: the reconciler named a fact that is not among those it was shown (another user's, forgotten, made up).
- `forgotten`: a machine source proposed again what the user forgot.
- `value`: the value cannot be a fact: a question, a courtesy ("Thanks for the help"), a bare word
  (`vocabulary.bad_value`).
- `known`: the extractor copied back a fact it was shown as KNOWN; it is not counted as a new mention.

The log line names the reason and the fact's category at INFO; the fact's text only at DEBUG.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

log = logging.getLogger("coop.memory.refused")

REASONS = ("evidence", "mood", "instruction", "widening", "unsafe", "change", "target", "forgotten", "value", "known")


class Refusals:
    """A thread-safe count of refusals by reason (one per process: the worker and the REPL share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {reason: self._counts.get(reason, 0) for reason in REASONS}


COUNTS = Refusals()


def refuse(reason: str, what: str, *, category: str | None = None, text: str | None = None) -> None:
    """Log and count one refusal: `what` says why in a few words (no user text in it)."""
    if reason not in REASONS:
        raise ValueError(f"unknown refusal reason {reason!r}")
    COUNTS.add(reason)
    log.info("memory refused [%s]%s: %s", reason, f" ({category})" if category else "", what)
    if text is not None:
        log.debug("memory refused [%s]: %r", reason, text)


def counts() -> dict[str, int]:
    """Refusals so far in this process, by reason."""
    return COUNTS.snapshot()
