"""How much data a side holds for a figure, and whether that is enough for a verdict: the rule, stated once.

A bootstrap interval is only as good as the units it resamples. With a handful of intervals (a connect
measured 4 times in one second) every resample draws the same values, the interval has zero width and
any difference at all would read as significant. A percentile also needs samples beyond it: the p99 of
200 latencies is their second-highest, and the bootstrap of so few tail values is far too narrow. So a
figure gets a verdict only when each run of each side has at least ``MIN_INTERVALS`` intervals with
samples and, for a percentile ``p``, at least ``TAIL_SAMPLES`` samples above it (``TAIL_SAMPLES / (1 - p)``
in all: 20 for p50, 1,000 for p99, 10,000 for p99.9); and when its interval is not of zero width (the
resamples saw no variation: nothing the data shows about the noise). Otherwise it reads ``TOO_FEW``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mqusers.stats.figures import PERCENTILES, THROUGHPUT
from mqusers.stats.samples import Run

TOO_FEW = "too few samples"
#: Intervals with samples each run needs: below this a block bootstrap has nothing to draw from.
MIN_INTERVALS = 5
#: Samples a percentile needs above it in each run.
TAIL_SAMPLES = 10


@dataclass(frozen=True)
class Evidence:
    """A side's data for one operation: the fewest intervals with samples and the fewest samples of its runs."""

    intervals: int
    samples: int

    def as_dict(self) -> dict[str, int]:
        return {"intervals": self.intervals, "samples": self.samples}


def evidence(runs: list[Run], operation: str) -> Evidence:
    """The weakest of a side's runs: each run's figure enters the side's median, so each must stand."""
    intervals, samples = [], []
    for run in runs:
        found = run.operations[operation]
        intervals.append(int((found.counts > 0).sum()))
        samples.append(int(found.slots.sum()))
    return Evidence(min(intervals), min(samples))


def samples_needed(figure: str) -> int:
    """Samples a run needs for ``figure``: ``TAIL_SAMPLES`` above a percentile; none beyond intervals for throughput."""
    if figure == THROUGHPUT:
        return 0
    return math.ceil(round(TAIL_SAMPLES * 100.0 / (100.0 - PERCENTILES[figure]), 6))


def enough(figure: str, *sides: Evidence) -> bool:
    """Whether every side holds enough for a verdict on ``figure``."""
    need = samples_needed(figure)
    return all(side.intervals >= MIN_INTERVALS and side.samples >= need for side in sides)


def zero_width(low: float, high: float) -> bool:
    """An interval the resamples could not widen (or none at all): it shows nothing of the noise."""
    return not (math.isfinite(low) and math.isfinite(high)) or high <= low


def rule() -> str:
    """The rule in one sentence, for notes and pages."""
    p99 = samples_needed("p99")
    return (f"a verdict needs at least {MIN_INTERVALS} intervals with samples in every run of each side and, for a "
            f"percentile, {TAIL_SAMPLES} samples above it (p99: {p99:,}), and an interval of some width")  # fmt: skip
