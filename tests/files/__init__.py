"""Tests of coop/files/ (see tests/__init__.py)."""
