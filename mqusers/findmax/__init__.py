"""The capacity search, pure: the next rate to try, a step's verdict, the latency bound and the answer's words.

Modules: ``search.py``, ``findstep.py``, ``latencybound.py``, ``recovery.py``, ``findmaxanswer.py``.

What they do: the capacity search, pure: the next rate to try, a step's verdict, ``--slo`` (on due-time
latency), whether the broker recovered from an overloaded step (``recovery.py``), the answer's words.
"""
