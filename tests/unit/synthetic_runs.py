"""Run documents and interval samples with a known truth, for the statistics' unit tests.

``document`` writes the run JSON's ``"intervals"`` exactly as COMMON's format says (hdrh-encoded µs
histograms per interval); ``samples`` builds :class:`mqusers.stats.samples.Samples` directly on a fixed
latency grid, fast enough for hundreds of simulated runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mqusers.measure.book import new_histogram
from mqusers.stats.samples import Run, Samples

START = 1_796_513_000.0
#: Latency grid of ``samples`` (ms): 1 % steps from 0.1 ms to ~100 ms.
GRID_MS = 0.1 * 1.01 ** np.arange(700)


def interval_latencies(rng: np.random.Generator, intervals: int, per_interval: int, median_ms: float,
                       wander: float = 0.1, scale: float = 1.0) -> list[Any]:  # fmt: skip
    """Lognormal latencies (ms) per interval whose level wanders as an AR(1) (neighbouring intervals alike)."""
    level, drawn = 0.0, []
    for _ in range(intervals):
        level = 0.5 * level + rng.normal(0.0, wander)
        count = rng.poisson(per_interval)  # a paced rate still varies a little per interval
        drawn.append(scale * median_ms * np.exp(level + rng.normal(0.0, 0.5, size=count)))
    return drawn


def document(latencies_ms: list[Any], warmup: int = 0, locustfile: str = "pubsub.py",
             operation: str = "receive /queue/x", seconds: float = 1.0) -> dict[str, Any]:  # fmt: skip
    """A run JSON with one operation whose intervals hold these latencies; the first ``warmup`` are before
    ``measured_from``."""
    rows = []
    for i, values in enumerate(latencies_ms):
        histogram = new_histogram()
        micros, counts = np.unique(np.maximum(np.round(np.asarray(values) * 1000.0), 1), return_counts=True)
        for value, count in zip(micros, counts, strict=True):
            histogram.record_value(int(value), int(count))
        rows.append([START + i * seconds, seconds, len(values), 0, histogram.encode().decode("ascii")])
    return {
        "kind": "run",
        "scenario": {"locustfile": locustfile},
        "intervals": {"width_s": seconds, "measured_from": START + warmup * seconds, "operations": {operation: rows}},
    }


def samples(latencies_ms: list[Any], seconds: float = 1.0) -> Samples:
    """The same latencies binned on ``GRID_MS`` (each slot's value its upper edge)."""
    slots = np.array([np.bincount(np.searchsorted(GRID_MS, v), minlength=len(GRID_MS) + 1)[:-1] for v in latencies_ms])
    return Samples(np.full(len(latencies_ms), seconds), slots.sum(axis=1).astype(float), slots.astype(float), GRID_MS)


def run(latencies_ms: list[Any], name: str = "run", operation: str = "receive /queue/x") -> Run:
    return Run(name, "pubsub.py", {operation: samples(latencies_ms)})
