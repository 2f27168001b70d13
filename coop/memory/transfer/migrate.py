"""Copying memories from one store to another (`coop memory migrate`): a SQLite file up to a Postgres server, or
back down.

A migration is an export fed to an import, user by user, with the vectors carried beside it. Each user's records
are read as `coop memory export` reads them (`export.export_records`: one consistent snapshot of the source) and
written as `coop memory import` writes a coop export (`coop_format.CoopImport`), so a migration has no rules of
its own for rows: the import's hold, and stay one copy.

- Ids: a fact, message or summary keeps its source id where the target can give it (`storage/aliases.py`: on
  SQLite an id no row and no forgotten item has; on Postgres an id the migration drew from the shared sequence
  itself, so the sequence ends above it). Other users and devices may have rows there already: a row whose id
  is taken gets a new one, above every id of the source, and an alias (`id_aliases`, m019) records its source
  id, so a reference printed on the source (`undo: coop memory undo f12`) still names it on the target, with a
  note (`kept_ids.py`); the source's own aliases come along too, so SQLite -> Postgres -> SQLite keeps them.
  The import keeps the whole map for the length of the run and re-points every reference through it: a
  message's session, a fact's `superseded_by`, its history (`related_fact_id`, and ids named in its reasons)
  and its sources with their quotes, a summary's session and span. Summaries are found where they landed by
  their time and text, the vectors are written under the mapped ids. Sessions take the target's ids (nobody
  types a session's id).
- Vectors are copied as stored (float32 wholes, float16 sentence parts) through the target's `vectors.store`,
  so nothing is embedded again and a search on the target ranks as on the source. An item that has a vector of
  that embedder on the target already keeps it (a rerun copies only what is new).
- Rerun: nothing is doubled, because the import recognises what it wrote before: a session and a message by the
  source id it recorded (`external_id`: the one they had, or one derived from the source row), or by their time
  and text; a fact by its text and creation time; a summary by its text and time; a forgotten record by its
  kind and time. A rerun adds what the source gained since, and a run that stopped half-way (Ctrl-C, a lost
  server) goes on where it stopped: every batch that committed stays. Migrating back (`--from`) into the store
  a memory came from recognises its rows the same way. A fact changed in place on the source since arrives as a
  new row that supersedes the copy made before (the import's rule for a key's newer value).
- Forgetting is honoured both ways, first (`forgets.py`): an item either store forgot goes from the other before
  anything is copied, so a rerun or a round trip never brings it back; the verification counts what one side
  forgot and the other still holds (`held_elsewhere`, 0 when verified).
- Forgotten records carry no text, only kind, time and a hash keyed by a secret of each store (`forget_key.py`),
  which cannot be turned into the other store's hash. The hash is carried when both stores use the same key (its
  file copied from one to the other, as the README says for devices); otherwise the record is carried without
  it, as an import carries one, and the report says how many lost their hash: on the target those texts are no
  longer kept from being learned again. A record's item id (the id of the deleted row in the source) is not
  carried: no row on the target ever had it.
- Verified: per user and kind, the source's count against what the target holds *of this migration*: the rows
  the map points at (distinct, and present), the history rows and source links of those facts that came from the
  source, the forgotten records by kind and time, the vectors of the mapped items. Rows the target had before
  or gained otherwise are not counted, so merging into a shared server verifies as well as copying to an empty
  one. A difference is a mismatch (`UserMigration.mismatches`).
- Left behind, and said: sessions that hold nothing (no message, no summary: the import keeps none), history
  rows of forgotten facts (their fact is gone, and with it what they would point at), and the hashes above. Not
  copied: embedding errors (an item without a vector is embedded by the target's worker) and the durable memory
  jobs, which name source rows and belong to the source's worker: an extraction still pending (a turn whose
  facts were not learned yet; they run seconds after the turn) is done only where it was queued, so a
  migration is best run when the source's coop has been started once since its last chat.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, cast

from coop.errors import CoopError, StoreError, UsageError
from coop.memory.kinds import KINDS
from coop.memory.storage.interface import Backend, UserStore
from coop.memory.storage.items import check_user_id
from coop.memory.transfer.batches import Batches
from coop.memory.transfer.coop_fields import Invalid
from coop.memory.transfer.coop_fields import time as field_time
from coop.memory.transfer.coop_format import CoopImport
from coop.memory.transfer.export import export_records
from coop.memory.transfer.forgets import forgotten_elsewhere, honour_forgets
from coop.memory.transfer.readers import Problem
from coop.memory.transfer.report import ImportReport
from coop.privacy.secrets import mask

COUNTED = ("sessions", "messages", "facts", "fact_history", "fact_sources", "summaries", "forgotten", "vectors")
VECTOR_PAGE = 500  # vectors read and written at a time
_PROBE = "coop migrate: are forgotten texts keyed alike on both sides?"


@dataclass(frozen=True)
class Count:
    source: int
    target: int


@dataclass(frozen=True)
class MigrationProgress:
    """Where a migration is: which user, which step (records, vectors), and how far into it."""

    user: str
    step: str
    done: int
    total: int


@dataclass
class UserMigration:
    """One user's migration: the counts on both sides, what this run added, what was left behind and why."""

    user: str
    counts: dict[str, Count] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    left_behind: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    held_elsewhere: int = 0  # items one store forgot and the other still holds, after the copy: 0 when verified

    @property
    def mismatches(self) -> list[str]:
        """The kinds whose counts differ, and `forgotten` when forgotten text is still held on either side."""
        differ = [kind for kind, count in self.counts.items() if count.source != count.target]
        return differ + (["forgotten"] if self.held_elsewhere and "forgotten" not in differ else [])

    def as_dict(self) -> dict[str, Any]:
        return {"user": self.user, "verified": not self.mismatches, "mismatches": self.mismatches,
                "forgotten_held_elsewhere": self.held_elsewhere,
                "counts": {kind: {"source": c.source, "target": c.target} for kind, c in self.counts.items()},
                "added": self.added, "left_behind": {k: v for k, v in self.left_behind.items() if v},
                "problems": [{"where": p.where, "reason": p.reason} for p in self.problems]}


@dataclass
class MigrationReport:
    source: str
    target: str
    users: list[UserMigration] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verified(self) -> bool:
        return not any(user.mismatches for user in self.users)

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "verified": self.verified,
                "users": [user.as_dict() for user in self.users], "seconds": round(self.seconds, 3)}


ProgressCallback = Callable[[MigrationProgress], None]


def migrate(source_store: Backend, target_store: Backend, users: list[str] | None = None,
            progress: ProgressCallback | None = None) -> MigrationReport:
    """Copy every user of `source_store` (or those named) into `target_store`, then verify the counts."""
    if source_store.location == target_store.location:
        raise UsageError(f"{source_store.location} is both the source and the target",
                         hint="migrate between two different stores")
    known = source_store.user_ids()
    chosen = list(dict.fromkeys(check_user_id(name) for name in users)) if users else known
    missing = [name for name in chosen if name not in known]
    if missing:
        raise UsageError(f"no user {missing[0]!r} in the memory at {source_store.location}",
                         hint="users there: " + (", ".join(known) or "none"))
    started = time.monotonic()
    report = MigrationReport(source_store.location, target_store.location)
    for user_id in chosen:
        report.users.append(migrate_user(source_store.user(user_id), target_store.user(user_id), progress))
    report.seconds = time.monotonic() - started
    return report


class _Seen:
    """What the source's records held, as they go by: the ids of each kind, the sessions that hold something,
    each fact's history and sources, the summaries and forgotten records."""

    def __init__(self) -> None:
        self.ids: dict[str, set[int]] = {"session": set(), "message": set(), "fact": set(), "summary": set()}
        self.used_sessions: set[int] = set()
        self.fact_created: dict[int, float] = {}
        self.history: Counter[tuple[int, str, float]] = Counter()
        self.orphan_history = 0
        self.sources: set[tuple[int, int]] = set()
        self.summaries: dict[int, tuple[float, str]] = {}
        self.forgotten: list[tuple[str, float]] = []

    def add(self, record: dict[str, Any]) -> None:
        kind = record["type"]
        if kind in self.ids:
            self.ids[kind].add(record["id"])
        if kind in ("message", "summary") and record["session_id"] is not None:
            self.used_sessions.add(record["session_id"])
        if kind == "fact":
            self.fact_created[record["id"]] = record["created_at"]
            self.sources.update((record["id"], link["message_id"]) for link in record["sources"])
        elif kind == "fact_history":
            if record["fact_id"] in self.ids["fact"]:
                self.history[(record["fact_id"], record["action"], record["created_at"])] += 1
            else:
                self.orphan_history += 1
        elif kind == "summary":
            self.summaries[record["id"]] = (record["created_at"], record["text"])
        elif kind == "forgotten":
            self.forgotten.append((record["kind"], record["forgotten_at"]))


def migrate_user(source: UserStore, target: UserStore, progress: ProgressCallback | None = None) -> UserMigration:
    """Copy one user's memory from `source` to `target` (the same user id), then verify it (see the module)."""
    result = UserMigration(source.user_id)
    imported = ImportReport("coop")
    target.ensure_user()
    state = CoopImport(target, imported)
    seen = _Seen()
    honoured = honour_forgets(source, target)  # before the copy: nothing forgotten on either side is copied back
    hashes = source.copying.forgotten_hashes()
    guard = hashes if hashes and _same_forget_key(source, target) else {}
    forgotten_added = _copy_records(source, target, state, seen, guard, imported, progress)
    landed = target.copying.summary_ids()
    summaries = {old: landed[key] for old, (at, text) in seen.summaries.items()
                 if (key := (at, mask(text))) in landed}
    reviewed = source.sources.reviewed_at()
    if reviewed is not None:
        target.sources.mark_reviewed(reviewed)
    maps = {"message": state.messages, "fact": state.facts, "summary": summaries}
    vectors_added = _copy_vectors(source, target, maps, seen, progress)
    result.counts = _verify(target, state, seen, summaries)
    result.counts["vectors"] = _count_vectors(source, target, maps, seen)
    result.held_elsewhere = len(forgotten_elsewhere(source, target)) + len(forgotten_elsewhere(target, source))
    result.added = {"sessions": imported.sessions_added, "messages": imported.messages_added,
                    "facts": imported.facts_added, "summaries": imported.summaries_added,
                    "forgotten": forgotten_added, "vectors": vectors_added,
                    "forgotten_on_target": honoured["target"], "forgotten_on_source": honoured["source"]}
    result.left_behind = {"empty_sessions": len(seen.ids["session"] - seen.used_sessions),
                          "history_of_forgotten_facts": seen.orphan_history,
                          "forgotten_hashes": len(hashes) - len(guard)}
    result.problems = imported.problems
    return result


def _same_forget_key(source: UserStore, target: UserStore) -> bool:
    """True when both stores key forgotten texts with the same secret, so a hash means the same on both."""
    return source.forgotten.digest(_PROBE) == target.forgotten.digest(_PROBE)


def _copy_records(source: UserStore, target: UserStore, state: CoopImport, seen: _Seen,
                  hashes: dict[tuple[str, float], str], imported: ImportReport,
                  progress: ProgressCallback | None) -> int:
    """Every record of the user, read from one snapshot of the source, written as the coop import writes them, in
    bounded transactions (`batches.py`); a record that cannot be written is a problem, skipped alone. Returns the
    forgotten records added."""
    added = 0

    def forgotten(record: dict[str, Any]) -> None:
        nonlocal added
        kind = record["kind"]
        if kind not in KINDS:
            raise Invalid(f"unknown kind {kind!r}")
        at = field_time(record, "forgotten_at")
        if not target.forgotten.has_record(kind, at):
            target.forgotten.record(kind, hashes.get((kind, at)), at)
            added += 1

    handlers: dict[str, Callable[[dict[str, Any]], None]] = {
        "session": state.session, "message": state.message, "fact": state.fact, "fact_history": state.history,
        "summary": state.summary, "forgotten": forgotten, "alias": state.alias}
    records = cast(Generator[dict[str, Any], None, None], export_records(source))
    try:
        header = next(records)
        total = int(header["records"])
        state.claim(header)
        with Batches(target) as batches:
            for done, record in enumerate(records, 1):
                seen.add(record)
                try:
                    with batches.record():  # a savepoint: a record that fails leaves nothing behind
                        handlers[record["type"]](record)
                except Invalid as exc:
                    imported.problems.append(Problem(_where(record), f"{exc}: skipped"))
                except StoreError:
                    raise  # the target itself failed: stop; what committed stays, and a rerun goes on from there
                except CoopError as exc:
                    imported.problems.append(Problem(_where(record), f"{exc.message}: skipped"))
                if progress is not None and (done % 100 == 0 or done == total):
                    progress(MigrationProgress(source.user_id, "records", done, total))
            with batches.record():
                state.finish()
    finally:
        records.close()  # ends the source's snapshot
    return added


def _where(record: dict[str, Any]) -> str:
    """Which record, by its source id: `message 17`, `fact_history of fact 5`, `forgotten`."""
    if "id" in record:
        return f"{record['type']} {record['id']}"
    if "fact_id" in record:
        return f"{record['type']} of fact {record['fact_id']}"
    return str(record["type"])


def _copy_vectors(source: UserStore, target: UserStore, maps: dict[str, dict[int, int]], seen: _Seen,
                  progress: ProgressCallback | None) -> int:
    """The source's vectors of the copied items, written as stored under the items' target ids; an item that has
    a vector of that embedder on the target already keeps it. Returns the vectors written."""
    import numpy as np

    have = target.copying.vector_items()
    total, done, written, after = source.copying.vector_count(), 0, 0, 0
    while rows := source.copying.vector_rows(after_id=after, limit=VECTOR_PAGE):
        after = rows[-1][0]
        done += len(rows)
        groups: dict[tuple[str, str, int], list[tuple[int, bytes, bytes | None]]] = {}
        for _, kind, old_id, embedder, vector, parts in rows:
            new_id = maps[kind].get(old_id) if old_id in seen.ids[kind] else None
            if not new_id or (embedder, kind, new_id) in have:
                continue
            have.add((embedder, kind, new_id))
            groups.setdefault((kind, embedder, len(vector) // 4), []).append((new_id, vector, parts))
        for (kind, embedder, dims), items in groups.items():
            wholes = np.frombuffer(b"".join(vector for _, vector, _ in items), dtype=np.float32).reshape(-1, dims)
            sentences = [None if not parts else np.frombuffer(parts, dtype=np.float16).reshape(-1, dims)
                         for _, _, parts in items]
            target.vectors.store(kind, [new_id for new_id, _, _ in items], embedder, wholes, sentences)
            written += len(items)
        if progress is not None:
            progress(MigrationProgress(source.user_id, "vectors", done, total))
    return written


def _verify(target: UserStore, state: CoopImport, seen: _Seen, summaries: dict[int, int]) -> dict[str, Count]:
    """Per kind, the source's count and the target's count of the rows this migration put (or found) there."""

    def landed(mapping: dict[int, int], old_ids: set[int]) -> set[int]:
        return {mapping[old] for old in old_ids if mapping.get(old)}

    sessions = landed(state.sessions, seen.used_sessions)
    messages = landed(state.messages, seen.ids["message"])
    fact_ids = sorted(landed(state.facts, seen.ids["fact"]))
    facts = {item_id: item for start in range(0, len(fact_ids), 500)  # `IN` lists of a bounded length
             for item_id, item in target.get_many("fact", fact_ids[start:start + 500]).items()}
    # the facts that are the source's own (not merged into a different one the target had): their history came too
    same = {old: state.facts[old] for old, created in seen.fact_created.items()
            if state.facts.get(old) in facts and facts[state.facts[old]].created_at == created}
    history = Counter({(same[fact], action, at): n for (fact, action, at), n in seen.history.items() if fact in same})
    on_target = target.copying.history_keys(same.values())
    linked = {(state.facts.get(fact), state.messages.get(message)) for fact, message in seen.sources}
    links = {(fact, message) for fact, pairs in target.sources.quotes_of(facts).items() for message, _ in pairs}
    return {
        "sessions": Count(len(seen.used_sessions), len(target.copying.existing_ids("sessions", sessions))),
        "messages": Count(len(seen.ids["message"]), len(target.copying.existing_ids("messages", messages))),
        "facts": Count(len(seen.ids["fact"]), len(facts)),
        "fact_history": Count(sum(history.values()), sum((history & on_target).values())),
        "fact_sources": Count(len(seen.sources), len(linked & links)),
        "summaries": Count(len(seen.summaries), len(target.copying.existing_ids("summaries", summaries.values()))),
        "forgotten": Count(len(seen.forgotten), sum(target.forgotten.has_record(kind, at)
                                                    for kind, at in seen.forgotten)),
    }


def _count_vectors(source: UserStore, target: UserStore, maps: dict[str, dict[int, int]], seen: _Seen) -> Count:
    """The source's vectors of the copied items against the target's vectors of the items they landed on."""
    wanted = {(embedder, kind, item_id) for embedder, kind, item_id in source.copying.vector_items()
              if item_id in seen.ids[kind]}
    have = target.copying.vector_items()
    return Count(len(wanted), sum((embedder, kind, maps[kind].get(item_id)) in have
                                  for embedder, kind, item_id in wanted))
