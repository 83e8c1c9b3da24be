"""The headline figures of a run's operation: throughput (msg/s) and latency percentiles (ms), for many weightings.

A weighting gives each interval a weight (1 each: the run as measured; a bootstrap resample's counts
otherwise). Throughput is the weighted successes over the weighted seconds; a percentile is read from
the weighted sum of the intervals' histograms the way hdrh reads one (the slot where the cumulative
count reaches ``int(p * total / 100 + 0.5)``, at least 1), so one run's figures equal its report's.
"""

from __future__ import annotations

import numpy as np

from mqusers.stats.samples import Floats, Run, Samples

THROUGHPUT = "throughput"
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99.9": 99.9}
FIGURES = (THROUGHPUT, *PERCENTILES)
UNITS = {THROUGHPUT: "msg/s", **{name: "ms" for name in PERCENTILES}}


def weighted_figures(samples: Samples, weights: Floats) -> dict[str, Floats]:
    """Every figure for each row of ``weights`` (shape ``(B, n)``): ``{figure: (B,)}``; NaN where nothing counted."""
    with np.errstate(divide="ignore", invalid="ignore"):
        figures = {THROUGHPUT: (weights @ samples.counts) / (weights @ samples.seconds)}
    merged = weights @ samples.slots
    cumulative = np.cumsum(merged, axis=1)
    total = cumulative[:, -1] if merged.shape[1] else np.zeros(len(weights))
    for name, percentile in PERCENTILES.items():
        target = np.maximum(np.floor(percentile * total / 100 + 0.5), 1.0)
        index = np.minimum((cumulative < target[:, None]).sum(axis=1), max(merged.shape[1] - 1, 0))
        values = samples.values_ms[index] if merged.shape[1] else np.full(len(weights), np.nan)
        figures[name] = np.where(total > 0, values, np.nan)
    return figures


def headline(samples: Samples) -> dict[str, float]:
    """The operation's figures over all its intervals (each weighs 1)."""
    return {
        name: float(values[0]) for name, values in weighted_figures(samples, np.ones((1, len(samples.counts)))).items()
    }


def run_headlines(run: Run) -> dict[str, dict[str, float]]:
    """Every operation's headline figures."""
    return {operation: headline(samples) for operation, samples in run.operations.items()}
