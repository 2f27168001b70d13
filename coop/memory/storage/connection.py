"""The SQLite connection: one apsw connection per thread, pragmas, `atomic()`, error translation.

Why apsw: it ships a current SQLite with FTS5, pinned, so full-text search and the schema behave as tested.
An apsw connection must not be shared across threads, so every thread (the REPL, the embedding worker, the
consolidation worker) calls `open_database()` for its own.

Every connection registers `coop_fts()` (`text.fts_text`), which the full-text triggers call. `database.py`
opens a connection *and* brings its schema up to date; this module only connects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import apsw

from coop.errors import StoreError, UsageError
from coop.memory.storage.sign_bits import sign_bits_blob
from coop.memory.text import content_hash, fts_text, sentence_part_count
from coop.privacy.secrets import mask_optional

# The location of a store that lives in memory only (`memory.db_path = ":memory:"`, `coop chat --incognito`):
# nothing outlives the process, and no second handle can reach it.
THROWAWAY = ":memory:"


_NUMBER = re.compile(r"\$(\d+)")


@lru_cache(maxsize=4096)
def _in_order(sql: str) -> bool:
    """Whether a statement's numbers first appear in order ($1, then $2, ...; a repeat anywhere): SQLite numbers
    named parameters by first appearance, so such a statement takes its values as given, which binds 2,000
    values of an `IN` list without a name lookup each."""
    seen = 0
    for match in _NUMBER.finditer(sql):
        number = int(match.group(1))
        if number > seen + 1:
            return False
        seen = max(seen, number)
    return True


def numbered(sql: str, params: Any) -> Any:
    """The values of a statement the two engines share (`sql.py`): its `$1` .. `$n` are, to SQLite, parameters
    named "1" .. "n". In order, they take the values as given; otherwise (a number first used after a larger one)
    they are bound by name. SQLite's own statements (`?`) take their values as given."""
    if params is None or isinstance(params, dict) or "$" not in sql or _in_order(sql):
        return params
    return {str(number): value for number, value in enumerate(params, start=1)}


@dataclass
class Database:
    """One open connection plus what was learned while opening it."""

    conn: apsw.Connection
    path: str
    read_only: bool = False  # opened from a place nobody here can write: reads work, writes are StoreErrors
    busy_timeout_ms: int = 5000
    dialect: str = "sqlite"  # which of a shared statement's forms this engine runs (`sql.py`)
    caches: dict[str, Any] = field(default_factory=dict, repr=False)  # derived, checked copies (bit_index)
    _depth: int = field(default=0, repr=False)

    @property
    def key_location(self) -> str:
        """Where the forget key is kept (`forget_key.py`): beside the database file."""
        return self.path

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A block whose reads all see one state of the database (a read transaction, unless one is open)."""
        own = not self.conn.in_transaction
        if own:
            self.execute("BEGIN")
        try:
            yield
        finally:
            if own and self.conn.in_transaction:
                self.execute("COMMIT")

    def stream(self, sql: str, params: Any = None) -> Iterator[tuple[Any, ...]]:
        """The rows of a query one at a time, without reading them all first (inside `snapshot`)."""
        try:
            yield from self.conn.cursor().execute(sql, numbered(sql, params))
        except apsw.Error as exc:
            _reraise(exc, self.path)

    def execute(self, sql: str, params: Any = None) -> "Rows":
        try:
            return Rows(self.conn.execute(sql, numbered(sql, params)), self.path)
        except apsw.Error as exc:
            _reraise(exc, self.path)
        except UnicodeEncodeError:
            raise _not_utf8() from None

    def executemany(self, sql: str, rows: Any) -> None:
        with self.atomic():
            try:
                self.conn.executemany(sql, (numbered(sql, row) for row in rows))
            except UnicodeEncodeError:
                raise _not_utf8() from None

    def one(self, sql: str, params: Any = None) -> Any:
        """The first row or None. The cursor is always drained: an open statement would block COMMIT."""
        rows = self.execute(sql, params).fetchall()
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = None) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction that nests (SAVEPOINTs inside); on an error everything inside it is rolled back.

        The outermost level is BEGIN IMMEDIATE: in WAL mode a deferred transaction that reads and then writes
        fails at once with SQLITE_BUSY when another process wrote in between, without waiting on the busy
        timeout. Taking the write lock up front makes concurrent writers queue instead of failing. A COMMIT that
        itself fails (a reader holding a rollback-journal database past the busy timeout) rolls back too:
        otherwise the transaction would stay open and every later write would become a savepoint inside it,
        never committed, and lost at exit.
        """
        try:
            if self.conn.in_transaction:
                with self.conn:
                    yield
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        except apsw.Error as exc:
            _reraise(exc, self.path)

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file and truncate it (best effort: a reader that holds an
        old snapshot keeps its frames until it is done). After a forget, so the forgotten text's old pages do
        not linger in the -wal file."""
        if self.read_only or self.path == THROWAWAY or self.conn.in_transaction:
            return
        try:
            self.conn.execute("pragma wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error:
            pass

    def compact(self) -> str | None:
        """Rebuild the file (VACUUM): deleted rows are zeroed already (`secure_delete`); this also gives their pages
        back. None when done, else why not."""
        if self.read_only or self.path == THROWAWAY or self.conn.in_transaction:
            return "the database is read-only, in memory, or inside a transaction"
        self.conn.execute("VACUUM")
        self.checkpoint()
        return None

    def close(self) -> None:
        self.conn.close()


class Rows:
    """A statement's rows, as apsw's cursor gives them, with its errors translated as `execute` translates them. A
    statement runs a step per row, so it may fail after `execute` returned: a damaged page read by the hundredth
    row, or a write whose commit fails as the statement completes (outside a transaction SQLite commits on its last
    step: a file-size limit met by the write-ahead log). Untranslated, such an error reached the CLI as a bug in
    coop (exit 1) instead of the store error with its hint."""

    __slots__ = ("_cursor", "_path")

    def __init__(self, cursor: apsw.Cursor, path: str) -> None:
        self._cursor, self._path = cursor, path

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._cursor
        except apsw.Error as exc:
            _reraise(exc, self._path)

    def fetchall(self) -> list[Any]:
        try:
            return self._cursor.fetchall()
        except apsw.Error as exc:
            _reraise(exc, self._path)

    def fetchone(self) -> Any:
        try:
            return self._cursor.fetchone()
        except apsw.Error as exc:
            _reraise(exc, self._path)


def not_a_database(path: str) -> StoreError:
    """The file at `path` is no SQLite database, or its header is damaged (on open or on the first read)."""
    return StoreError(f"{path} is not a coop database (or it is corrupted)",
                      hint="move it aside and run again, or point memory.db_path elsewhere")


def _not_utf8() -> UsageError:
    """Text with lone surrogates (undecodable bytes smuggled into a str) cannot be stored or looked up."""
    return UsageError("the text is not valid UTF-8", hint="convert the input to UTF-8 (e.g. with iconv)")


def translate_error(exc: apsw.Error, path: str) -> Exception:
    """Map an apsw error to a `StoreError` with a hint; errors that are bugs (bad SQL) pass through."""
    if isinstance(exc, apsw.BusyError):
        return StoreError("the database is busy: another program held its lock too long",
                          hint="retry, or raise memory.busy_timeout_ms")
    if isinstance(exc, apsw.FullError):
        return StoreError("the disk is full: nothing was written", hint="free some space and retry")
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreError(f"the database is read-only: {path}; nothing was written",
                          hint="check the permissions of the file and its directory, and that its disk is not "
                               "mounted read-only")
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return StoreError(f"the database {path} is corrupted",
                          hint="restore a backup, or move it aside and start again")
    if isinstance(exc, (apsw.IOError, apsw.CantOpenError)):
        return StoreError(f"cannot read or write the database {path}: {exc}",
                          hint="check the free space (and any quota or file-size limit), the disk, and the "
                               "file's permissions")
    return exc


def _reraise(exc: apsw.Error, path: str) -> NoReturn:
    mapped = translate_error(exc, path)
    if mapped is exc:
        raise exc
    raise mapped from exc


def _make_private_path(path: str) -> None:
    """Create the database's directory (0700) and file (0600) before SQLite does, so nobody else can read them."""
    file = Path(path)
    directory = file.parent
    if not directory.exists():
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the data directory {directory}: {exc.strerror}",
                             hint="set COOP_HOME or memory.db_path to a writable place") from None
    if not file.exists():
        try:
            fd = os.open(file, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            os.close(fd)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot create the database {file}: {exc.strerror}",
                             hint="set COOP_HOME or memory.db_path to a writable place") from None


def _unwritable(path: str) -> bool:
    """True for an existing database nobody here can write: on a read-only file system, or with neither the file
    nor its directory writable by this user. Such a file cannot change under us, so it is opened immutable
    (SQLite then needs no -shm file, which could not be created there either)."""
    if not os.path.isfile(path):
        return False
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    directory = os.path.dirname(os.path.abspath(path))
    return not os.access(path, os.W_OK) and not os.access(directory, os.W_OK)


def _optional_hash(text: str | None) -> str | None:
    return None if text is None else content_hash(text)


def connect(path: str, *, busy_timeout_ms: int = 5000) -> Database:
    """Open (creating if needed) the SQLite file at `path`, with pragmas and coop's SQL functions; no schema work.

    A database in a place nobody here can write (a read-only disk, a backup without write permission) opens
    read-only: everything that reads works, and every write is a `StoreError` that says the database is
    read-only."""
    read_only = path != THROWAWAY and _unwritable(path)
    if path != THROWAWAY and not read_only:
        _make_private_path(path)
    try:
        if read_only:
            from urllib.parse import quote

            conn = apsw.Connection(f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1",
                                   flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        else:
            conn = apsw.Connection(path)
        conn.execute(f"pragma busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("pragma foreign_keys = on")
        conn.execute("pragma secure_delete = on")  # deleted rows are overwritten with zeros, not left in free space
        if path != THROWAWAY and not read_only:
            row = conn.execute("pragma journal_mode = wal").fetchone()
            if row is None:
                raise StoreError(f"cannot set the journal mode of the database {path}",
                                 hint="run `coop check` for details")
            mode = row[0]
            if mode != "wal":
                conn.execute("pragma journal_mode = " + mode)
            conn.execute("pragma synchronous = normal")
        # The ignore: apsw's stub types every scalar function as variadic (*SQLiteValue), so a one-argument
        # function (numargs=1) cannot match it.
        conn.create_scalar_function("coop_fts", fts_text, 1, deterministic=True)  # type: ignore[arg-type]
        conn.create_scalar_function("coop_sign_bits", sign_bits_blob, 1,  # type: ignore[arg-type]
                                    deterministic=True)
        conn.create_scalar_function("coop_sentence_parts", sentence_part_count, 1,  # type: ignore[arg-type]
                                    deterministic=True)
        conn.create_scalar_function("coop_mask", mask_optional, 1)  # type: ignore[arg-type]
        conn.create_scalar_function("coop_content_hash", _optional_hash, 1,  # type: ignore[arg-type]
                                    deterministic=True)
    except apsw.NotADBError:
        raise not_a_database(path) from None
    except apsw.CantOpenError:
        raise StoreError(f"cannot open the database {path}",
                         hint="check that its directory exists and is writable") from None
    except apsw.BusyError:
        raise StoreError(f"the database {path} is locked by another program",
                         hint="retry, or raise memory.busy_timeout_ms") from None
    except apsw.Error as exc:
        raise StoreError(f"cannot open the database {path}: {exc}",
                         hint="run `coop check` for details") from None
    return Database(conn=conn, path=path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
