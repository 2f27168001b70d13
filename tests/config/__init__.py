"""Tests of coop/config/ (see tests/__init__.py)."""
