"""The SQLite file: one apsw connection per thread, pragmas, sqlite-vec, numbered migrations, `atomic()`.

Why apsw: the system `sqlite3` module here cannot load extensions, and apsw ships a current SQLite with FTS5.
An apsw connection must not be shared across threads, so every thread (the REPL, the embedding worker, the
consolidation worker) calls `open_database()` for its own.

Full-text tables index `coop_fts(text)` rather than the raw text: that function puts spaces between the
characters of scripts written without spaces (Chinese, Japanese, Thai, Korean), so a word inside a sentence is a
phrase of one-character tokens and still matches. It is deterministic and registered on every connection;
the triggers that keep the FTS tables in step call it for both insert and delete, so the index always gets
back exactly the tokens it was given.
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import apsw

from coop.errors import StoreError, UsageError

# Han, Hiragana/Katakana, Hangul syllables, Thai and Lao: scripts whose words are not separated by spaces.
UNSPACED_CHARS = r"\u0e00-\u0eff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNSPACED = re.compile(f"([{UNSPACED_CHARS}])")


def fts_text(text: str | None) -> str:
    """Text as the FTS index sees it: characters of unspaced scripts split into their own tokens."""
    if not text:
        return ""
    return _UNSPACED.sub(r" \1 ", text)


@dataclass
class Database:
    """One open connection plus what was learned while opening it."""

    conn: apsw.Connection
    path: str
    vec_version: str | None = None
    vec_error: str | None = None
    read_only: bool = False  # opened from a place nobody here can write: reads work, writes are StoreErrors
    _depth: int = field(default=0, repr=False)

    @property
    def has_vec(self) -> bool:
        return self.vec_version is not None

    def execute(self, sql: str, params: Any = None) -> apsw.Cursor:
        try:
            return self.conn.execute(sql, params)
        except apsw.Error as exc:
            _reraise(exc, self.path)
        except UnicodeEncodeError:
            raise _not_utf8() from None

    def executemany(self, sql: str, rows: Any) -> None:
        with self.atomic():
            try:
                self.conn.executemany(sql, rows)
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
        timeout. Taking the write lock up front makes concurrent writers queue instead of failing.
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
            self.conn.execute("COMMIT")
        except apsw.Error as exc:
            _reraise(exc, self.path)

    def close(self) -> None:
        self.conn.close()


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


def _reraise(exc: apsw.Error, path: str) -> None:
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


def _load_sqlite_vec(conn: apsw.Connection) -> tuple[str | None, str | None]:
    if os.environ.get("COOP_DISABLE_SQLITE_VEC"):
        return None, "disabled by COOP_DISABLE_SQLITE_VEC"
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        try:
            conn.load_extension(sqlite_vec.loadable_path())
        finally:
            conn.enable_load_extension(False)
        return conn.execute("select vec_version()").fetchone()[0], None
    except Exception as exc:  # any failure means: run on the numpy path
        return None, f"{type(exc).__name__}: {exc}"


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


def open_database(path: str, *, busy_timeout_ms: int = 5000, migrate: bool = True) -> Database:
    """Open (creating if needed) the database at `path`, with pragmas, sqlite-vec and migrations applied.

    A database in a place nobody here can write (a read-only disk, a backup without write permission) opens
    read-only: everything that reads works, and every write is a `StoreError` that says the database is
    read-only."""
    read_only = path != ":memory:" and _unwritable(path)
    if path != ":memory:" and not read_only:
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
        if path != ":memory:" and not read_only:
            mode = conn.execute("pragma journal_mode = wal").fetchone()[0]
            if mode != "wal":
                conn.execute("pragma journal_mode = " + mode)
            conn.execute("pragma synchronous = normal")
        conn.create_scalar_function("coop_fts", fts_text, 1, deterministic=True)
    except apsw.NotADBError:
        raise StoreError(f"{path} is not a coop database (or it is corrupted)",
                         hint="move it aside and run again, or point memory.db_path elsewhere") from None
    except apsw.CantOpenError:
        raise StoreError(f"cannot open the database {path}",
                         hint="check that its directory exists and is writable") from None
    except apsw.BusyError:
        raise StoreError(f"the database {path} is locked by another program",
                         hint="retry, or raise memory.busy_timeout_ms") from None
    except apsw.Error as exc:
        raise StoreError(f"cannot open the database {path}: {exc}",
                         hint="run `coop check` for details") from None
    vec_version, vec_error = _load_sqlite_vec(conn)
    db = Database(conn=conn, path=path, vec_version=vec_version, vec_error=vec_error, read_only=read_only)
    if migrate:
        try:
            apply_migrations(db)
        except apsw.NotADBError:
            raise StoreError(f"{path} is not a coop database (or it is corrupted)",
                             hint="move it aside and run again, or point memory.db_path elsewhere") from None
        except apsw.CorruptError:
            raise StoreError(f"the database {path} is corrupted",
                             hint="restore a backup, or move it aside and start again") from None
    return db


# ---------------------------------------------------------------------------------------------------------
# Migrations: plain functions appended to a list, each run in one transaction with its record. Never edit one
# that has been released; add a new one.


def _fts_triggers(table: str, fts: str, columns: list[str]) -> str:
    cols = ", ".join(columns)
    new = ", ".join(f"coop_fts(new.{c})" for c in columns)
    old = ", ".join(f"coop_fts(old.{c})" for c in columns)
    return f"""
    CREATE TRIGGER {table}_fts_ai AFTER INSERT ON {table} BEGIN
      INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new});
    END;
    CREATE TRIGGER {table}_fts_ad AFTER DELETE ON {table} BEGIN
      INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old});
    END;
    CREATE TRIGGER {table}_fts_au AFTER UPDATE OF {cols} ON {table} BEGIN
      INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old});
      INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new});
    END;
    """


_TOKENIZE = "tokenize = \"porter unicode61 remove_diacritics 2\""


def m001_initial(db: Database) -> None:
    db.conn.execute(f"""
    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      created_at REAL NOT NULL
    );
    CREATE TABLE sessions (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      title TEXT,
      started_at REAL NOT NULL,
      ended_at REAL,
      last_activity_at REAL NOT NULL,
      external_id TEXT,
      UNIQUE (user_id, external_id)
    );
    CREATE INDEX sessions_user ON sessions(user_id, last_activity_at);
    CREATE TABLE messages (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      session_id INTEGER REFERENCES sessions(id),
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
      content TEXT NOT NULL,
      tool_name TEXT,
      tool_call_id TEXT,
      tool_calls TEXT,
      created_at REAL NOT NULL,
      importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
      token_count INTEGER NOT NULL DEFAULT 0,
      embedder TEXT,
      embedding_error TEXT,
      consolidated_at REAL,
      external_id TEXT,
      UNIQUE (user_id, external_id)
    );
    CREATE INDEX messages_user_session ON messages(user_id, session_id, id);
    CREATE INDEX messages_user_importance ON messages(user_id, importance);
    CREATE INDEX messages_unembedded ON messages(user_id, id) WHERE embedder IS NULL;
    CREATE TABLE facts (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      category TEXT NOT NULL DEFAULT 'general',
      key TEXT,
      value TEXT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('user', 'model', 'extraction', 'consolidation', 'import')),
      importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
      mention_count INTEGER NOT NULL DEFAULT 1,
      content_hash TEXT NOT NULL,
      created_at REAL NOT NULL,
      updated_at REAL NOT NULL,
      last_recalled_at REAL,
      superseded_by INTEGER REFERENCES facts(id) ON DELETE SET NULL,
      superseded_at REAL,
      archived_at REAL,
      embedder TEXT,
      embedding_error TEXT
    );
    CREATE UNIQUE INDEX facts_one_active_key ON facts(user_id, category, key)
      WHERE key IS NOT NULL AND superseded_at IS NULL AND archived_at IS NULL;
    CREATE INDEX facts_user_hash ON facts(user_id, category, content_hash);
    CREATE INDEX facts_user_active ON facts(user_id, superseded_at, archived_at);
    CREATE TABLE fact_history (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      fact_id INTEGER NOT NULL,
      action TEXT NOT NULL CHECK (action IN ('ADD', 'UPDATE', 'SUPERSEDE', 'MERGE', 'FORGET', 'ARCHIVE', 'RESTORE')),
      old_value TEXT,
      new_value TEXT,
      related_fact_id INTEGER,
      reason TEXT,
      created_at REAL NOT NULL
    );
    CREATE INDEX fact_history_fact ON fact_history(user_id, fact_id, id);
    CREATE TABLE summaries (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      session_id INTEGER REFERENCES sessions(id),
      span_start_id INTEGER,
      span_end_id INTEGER,
      text TEXT NOT NULL,
      created_at REAL NOT NULL,
      embedder TEXT,
      embedding_error TEXT
    );
    CREATE INDEX summaries_user ON summaries(user_id, created_at);
    CREATE TABLE forgotten (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      kind TEXT NOT NULL,
      item_id INTEGER NOT NULL,
      content_hash TEXT,
      forgotten_at REAL NOT NULL
    );
    CREATE INDEX forgotten_user_hash ON forgotten(user_id, content_hash);

    -- The canonical store of vectors (float32, unit length), one row per item and embedder; readable without
    -- sqlite-vec. vec0 tables (one per embedder, see vectors.py) are an index over it.
    CREATE TABLE embeddings (
      id INTEGER PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users(id),
      kind TEXT NOT NULL CHECK (kind IN ('message', 'fact', 'summary')),
      item_id INTEGER NOT NULL,
      embedder TEXT NOT NULL,
      vector BLOB NOT NULL,
      UNIQUE (kind, item_id, embedder)
    );
    CREATE INDEX embeddings_user ON embeddings(user_id, embedder, kind);
    CREATE TABLE vector_indexes (
      embedder TEXT PRIMARY KEY,
      table_name TEXT NOT NULL UNIQUE,
      dims INTEGER NOT NULL,
      dirty INTEGER NOT NULL DEFAULT 0
    );

    CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id', {_TOKENIZE});
    CREATE VIRTUAL TABLE facts_fts USING fts5(key, value, content='facts', content_rowid='id', {_TOKENIZE});
    CREATE VIRTUAL TABLE summaries_fts USING fts5(text, content='summaries', content_rowid='id', {_TOKENIZE});
    {_fts_triggers('messages', 'messages_fts', ['content'])}
    {_fts_triggers('facts', 'facts_fts', ['key', 'value'])}
    {_fts_triggers('summaries', 'summaries_fts', ['text'])}

    -- Deleting an item deletes its vectors; the vec0 index rows are removed by vectors.py.
    CREATE TRIGGER messages_vectors_ad AFTER DELETE ON messages BEGIN
      DELETE FROM embeddings WHERE kind = 'message' AND item_id = old.id;
    END;
    CREATE TRIGGER facts_vectors_ad AFTER DELETE ON facts BEGIN
      DELETE FROM embeddings WHERE kind = 'fact' AND item_id = old.id;
    END;
    CREATE TRIGGER summaries_vectors_ad AFTER DELETE ON summaries BEGIN
      DELETE FROM embeddings WHERE kind = 'summary' AND item_id = old.id;
    END;
    """)


# m002: the full-text index the message leg of search reads. Each message is indexed with its own words (column
# `content`) and, in a second column `context`, the words of the two messages before it in its session (each cut
# at 300 characters) and the day it was written ("Monday 8 May 2023", local time). A reply is then found by the
# words of the question it answers, and "what did I say on Monday" finds Monday's messages; search weighs the
# context column below the message's own words (search.CONTEXT_WEIGHT). Only *preceding* messages are used, so a
# message's entry is complete when it is written and never waits for later ones. When a message is deleted
# (forget) or its text changes, the two messages after it are indexed again, so a forgotten word does not stay
# findable through its neighbours. The table is contentless (it keeps no copy of the text) with
# contentless_delete, so rows are removed by rowid alone; `message_context_vocab` gives each term's document
# count. m004 drops m001's `messages_fts`, which this index replaces.
_CONTEXT_MESSAGES = 2
_CONTEXT_CHARS = 300
_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def _message_context_sql(row: str) -> str:
    """SQL for the `context` column of the message `row` (a table alias or `new`/`old` in a trigger)."""
    before = [f"coalesce((SELECT substr(p.content, 1, {_CONTEXT_CHARS}) FROM messages p WHERE p.user_id = {row}.user_id "
              f"AND p.session_id = {row}.session_id AND p.id < {row}.id ORDER BY p.id DESC LIMIT 1 OFFSET {n}), '')"
              for n in reversed(range(_CONTEXT_MESSAGES))]
    when = f"{row}.created_at, 'unixepoch', 'localtime'"
    weekday = "CASE strftime('%w', " + when + ") " + " ".join(
        f"WHEN '{i}' THEN '{name}'" for i, name in enumerate(_WEEKDAYS)) + " ELSE '' END"
    month = "CASE strftime('%m', " + when + ") " + " ".join(
        f"WHEN '{i:02d}' THEN '{name}'" for i, name in enumerate(_MONTHS, start=1)) + " ELSE '' END"
    date = (f"{weekday} || ' ' || CAST(strftime('%d', {when}) AS INTEGER) || ' ' || {month} || ' ' || "
            f"strftime('%Y', {when})")
    return "coop_fts(" + " || ' ' || ".join(before + [f"coalesce({date}, '')"]) + ")"


def _reindex_following(row: str) -> str:
    """Statements that index again the messages whose context included the message `row`."""
    following = (f"SELECT id FROM messages WHERE user_id = {row}.user_id AND session_id = {row}.session_id "
                 f"AND id > {row}.id ORDER BY id LIMIT {_CONTEXT_MESSAGES}")
    return f"""
      DELETE FROM message_context_fts WHERE rowid IN ({following});
      INSERT INTO message_context_fts (rowid, content, context)
        SELECT m.id, coop_fts(m.content), {_message_context_sql('m')} FROM messages m WHERE m.id IN ({following});"""


def _index_every_message() -> str:
    """The statement that fills `message_context_fts` from `messages` (m002, and `rebuild_fulltext`)."""
    return ("INSERT INTO message_context_fts (rowid, content, context) "
            f"SELECT m.id, coop_fts(m.content), {_message_context_sql('m')} FROM messages m")


def m002_message_context_fts(db: Database) -> None:
    db.conn.execute(f"""
    CREATE VIRTUAL TABLE message_context_fts USING fts5(content, context, content='', contentless_delete=1,
      {_TOKENIZE});
    -- How many messages hold each term: search drops a query's most common terms when matching them all would
    -- cost too much (search.POSTINGS_BUDGET).
    CREATE VIRTUAL TABLE message_context_vocab USING fts5vocab(message_context_fts, 'row');
    {_index_every_message()};
    CREATE TRIGGER messages_context_fts_ai AFTER INSERT ON messages BEGIN
      INSERT INTO message_context_fts (rowid, content, context)
        VALUES (new.id, coop_fts(new.content), {_message_context_sql('new')});
    END;
    CREATE TRIGGER messages_context_fts_ad AFTER DELETE ON messages BEGIN
      DELETE FROM message_context_fts WHERE rowid = old.id;{_reindex_following('old')}
    END;
    CREATE TRIGGER messages_context_fts_au AFTER UPDATE OF content ON messages BEGIN
      DELETE FROM message_context_fts WHERE rowid = old.id;
      INSERT INTO message_context_fts (rowid, content, context)
        VALUES (new.id, coop_fts(new.content), {_message_context_sql('new')});{_reindex_following('new')}
    END;
    """)


def m003_embedding_counts(db: Database) -> None:
    """How many vectors each user has from each embedder, kept by triggers: the vector leg sizes its sqlite-vec
    pre-selection by it (a count(*) over a million rows would cost more than the search)."""
    db.conn.execute("""
    CREATE TABLE embedding_counts (
      user_id TEXT NOT NULL,
      embedder TEXT NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (user_id, embedder)
    ) WITHOUT ROWID;
    INSERT INTO embedding_counts (user_id, embedder, count)
      SELECT user_id, embedder, count(*) FROM embeddings GROUP BY user_id, embedder;
    CREATE TRIGGER embeddings_count_ai AFTER INSERT ON embeddings BEGIN
      INSERT INTO embedding_counts (user_id, embedder, count) VALUES (new.user_id, new.embedder, 1)
        ON CONFLICT (user_id, embedder) DO UPDATE SET count = count + 1;
    END;
    CREATE TRIGGER embeddings_count_ad AFTER DELETE ON embeddings BEGIN
      UPDATE embedding_counts SET count = count - 1 WHERE user_id = old.user_id AND embedder = old.embedder;
    END;
    """)


def m004_drop_messages_fts(db: Database) -> None:
    """m001's full-text index over messages: m002's `message_context_fts` serves every search of messages since,
    so keeping both indexed every message's words twice (8.9 MB of a 353 MB database of 100,000 messages, and
    work on every write). The space it held is reused by later writes; `VACUUM` gives it back to the file system."""
    db.conn.execute("""
    DROP TRIGGER IF EXISTS messages_fts_ai;
    DROP TRIGGER IF EXISTS messages_fts_ad;
    DROP TRIGGER IF EXISTS messages_fts_au;
    DROP TABLE IF EXISTS messages_fts;
    """)


def m005_forgotten_ids_index(db: Database) -> None:
    """Every new message, fact and summary takes an id above the forgotten ones (`store.fresh_id_sql`): with this
    index that is one index lookup, not a scan of `forgotten` on every write of a chat turn."""
    db.conn.execute("CREATE INDEX forgotten_kind_item ON forgotten(kind, item_id)")


MIGRATIONS: list[Callable[[Database], None]] = [m001_initial, m002_message_context_fts, m003_embedding_counts,
                                                m004_drop_messages_fts, m005_forgotten_ids_index]
SCHEMA_VERSION = len(MIGRATIONS)


# The full-text indexes, each with the table whose rows it indexes. `message_context_fts` is contentless (it keeps
# no copy of the text), so FTS5's own integrity check cannot compare it with `messages`; `fulltext_problems`
# compares the ids instead.
FULLTEXT_INDEXES = {"message_context_fts": "messages", "facts_fts": "facts", "summaries_fts": "summaries"}


def fulltext_problems(db: Database) -> list[str]:
    """The full-text indexes that are damaged or out of step with their tables (an empty list when all are well).

    FTS5's 'integrity-check' (with rank 1, against the content table too, where there is one) plus, for every
    index, exactly the ids of its table's rows. Writes nothing, but FTS5 runs the check as an INSERT, so it needs
    a writable database."""
    bad = []
    for index, table in FULLTEXT_INDEXES.items():
        try:  # straight on the connection: a damaged index is a finding here, not an error to translate
            db.conn.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")
        except apsw.CorruptError:
            bad.append(index)
            continue
        if db.scalar(f"SELECT EXISTS (SELECT id FROM {table} EXCEPT SELECT id FROM {index}_docsize) "
                     f"OR EXISTS (SELECT id FROM {index}_docsize EXCEPT SELECT id FROM {table})"):
            bad.append(index)
    return bad


def rebuild_fulltext(db: Database) -> dict[str, int]:
    """Build every full-text index again from the stored text; returns the rows indexed per index.

    For an index that `coop check` finds damaged or out of step (a disk fault, a copy made mid-write, a
    hand edit of the database). External-content indexes rebuild themselves from their table; the contentless
    message index is emptied and filled again with each message's words and context, as its triggers would."""
    counts = {}
    with db.atomic():
        for index, table in FULLTEXT_INDEXES.items():
            if index == "message_context_fts":
                db.execute("INSERT INTO message_context_fts(message_context_fts) VALUES ('delete-all')")
                db.execute(_index_every_message())
            else:
                db.execute(f"INSERT INTO {index}({index}) VALUES ('rebuild')")
            counts[index] = int(db.scalar(f"SELECT count(*) FROM {index}_docsize"))
    return counts


def schema_version(db: Database) -> int:
    exists = db.scalar("select count(*) from sqlite_master where type = 'table' and name = '_migrations'")
    if not exists:
        return 0
    return int(db.scalar("select coalesce(max(id), 0) from _migrations"))


def apply_migrations(db: Database) -> int:
    """Run the migrations not yet recorded; returns how many ran. A newer schema than we know is an error."""
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise StoreError(f"{db.path} was written by a newer coop (schema {current}, this one knows {SCHEMA_VERSION})",
                         hint="upgrade coop")
    if current == SCHEMA_VERSION:
        return 0
    with db.atomic():
        db.conn.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                        "applied_at REAL NOT NULL)")
        current = schema_version(db)  # another process may have migrated while we waited for the lock
        for number, migration in enumerate(MIGRATIONS[current:], start=current + 1):
            migration(db)
            db.conn.execute("INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)",
                            (number, migration.__name__, time.time()))
    return SCHEMA_VERSION - current
