"""Tests of coop/cli/ (see tests/__init__.py)."""
