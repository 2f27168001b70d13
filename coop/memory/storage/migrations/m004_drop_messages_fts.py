"""Migration 004, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M004_DROP_MESSAGES_FTS = Migration("m004_drop_messages_fts", why="""\
m001's full-text index over messages: m002's `message_context_fts` serves every search of messages since,
so keeping both indexed every message's words twice (8.9 MB of a 353 MB database of 100,000 messages, and
work on every write).""", sql="""
DROP TRIGGER IF EXISTS messages_fts_ai;
DROP TRIGGER IF EXISTS messages_fts_ad;
DROP TRIGGER IF EXISTS messages_fts_au;
DROP TABLE IF EXISTS messages_fts;

""")
