"""Tests of coop/memory/transfer/ (see tests/__init__.py)."""
