"""Tests of the benchmark scripts in bench/ (each run on a tiny data file against a scripted model; see tests/__init__.py)."""
