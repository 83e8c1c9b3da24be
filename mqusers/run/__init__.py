"""One run's state in a process: context, shipping to the master, faults, Locust stats, health, the drain.

Modules: ``context.py``, ``locust_stats.py``, ``faults.py``, ``usererrors.py``, ``health.py`` (``looplag.py``,
``blocked.py``, ``cpu.py``: where the process's CPU went, from ``/proc``; ``openfiles.py``: its open files,
``/proc/self/fd``), ``verdicts.py``, ``ending.py``, ``backlog.py``, ``ticks.py``, ``warmup.py``.

What they do: one ``RunContext`` per Environment (settings, run id, recorder, book, ledgers, audit, health,
clock offsets) and ``Shipping``, the one way worker state reaches the master; the recorder's flush and a
single process's ledger folds (``ticks.py``); the warm-up left out (``warmup.py``); Locust's stats fed in bulk
from the recorder's batches; the ``--mq-fault`` schedule and its records; Users whose ``on_start`` raised;
each process watching itself (``health.py``: each second judged from its CPU and its loop's lag, on an
injected clock; ``looplag.py``: the one loop-lag probe; ``blocked.py``: sends the broker stopped reading) and
the generator's verdict and its words (``verdicts.py``: saturated, contended, broker-slow, ok; one table for
every format); when a drain is over (``ending.py``); a backlog run's gate: consumers subscribe once the build
is over, and its paced drain's one schedule of ACKs (``backlog.py``).
"""
