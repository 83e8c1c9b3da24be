"""Statistics over saved runs, pure: interval samples, headline figures, bootstrap intervals, verdicts.

Modules: ``samples.py``, ``figures.py``, ``bootstrap.py``, ``evidence.py``.

What they do: pure statistics over saved runs: a run JSON's ``"intervals"`` made per-operation samples
(``samples.py``: runs alike or refused; ``report/runfiles.py`` reads the files), the headline figures
(throughput, p50 ... p99.9) of any weighting of the intervals (``figures.py``), bootstrap intervals of a
figure and of NEW against BASE with the verdict's words (``bootstrap.py``: runs, then moving blocks of
intervals; the family-wise confidence), whether a side holds data enough for a verdict (``evidence.py``:
intervals, samples above a percentile, an interval of some width).
"""
