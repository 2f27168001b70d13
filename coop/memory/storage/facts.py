"""The only code that writes facts and their history.

Facts are never deleted by an update: a new value for the same (category, key) supersedes the old row, which is
kept with `superseded_by` / `superseded_at`, and every change is written to `fact_history` with its reason.
The fact pipeline (growth/reconcile.py), consolidation, the model's tools and the importer decide *what* to
write; the statements that do it are here, so the rules (one active fact per key, the history row, fresh ids,
vectors dropped when a text changes) hold for every writer alike. `forget` (forgetting.py) is the one exception
the user asks for: it deletes the row and scrubs its history through `scrub_history`. Every text written here
(value, category, key, history values and reasons) is masked first (`coop.privacy.secrets.mask`): no API key is stored.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coop.errors import NotFoundError
from coop.memory.kinds import ACTIVE_FACT, HOST, INSTRUCTION
from coop.memory.slots import HOST_MARK, kept_key, slot_of
from coop.memory.storage import vectors
from coop.memory.storage.items import (
    FACT_COLUMNS,
    MAX_FACT_CHARS,
    FactFields,
    FactWrite,
    HistoryEntry,
    Item,
    RestoredFact,
    fact_item,
)
from coop.memory.storage.scope import Part
from coop.memory.storage.sql import marks
from coop.memory.text import check_text, content_hash
from coop.privacy.secrets import mask, mask_optional


class Facts(Part):
    """One user's facts (`memory.facts`): every write (each one transaction, or a savepoint inside the caller's)
    and the reads of facts by text, key and state, with their history."""

    def is_active(self, fact_id: int) -> bool:
        return self.db.scalar(f"SELECT 1 FROM facts WHERE id = $1 AND user_id = $2 AND {ACTIVE_FACT}",
                              (fact_id, self.user_id)) is not None

    def find_exact(self, value: str, category: str) -> Item | None:
        """The active fact with this category and normalised text, if any."""
        row = self.db.one(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND category = $2 "
                          f"AND content_hash = $3 AND {ACTIVE_FACT} ORDER BY id LIMIT 1",
                          (self.user_id, category.strip().lower(), content_hash(mask(value))))  # stored masked
        return fact_item(row) if row else None

    def with_hash(self, category: str, digest: str) -> list[Item]:
        """Every fact of this user (active or not) in `category` whose normalised text has this hash."""
        rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND category = $2 "
                               "AND content_hash = $3 ORDER BY id", (self.user_id, category, digest))
        return [fact_item(r) for r in rows]

    def find_by_key(self, category: str, key: str) -> Item | None:
        row = self.db.one(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND category = $2 AND key = $3 "
                          f"AND {ACTIVE_FACT}", (self.user_id, category.strip().lower(), key.strip().lower()))
        return fact_item(row) if row else None

    def keyed(self, keys: Sequence[str] | None = None, *, limit: int = 10_000) -> list[Item]:
        """Active facts with a key (one of `keys`, or any), oldest change first: the slots' holders, read to find
        two facts that fill one slot under two spellings of its key (`coop.memory.slots.slot_of`)."""
        if keys is not None and not keys:
            return []
        where = f"AND key IN ({marks(len(keys), first=3)})" if keys is not None else "AND key IS NOT NULL"
        rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND {ACTIVE_FACT} {where} "
                               "ORDER BY updated_at, id LIMIT $2", (self.user_id, limit, *(keys or ())))
        return [fact_item(r) for r in rows]

    def signals(self, limit: int = 100_000) -> list[tuple[int, str, float, float, float | None, bool, str]]:
        """(id, category, importance, last changed, last recalled, has a key, text) of every active fact but the
        standing instructions, newest first: what the profile ranks, without building an Item per fact."""
        return [(int(r[0]), r[1], float(r[2]), float(r[3]), r[4], bool(r[5]), r[6]) for r in self.db.execute(
            f"SELECT id, category, importance, updated_at, last_recalled_at, key IS NOT NULL, value FROM facts "
            f"WHERE user_id = $1 AND {ACTIVE_FACT} AND category != $2 ORDER BY updated_at DESC, id DESC "
            "LIMIT $3", (self.user_id, INSTRUCTION, limit))]

    def active(self, category: str | None = None, *, limit: int = 1000, newest_first: bool = False) -> list[Item]:
        """Active facts (of one category), oldest change first, or newest first."""
        where = "AND category = $3" if category else ""
        params: tuple[Any, ...] = (self.user_id, limit, category) if category else (self.user_id, limit)
        order = "updated_at DESC, id DESC" if newest_first else "updated_at, id"
        rows = self.db.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND {ACTIVE_FACT} {where} "
                               f"ORDER BY {order} LIMIT $2", params)
        return [fact_item(r) for r in rows]

    def history(self, fact_id: int) -> list[HistoryEntry]:
        """Every recorded change of one fact, oldest first; a fact that was never this user's is not found. The
        ADD of a fact that superseded another names it (`related_fact_id`, its text as `old_value`), so a new
        fact's history says what it replaced, as the old one's says what replaced it."""
        rows = list(self.db.execute("SELECT action, old_value, new_value, reason, created_at, related_fact_id "
                                    "FROM fact_history WHERE user_id = $1 AND fact_id = $2 ORDER BY id",
                                    (self.user_id, fact_id)))
        if not rows:
            raise NotFoundError(f"no history for f{fact_id}", hint="list facts with `coop memory list --kind fact`")
        entries = [HistoryEntry(*row) for row in rows]
        replaced = self.replaced(fact_id)
        return [replace(entry, old_value=replaced[0].text, related_fact_id=replaced[0].item_id)
                if replaced and entry.action == "ADD" and entry.related_fact_id is None else entry
                for entry in entries]

    def add(self, value: str, *, category: str = "general", key: str | None = None,
                 importance: float = 0.5, source: str = "user", reason: str | None = None) -> FactWrite:
        """Write one fact: an exact duplicate counts a mention of the existing row (MERGE); a new value for an
        existing (category, key) supersedes the old row (kept, marked); anything else is an ADD."""
        fields = FactFields.checked(value, category=category, key=key, importance=importance, source=source)
        with self.db.atomic():
            self.ensure_user()
            same = self.db.scalar(f"SELECT id FROM facts WHERE user_id = $1 AND category = $2 AND content_hash = $3 "
                                  f"AND {ACTIVE_FACT} AND (key IS NOT DISTINCT FROM $4 OR CAST($5 AS TEXT) IS NULL) "
                                  "ORDER BY id LIMIT 1",
                                  (self.user_id, fields.category, content_hash(fields.value), fields.key, fields.key))
            if same is not None:
                self.bump(int(same), importance=fields.importance,
                               reason=reason or "exact duplicate: mention counted")
                return FactWrite(int(same), "MERGE")
            holder = self.find_by_key(fields.category, fields.key) if fields.key else None
            if holder is not None:
                return self.supersede(holder.item_id, fields,
                                           reason=reason or f"new value for {fields.category}/{fields.key}")
            fact_id = self._insert(fields, reason or f"added by {fields.source}")
            return FactWrite(fact_id, "ADD")

    def supersede(self, target_id: int, fields: FactFields, *, reason: str) -> FactWrite:
        """A new row for the new value; the old row stays, marked superseded by it (never deleted). The new row
        takes over the old one's (category, key) slot when the old one had a key."""
        target = self.memory.get("fact", target_id)
        if target.key is not None:
            key = target.key
            if key.startswith(HOST_MARK) and fields.source != HOST \
                    and self.find_by_key(target.category or fields.category, key.removeprefix(HOST_MARK)) is None:
                key = key.removeprefix(HOST_MARK)  # the user's value takes the slot a host's account was beside
            fields = FactFields(fields.value, target.category or fields.category, key, fields.importance,
                                fields.source)
        now = time.time()
        with self.db.atomic():
            self.ensure_user()
            # free the (category, key) slot before the new row takes it
            self.db.execute("UPDATE facts SET superseded_at = $1 WHERE id = $2 AND user_id = $3",
                            (now, target_id, self.user_id))
            same = self.find_exact(fields.value, fields.category)
            if same is not None and (same.key is None or slot_of(same.category, same.key)
                                     == slot_of(fields.category, fields.key)):  # known already: it takes over
                fact_id = same.item_id
                self.bump(fact_id, importance=fields.importance, reason=reason)
                holds = fields.key if same.key is None or fields.key is None else kept_key(same.key, fields.key)
                if holds != same.key:  # ... the slot too, now free
                    self.db.execute("UPDATE facts SET key = $1 WHERE id = $2 AND user_id = $3",
                                    (holds, fact_id, self.user_id))
            else:
                fact_id = self._insert(fields, reason, now)
            self.db.execute("UPDATE facts SET superseded_by = $1 WHERE id = $2 AND user_id = $3",
                            (fact_id, target_id, self.user_id))
            self.record_history(target_id, "SUPERSEDE", target.text, fields.value, reason, now, related=fact_id)
        return FactWrite(fact_id, "SUPERSEDE", previous_id=target_id)

    def bump(self, fact_id: int, *, importance: float = 0.0, reason: str) -> None:
        """Count one more mention of an existing fact (MERGE): no new row."""
        now = time.time()
        with self.db.atomic():
            self.db.execute("UPDATE facts SET mention_count = mention_count + 1, updated_at = $1, "
                            f"importance = {self.sql.greatest}(importance, $2) WHERE id = $3 AND user_id = $4",
                            (now, importance, fact_id, self.user_id))
            self.record_history(fact_id, "MERGE", None, None, reason, now)

    def update_value(self, fact_id: int, value: str, *, reason: str) -> None:
        """Rewrite a fact's text in place (UPDATE: a refinement of the same fact); the old text stays in history.
        Its vectors are dropped so it is embedded again."""
        value = mask(check_text(value, "fact", MAX_FACT_CHARS).strip())
        old = self.memory.get("fact", fact_id)
        now = time.time()
        with self.db.atomic():
            vectors.delete_item_vectors(self.memory, "fact", fact_id)
            self.db.execute("UPDATE facts SET value = $1, content_hash = $2, updated_at = $3, embedder = NULL, "
                            "mention_count = mention_count + 1 WHERE id = $4 AND user_id = $5",
                            (value, content_hash(value), now, fact_id, self.user_id))
            self.record_history(fact_id, "UPDATE", old.text, value, reason, now)

    def archive(self, fact_id: int, *, reason: str) -> None:
        """Take a fact out of active use without deleting it: it stays searchable with --archived."""
        now = time.time()
        with self.db.atomic():
            self.db.execute("UPDATE facts SET archived_at = $1 WHERE id = $2 AND user_id = $3 AND archived_at IS NULL",
                            (now, fact_id, self.user_id))
            self.record_history(fact_id, "ARCHIVE", None, None, reason, now)

    def unarchive(self, fact_id: int, *, reason: str) -> None:
        """Make an archived fact current again (its retirement was taken back): RESTORE in its history. When
        another fact has taken its slot since, it comes back without its key (one active fact per slot)."""
        now = time.time()
        item = self.memory.get("fact", fact_id)
        with self.db.atomic():
            if item.key is not None and self.find_by_key(item.category or "general", item.key) is not None:
                self.db.execute("UPDATE facts SET key = NULL WHERE id = $1 AND user_id = $2", (fact_id, self.user_id))
            self.db.execute("UPDATE facts SET archived_at = NULL WHERE id = $1 AND user_id = $2",
                            (fact_id, self.user_id))
            self.record_history(fact_id, "RESTORE", None, None, reason, now)

    def restore(self, fact: RestoredFact, *, reason: str) -> int:
        """Write a fact from an export as it was recorded, with its id there where this store can give it
        (`aliases.py`). When this user already has an active fact for the same (category, key), the newer of the
        two (by `updated_at`) keeps the slot and the other is superseded by it, with a history row; returns the
        new row's id."""
        fields, now = fact.fields, time.time()
        superseded_at = fact.superseded_at
        with self.db.atomic():
            self.ensure_user()
            holder = self.find_by_key(fields.category, fields.key) if fact.active and fields.key else None
            restored_loses = holder is not None and (holder.updated_at or 0) >= fact.updated_at
            if restored_loses:
                superseded_at = now
            elif holder is not None:
                self.db.execute("UPDATE facts SET superseded_at = $1 WHERE id = $2 AND user_id = $3",
                                (now, holder.item_id, self.user_id))
            new_id = int(self.memory.aliases.insert("fact", fact.source_id,  # its id in the export, where free
                "INSERT INTO facts (id, user_id, category, key, value, source, importance, mention_count, "
                "content_hash, created_at, updated_at, last_recalled_at, superseded_at, archived_at) "
                "VALUES ({id}, $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) {conflict} RETURNING id",
                (self.user_id, fields.category, fields.key, fields.value, fields.source, fields.importance,
                 max(1, fact.mention_count), content_hash(fields.value), fact.created_at, fact.updated_at,
                 fact.last_recalled_at, superseded_at, fact.archived_at))[0])
            if holder is not None:
                older, newer = (new_id, holder.item_id) if restored_loses else (holder.item_id, new_id)
                self.link_superseded(older, newer)
                self.record_history(older, "SUPERSEDE", None, None, reason, now, related=newer)
        return new_id

    def reinstate(self, fact_id: int, *, reason: str) -> None:
        """Make a superseded fact current again (its successor was taken back): RESTORE in its history."""
        now = time.time()
        with self.db.atomic():
            self.db.execute("UPDATE facts SET superseded_at = NULL, superseded_by = NULL "
                            "WHERE id = $1 AND user_id = $2", (fact_id, self.user_id))
            self.record_history(fact_id, "RESTORE", None, None, reason, now)

    def link_superseded(self, fact_id: int, by_id: int) -> None:
        """Point an (already superseded) fact at the fact that replaced it."""
        self.db.execute("UPDATE facts SET superseded_by = $1 WHERE id = $2 AND user_id = $3",
                        (by_id, fact_id, self.user_id))

    def record_history(self, fact_id: int, action: str, old: str | None, new: str | None, reason: str | None,
                       at: float, related: int | None = None) -> None:
        self.db.execute("INSERT INTO fact_history (user_id, fact_id, action, old_value, new_value, related_fact_id, "
                        "reason, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
                        (self.user_id, fact_id, action, mask_optional(old), mask_optional(new), related,
                         mask_optional(reason), at))

    def scrub_history(self, fact_id: int, text: str, *, reason: str, at: float) -> None:
        """A forgotten fact's history keeps that it changed, never what it said; the FORGET row closes it. Other
        facts' rows lose the text too: the fact it superseded records it as the new value ("Lyon -> Paris"), the
        fact that superseded it as the old one, and a reason may quote it."""
        self.db.execute("UPDATE fact_history SET old_value = NULL, new_value = NULL "
                        "WHERE user_id = $1 AND fact_id = $2", (self.user_id, fact_id))
        self.db.execute("UPDATE fact_history SET old_value = CASE WHEN old_value = $2 THEN NULL ELSE old_value END, "
                        "new_value = CASE WHEN new_value = $2 THEN NULL ELSE new_value END, "
                        f"reason = CASE WHEN {self.sql.position}(reason, $2) > 0 THEN NULL ELSE reason END "
                        f"WHERE user_id = $1 AND (old_value = $2 OR new_value = $2 "
                        f"OR {self.sql.position}(reason, $2) > 0)",
                        (self.user_id, text))
        self.record_history(fact_id, "FORGET", None, None, reason, at)

    def touch(self, fact_ids: list[int]) -> None:
        """Record that these facts were just recalled into a prompt (retention goes by last use)."""
        if fact_ids:
            self.db.execute(f"UPDATE facts SET last_recalled_at = $1 WHERE user_id = $2 AND id IN "
                            f"({marks(len(fact_ids), first=3)})", (time.time(), self.user_id, *fact_ids))

    def _insert(self, fields: FactFields, reason: str, now: float | None = None) -> int:
        now = time.time() if now is None else now
        fact_id = int(self.db.scalar(
            "INSERT INTO facts (id, user_id, category, key, value, source, importance, content_hash, created_at, "
            f"updated_at) VALUES ({self.sql.fresh_id('fact')}, $1,$2,$3,$4,$5,$6,$7,$8,$9) RETURNING id",
            (self.user_id, fields.category, fields.key, fields.value, fields.source, fields.importance,
             content_hash(fields.value), now, now)))
        self.record_history(fact_id, "ADD", None, fields.value, reason, now)
        return fact_id

    def replaced(self, fact_id: int) -> list[Item]:
        """The facts that `fact_id` superseded (kept, marked superseded by it), oldest first."""
        return [fact_item(r) for r in self.db.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND superseded_by = $2 AND superseded_at IS NOT NULL "
            "ORDER BY id", (self.user_id, fact_id))]

    def superseded(self, limit: int = 200) -> list[Item]:
        """Facts replaced by a newer one (not archived, not forgotten), the most recently replaced first: what
        the profile's "may be out of date" marks and "former" lines are made from."""
        return [fact_item(r) for r in self.db.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE user_id = $1 AND superseded_at IS NOT NULL "
            "AND superseded_by IS NOT NULL ORDER BY superseded_at DESC, id DESC LIMIT $2", (self.user_id, limit))]
