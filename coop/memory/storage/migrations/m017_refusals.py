"""Migration 017, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

_TABLE = """
CREATE TABLE refusals (
  id {id} PRIMARY KEY,
  user_id TEXT NOT NULL,
  created_at {real} NOT NULL,
  reason TEXT NOT NULL,
  category TEXT,
  what TEXT NOT NULL,
  source TEXT NOT NULL,
  message_id {int},
  session_id {int},
  spans TEXT
);
CREATE INDEX refusals_user ON refusals(user_id, id);
CREATE INDEX refusals_message ON refusals(message_id);
"""

SQLITE = _TABLE.format(id="INTEGER", real="REAL", int="INTEGER") + """
CREATE TRIGGER refusals_message_ad AFTER DELETE ON messages BEGIN
  DELETE FROM refusals WHERE message_id = old.id;
END;
"""

POSTGRES = _TABLE.format(id="BIGSERIAL", real="DOUBLE PRECISION", int="BIGINT") + r"""
CREATE FUNCTION coop_refusals_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM refusals WHERE message_id = OLD.id;
  RETURN OLD;
END $$;
CREATE TRIGGER refusals_message_ad AFTER DELETE ON messages FOR EACH ROW EXECUTE FUNCTION coop_refusals_drop();
ALTER TABLE refusals ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON refusals USING (ARRAY[user_id, '*'] && (SELECT coop_reachable()) AND (user_id =
  current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*'));
"""

M017_REFUSALS = Migration("m017_refusals", why="""\
What the write path turned down was only logged and counted in memory: a person could not ask why a sentence of
theirs taught coop nothing. `refusals` keeps each refusal of a user's exchange or conversation: its reason, the
fact's category, a few words of why (coop's own, never the user's or the model's text), and where the model
pointed: the message and the character spans of the clauses it cited, so `coop memory why mN` reads the words
from the message itself. It holds no text of the user's, and a forgotten message takes its refusals with it (a
trigger on both engines). On Postgres the table is under the same row-level security as every user table
(m015).""", sql=SQLITE, postgres=POSTGRES)
