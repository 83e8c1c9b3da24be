"""Measurement: latency histograms and per-destination tallies. Pure data, no I/O.

Modules: ``names.py``, ``recorder.py``, ``book.py``, ``hdrintervals.py``, ``series.py`` (``buckets.py``),
``totals.py``, ``outages.py``, ``perdestination.py``, ``backlogfigures.py``, ``connections.py``,
``transactionfigures.py``, ``priority.py``.

What they do: every event name (``"<operation> <target>"``), per-message successes recorded and handed on in
bulk, µs HdrHistograms (``book.py``: a request event counted in one place, for the book and the sink's
intervals), the same per interval for the JSON's ``intervals`` (``hdrintervals.py``: bounded, shipped,
merged), per-second series (bounded), a destination's totals (one row for the report and the sinks), each
client's connection outages, each destination of a pattern's own receive count, span and latency slots
(``perdestination.py``); a backlog run's switch, time to empty, drain per second and blocked sends by phase
(``backlogfigures.py``), the run's connections (opened per second, closed, files and the broker's count back
to their start), its transactions (committed, aborted, per second), a priority run's delivery order per
consumer and its inversions (``priority.py``).
"""
