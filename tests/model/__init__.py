"""Tests of coop/model/ (see tests/__init__.py)."""
