"""Tests of coop/memory/storage/ (see tests/__init__.py)."""
