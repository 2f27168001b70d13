"""Migration 005, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M005_FORGOTTEN_IDS_INDEX = Migration("m005_forgotten_ids_index", why="""\
Every new message, fact and summary takes an id above the forgotten ones (`store.fresh_id_sql`): with this
index that is one index lookup, not a scan of `forgotten` on every write of a chat turn.""", sql="""
CREATE INDEX forgotten_kind_item ON forgotten(kind, item_id)
""")
