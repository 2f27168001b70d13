"""Migration 019, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

_TABLE = """
CREATE TABLE id_aliases (
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  source_id {int} NOT NULL,
  target_id {int} NOT NULL,
  created_at {real} NOT NULL,
  PRIMARY KEY (user_id, kind, source_id)
);
CREATE INDEX id_aliases_target ON id_aliases(user_id, kind, target_id);
"""

_KINDS = (("fact", "facts"), ("message", "messages"), ("summary", "summaries"))

SQLITE = _TABLE.format(int="INTEGER", real="REAL") + "".join(f"""
CREATE TRIGGER id_aliases_{table}_ad AFTER DELETE ON {table} BEGIN
  DELETE FROM id_aliases WHERE user_id = old.user_id AND kind = '{kind}' AND target_id = old.id;
END;
""" for kind, table in _KINDS)

POSTGRES = _TABLE.format(int="BIGINT", real="DOUBLE PRECISION") + r"""
CREATE FUNCTION coop_id_aliases_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM id_aliases WHERE user_id = OLD.user_id AND kind = TG_ARGV[0] AND target_id = OLD.id;
  RETURN OLD;
END $$;
""" + "".join(f"CREATE TRIGGER id_aliases_{table}_ad AFTER DELETE ON {table} FOR EACH ROW "
              f"EXECUTE FUNCTION coop_id_aliases_drop('{kind}');\n" for kind, table in _KINDS) + """
ALTER TABLE id_aliases ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON id_aliases USING (ARRAY[user_id, '*'] && (SELECT coop_reachable()) AND (user_id =
  current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*'));
"""

M019_ID_ALIASES = Migration("m019_id_aliases", why="""\
An import or a migration gave every row a new id, so a reference the user had seen on one device (`f12` in an
undo hint) named another fact, or nothing, on the other. Rows now keep their id where the target can give it
(`storage/aliases.py`); where it cannot, `id_aliases` records the id the item had in the source and the one it
has here, per user and kind (fact, message, summary), with when: a reference typed later resolves through it.
An alias holds no text. A forgotten item takes its aliases with it (a trigger on each item table, both engines).
On Postgres the table is under the same row-level security as every user table (m015).""",
                            sql=SQLITE, postgres=POSTGRES)
