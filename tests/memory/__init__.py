"""Tests of coop/memory/ (see tests/__init__.py)."""
