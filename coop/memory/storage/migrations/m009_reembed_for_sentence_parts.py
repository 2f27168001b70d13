"""Migration 009, frozen as released (see `__init__.py`): never edited; a change is a new migration."""

from __future__ import annotations

from coop.memory.storage.migrations.migration import Migration

M009_REEMBED_FOR_PARTS = Migration("m009_reembed_for_sentence_parts", why="""\
Items embedded before m008 have no sentence vectors (`parts`): a long one is found only by its diluted whole.
Those of two or more sentences (`coop_sentence_parts()`: `text.sentence_parts`) go back to the embedding backlog
(`embedder = NULL`, as `coop memory reembed` does); their old vector serves until the new one replaces it.""", sql="""
UPDATE messages SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(content) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'message' AND e.item_id = messages.id AND e.parts IS NULL);
UPDATE facts SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(value) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'fact' AND e.item_id = facts.id AND e.parts IS NULL);
UPDATE summaries SET embedder = NULL WHERE embedder IS NOT NULL AND coop_sentence_parts(text) >= 2 AND EXISTS
  (SELECT 1 FROM embeddings e WHERE e.kind = 'summary' AND e.item_id = summaries.id AND e.parts IS NULL);
""")
