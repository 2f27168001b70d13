"""Every proposal the write path turns down is logged and counted, by reason, so a person (coop.log) and a benchmark
(`bench/extraction.py`) can see what a model tried and what coop refused.

Reasons:
- `evidence`: the note cites no clause of the message, or text that is not the user's own (quoted, pasted, code, a
  link), or its value does not rest on the cited clauses (a number or name the user did not say, words that are
  not theirs) (`verify.py`).
- `mood`: the user did not assert it: a question, a hypothetical, a plan not decided, a report, a joke, a past
  habit, by the model's modality or by the words of the user's language (`verify.py`).
- `holder`: a fact said of someone else ("My sister lives in Madrid") claimed as the user's.
- `polarity`: the value turns the user's negation around ("I don't smoke" as "Smokes"), or a "no longer" or
  "never" rests on words that say nothing ended or is not so.
- `instruction`: a standing instruction from words that speak of the user, not to the assistant; or a request
  about material the message brings (code, a paste, a link) that does not say it is for good.
- `widening`: an instruction that widens what the assistant may reveal or do (share, reveal, ignore, send), or a
  machine's fact that does so without the user as its subject.
- `unsafe`: an instruction to drop a safety behaviour.
- `change`: a new value of a slot that the user's words do not say changed (neither most of the value's words nor
  a word of change: "I visited Rome" is no move from Oslo).
- `target`: the model named a fact it was not offered as one the new fact may replace.
- `forgotten`: a machine source proposed again what the user forgot.
- `value`: the value cannot be a fact: empty, too long, a placeholder of the prompt, a question, nothing but a
  greeting or thanks.
- `summary`: a consolidation summary holding a number or name its conversation does not, an order the user did not
  give, or the assistant's words given as the user's (`summary_check.py`); its facts are still read.
- `host`: an MCP host reached past what it may do: a standing instruction without `--allow-instructions`, or a
  change to a fact it did not write (`reconcile._within_the_hosts_reach`).

The log line names the reason and the fact's category at INFO; the fact's text only at DEBUG. A job that learns
from a user's words gathers its refusals (`gathered`) and keeps them in the user's memory (`memory.refusals`), so
`coop memory why mN` can say what a message taught and what was turned down: the reason, coop's few words of why
and where the model pointed (the cited clauses' places in the message), never the user's or the model's text.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from coop.memory.storage.items import Refusal

log = logging.getLogger("coop.memory.refused")

REASONS = ("evidence", "mood", "holder", "polarity", "instruction", "widening", "unsafe", "change", "target",
           "forgotten", "value", "host", "summary")


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


@dataclass(frozen=True)
class Refused:
    """One refusal as a job gathers it: `spans` are the cited clauses as (index of the message in what the model
    was shown, start, end) in that message's text."""

    reason: str
    what: str
    category: str | None = None
    spans: tuple[tuple[int, int, int], ...] = ()


_GATHERING: ContextVar[list[Refused] | None] = ContextVar("coop_refusals_gathering", default=None)


@contextmanager
def gathered() -> Iterator[list[Refused]]:
    """The refusals made inside the block (on this thread or task), in order, for the job to keep."""
    taken: list[Refused] = []
    token = _GATHERING.set(taken)
    try:
        yield taken
    finally:
        _GATHERING.reset(token)


def refuse(reason: str, what: str, *, category: str | None = None, text: str | None = None,
           spans: Sequence[tuple[int, int, int]] = ()) -> None:
    """Log and count one refusal: `what` says why in a few words (no user text in it); `spans` say where the
    proposal pointed, for a job that gathers refusals."""
    if reason not in REASONS:
        raise ValueError(f"unknown refusal reason {reason!r}")
    COUNTS.add(reason)
    taking = _GATHERING.get()
    if taking is not None:
        taking.append(Refused(reason, what, category, tuple(spans)))
    log.info("memory refused [%s]%s: %s", reason, f" ({category})" if category else "", what)
    if text is not None:
        log.debug("memory refused [%s]: %r", reason, text)


def as_kept(refused: Sequence[Refused], source: str, message_ids: Sequence[int], session_id: int | None
            ) -> list[Refusal]:
    """The gathered refusals as rows to keep: each under the message its first cited clause is from (by the
    position in `message_ids`, the messages the model was shown), with its clauses' places in that message; a
    refusal that cites nothing belongs to the exchange's one message, or to no message of a longer span."""
    rows = []
    for one in refused:
        first = one.spans[0][0] if one.spans else (0 if len(message_ids) == 1 else -1)
        message_id = message_ids[first] if 0 <= first < len(message_ids) else None
        rows.append(Refusal(reason=one.reason, what=one.what, source=source, category=one.category,
                            message_id=message_id, session_id=session_id,
                            spans=tuple((start, end) for index, start, end in one.spans if index == first)))
    return rows


def counts() -> dict[str, int]:
    """Refusals so far in this process, by reason."""
    return COUNTS.snapshot()
