"""The Postgres connection: what `connection.Database` is for SQLite (execute, one, scalar, atomic, snapshot,
stream), over psycopg 3, so the shared parts run on it unchanged: their statements (`sql.py`) are written once,
with Postgres's own `$1` .. `$n` parameters, and sent as written.

- One psycopg connection per handle, in autocommit mode: a read outside `atomic()` holds no snapshot open. A
  handle is one thread's, like an apsw connection (`Backend.reopen` gives another thread its own).
- `for_user(user_id)` gives a view of the same connection bound to one user: it sets `coop.user_id`, which row-level
  security reads (`migrations/m001_initial_postgres.py`), before its statements, and its outermost `atomic()` takes
  that user's advisory lock, so two clients writing one user's memory queue (as SQLite's write lock makes them) and
  a check then insert (a fact's key, a session's external id) cannot race; other users' writes go on beside it.
- `beside()`: the same view on a second connection of the handle's (made once, closed with it), for a search's
  vector leg run in another thread while this connection reads its full-text leg. Both connections are the same
  login role, and the second is bound to the view's user before its first statement, so row-level security holds
  on it as on the first; both read outside any transaction (each statement sees what was committed when it began,
  as two statements on one connection would), and none is offered inside one (the second could not see its writes).
- The setting is a session setting: a transaction-mode pooler (PgBouncer, Supavisor on 6543) can hand the next
  statement another server connection, so coop needs a direct connection or a session-mode pooler.
- Errors: a server that cannot be reached, a full disk, a read-only server become `StoreError`s with a hint;
  everything else (bad SQL) passes through as the bug it is.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

from coop.errors import StoreError, StoreUnreachable, UsageError

if TYPE_CHECKING:
    import psycopg

ALL_USERS = "*"  # the `coop.user_id` of store-wide reads (listing users, `coop check`, `migrate`)
# The tables a forgotten text can have been in (its row, history, quotes, jobs, full-text terms, vectors).
TEXT_TABLES = ("messages", "facts", "fact_history", "summaries", "sessions", "fact_sources", "memory_jobs",
               "fulltext_items", "fulltext_terms", "fulltext_postings", "embeddings", "embedding_points")


def redacted(url: str) -> str:
    """The URL without its password, for people, logs and `coop check`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class Rows(list[tuple[Any, ...]]):
    """A statement's rows, read whole (what the parts do with an apsw cursor anyway), with a cursor's reads."""

    def fetchall(self) -> "Rows":
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None


@dataclass
class Link:
    """The connection one handle and its per-user views share, with the user its session setting names."""

    conn: "psycopg.Connection[Any]"
    url: str
    bound: str | None = None
    settings: dict[str, str] = field(default_factory=dict)  # what `PgDatabase.configure` set for the session
    second: "Link | None" = None  # `PgDatabase.beside`'s connection, once made
    refused: bool = False  # the server refused a second connection: not asked again
    making: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def beside(self) -> "Link | None":
        """The second connection (made on first use, from any thread), or None when the server refused it."""
        with self.making:
            if self.second is None and not self.refused:
                try:
                    self.second = Link(connect(self.url), self.url)
                except StoreError:
                    self.refused = True  # a full server (max_connections): the search runs its legs in turn
            return self.second

    def close(self) -> None:
        """Both connections closed."""
        with self.making:
            second, self.second = self.second, None
        if second is not None:
            second.conn.close()
        self.conn.close()


def _unreachable(location: str, exc: Exception) -> StoreError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnreachable(f"cannot reach the Postgres server at {location}: {first}",
                      hint="check that the server is running and memory.url (or COOP_DATABASE_URL) is right")


def translate_error(exc: Exception, location: str) -> Exception:
    """A psycopg error as the `StoreError` people see, or the error itself when it is a bug."""
    import psycopg
    from psycopg import errors

    if isinstance(exc, (errors.DiskFull, errors.OutOfMemory)):
        return StoreError("the database server is out of space: nothing was written", hint="free some space and retry")
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return StoreError(f"the database at {location} is read-only: nothing was written",
                          hint="connect to the primary server, not a replica")
    if isinstance(exc, errors.InsufficientPrivilege):
        return StoreError(f"the database at {location} refused the change: {exc}".splitlines()[0],
                          hint="grant the role in memory.url the rights on coop's tables")
    if isinstance(exc, errors.CharacterNotInRepertoire) or (
            isinstance(exc, psycopg.DataError) and "NUL" in str(exc)):
        return UsageError("the text holds a character the database cannot store (NUL or invalid UTF-8)",
                          hint="remove NUL characters and convert the input to UTF-8")
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, errors.QueryCanceled):
        return _unreachable(location, exc)
    return exc


def _reraise(exc: Exception, location: str) -> NoReturn:
    mapped = translate_error(exc, location)
    if mapped is exc:
        raise exc
    raise mapped from exc


def connect(url: str) -> "psycopg.Connection[Any]":
    """A psycopg connection to `url` in autocommit mode, or a one-line `StoreError`."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("the Postgres backend needs psycopg", hint="pip install 'coop[postgres]'") from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="coop")
    except psycopg.Error as exc:
        raise _unreachable(redacted(url), exc) from None
    with_vectors(conn)
    return conn


def with_vectors(conn: "psycopg.Connection[Any]") -> bool:
    """pgvector's adapter on the connection (numpy arrays go to `vector` in binary), once the extension exists in
    the database (a first open makes it, then calls this again); False before."""
    try:
        from pgvector.psycopg import register_vector
    except ImportError:
        raise StoreError("the Postgres backend needs pgvector's adapter", hint="pip install 'coop[postgres]'") from None
    if conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone() is None:
        return False
    register_vector(conn)
    return True


def as_stored(params: Any) -> list[Any] | None:
    """A shared statement's values as both engines store them: booleans are the integers SQLite keeps (the
    columns are integers on both)."""
    if params is None:
        return None
    return [int(value) if isinstance(value, bool) else value for value in params]


@dataclass
class PgDatabase:
    """One Postgres connection as the shared parts use a `Database`; `user` is what `coop.user_id` is set to
    before each statement (see the module's docstring)."""

    link: Link
    user: str = ALL_USERS
    read_only: bool = False
    caches: dict[str, Any] = field(default_factory=dict, repr=False)
    dialect: str = "postgres"

    @property
    def conn(self) -> "psycopg.Connection[Any]":
        return self.link.conn

    @property
    def path(self) -> str:
        """Where the store is, for people: the URL without its password."""
        return redacted(self.link.url)

    @property
    def key_location(self) -> str:
        """Where the forget key is kept (`forget_key.py`): a file in coop's home named after this server and
        database, never in the database (share it between devices by copying it: the README says how)."""
        from coop.config.loading import coop_home

        name = hashlib.sha256(self.path.encode()).hexdigest()[:16]
        folder = coop_home() / "forget-keys"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(folder / f"postgres-{name}")

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        # a connection the server dropped is in no transaction (its status is UNKNOWN): the next statement, or the
        # next transaction, connects again
        return self.conn.info.transaction_status not in (TransactionStatus.IDLE, TransactionStatus.UNKNOWN)

    def for_user(self, user_id: str) -> "PgDatabase":
        """A view of this connection bound to one user (row-level security and the user's write lock)."""
        return PgDatabase(self.link, user_id, self.read_only, self.caches)

    def beside(self) -> "PgDatabase | None":
        """This view on the handle's second connection, for reads in another thread while this one reads (see
        the module's docstring); None inside a transaction, or when the server refused a second connection."""
        if self.in_transaction:
            return None
        second = self.link.beside()
        return None if second is None else PgDatabase(second, self.user, self.read_only, self.caches)

    def _bind(self) -> None:
        if self.link.bound != self.user:
            self.link.conn.execute("SELECT set_config('coop.user_id', %s, false)", (self.user,))
            self.link.bound = self.user if not self.in_transaction else None  # a rollback would undo it

    def _reconnect(self) -> bool:
        """After the server went away (a restart, a dropped idle connection), connect again, once, if nothing
        was in flight: True when a new connection is ready."""
        if not self.conn.broken and not self.conn.closed:
            return False
        try:
            self.link.conn = connect(self.link.url)
        except StoreError:
            return False
        self.link.bound = None
        settings, self.link.settings = self.link.settings, {}
        if settings:  # the statement about to be sent again may rely on them
            self.conn.execute("SELECT " + ", ".join("set_config(%s, %s, false)" for _ in settings),
                              [x for pair in settings.items() for x in pair])
            self.link.settings = settings
        return True

    def configure(self, settings: dict[str, str]) -> None:
        """Server settings for coop's own statements on this connection (a search's `hnsw.*`), sent only when one
        differs from what the session has: a search pays no transaction and no round trip for them. Inside a
        transaction they are the transaction's alone (a rollback would undo a session setting unseen)."""
        local = self.in_transaction
        changed = {name: value for name, value in settings.items() if local or self.link.settings.get(name) != value}
        if not changed:
            return
        self.run("SELECT " + ", ".join("set_config(%s, %s, %s)" for _ in changed),
                 [x for name, value in changed.items() for x in (name, value, local)])
        if not local:
            self.link.settings.update(changed)

    def run(self, sql: str, params: Any = None) -> Rows:
        """A statement in Postgres's own SQL (`%s` placeholders: the Postgres-only modules), its rows read whole."""
        return self._rows(sql, params, raw=False)

    def execute(self, sql: str, params: Any = None) -> Rows:
        """A statement of the parts both engines share (`sql.py`), run as written: its `$1` .. `$n` are
        Postgres's own parameters (psycopg's raw cursor passes them through)."""
        return self._rows(sql, as_stored(params), raw=True)

    def _rows(self, sql: str, params: Any, raw: bool) -> Rows:
        """Outside a transaction, a connection the server dropped is made again and the statement sent once more."""
        import psycopg

        def send() -> Any:
            self._bind()
            if raw:
                return psycopg.RawCursor(self.conn).execute(sql, params)
            return self.conn.execute(sql, params)

        try:
            try:
                cursor = send()
            except psycopg.OperationalError:
                if not self._reconnect():
                    raise
                cursor = send()
            return Rows(cursor.fetchall() if cursor.description is not None else [])
        except UnicodeEncodeError:
            raise UsageError("the text is not valid UTF-8", hint="convert the input to UTF-8") from None
        except Exception as exc:
            _reraise(exc, self.path)

    def executemany(self, sql: str, rows: Any) -> None:
        """Many rows through one shared statement (`$1` .. `$n`), in one transaction."""
        import psycopg

        with self.atomic():
            try:
                with psycopg.RawCursor(self.conn) as cursor:
                    cursor.executemany(sql, [as_stored(row) or () for row in rows])
            except UnicodeEncodeError:
                raise UsageError("the text is not valid UTF-8", hint="convert the input to UTF-8") from None
            except Exception as exc:
                _reraise(exc, self.path)

    def one(self, sql: str, params: Any = None) -> Any:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction that nests (savepoints inside); the outermost one of a user's view holds that user's
        write lock until it ends."""
        try:
            outermost = not self.in_transaction
            if outermost:  # through `run`: a dropped connection is made again before the transaction starts
                self.run("SELECT set_config('coop.user_id', %s, false)", (self.user,))
                self.link.bound = self.user
            else:
                self._bind()
            with self.conn.transaction():
                if outermost and self.user != ALL_USERS:
                    self.conn.execute("SELECT pg_advisory_xact_lock(hashtext('coop:user'), hashtext(%s))",
                                      (self.user,))
                yield
        except StoreError:
            raise
        except Exception as exc:
            if isinstance(exc, UsageError):
                raise
            _reraise(exc, self.path)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A transaction for reads that need settings of their own (`SET LOCAL`), without the user's write lock:
        a search never waits for another device's write."""
        if self.in_transaction:
            yield
            return
        self.run("SELECT set_config('coop.user_id', %s, false)", (self.user,))  # reconnects if need be
        self.link.bound = self.user
        try:
            with self.conn.transaction():
                yield
        except Exception as exc:
            _reraise(exc, self.path)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A block whose reads all see one state of the database (REPEATABLE READ), unless one is open."""
        if self.in_transaction:
            yield
            return
        self._bind()
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            if self.in_transaction:
                self.conn.execute("COMMIT")

    def stream(self, sql: str, params: Any = None) -> Iterator[tuple[Any, ...]]:
        """The rows of a shared statement a thousand at a time (a server-side cursor: inside `snapshot`)."""
        import psycopg

        self._bind()
        with psycopg.RawServerCursor(self.conn, name=f"coop_stream_{id(self)}") as cursor:
            cursor.itersize = 1000
            cursor.execute(sql, as_stored(params))
            yield from cursor

    def checkpoint(self) -> None:
        """After a forget: VACUUM the tables that held the text, so its dead row versions are removed now rather
        than whenever autovacuum comes (best effort: it needs the owner's rights or MAINTAIN, granted to people's
        roles from Postgres 17 on by `people.grant_people`, and no transaction open). The server's write-ahead log
        and its backups keep what they keep: the README says so."""
        if self.in_transaction:
            return
        # SKIP_DATABASE_STATS (Postgres 16 on): the database's oldest transaction id is left to autovacuum, not
        # worked out again over every table of the server after each forget
        options = "(SKIP_DATABASE_STATS) " if self.conn.info.server_version >= 160000 else ""
        try:
            self.conn.execute(f"VACUUM {options}{', '.join(TEXT_TABLES)}")
        except Exception:
            pass

    def compact(self) -> str | None:
        """Rewrite every table that held a forgotten text, and its indexes, into new files (VACUUM FULL): what a
        VACUUM leaves in a page's free space and in index pages goes with the old files. Each table is locked
        while it is rewritten. None when done, else why it could not be (the role's rights)."""
        if self.in_transaction:
            return "a transaction is open"
        maintain = "has_table_privilege(c.oid, 'MAINTAIN')" if self.conn.info.server_version >= 170000 else "false"
        barred = [str(r[0]) for r in self.run(
            f"SELECT c.relname FROM pg_class c WHERE c.oid = ANY(%s::regclass[]) "
            f"AND NOT (pg_has_role(session_user, c.relowner, 'USAGE') OR {maintain})", (list(TEXT_TABLES),))]
        if barred:
            return (f"the database role {self.run('SELECT session_user')[0][0]} may not rewrite {', '.join(barred)} "
                    "(it needs the tables' owner, or MAINTAIN from PostgreSQL 17 on)")
        self.conn.execute(f"VACUUM (FULL) {', '.join(TEXT_TABLES)}")
        return None

    def close(self) -> None:
        self.link.close()
