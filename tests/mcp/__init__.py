"""Tests of coop/mcp/ (see tests/__init__.py)."""
