"""Migration 020, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

# Every table under m015's policy, and those m017 and m019 added under the same one, with the column naming the user.
_OWN_ROWS = (("users", "id"), ("sessions", "user_id"), ("messages", "user_id"), ("facts", "user_id"),
             ("fact_history", "user_id"), ("fact_sources", "user_id"), ("summaries", "user_id"),
             ("forgotten", "user_id"), ("memory_jobs", "user_id"), ("embeddings", "user_id"),
             ("embedding_points", "user_id"), ("embedding_counts", "user_id"), ("user_vector_indexes", "user_id"),
             ("fulltext_items", "user_id"), ("fulltext_terms", "user_id"), ("fulltext_postings", "user_id"),
             ("fulltext_stats", "user_id"), ("refusals", "user_id"), ("id_aliases", "user_id"))

# The same rows as m015's policy reaches (the user is one the login role may reach, or it may reach every user's;
# and it is the user the handle is bound to), said as equalities the planner can count.
_POLICY = ("({column} = ANY((SELECT coop_reachable())::text[]) OR '*' = ANY((SELECT coop_reachable())::text[])) "
           "AND ({column} = current_setting('coop.user_id', true) OR current_setting('coop.user_id', true) = '*')")

POSTGRES = "".join(f"ALTER POLICY own_rows ON {table} USING ({_POLICY.format(column=column)});\n"
                   for table, column in _OWN_ROWS)

M020_POLICIES_THE_PLANNER_READS = Migration("m020_policies_the_planner_reads", why="""\
m015's row policy said "the row's user is reachable" as an overlap of two arrays (`ARRAY[user_id, '*'] &&
reachable`), an operator Postgres's planner cannot estimate: it guessed that one row in two hundred of a user's
passes, so on a person's role a search of 100,000 vectors was planned for about 100 of them, read every one of
them in order of distance instead of walking the HNSW graph, and took 300-400 ms until the statement's plan was
cached (the first ten searches of every process). The policy now says the same as two equalities with `= ANY`,
which the planner counts from the column's statistics; which rows a role reaches is unchanged. Nothing changes on
SQLite, which has no roles.""", sql="", postgres=POSTGRES)
