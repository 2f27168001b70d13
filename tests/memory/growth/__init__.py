"""Tests of coop/memory/growth/ (see tests/__init__.py)."""
