"""MemoryStore and UserMemory: the only way to reach a user's rows.

`MemoryStore(db).user(user_id)` returns a `UserMemory`, and every query that reads or writes user data goes
through it and binds its `user_id`: there is no call that takes an item id alone, and an id that belongs to
another user is simply "not found".

`UserMemory` is composed, not inherited: items by id and lists are its own; the rest are its parts, one module
each, each a view of it (`scope.Part`): `sessions`, `messages`, `summaries`, `facts` (every fact write and
read, with history), `sources` (provenance and the review mark), `jobs` (durable memory jobs), `forgotten`
(forgetting and its content-free records), `text` (the full-text index) and `vectors` (the vector index).

No API key is ever written: every text the parts store (messages and their tool calls, session titles,
summaries, facts, their history and reasons) is masked first (`coop.privacy.secrets.mask`), so the chat, the
extraction, consolidation, the model's tools and the importer are all covered here.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from coop.errors import NotFoundError, UsageError
from coop.memory.kinds import ACTIVE_FACT, INSTRUCTION, KINDS, REGISTRY, make_ref
from coop.memory.kinds import kind as lookup_kind
from coop.memory.storage import fulltext, health, vectors
from coop.memory.storage.connection import THROWAWAY as THROWAWAY
from coop.memory.storage.connection import Database
from coop.memory.storage.facts import Facts
from coop.memory.storage.forgetting import Forgetting
from coop.memory.storage.health import Finding
from coop.memory.storage.interface import Backend, UserStore
from coop.memory.storage.items import BUILDERS, COLUMNS, FACT_COLUMNS, MAX_USER_ID_CHARS, Item, fact_item
from coop.memory.storage.links import Jobs, Sources
from coop.memory.storage.messages import Messages
from coop.memory.storage.scope import UserScope
from coop.memory.storage.sessions import Sessions
from coop.memory.storage.sql import dialect_of, marks
from coop.memory.storage.summaries import Summaries
from coop.memory.storage.text_index import SqliteTextIndex
from coop.memory.storage.vector_index import SqliteVectorIndex
from coop.memory.text import check_text


def whose(user_id: str) -> str:
    """"ana's", and "your" for the user called "you" (the name a first run picks when it knows no other)."""
    return "your" if user_id == "you" else f"{user_id}'s"


def check_user_id(user_id: str) -> str:
    """The user id as stored, in NFC: "álice" typed as one code point or as "a" and an accent (what some keyboards
    and file names give) is one person, with one memory. Every door to a user's memory passes here."""
    if not user_id or not user_id.strip() or len(user_id) > MAX_USER_ID_CHARS:
        raise UsageError(f"not a valid user id: {user_id!r}", hint="use a short name such as 'ana'")
    check_text(user_id, "user id", MAX_USER_ID_CHARS)
    return unicodedata.normalize("NFC", user_id)


class MemoryStore:
    """The store as a whole (`interface.Backend`, SQLite): opened and migrated on `open`, hands out `UserMemory`
    handles, a handle of its own for another thread (`reopen`), and says how it is (`check`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open(cls, location: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> "MemoryStore":
        """The store at `location` (a file path, created if need be; `THROWAWAY` for one that lives in memory and
        is gone at exit), migrated to the current schema."""
        from coop.memory.storage.database import open_database

        return cls(open_database(location, busy_timeout_ms=busy_timeout_ms, migrate=migrate))

    @property
    def location(self) -> str:
        return self.db.path

    @property
    def read_only(self) -> bool:
        return self.db.read_only

    @property
    def throwaway(self) -> bool:
        """True for a store that lives in memory only: no other handle can reach it, nothing outlives the process."""
        return self.db.path == THROWAWAY

    def reopen(self) -> "MemoryStore":
        """A handle of its own on the same store, for another thread (an apsw connection is one thread's)."""
        if self.throwaway:
            raise UsageError("a throwaway store cannot be opened twice", hint="give memory.db_path a file")
        return MemoryStore.open(self.db.path, busy_timeout_ms=self.db.busy_timeout_ms)

    def close(self) -> None:
        self.db.close()

    def user(self, user_id: str) -> "UserMemory":
        return UserMemory(self.db, check_user_id(user_id))

    def user_ids(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT id FROM users ORDER BY id")]

    def check(self) -> list[Finding]:
        """How the store is: its engine, schema, integrity, full-text indexes, whether it can be written, its
        permissions, its embedding backlog and vector index (`health.py`)."""
        db = self.db
        return (health.guarded("sqlite", lambda: health.engine(db)) +
                health.guarded("integrity", lambda: health.integrity(db)) +
                health.guarded("stored vectors", lambda: health.vector_findings(db)))

    def embedders(self) -> dict[str, int]:
        """Every embedder that has vectors in the store, with its count (any user)."""
        return vectors.stored_embedders(self.db)

    def rebuild_fulltext(self) -> dict[str, int]:
        """Build every full-text index again from the stored text; the rows indexed per index."""
        return fulltext.rebuild_fulltext(self.db)


class UserMemory(UserScope):
    """One user's memory: items by id and lists here, everything else in its parts. Every statement binds
    `self.user_id`."""

    @cached_property
    def sessions(self) -> Sessions:
        return Sessions(self)

    @cached_property
    def messages(self) -> Messages:
        return Messages(self)

    @cached_property
    def summaries(self) -> Summaries:
        return Summaries(self)

    @cached_property
    def facts(self) -> Facts:
        return Facts(self)

    @cached_property
    def sources(self) -> Sources:
        return Sources(self)

    @cached_property
    def jobs(self) -> Jobs:
        return Jobs(self)

    @cached_property
    def forgotten(self) -> Forgetting:
        return Forgetting(self)

    @cached_property
    def vectors(self) -> SqliteVectorIndex:
        """The user's vector index (`vector_index.py`)."""
        return SqliteVectorIndex(self)

    @property
    def backend(self) -> MemoryStore:
        """The store this memory is in (for a job that reaches other users' memories or opens its own)."""
        return MemoryStore(self.db)

    def forget(self, kind: str, item_id: int, *, reason: str = "forgotten by the user") -> dict[str, int]:
        """Delete one item for good (`forgetting.py`); returns what went where, for the receipt."""
        return self.forgotten.forget(kind, item_id, reason=reason)

    def undo(self, fact_id: int, *, reason: str = "undone by the user") -> str:
        """Take back the change that made fact `fact_id` what it is (`forgetting.py`), and say what was done."""
        return self.forgotten.undo(fact_id, reason=reason)

    def get(self, kind: str, item_id: int) -> Item:
        """One item of this user's, or NotFoundError (also when the id belongs to someone else)."""
        spec = lookup_kind(kind)
        row = self.db.one(f"SELECT {COLUMNS[kind]} FROM {spec.table} WHERE id = $1 AND user_id = $2",
                          (item_id, self.user_id))
        if row is None:
            raise NotFoundError(f"no {kind} {make_ref(kind, item_id)} in {whose(self.user_id)} memory",
                                hint="list items with `coop memory list`")
        return BUILDERS[kind](row)

    def exists(self, kind: str, item_id: int) -> bool:
        spec = lookup_kind(kind)
        return self.db.scalar(f"SELECT 1 FROM {spec.table} WHERE id = $1 AND user_id = $2",
                              (item_id, self.user_id)) is not None

    def get_many(self, kind: str, ids: Iterable[int]) -> dict[int, Item]:
        """Items of one kind by id, skipping ids that are not this user's. `+user_id`: each row is found by its
        id; on `user_id` the planner would read every message of the user (100,000 of them: 4 ms a call)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self.db.execute(f"SELECT {COLUMNS[kind]} FROM {REGISTRY[kind].table} "
                               f"WHERE {dialect_of(self.db).no_index}user_id = $1 "
                               f"AND id IN ({marks(len(wanted), first=2)})", (self.user_id, *wanted))
        build = BUILDERS[kind]
        return {row[0]: build(row) for row in rows}

    def list_items(self, kind: str | None = None, *, limit: int = 50, include_inactive: bool = False) -> list[Item]:
        """The newest items first; facts are the active ones unless `include_inactive`."""
        active = "" if include_inactive else f"AND {ACTIVE_FACT}"
        if kind == INSTRUCTION:  # standing instructions are facts of their own category
            rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND category = $2 "
                                   f"{active} ORDER BY updated_at DESC, id DESC LIMIT $3",
                                   (self.user_id, INSTRUCTION, limit))
            return [fact_item(r) for r in rows]
        items: list[Item] = []
        for name in [kind] if kind else list(KINDS):
            spec = lookup_kind(name)
            where, order = (active, "updated_at") if name == "fact" else ("", "created_at")
            rows = self.db.execute(f"SELECT {COLUMNS[name]} FROM {spec.table} WHERE user_id = $1 {where} "
                                   f"ORDER BY {order} DESC, id DESC LIMIT $2", (self.user_id, limit))
            items += [BUILDERS[name](r) for r in rows]
        items.sort(key=lambda i: (i.updated_at or i.created_at, i.item_id), reverse=True)
        return items[:limit]

    def items_mentioning(self, word: str, kind: str, *, limit: int = 2000) -> list[Item]:
        """Messages or summaries whose text contains `word` (case-insensitive), newest first: the candidates
        when forgetting a fact reaches what else stated it (a scan; forgetting is rare and deliberate)."""
        spec = lookup_kind(kind)
        rows = self.db.execute(f"SELECT {COLUMNS[kind]} FROM {spec.table} WHERE user_id = $1 "
                               f"AND {dialect_of(self.db).position}(lower({spec.text}), $2) > 0 "
                               "ORDER BY id DESC LIMIT $3",
                               (self.user_id, word.casefold(), limit))
        return [BUILDERS[kind](r) for r in rows]

    def unembedded_count(self) -> int:
        """Items of this user with no vector yet (new, or handed back for re-embedding)."""
        return sum(int(self.db.scalar(f"SELECT count(*) FROM {spec.table} WHERE user_id = $1 AND embedder IS NULL",
                                      (self.user_id,))) for spec in REGISTRY.values())

    def stale_count(self, embedder_id: str) -> int:
        """Items of this user without a vector from `embedder_id` (never embedded, or embedded by another model)."""
        return sum(int(self.db.scalar(f"SELECT count(*) FROM {spec.table} WHERE user_id = $1 "
                                      "AND (embedder IS NULL OR embedder != $2)", (self.user_id, embedder_id)))
                   for spec in REGISTRY.values())

    def stats(self) -> dict[str, Any]:
        uid = (self.user_id,)
        tables = [spec.table for spec in REGISTRY.values()]
        return {
            "user": self.user_id,
            "sessions": self.db.scalar("SELECT count(*) FROM sessions WHERE user_id = $1", uid),
            "messages": self.db.scalar("SELECT count(*) FROM messages WHERE user_id = $1", uid),
            "facts_active": self.db.scalar(f"SELECT count(*) FROM facts WHERE user_id = $1 AND {ACTIVE_FACT}", uid),
            "facts_superseded": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = $1 "
                                               "AND superseded_at IS NOT NULL", uid),
            "facts_archived": self.db.scalar("SELECT count(*) FROM facts WHERE user_id = $1 "
                                             "AND archived_at IS NOT NULL AND superseded_at IS NULL", uid),
            "summaries": self.db.scalar("SELECT count(*) FROM summaries WHERE user_id = $1", uid),
            "forgotten": self.db.scalar("SELECT count(*) FROM forgotten WHERE user_id = $1", uid),
            "unembedded": self.unembedded_count(),
            "embedding_errors": sum(self.db.scalar(f"SELECT count(*) FROM {t} WHERE user_id = $1 "
                                                   "AND embedding_error IS NOT NULL", uid) for t in tables),
            "embedders": {row[0]: row[1] for row in self.db.execute(
                "SELECT embedder, count(*) FROM embeddings WHERE user_id = $1 GROUP BY embedder", uid)},
        }

    @cached_property
    def text(self) -> SqliteTextIndex:
        """The user's full-text index (`text_index.py`)."""
        return SqliteTextIndex(self)


def _conforms_to_the_seam(store: MemoryStore, memory: UserMemory) -> tuple[Backend, UserStore]:
    """Never called: mypy checks here that the SQLite classes are what `interface.py` promises."""
    return store, memory
