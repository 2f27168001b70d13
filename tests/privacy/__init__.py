"""Tests of coop/privacy/ (see tests/__init__.py)."""
