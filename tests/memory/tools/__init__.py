"""Tests of coop/memory/tools/ (see tests/__init__.py)."""
