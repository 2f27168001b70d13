"""The Postgres backend (`interface.Backend`): one server holds the memories of many users and devices.

`PgStore.open(url)` connects, migrates (`migrations/`: the history both engines share, under an advisory lock, so
two clients starting at once migrate once), and hands out `UserMemory` handles (`user_memory.py`): the same class
and parts as on SQLite (their statements run as written on both engines: `sql.py`), built with Postgres's two
indexes: full text by `text_index.PgTextIndex`, vectors by `vector_index.PgVectorIndex`. It stands beside SQLite's
`store.MemoryStore`, not under it. Each handle's connection is bound to its user
(`connection.PgDatabase.for_user`): row-level security keeps every statement to that user's rows, and the user's
writes queue behind one another without a file lock.
"""

from __future__ import annotations

from collections.abc import Callable

from coop.errors import StoreError
from coop.memory.kinds import REGISTRY
from coop.memory.storage.health import guarded, schema
from coop.memory.storage.items import Finding, check_user_id
from coop.memory.storage.migrations import apply_migrations, schema_version
from coop.memory.storage.postgres import text_index, vector_index
from coop.memory.storage.postgres.connection import Link, PgDatabase, connect, redacted, with_vectors
from coop.memory.storage.postgres.text_index import PgTextIndex
from coop.memory.storage.postgres.vector_index import PgVectorIndex
from coop.memory.storage.user_memory import UserMemory

MIN_PGVECTOR = (0, 8)  # iterative index scans (a user's filter never returns fewer than k) came in 0.8.0


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def ensure_schema(db: PgDatabase) -> None:
    """pgvector present and recent enough, then coop's schema brought up to date (once, whoever starts first)."""
    _ensure_pgvector(db)
    apply_migrations(db)


def _ensure_pgvector(db: PgDatabase) -> None:
    """pgvector enabled (by this role if it may) and 0.8 or newer: the schema's vectors need it."""
    with db.atomic():
        db.run("SELECT pg_advisory_xact_lock(hashtext('coop:schema'))")
        found = db.run("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        if not found:
            available = db.run("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if not available:
                raise StoreError(f"the Postgres server at {db.path} has no pgvector extension",
                                 hint="install pgvector on the server (0.8 or newer), or use a managed Postgres "
                                      "that offers it")
            try:
                with db.atomic():
                    db.run("CREATE EXTENSION IF NOT EXISTS vector")
            except StoreError:
                raise StoreError(f"cannot enable pgvector in the database at {db.path}",
                                 hint="as a superuser, run: CREATE EXTENSION vector;") from None
            found = db.run("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        if _version(found[0][0]) < MIN_PGVECTOR:
            raise StoreError(f"pgvector {found[0][0]} is too old (coop needs 0.8 or newer)",
                             hint="ALTER EXTENSION vector UPDATE; after upgrading pgvector on the server")


class PgStore:
    """Memories on a Postgres server (`interface.Backend`); its connection is bound to no one user (`ALL_USERS`),
    each `user()` to that user."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    @classmethod
    def open(cls, url: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> "PgStore":
        db = PgDatabase(Link(connect(url), url))
        try:
            if migrate:
                ensure_schema(db)
                with_vectors(db.conn)  # the extension may be new
            elif not schema_version(db):
                raise StoreError(f"the database at {db.path} holds no coop memory",
                                 hint="run coop once against it to make (or upgrade) its tables")
        except BaseException:
            db.close()
            raise
        return cls(db)

    @property
    def url(self) -> str:
        return self.db.link.url

    @property
    def location(self) -> str:
        return redacted(self.url)

    @property
    def read_only(self) -> bool:
        return False

    @property
    def throwaway(self) -> bool:
        return False

    def reopen(self) -> "PgStore":
        return PgStore.open(self.url, migrate=False)

    def close(self) -> None:
        self.db.close()

    def user(self, user_id: str) -> UserMemory[PgDatabase]:
        """One user's memory on this server, on a view of the connection bound to that user, with Postgres's
        indexes."""
        user_id = check_user_id(user_id)
        return UserMemory(self.db.for_user(user_id), user_id, backend=self, text=PgTextIndex, vectors=PgVectorIndex)

    def user_ids(self) -> list[str]:
        return [row[0] for row in self.db.run("SELECT id FROM users ORDER BY id")]

    def embedders(self) -> dict[str, int]:
        rows = self.db.run("SELECT embedder, count(*) FROM embeddings GROUP BY embedder")
        return {row[0]: int(row[1]) for row in rows}

    def rebuild_fulltext(self) -> dict[str, int]:
        """Index every user's items again from their text; rows indexed, under the one index there is."""
        total = 0
        for user_id in self.user_ids():
            total += PgTextIndex(self.user(user_id)).rebuild()
        return {"fulltext_postings": total}

    def check(self) -> list[Finding]:
        """The server, its version, pgvector's, the schema, whether row-level security binds this role, and the
        vectors, and the full-text index, for `coop check`."""
        return (guarded("postgres", self._server) + guarded("schema", lambda: schema(self.db)) +
                guarded("stored vectors", self._vectors) + guarded("full text", lambda: text_index.findings(self.db)))

    def guarded(self, name: str, run: Callable[[], list[Finding]]) -> list[Finding]:
        """`run`'s findings; a server that fails while it reads (gone, refusing) is one."""
        return guarded(name, run)

    def _server(self) -> list[Finding]:
        version = self.db.run("SHOW server_version")[0][0]
        vector = self.db.run("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        role = self.db.run("SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user")
        findings = [Finding("postgres", "ok", f"PostgreSQL {version} at {self.location}"),
                    Finding("pgvector", "ok", f"pgvector {vector[0][0]}") if vector else
                    Finding("pgvector", "error", "pgvector is not enabled", "as a superuser: CREATE EXTENSION vector;")]
        if role and role[0][1]:
            findings.append(Finding("row-level security", "warning",
                                    f"role {role[0][0]} is a superuser (or bypasses RLS): users' rows are kept apart "
                                    "by coop's queries alone", "connect as an ordinary role that owns the tables"))
        else:
            findings.append(Finding("row-level security", "ok", "each user's rows are reachable only as that user"))
        return findings

    def _vectors(self) -> list[Finding]:
        rows = self.db.run("SELECT v.embedder, v.dims, (SELECT count(*) FROM embeddings e "
                           "WHERE e.embedder = v.embedder) FROM vector_indexes v ORDER BY v.embedder")
        pending = sum(int(self.db.run(f"SELECT count(*) FROM {spec.table} WHERE embedder IS NULL")[0][0])
                      for spec in REGISTRY.values())
        found = [Finding("vector index", "ok", f"{embedder}: {count} vectors, {dims} dimensions (searched exactly per "
                                 f"user, through the user's own HNSW index past {vector_index.EXACT_BELOW:,})")
                 for embedder, dims, count in rows]
        if pending:
            found.append(Finding("embedding backlog", "warning",
                                 f"{pending:,} item{'s' * (pending != 1)} {'has' if pending == 1 else 'have'} "
                                 "no vector yet", "run `coop memory reembed`, or let coop catch up in the background"))
        return found
