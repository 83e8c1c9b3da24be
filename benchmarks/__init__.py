"""Benchmarks for mqusers: ``python -m benchmarks.core`` (see benchmarks/README.md)."""
