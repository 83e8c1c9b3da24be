"""Across processes: the start barrier, the shared schedule's blocks and clock offsets over Locust's messages."""
