"""Migration 013, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M013_JOB_CLAIMS = Migration("m013_job_claims", why="""\
A durable extraction job is claimed before it runs (`links.Jobs.claim`): one conditional UPDATE sets `claimed_at`,
and a job claimed less than `JOB_LEASE_SECONDS` ago is left to the client that holds it, so two clients of one
store (two `coop chat`s, a chat and `coop mcp`) never extract one exchange twice. A claimer that died leaves its
claim to expire. The Postgres schema has had the column from the start.""", sql="""
ALTER TABLE memory_jobs ADD COLUMN claimed_at REAL;
""")
