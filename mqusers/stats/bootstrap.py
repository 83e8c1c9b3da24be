"""Bootstrap confidence intervals of headline figures and of NEW against BASE, with the verdict's words.

The method (docs/compare.md): a figure's point value is the run's figure, or the median of the runs'
figures when a side has several. Its interval is a percentile bootstrap that keeps the data's structure:
runs are resampled with replacement (when there are several), and within each drawn run moving blocks of
consecutive intervals, so intervals that resemble their neighbours (autocorrelation: a GC, a flush) stay
together; a block spans the series' correlation time, at least ``n^(1/3)`` intervals. Few independent
units (runs, or a run's blocks) make a percentile bootstrap too narrow, so the interval is Hesterberg's
expanded percentile interval (the tail probability that matches ``sqrt(m / (m - 1))`` Student's t with
``m - 1`` degrees of freedom). A difference is NEW / BASE resampled on both sides independently; it
counts only when its whole interval lies beyond the tolerance. One run a side sees the within-run noise
only, never the run-to-run noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from mqusers.stats.evidence import TOO_FEW, Evidence, enough, evidence, zero_width
from mqusers.stats.figures import FIGURES, THROUGHPUT, weighted_figures
from mqusers.stats.samples import Floats, Run, Samples

RESAMPLES = 2000
CONFIDENCE = 0.95
#: The verdict's words, one table: (figure is throughput, NEW is above BASE) -> words.
VERDICTS = {(True, True): "higher", (True, False): "lower", (False, True): "slower", (False, False): "faster"}
SAME = "no significant difference"
#: What a regression is for each kind of figure (the gate's words).
REGRESSIONS = frozenset({"lower", "slower"})
ONE_RUN_NOTE = (
    "one run a side: the intervals show the noise within each run only, not from run to run (on a shared "
    "machine runs of one test differ by 10-30 %); repeat each side (several run JSONs a side) before trusting a verdict"
)


@dataclass(frozen=True)
class Estimate:
    figure: str
    point: float
    low: float
    high: float
    spread: tuple[float, float]  # the runs' own figures, lowest and highest
    runs: int
    confidence: float


@dataclass(frozen=True)
class Difference:
    figure: str
    base: Estimate
    new: Estimate
    ratio: float  # NEW / BASE
    low: float
    high: float
    verdict: str
    tolerance: float
    evidence: tuple[Evidence, Evidence]  # BASE's and NEW's

    @property
    def percent(self) -> tuple[float, float, float]:
        """The difference and its interval in percent of BASE."""
        return tuple(100.0 * (value - 1.0) for value in (self.ratio, self.low, self.high))  # type: ignore[return-value]

    @property
    def one_run_a_side(self) -> bool:
        return self.base.runs == 1 or self.new.runs == 1


def block_length(samples: Samples) -> int:
    """Intervals per block: the longer of ``n^(1/3)`` and the integrated correlation time ``(1 + r) / (1 - r)`` of
    the per-interval rate and median (``r`` their larger lag-1 autocorrelation), leaving at least 3 blocks."""
    n = len(samples.counts)
    if n < 6:
        return 1
    each = weighted_figures(samples, np.eye(n))
    lag = 0.0
    for series in (samples.counts / samples.seconds, np.log(each["p50"])):
        centred = series[np.isfinite(series)] - np.nanmean(series[np.isfinite(series)])
        spread = float(centred @ centred)
        if len(centred) > 2 and spread > 0:
            lag = max(lag, float(centred[1:] @ centred[:-1]) / spread)
    lag = min(lag, 0.95)
    return int(max(1, min(n // 3, max(round(n ** (1 / 3)), math.ceil((1 + lag) / (1 - lag))))))


def block_weights(n: int, length: int, resamples: int, rng: np.random.Generator) -> Floats:
    """Circular block bootstrap of ``n`` intervals: how often each interval is drawn, ``(resamples, n)``."""
    blocks = math.ceil(n / length)
    # Circular blocks (Politis and Romano): a block may wrap to the start, so every interval is drawn equally often.
    starts = rng.integers(0, n, size=(resamples, blocks))
    drawn = (starts[:, :, None] + np.arange(length)).reshape(resamples, -1) % n + (np.arange(resamples) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)


@dataclass(frozen=True)
class Resampled:
    points: dict[str, Floats]  # each figure per run, (R,)
    boot: dict[str, Floats]  # each figure's bootstrap values, (resamples,)
    units: int  # independent units resampled: the runs, or one run's blocks


def _resampled(runs: list[Run], operation: str, resamples: int, rng: np.random.Generator) -> Resampled:
    """Each figure's point value per run and its hierarchical bootstrap values."""
    inner: dict[str, list[Floats]] = {figure: [] for figure in FIGURES}
    points: dict[str, list[float]] = {figure: [] for figure in FIGURES}
    units = len(runs)
    for run in runs:
        samples = run.operations[operation]
        n, length = len(samples.counts), block_length(samples)
        units = len(runs) if len(runs) > 1 else math.ceil(n / length)
        for figure, values in weighted_figures(samples, block_weights(n, length, resamples, rng)).items():
            inner[figure].append(values)
        for figure, values in weighted_figures(samples, np.ones((1, n))).items():
            points[figure].append(float(values[0]))
    count = len(runs)
    # Which run each draw takes and which of its within-run resamples: independent per draw.
    drawn_runs = rng.integers(0, count, size=(resamples, count)) if count > 1 else np.zeros((resamples, 1), np.int64)
    drawn_inner = rng.integers(0, resamples, size=drawn_runs.shape) if count > 1 else np.arange(resamples)[:, None]
    boot = {figure: np.median(np.array(inner[figure])[drawn_runs, drawn_inner], axis=1) for figure in FIGURES}
    return Resampled({figure: np.array(values) for figure, values in points.items()}, boot, units)


def student_quantile(p: float, freedom: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, else Cornish-Fisher's expansion (< 0.5 %
    off at 3, closer above)."""
    if freedom == 1:
        return math.tan(math.pi * (p - 0.5))
    if freedom == 2:
        return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    z = NormalDist().inv_cdf(p)
    terms = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96, (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
             (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)  # fmt: skip
    return z + float(sum(term / freedom ** (i + 1) for i, term in enumerate(terms)))


def expanded(confidence: float, units: int) -> float:
    """Hesterberg's expanded percentile: the confidence whose normal quantile is ``sqrt(m/(m-1)) t(m-1)``."""
    if units < 2:
        return confidence
    widened = math.sqrt(units / (units - 1)) * student_quantile((1 + confidence) / 2, units - 1)
    return 2 * NormalDist().cdf(widened) - 1


def _estimate(figure: str, found: Resampled, confidence: float) -> Estimate:
    points = found.points[figure]
    low, high = _interval(found.boot[figure], expanded(confidence, found.units))
    return Estimate(figure, float(np.median(points)), low, high, (float(points.min()), float(points.max())),
                    len(points), confidence)  # fmt: skip


def _interval(values: Floats, confidence: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def estimates(
    runs: list[Run], operation: str, confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = 0
) -> dict[str, Estimate]:
    """Every headline figure of ``operation`` over ``runs`` with its interval and spread."""
    found = _resampled(runs, operation, resamples, np.random.default_rng(seed))
    return {figure: _estimate(figure, found, confidence) for figure in FIGURES}


def estimate(
    runs: list[Run],
    operation: str,
    figure: str,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Estimate:
    return estimates(runs, operation, confidence, resamples, seed)[figure]


def family_wise(confidence: float, tests: int) -> float:
    """Each of ``tests`` intervals' confidence so that all of them hold at ``confidence`` together (Bonferroni)."""
    return 1.0 - (1.0 - confidence) / max(1, tests)


def verdict(figure: str, low: float, high: float, tolerance: float) -> str:
    """The words for a ratio's interval: a direction only when the whole interval lies beyond ``1 ± tolerance``."""
    if low > 1.0 + tolerance:
        return VERDICTS[(figure == THROUGHPUT, True)]
    if high < 1.0 - tolerance:
        return VERDICTS[(figure == THROUGHPUT, False)]
    return SAME


def differences(
    base: list[Run],
    new: list[Run],
    operation: str,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
    tolerance: float = 0.0,
) -> dict[str, Difference]:
    """NEW against BASE for every headline figure of ``operation``: the ratio, its interval, the verdict
    (:data:`~mqusers.stats.evidence.TOO_FEW` where a side holds too little for one)."""
    sides = evidence(base, operation), evidence(new, operation)
    base_rng, new_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    before, after = _resampled(base, operation, resamples, base_rng), _resampled(new, operation, resamples, new_rng)
    # The side with fewer independent units bounds what the difference can know.
    widened = expanded(confidence, min(before.units, after.units))
    found = {}
    for figure in FIGURES:
        base_estimate, new_estimate = _estimate(figure, before, confidence), _estimate(figure, after, confidence)
        with np.errstate(divide="ignore", invalid="ignore"):
            low, high = _interval(after.boot[figure] / before.boot[figure], widened)
        ratio = new_estimate.point / base_estimate.point if base_estimate.point else math.nan
        few = not enough(figure, *sides) or zero_width(low, high)
        words = TOO_FEW if few else verdict(figure, low, high, tolerance)
        found[figure] = Difference(figure, base_estimate, new_estimate, ratio, low, high, words, tolerance, sides)
    return found


def difference(
    base: list[Run],
    new: list[Run],
    operation: str,
    figure: str,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
    tolerance: float = 0.0,
) -> Difference:
    return differences(base, new, operation, confidence, resamples, seed, tolerance)[figure]
