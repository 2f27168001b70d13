"""The fields of a coop export's records, read with their types and bounds checked: a value that is not what its
field takes makes its record a problem (`Invalid`, with the reason), skipped alone. A time is Unix seconds in
1970..2200 (anything else would break every date shown later); `Times` stands in for a conversation's unusable
times, so its messages are imported as a ChatGPT or Claude conversation's are.
"""

from __future__ import annotations

from typing import Any, Literal, overload

from coop.memory.storage.items import MAX_MESSAGE_CHARS
from coop.memory.transfer.readers import MAX_TIME, MIN_TIME


class Invalid(Exception):
    """A record that cannot be imported; the message says why."""


@overload
def number(record: dict[str, Any], name: str, *, optional: Literal[False] = False) -> float: ...
@overload
def number(record: dict[str, Any], name: str, *, optional: bool) -> float | None: ...
def number(record: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise Invalid(f"{name} is not a number")
    try:
        return float(value)
    except OverflowError:
        raise Invalid(f"{name} is too large a number") from None


@overload
def time(record: dict[str, Any], name: str, *, optional: Literal[False] = False) -> float: ...
@overload
def time(record: dict[str, Any], name: str, *, optional: bool) -> float | None: ...
def time(record: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    """A time field: Unix seconds in 1970..2200 (anything else would break every date shown later)."""
    value = number(record, name, optional=optional)
    if value is not None and not MIN_TIME <= value <= MAX_TIME:
        raise Invalid(f"{name} is not a time in 1970..2200")
    return value


@overload
def integer(record: dict[str, Any], name: str, *, optional: Literal[False] = False) -> int: ...
@overload
def integer(record: dict[str, Any], name: str, *, optional: bool) -> int | None: ...
def integer(record: dict[str, Any], name: str, *, optional: bool = False) -> int | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"{name} is not an integer")
    if not -(2**63) <= value < 2**63:
        raise Invalid(f"{name} is larger than 64 bits")
    return value


@overload
def string(record: dict[str, Any], name: str, *, optional: Literal[False] = False,
         limit: int = MAX_MESSAGE_CHARS) -> str: ...
@overload
def string(record: dict[str, Any], name: str, *, optional: bool, limit: int = MAX_MESSAGE_CHARS) -> str | None: ...
def string(record: dict[str, Any], name: str, *, optional: bool = False, limit: int = MAX_MESSAGE_CHARS) -> str | None:
    value = record.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Invalid(f"{name} is not a string")
    if len(value) > limit:
        raise Invalid(f"{name} is longer than {limit} characters")
    return value


class Times:
    """Stand-ins for the unusable times of a coop export's conversations, so their messages are imported as a
    ChatGPT or Claude conversation's are (README: such conversations are imported): a session without a usable
    start starts at the import's time; a message without one takes the time of the message before it in its
    session (the first, the session's start); an unusable optional time (an end, a last activity, a
    consolidation) is left out. Each kind of stand-in is reported once for the file. The id an import derives
    for a record without a source id of its own is made from the raw value, so a second import of the same file
    recognises what the first one added."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.latest: dict[int | None, float] = {}  # each session's latest message time so far (its start first)
        self.replaced: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.replaced[what] = self.replaced.get(what, 0) + 1

    def start(self, record: dict[str, Any]) -> tuple[float, object]:
        """A session's start, and the value its derived id is made from."""
        try:
            value = time(record, "started_at")
            return value, value
        except Invalid:
            self._count("started_at")
            return self.now, repr(record.get("started_at"))

    def started(self, session: int, at: float) -> None:
        self.latest[session] = at

    def message(self, record: dict[str, Any], session: int | None) -> tuple[float, object]:
        """A message's time, and the value its derived id is made from."""
        try:
            value = time(record, "created_at")
            self.latest[session] = value
            return value, value
        except Invalid:
            self._count("created_at")
            return self.latest.get(session, self.now), repr(record.get("created_at"))

    def optional(self, record: dict[str, Any], name: str) -> float | None:
        try:
            return time(record, name, optional=True)
        except Invalid:
            self._count(name)
            return None

    def problems(self) -> list[tuple[str, str]]:
        """(where, why) for each kind of time stood in for."""
        said = {"started_at": ("sessions", "no started_at in 1970..2200: each starts at the import's time"),
                "created_at": ("messages", "no created_at in 1970..2200: each takes the time of the message before "
                                           "it in its session (the first, the session's start)")}
        return [(said.get(name, ("records", ""))[0], f"{count} {'has' if count == 1 else 'have'} "
                 + (said[name][1] if name in said else f"an unusable {name}: left out"))
                for name, count in sorted(self.replaced.items())]
