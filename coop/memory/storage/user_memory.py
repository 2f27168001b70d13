"""`UserMemory`: one user's memory (`interface.UserStore`), the only way to reach a user's rows, on either engine.

Every query that reads or writes user data goes through it and binds its `user_id`: there is no call that takes
an item id alone, and an id that belongs to another user is simply "not found".

It is composed, not inherited: items by id and lists are its own; the rest are its parts, one module each, each a
view of it (`scope.Part`): `sessions`, `messages`, `summaries`, `facts` (every fact write and read, with history),
`sources` (provenance and the review mark), `jobs` (durable memory jobs), `refusals` (what the write path
turned down), `forgotten` (forgetting and its content-free records), `records` (an export's reads), `copying` (a
copy's reads), `aliases` (the ids an import kept, and aliases of those it could not). Their statements run as
written on both engines (`sql.py`). The two indexes are the backend's own, handed in by the backend that builds
the memory (`store.MemoryStore.user`, `postgres/store.PgStore.user`): `text` and `vectors`.

No API key is ever written: every text the parts store (messages and their tool calls, session titles,
summaries, facts, their history and reasons) is masked first (`coop.privacy.secrets.mask`), so the chat, the
extraction, consolidation, the model's tools and the importer are all covered here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from functools import cached_property
from typing import Any, Generic, TypeVar

from coop.errors import NotFoundError
from coop.memory.kinds import ACTIVE_FACT, INSTRUCTION, KINDS, REGISTRY, make_ref
from coop.memory.kinds import kind as lookup_kind
from coop.memory.storage.aliases import Aliases
from coop.memory.storage.copying import Copying
from coop.memory.storage.dump import Records
from coop.memory.storage.facts import Facts
from coop.memory.storage.forgetting import Forgetting
from coop.memory.storage.interface import Backend, TextIndex, VectorIndex
from coop.memory.storage.items import BUILDERS, COLUMNS, FACT_COLUMNS, Item, fact_item, whose
from coop.memory.storage.links import Jobs, Sources
from coop.memory.storage.messages import Messages
from coop.memory.storage.refusals import Refusals
from coop.memory.storage.scope import Scope
from coop.memory.storage.sessions import Sessions
from coop.memory.storage.sql import SqlDatabase, dialect_of, marks
from coop.memory.storage.summaries import Summaries

D = TypeVar("D", bound=SqlDatabase)


class UserMemory(Generic[D]):
    """One user's memory on the connection `db` (`D`: the engine's, so its indexes get the connection they know).
    Every statement binds `self.user_id`."""

    def __init__(self, db: D, user_id: str, *, backend: Backend, text: Callable[[Scope[D]], TextIndex],
                 vectors: Callable[[Scope[D]], VectorIndex]) -> None:
        self.db = db
        self.user_id = user_id
        self._backend = backend
        self._text_index = text
        self._vector_index = vectors

    @property
    def backend(self) -> Backend:
        """The store this memory is in (for a job that reaches other users' memories or opens its own)."""
        return self._backend

    @cached_property
    def text(self) -> TextIndex:
        """The user's full-text index (the backend's: FTS5, or BM25 over postings on Postgres)."""
        return self._text_index(self)

    @cached_property
    def vectors(self) -> VectorIndex:
        """The user's vector index (the backend's: the in-memory bit scan, or pgvector)."""
        return self._vector_index(self)

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
    def refusals(self) -> Refusals:
        return Refusals(self)

    @cached_property
    def forgotten(self) -> Forgetting:
        return Forgetting(self)

    @cached_property
    def records(self) -> Records:
        return Records(self)

    @cached_property
    def copying(self) -> Copying:
        return Copying(self)

    @cached_property
    def aliases(self) -> Aliases:
        return Aliases(self)

    @property
    def read_only(self) -> bool:
        """True when the store was opened for reading only (nothing this session says will be kept)."""
        return self.db.read_only

    def ensure_user(self) -> None:
        """Make sure the user's row exists. Not cached: a write that created it and then failed (a full disk, a
        session that was not this user's) rolls the row back, and the next write must create it again."""
        self.db.execute("INSERT INTO users (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        (self.user_id, time.time()))

    def transaction(self) -> AbstractContextManager[None]:
        """A unit of work over this user's memory: all of it is written, or (on any error) none. Nests."""
        return self.db.atomic()

    def checkpoint(self) -> None:
        """Make what was just deleted leave the store's files promptly (after a forget); best effort."""
        self.db.checkpoint()

    def compact(self) -> str | None:
        """Rewrite the store's files that held deleted rows (every user's: a file or a table is shared); None, or
        why it could not."""
        return self.db.compact()

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
