"""The values that cross the storage seam (`interface.py`): what storage hands out and takes in (`Item`,
`HistoryEntry`, `FactWrite`, `FactFields`, `Provenance`, a job, a vector hit, a check's `Finding`), the columns
they are read from, and the limits and vocabularies every write checks. Plain data, importing nothing of
storage's, so the Protocols, the parts of both backends and the code above storage all name the same types."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coop.errors import UsageError
from coop.memory.kinds import fact_slot, make_ref
from coop.memory.text import check_text
from coop.privacy.secrets import mask

FACT_SOURCES = ("user", "model", "extraction", "consolidation", "import", "host")
ROLES = ("user", "assistant", "system", "tool")
HISTORY_ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "MERGE", "FORGET", "ARCHIVE", "RESTORE")
MAX_FACT_CHARS = 10_000
MAX_MESSAGE_CHARS = 2_000_000
MAX_USER_ID_CHARS = 200
MAX_JOB_ATTEMPTS = 3  # a job that failed this often is dropped (logged), so a poisoned row never blocks start-up
# How long a claim holds a job. A live claimer must never lose it: one extraction is a fast-model call and a
# reconciliation call or two, each allowed `model.fast_timeout_seconds` (300 s by default), and a local model on a
# slow CPU can use most of that. 15 minutes covers that with room to spare; a longer lease only delays a dead
# claimer's job (the next start after it finishes it), and one that runs out under a live claimer costs a second
# extraction of the exchange, whose facts the write pipeline merges with the first's.
JOB_LEASE_SECONDS = 15 * 60
DAMAGED_HINT = "restore a backup, or move the file aside (coop then starts a new one)"


def whose(user_id: str) -> str:
    """"ana's", and "your" for the user called "you" (the name a first run picks when it knows no other)."""
    return "your" if user_id == "you" else f"{user_id}'s"


EVERYONE = "*"  # on a Postgres server, the user id a role is mapped to when it may reach every user's memory


def check_user_id(user_id: str) -> str:
    """The user id as stored, in NFC: "álice" typed as one code point or as "a" and an accent (what some keyboards
    and file names give) is one person, with one memory. Every door to a user's memory passes here."""
    if not user_id or not user_id.strip() or len(user_id) > MAX_USER_ID_CHARS:
        raise UsageError(f"not a valid user id: {user_id!r}", hint="use a short name such as 'ana'")
    check_text(user_id, "user id", MAX_USER_ID_CHARS)
    return unicodedata.normalize("NFC", user_id)


@dataclass(frozen=True)
class Item:
    """One memory item as shown to people and scripts."""

    kind: str
    item_id: int
    text: str
    created_at: float
    session_id: int | None = None
    role: str | None = None
    external_id: str | None = None
    category: str | None = None
    key: str | None = None
    importance: float | None = None
    mention_count: int | None = None
    source: str | None = None
    updated_at: float | None = None
    superseded_by: int | None = None
    superseded_at: float | None = None
    archived_at: float | None = None
    embedder: str | None = None
    embedding_error: str | None = None
    last_recalled_at: float | None = None

    @property
    def ref(self) -> str:
        return make_ref(self.kind, self.item_id)


@dataclass(frozen=True)
class HistoryEntry:
    action: str
    old_value: str | None
    new_value: str | None
    reason: str | None
    created_at: float
    related_fact_id: int | None = None


@dataclass(frozen=True)
class FactWrite:
    """The outcome of writing a fact: which row holds it now, and what was done (ADD, MERGE, SUPERSEDE)."""

    fact_id: int
    action: str
    previous_id: int | None = None


@dataclass(frozen=True)
class FactFields:
    """A fact's own fields, checked and normalised: what every write of a new row starts from."""

    value: str
    category: str = "general"
    key: str | None = None
    importance: float = 0.5
    source: str = "user"

    @classmethod
    def checked(cls, value: str, *, category: str | None = "general", key: str | None = None,
                importance: float = 0.5, source: str = "user") -> "FactFields":
        """Reject what cannot be stored (empty, not UTF-8, too long, unknown source, importance out of range);
        any API key is masked; then the category and key are filed as every writer files them (`fact_slot`:
        trimmed, lower-cased, cut at their stored limits; an empty category is the default)."""
        value = mask(check_text(value, "fact", MAX_FACT_CHARS).strip())
        category, key = fact_slot(*(mask(check_text(text, what, MAX_FACT_CHARS)) if text and text.strip() else None
                                    for text, what in ((category, "category"), (key, "key"))))
        if source not in FACT_SOURCES:
            raise UsageError(f"unknown fact source {source!r}", hint="use one of: " + ", ".join(FACT_SOURCES))
        if not 0.0 <= importance <= 1.0:
            raise UsageError(f"importance {importance} is out of range", hint="use a number from 0 to 1")
        return cls(value, category, key, importance, source)


@dataclass(frozen=True)
class RestoredFact:
    """A fact as an export recorded it, to be written back verbatim (timestamps, state, mentions)."""

    fields: FactFields
    mention_count: int
    created_at: float
    updated_at: float
    last_recalled_at: float | None
    superseded_at: float | None
    archived_at: float | None
    source_id: int | None = None  # its id in the export: kept where this store can (`aliases.py`)

    @property
    def active(self) -> bool:
        return self.superseded_at is None and self.archived_at is None


@dataclass(frozen=True)
class Resolved:
    """What a reference the user typed names in this memory (`aliases.resolve`): the item's kind and id here, and
    a one-line note when an import's alias was read (the id was renumbered, or is also this memory's own)."""

    kind: str
    item_id: int
    note: str | None = None


REFUSALS_KEPT = 1000  # the newest refusals kept per user (`refusals.py`)


@dataclass(frozen=True)
class Refusal:
    """A proposal the write path turned down, as kept (`refusals`, m017): coop's reason and few words of why, and
    where the model pointed (`spans`: (start, end) of the cited clauses in message `message_id`'s text), never
    the user's or the model's text."""

    reason: str
    what: str
    source: str
    category: str | None = None
    message_id: int | None = None
    session_id: int | None = None
    spans: tuple[tuple[int, int], ...] = ()
    id: int = 0
    created_at: float = 0.0


@dataclass(frozen=True)
class Provenance:
    """One message a fact was learned from, with the user's words the fact quoted from it."""

    message_id: int
    session_id: int | None
    role: str
    text: str
    created_at: float
    origin: str | None
    quote: str | None


@dataclass(frozen=True)
class Learned:
    """An active fact as a review sees it: when its text last changed (its latest ADD or UPDATE in the history)
    and how ("ADD": a new row in that time, which includes one that superseded an older fact; "UPDATE": an
    older row rewritten in place)."""

    item: Item
    changed_at: float
    change: str


@dataclass(frozen=True)
class PendingJob:
    job_id: int
    kind: str
    session_id: int | None
    message_id: int
    reply_id: int | None
    attempts: int
    claimed_at: float | None = None  # when a client last claimed it (`Jobs.claim`), None if none has


@dataclass(frozen=True)
class JobClaim:
    """A job this client holds: its attempts, counting this one, and the time it was claimed at (what
    `Jobs.release` checks, so a claim that ran out and was taken by another client is not released)."""

    job_id: int
    attempts: int
    claimed_at: float


VectorRow = tuple[int, str, int, str, bytes, bytes | None]  # (row id, kind, item id, embedder, float32s, float16s)


@dataclass(frozen=True)
class VectorHit:
    kind: str
    item_id: int
    similarity: float


@dataclass(frozen=True)
class Finding:
    """One line of what a store says about itself for `coop check` (`Backend.check`)."""

    name: str
    severity: str  # "ok" | "warning" | "error"
    message: str
    hint: str | None = None


FACT_COLUMNS = ("id, value, created_at, category, key, importance, mention_count, source, updated_at, "
                 "superseded_by, superseded_at, archived_at, embedder, embedding_error, last_recalled_at")
MESSAGE_COLUMNS = "id, content, created_at, session_id, role, external_id, importance, embedder, embedding_error"
SUMMARY_COLUMNS = "id, text, created_at, session_id, embedder, embedding_error"


def fact_item(row: Any) -> Item:
    (fid, value, created, category, key, importance, mentions, source, updated, sup_by, sup_at, archived,
     embedder, error, recalled) = row
    return Item("fact", fid, value, created, category=category, key=key, importance=importance,
                mention_count=mentions, source=source, updated_at=updated, superseded_by=sup_by,
                superseded_at=sup_at, archived_at=archived, embedder=embedder, embedding_error=error,
                last_recalled_at=recalled)


def message_item(row: Any) -> Item:
    mid, content, created, session, role, external, importance, embedder, error = row
    return Item("message", mid, content, created, session_id=session, role=role, external_id=external,
                importance=importance, embedder=embedder, embedding_error=error)


def summary_item(row: Any) -> Item:
    sid, text, created, session, embedder, error = row
    return Item("summary", sid, text, created, session_id=session, embedder=embedder, embedding_error=error)


COLUMNS = {"fact": FACT_COLUMNS, "message": MESSAGE_COLUMNS, "summary": SUMMARY_COLUMNS}
BUILDERS: dict[str, Callable[[Any], Item]] = {"fact": fact_item, "message": message_item,
                                              "summary": summary_item}
