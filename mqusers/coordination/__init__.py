"""Across processes: the start barrier, the shared schedule's blocks and clock offsets over Locust's messages.

Modules: ``messages.py``, ``conductor.py``.

What they do: start barrier, the shared schedule's blocks, clock offsets: carried over Locust's custom
messages (``messages.py``), their arithmetic pure (``conductor.py``).
"""
