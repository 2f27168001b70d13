"""Tests of coop/memory/retrieval/ (see tests/__init__.py)."""
