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
from coop.memory.storage.items import EVERYONE, Finding, check_user_id
from coop.memory.storage.migrations import SCHEMA_VERSION, apply_migrations, schema_version
from coop.memory.storage.postgres import people, text_index, vector_index
from coop.memory.storage.postgres.connection import Link, PgDatabase, connect, redacted, with_vectors
from coop.memory.storage.postgres.text_index import PgTextIndex
from coop.memory.storage.postgres.vector_index import PgVectorIndex
from coop.memory.storage.user_memory import UserMemory

MIN_PGVECTOR = (0, 8)  # iterative index scans (a user's filter never returns fewer than k) came in 0.8.0


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def ensure_schema(db: PgDatabase) -> None:
    """pgvector present and recent enough, then coop's schema brought up to date (once, whoever starts first), by
    the tables' owner: a person's role cannot change the tables, and is told who can."""
    _ensure_pgvector(db)
    recorded = schema_version(db)
    if 0 < recorded < SCHEMA_VERSION and not people.access(db).owns_tables:
        raise StoreError(f"the database at {db.path} has coop's schema {recorded}; this coop needs {SCHEMA_VERSION}",
                         hint="the tables' owner runs `coop admin migrate` (or upgrade nothing here until then)")
    if apply_migrations(db):
        people.grant_people(db)  # a table a migration made is granted to every person's role too


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
        self.access = people.access(db)  # who the server says this connection is, and whose memory it reaches

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
        people.refuse_unreachable(self.access, user_id)
        return UserMemory(self.db.for_user(user_id), user_id, backend=self, text=PgTextIndex, vectors=PgVectorIndex)

    def sole_user(self) -> str | None:
        """The one user this role is mapped to (`people.Access.sole_user`), served when no user is named."""
        return self.access.sole_user

    def unbound(self) -> str | None:
        return self.access.why_unrestricted() if self.access.unrestricted else None

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

    # -- administration, as the tables' owner (`interface.ServerAdmin`, `coop admin`) ---------------------------
    def schema_version(self) -> int:
        return schema_version(self.db)

    def grant_people(self) -> None:
        people.grant_people(self.db)

    def add_person(self, user_id: str, role: str, *, create: bool = False, password: str | None = None) -> None:
        people.add_person(self.db, user_id, role, create=create, password=password)

    def remove_person(self, user_id: str, role: str | None = None) -> int:
        return people.remove_person(self.db, user_id, role)

    def people(self) -> list[tuple[str, str]]:
        return people.people(self.db)

    def build_vector_indexes(self) -> int:
        """Each user's vector index, for those with enough vectors for one to pay and none yet, or one of float32
        points made before (`vector_index.index_form`: made again of halfvec points) (`coop admin index`): only the
        tables' owner may add one. Returns how many were built."""
        embedders = [(str(r[0]), int(r[1])) for r in self.db.run("SELECT embedder, dims FROM vector_indexes")]
        built = 0
        for user_id in self.user_ids():
            vectors = PgVectorIndex(self.user(user_id))
            for embedder_id, dims in embedders:
                if vectors.has_index(embedder_id):
                    built += vectors.rebuild_index(embedder_id, dims)
                elif vectors.ensure_index(embedder_id, dims):
                    built += 1
        return built

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
        findings = [Finding("postgres", "ok", f"PostgreSQL {version} at {self.location}"),
                    Finding("pgvector", "ok", f"pgvector {vector[0][0]}") if vector else
                    Finding("pgvector", "error", "pgvector is not enabled", "as a superuser: CREATE EXTENSION vector;")]
        return findings + [self._wall()]

    def _wall(self) -> Finding:
        """Whether row-level security binds this role, and to whose memory (as read when the store opened)."""
        found = self.access
        if found.unrestricted:
            return Finding("row-level security", "error", found.why_unrestricted() + "; coop will not chat as it",
                           "connect as a person's role: " + people.ADMIN_HINT)
        if not found.reach:
            return Finding("row-level security", "error", f"the database role {found.role} is mapped to no one's "
                           "memory", people.ADMIN_HINT)
        if EVERYONE in found.reach:
            return Finding("row-level security", "warning", f"the database role {found.role} reaches every "
                           "person's memory (mapped to '*', as an operator's service is)",
                           "give each person a role of their own: " + people.ADMIN_HINT)
        return Finding("row-level security", "ok", f"the database role {found.role} reaches only the memory of "
                       + ", ".join(found.reach))

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
