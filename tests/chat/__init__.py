"""Tests of coop/chat/ (see tests/__init__.py)."""
