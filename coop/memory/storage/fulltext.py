"""Full-text upkeep: what the message index holds, checking every index against its table, rebuilding them.

The message leg of search reads `message_context_fts` (migration m002). Each message is indexed with its own
words (column `content`) and, in a second column `context`, the words of the two messages before it in its
session (each cut at 300 characters) and the day it was written ("Monday 8 May 2023", local time). A reply is
then found by the words of the question it answers, and "what did I say on Monday" finds Monday's messages;
search weighs the context column below the message's own words. Only *preceding* messages are used, so an
entry is complete when it is written and never waits for later ones. When a message is deleted (forget) or its
text changes, the triggers index the two messages after it again, so a forgotten word does not stay findable
through its neighbours. The table is contentless (it keeps no copy of the text), so rows are removed by rowid.

The triggers were written by a released migration and never change; `MESSAGE_CONTEXT_SQL` states the same
context expression for rebuilding the index, and a test checks that the installed triggers still use it.
"""

from __future__ import annotations

import apsw

from coop.memory.storage.connection import Database

CONTEXT_MESSAGES = 2
CONTEXT_CHARS = 300
_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def message_context_sql(row: str) -> str:
    """SQL for the `context` column of the message `row` (a table alias, or `new` in a trigger)."""
    before = [f"coalesce((SELECT substr(p.content, 1, {CONTEXT_CHARS}) FROM messages p WHERE p.user_id = "
              f"{row}.user_id AND p.session_id = {row}.session_id AND p.id < {row}.id ORDER BY p.id DESC LIMIT 1 "
              f"OFFSET {n}), '')" for n in reversed(range(CONTEXT_MESSAGES))]
    when = f"{row}.created_at, 'unixepoch', 'localtime'"
    weekday = "CASE strftime('%w', " + when + ") " + " ".join(
        f"WHEN '{i}' THEN '{name}'" for i, name in enumerate(_WEEKDAYS)) + " ELSE '' END"
    month = "CASE strftime('%m', " + when + ") " + " ".join(
        f"WHEN '{i:02d}' THEN '{name}'" for i, name in enumerate(_MONTHS, start=1)) + " ELSE '' END"
    date = (f"{weekday} || ' ' || CAST(strftime('%d', {when}) AS INTEGER) || ' ' || {month} || ' ' || "
            f"strftime('%Y', {when})")
    return "coop_fts(" + " || ' ' || ".join(before + [f"coalesce({date}, '')"]) + ")"


INDEX_EVERY_MESSAGE = ("INSERT INTO message_context_fts (rowid, content, context) "
                       f"SELECT m.id, coop_fts(m.content), {message_context_sql('m')} FROM messages m")

# The full-text indexes (all contentless since m006: they keep no copy of the text), each with the table whose
# rows it indexes and the statement that fills it from that table as its triggers would. FTS5's own integrity
# check cannot compare a contentless index with its table, so `fulltext_problems` compares the ids too.
FULLTEXT_INDEXES = {"message_context_fts": "messages", "facts_fts": "facts", "summaries_fts": "summaries"}
_FILL = {
    "message_context_fts": INDEX_EVERY_MESSAGE,
    "facts_fts": "INSERT INTO facts_fts (rowid, key, value) SELECT id, coop_fts(key), coop_fts(value) FROM facts",
    "summaries_fts": "INSERT INTO summaries_fts (rowid, text) SELECT id, coop_fts(text) FROM summaries",
}


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
    hand edit of the database). Each index is emptied and filled again from its table, as its triggers would."""
    counts = {}
    with db.atomic():
        for index in FULLTEXT_INDEXES:
            db.execute(f"INSERT INTO {index}({index}) VALUES ('delete-all')")
            db.execute(_FILL[index])
            counts[index] = int(db.scalar(f"SELECT count(*) FROM {index}_docsize"))
    return counts


def purge(db: Database, indexes: list[str]) -> None:
    """Merge these indexes' segments into one, so no trace of deleted rows stays in them: secure-delete removes
    a deleted row's postings, but a term no row holds any more can linger in an old segment until a merge. For
    `forget`, which must leave no text behind; it costs a rewrite of the index, so it is not run on every write."""
    with db.atomic():
        for index in indexes:
            db.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
