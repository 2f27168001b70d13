"""Migration 015, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

# Every table that holds one user's rows, and the column naming that user.
_OWN_ROWS = (("users", "id"), ("sessions", "user_id"), ("messages", "user_id"), ("facts", "user_id"),
             ("fact_history", "user_id"), ("fact_sources", "user_id"), ("summaries", "user_id"),
             ("forgotten", "user_id"), ("memory_jobs", "user_id"), ("embeddings", "user_id"),
             ("embedding_points", "user_id"), ("embedding_counts", "user_id"), ("user_vector_indexes", "user_id"),
             ("fulltext_items", "user_id"), ("fulltext_terms", "user_id"), ("fulltext_postings", "user_id"),
             ("fulltext_stats", "user_id"))

# A row is reachable when the role that logged in (`session_user`: no SET ROLE or setting changes it) may reach its
# user (`coop_people`), and, within that, when it is the user the connection's handle is bound to (`coop.user_id`,
# a narrowing coop sets for itself, no longer the wall). The reach is read once per statement (the subquery).
_POLICY = ("ARRAY[{column}, '*'] && (SELECT coop_reachable()) AND ({column} = current_setting('coop.user_id', true) "
           "OR current_setting('coop.user_id', true) = '*')")

POSTGRES = r"""
-- Who may reach whose memory: a login role and a user id it may reach ('*': every user's, an operator's service).
-- Written by the tables' owner alone (`coop admin person ...`); the roles coop chats as have no right on it.
CREATE TABLE coop_people (
  role_name TEXT NOT NULL,
  user_id TEXT NOT NULL,
  PRIMARY KEY (role_name, user_id)
);
REVOKE ALL ON coop_people FROM PUBLIC;

-- The user ids the logged-in role may reach, read with the owner's rights (the role cannot read the table).
CREATE FUNCTION coop_reachable() RETURNS TEXT[] LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
AS $$ SELECT coalesce(array_agg(user_id ORDER BY user_id), '{}') FROM coop_people WHERE role_name = session_user $$;
""" + "".join(
    f"DROP POLICY own_rows ON {table};\n"
    f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;\n"
    f"CREATE POLICY own_rows ON {table} USING ({_POLICY.format(column=column)});\n"
    for table, column in _OWN_ROWS)

M015_PEOPLE_ON_A_SERVER = Migration("m015_people_on_a_server", why="""\
On Postgres, row-level security read `coop.user_id`, a setting any client sets for itself: a second role with
table rights read anyone's memory by setting it (or '*'), and the role coop connected as owned the tables, so it
could switch the policies off. Now a row is reachable only by a login role the owner has mapped to its user
(`coop_people`, read through `coop_reachable()`), the tables' owner is a separate role for migrations and
administration (it is no longer forced under the policies, which it could drop anyway), and coop refuses to chat
as it. Nothing changes on SQLite, a file of one person.""", sql="", postgres=POSTGRES)
