"""What a store says about itself for `coop check`: its engine (SQLite with FTS5, the vector search), its schema, its
integrity, its full-text indexes, whether it can be written and who else can read it, and its vectors. Each
finding is ok, a warning or an error with a hint; the CLI prints them. A store that fails while being read (a
corrupted page, another process's lock) is a finding too, never an exception: the rest of the report still prints.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from coop.errors import CoopError
from coop.memory.kinds import REGISTRY
from coop.memory.storage.connection import THROWAWAY, Database
from coop.memory.storage.fulltext import fulltext_problems
from coop.memory.storage.items import DAMAGED_HINT, Finding
from coop.memory.storage.migrations import SCHEMA_VERSION, schema_version
from coop.memory.storage.vectors import index_status

if TYPE_CHECKING:
    from coop.memory.storage.postgres.connection import PgDatabase


def _ok(name: str, message: str) -> Finding:
    return Finding(name, "ok", message)


def engine(db: Database) -> list[Finding]:
    version = db.scalar("select sqlite_version()")
    findings = []
    try:
        db.execute("create virtual table temp.coop_check_fts using fts5(x)")
        db.execute("drop table temp.coop_check_fts")
        findings.append(_ok("sqlite", f"SQLite {version} with FTS5"))
    except Exception as exc:
        findings.append(Finding("sqlite", "error", f"SQLite {version} has no FTS5: {exc}", "reinstall apsw"))
    # How vectors are searched, said as it is: no extension. The in-memory sign-bit scan (`bit_index.py`) measured
    # faster than sqlite-vec's vec0 KNN for the same recall (bench/vectorleg.py); m012 dropped the vec0 tables.
    findings.append(_ok("vectors", "searched in memory: a scan of each user's sign bits, the best re-ranked by "
                                   "exact cosine"))
    return findings


def schema(db: "Database | PgDatabase") -> list[Finding]:
    """The schema's version against this coop's, on either engine (one history: `migrations`)."""
    version = schema_version(db)
    if version == SCHEMA_VERSION:
        return [_ok("schema", f"schema version {version} is current")]
    hint = "upgrade coop on this machine" if version > SCHEMA_VERSION else "run any coop command to migrate"
    return [Finding("schema", "error", f"schema version {version}, expected {SCHEMA_VERSION}", hint)]


def integrity(db: Database) -> list[Finding]:
    findings = schema(db)
    result = db.scalar("pragma integrity_check")
    findings.append(_ok("integrity", "integrity_check: ok") if result == "ok" else
                    Finding("integrity", "error", f"integrity_check: {result}", DAMAGED_HINT))
    if db.read_only:  # FTS5's check is an INSERT, which a read-only database refuses
        findings.append(Finding("full-text index", "warning", "not checked: the database is read-only"))
    else:
        bad = fulltext_problems(db)
        findings.append(_ok("full-text index", "in step with its tables") if not bad else
                        Finding("full-text index", "error", f"out of step: {', '.join(bad)}",
                                "run: coop memory reindex (it rebuilds them from the stored text)"))
    path = db.path
    if path != THROWAWAY:
        try:
            with db.atomic():
                db.execute("create table if not exists temp_write_probe (x)")  # a real write takes the lock
                db.execute("drop table temp_write_probe")
            findings.append(_ok("writable", f"{path} is writable"))
        except CoopError as exc:
            findings.append(Finding("writable", "error", exc.message, exc.hint))
        loose = [f"{p} ({oct(mode)})" for p, mode, want in
                 ((path, stat.S_IMODE(os.stat(path).st_mode), 0o600),
                  (str(Path(path).parent), stat.S_IMODE(os.stat(Path(path).parent).st_mode), 0o700))
                 if mode & ~want]
        findings.append(_ok("permissions", "database private to you (0600, directory 0700)") if not loose else
                        Finding("permissions", "warning", "readable by others: " + ", ".join(loose),
                                f"chmod 600 {path}; chmod 700 {Path(path).parent}"))
    return findings


def vector_findings(db: Database) -> list[Finding]:
    """The embedding backlog and the vector index's state (the stored vectors by embedder are `stored`)."""
    findings = []
    pending = sum(int(db.scalar(f"select count(*) from {spec.table} where embedder is null"))
                  for spec in REGISTRY.values())
    if pending:
        findings.append(Finding("embedding backlog", "warning",
                                f"{pending:,} item{'s' * (pending != 1)} {'has' if pending == 1 else 'have'} "
                                "no vector yet",
                                "run `coop memory reembed`, or let coop catch up in the background"))
    for index in index_status(db):
        if index["indexed"] is not None and index["indexed"] != index["stored"]:
            missing = int(str(index["stored"])) - int(str(index["indexed"]))
            findings.append(Finding("vector index", "warning",
                                    f"{missing:,} of {index['stored']:,} vectors of {index['embedder']} have no sign "
                                    "bits: search passes them over", "report this as a bug"))
    return findings


def guarded(name: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    """One group of findings; a store that fails while being read is reported as a failed finding."""
    try:
        return run()
    except CoopError as exc:
        return [Finding(name, "error", exc.message, exc.hint)]
    except apsw.BusyError:  # another program holds the write lock: the file is not damaged, just busy
        return [Finding(name, "warning", "the database is busy: another program holds its lock, so this was not "
                                         "checked", "run `coop check` again when the other coop (an import, a chat) "
                                                    "is done")]
    except apsw.Error as exc:
        return [Finding(name, "error", f"the database cannot be read: {type(exc).__name__}: {exc}", DAMAGED_HINT)]
