"""Checks that a coop database is whole: SQLite's own integrity, full-text indexes that match their tables, and
vectors that match their items. Used by the crash, concurrency and resource-fault tests."""

from __future__ import annotations

from coop.memory.storage.database import open_database

_BASE = {"message": "messages", "fact": "facts", "summary": "summaries"}
_FTS = {"facts": "facts_fts", "summaries": "summaries_fts"}  # message_context_fts, contentless: below


def consistency_problems(path: str) -> list[str]:
    """Everything wrong with the database at `path` (an empty list when it is consistent)."""
    db = open_database(path)  # as the next start would: a migration cut short by a crash is done again
    problems: list[str] = []
    try:
        result = [row[0] for row in db.execute("pragma integrity_check")]
        if result != ["ok"]:
            problems.append(f"integrity_check: {result[:5]}")
        bad_keys = list(db.execute("pragma foreign_key_check"))
        if bad_keys:
            problems.append(f"foreign_key_check: {bad_keys[:5]}")
        for table, fts in _FTS.items():
            try:  # with rank 1, FTS5 also compares the index with the content table, row by row
                db.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:
                problems.append(f"{fts} integrity-check: {exc}")
            base = {row[0] for row in db.execute(f"SELECT id FROM {table}")}
            indexed = {row[0] for row in db.execute(f"SELECT id FROM {fts}_docsize")}
            if base != indexed:
                problems.append(f"{fts}: ids differ from {table}: only in table {sorted(base - indexed)[:5]}, "
                                f"only in index {sorted(indexed - base)[:5]}")
        # Later full-text indexes over messages (m002's message_context_fts, contentless) hold the same ids.
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "message_context_fts" in tables:
            messages = {row[0] for row in db.execute("SELECT id FROM messages")}
            source = ("message_context_fts_docsize" if "message_context_fts_docsize" in tables
                      else "message_context_fts")
            column = "id" if source.endswith("_docsize") else "rowid"
            indexed = {row[0] for row in db.execute(f"SELECT {column} FROM {source}")}
            if messages != indexed:
                problems.append(f"message_context_fts: ids differ from messages: only in table "
                                f"{sorted(messages - indexed)[:5]}, only in index {sorted(indexed - messages)[:5]}")
        # Every stored vector belongs to a live item of the same user; every item marked embedded has its vector.
        for kind, table in _BASE.items():
            orphans = db.scalar(f"SELECT count(*) FROM embeddings e WHERE e.kind = $1 AND NOT EXISTS "
                                f"(SELECT 1 FROM {table} t WHERE t.id = e.item_id AND t.user_id = e.user_id)", (kind,))
            if orphans:
                problems.append(f"{orphans} {kind} vectors without their item")
            missing = db.scalar(f"SELECT count(*) FROM {table} t WHERE t.embedder IS NOT NULL AND NOT EXISTS "
                                "(SELECT 1 FROM embeddings e WHERE e.kind = $1 AND e.item_id = t.id "
                                "AND e.embedder = t.embedder AND e.user_id = t.user_id)", (kind,))
            if missing:
                problems.append(f"{missing} {kind}s marked embedded without a vector")
        # Every vector carries its sign bits (what the in-memory bit scan reads): one bit a dimension.
        unscanned = db.scalar("SELECT count(*) FROM embeddings WHERE bits IS NULL OR length(bits) * 32 != length(vector)")
        if unscanned:
            problems.append(f"{unscanned} vectors without their sign bits")
    finally:
        db.close()
    return problems


def row_ids(path: str, table: str, user_id: str | None = None) -> set[int]:
    db = open_database(path, migrate=False)
    try:
        if user_id is None:
            return {row[0] for row in db.execute(f"SELECT id FROM {table}")}
        return {row[0] for row in db.execute(f"SELECT id FROM {table} WHERE user_id = $1", (user_id,))}
    finally:
        db.close()
