"""The maximum sustainable throughput, and latency against load: searches over paced Locust runs.

Each *step* is one ``locust`` run on the run-wide shared schedule (``--mq-total-rate R``) with a
warm-up left out of the figures (``--mq-warmup``) and a fixed measured window; :func:`judge` reads
its JSON report. A rate is *sustained* when, over the window: the destinations' throughput is at
least 99 % of R (sent over first send to last receive, so a backlog still draining after the
window pulls it down), nothing is lost, unreceived or failed, the schedule lag p99 is within
bounds, and the generator's verdict is ``ok``. When the generator, not the broker, is what fails,
the search stops and says so instead of reporting the generator's limit as the broker's.

:func:`search` is pure (a step is a function), so its strategy is unit-tested on a model broker:
doubling from a start rate until a step fails, then bisection down to a 5 % bracket, at most
``steps`` runs and within a time budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

#: A step is sustained at >= this fraction of the offered rate.
RATE_FRACTION = 0.99
#: A saturated process using this much of a core is its own limit (health.py judges at 90 %).
CPU_BOUND_PERCENT = 90.0
#: A failed step's achieved rate says what the broker managed only when clearly below the offer.
CAPPED_FRACTION = 0.97
#: The search stops bisecting once the bracket is this narrow (upper / lower).
BRACKET = 1.05


@dataclass(frozen=True)
class Step:
    """One paced run's evidence."""

    rate: float
    achieved: float = 0.0
    sustained: bool = False
    #: Why not sustained (empty when sustained).
    reason: str = ""
    #: ``broker``, ``generator`` (its own CPU) or ``machine`` (starved by other processes): what failed.
    limit: str = ""
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    p999_ms: float = math.nan
    max_ms: float = math.nan
    lag_p99_ms: float = math.nan
    lost: int = 0
    errors: int = 0
    #: Failed on the schedule lag alone: a stall of the machine can cause that; the search confirms it.
    lag_only: bool = False
    drain_s: float = 0.0
    verdict: str = ""
    mb_per_s: float = 0.0
    report: str = ""

    def row(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def judge(document: dict[str, Any], rate: float, max_lag_ms: float, report: str = "") -> Step:
    """A step's verdict from its ``--mq-report-json`` document, offered ``rate`` msg/s in total."""
    rows = [row for row in document.get("destinations", []) if row.get("sent")]
    generator = document.get("generator", {}).get("verdict", "ok")
    lags = [op["latency_ms"].get("p99", 0.0) for op in document.get("operations", [])
            if op["name"].startswith("schedule-lag ") and op.get("latency_ms")]  # fmt: skip
    achieved = sum(row["throughput_msgs"] for row in rows)  # to the last receive: a backlog pulls it down
    lost = sum(row["lost"] + row["unreceived"] for row in rows)
    errors = sum(row["errors"] for row in rows)
    latency = _worst_latency(rows)
    evidence = {
        "rate": rate, "achieved": achieved, "lost": lost, "errors": errors, "verdict": generator,
        "lag_p99_ms": max(lags, default=math.nan), "drain_s": document.get("drain", {}).get("seconds", 0.0),
        "mb_per_s": sum(row["throughput_mbit"] for row in rows) / 8, "report": report, **latency,
    }  # fmt: skip
    reasons = []
    if not rows:
        reasons.append("nothing was sent")
    if achieved < RATE_FRACTION * rate:
        reasons.append(f"{achieved:,.0f} msg/s < {RATE_FRACTION:.0%} of {rate:,.0f} (send to last receive)")
    if lost:
        reasons.append(f"{lost} lost or never received")
    if errors:
        reasons.append(f"{errors} errors")
    lagging = bool(lags) and max(lags) > max_lag_ms
    if lagging:
        reasons.append(f"schedule lag p99 {max(lags):.2f} ms > {max_lag_ms:g} ms")
    if generator != "ok":
        reasons.append(f"generator {generator}")
    if not reasons:
        return Step(sustained=True, **evidence)
    limit = "broker" if generator == "ok" else "generator" if _cpu_bound(document) else "machine"
    return Step(reason="; ".join(reasons), limit=limit, lag_only=lagging and len(reasons) == 1, **evidence)


def _cpu_bound(document: dict[str, Any]) -> bool:
    """A saturated generator that used its CPU; one starved by other processes (a broker on the same
    cores) shows loop lag with CPU to spare: then the machine, not the generator, is the limit."""
    processes = document.get("generator", {}).get("processes", {}).values()
    return any(p.get("verdict") != "ok" and p.get("cpu_percent_max", 0) >= CPU_BOUND_PERCENT for p in processes)


def _worst_latency(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Send-to-receive p50 / p99 / p99.9 / max of the destination that did worst."""
    keys = {"p50": "p50_ms", "p99": "p99_ms", "p999": "p999_ms", "max": "max_ms"}
    figures = [row["latency_ms"] for row in rows if row.get("latency_ms")]
    return {out: max((f.get(key, math.nan) for f in figures), default=math.nan) for key, out in keys.items()}


@dataclass
class Search:
    """The steps of one search and what they found."""

    steps: list[Step] = field(default_factory=list)
    #: The highest sustained rate (None: not even the start rate was sustained).
    max_rate: float | None = None
    #: Why the search ended.
    ended: str = ""
    #: ``generator`` when the generator, not the broker, failed: the figure is not the broker's.
    limit: str = ""


def search(
    run_step: Callable[[float], Step],
    start: float,
    *,
    ceiling: float = math.inf,
    steps: int = 10,
    budget_s: float = math.inf,
    clock: Callable[[], float] = time.monotonic,
) -> Search:
    """Double from ``start`` until a step fails (or ``ceiling``), then narrow to a 5 % bracket.

    A step that fails because the broker fell behind still says what the broker managed (its
    achieved rate): just under and just over that are tried first, then the bracket is halved on a
    log scale. A step failed on the schedule lag alone is run once more before it counts.
    """
    found, deadline = Search(), clock() + budget_s
    low, high, rate = 0.0, math.inf, min(start, ceiling)
    tried: set[float] = set()
    hint = 0.0
    while len(found.steps) < steps:
        if clock() >= deadline:
            found.ended = "time budget spent"
            break
        runs = confirmed(partial(run_step, rate), may_rerun=len(found.steps) + 1 < steps)
        found.steps.extend(runs)
        step = runs[-1]
        tried.add(rate)
        if step.sustained:
            low = max(low, rate)
        elif step.limit == "generator":
            found.limit = "generator"
            found.ended = (f"the generator, not the broker, failed at {rate:,.0f} msg/s ({step.reason}):"
                           " add --processes or workers")  # fmt: skip
            break
        else:
            high = min(high, rate)
            if step.achieved < CAPPED_FRACTION * rate:
                hint = step.achieved
        if high == math.inf:
            if rate >= ceiling:
                found.ended = f"sustained the ceiling {ceiling:,.0f} msg/s"
                break
            rate = min(rate * 2, ceiling)
            continue
        if low and high / low <= BRACKET:
            found.ended = f"bracketed within {BRACKET - 1:.0%}"
            break
        rate = _next_rate(low, high, hint, tried)
        if rate < 1.0:
            found.ended = "not sustained even at 1 msg/s"
            break
    else:
        found.ended = f"{steps} steps run"
    found.max_rate = low or None
    return found


def confirmed(run: Callable[[], Step], may_rerun: bool = True) -> list[Step]:
    """The runs of one step, the last one standing: a step failed on the schedule lag alone is run
    once more (one stall of a shared machine; it counts when it recurs)."""
    first = run()
    return [first, run()] if first.lag_only and may_rerun else [first]


def _next_rate(low: float, high: float, hint: float, tried: set[float]) -> float:
    """Just under, then just over, what the broker managed when it fell behind; else the log middle."""
    for candidate in (hint * 0.99, hint * 1.03):
        if low < candidate < high and candidate not in tried:
            return candidate
    return math.sqrt(low * high) if low else high / 2


def curve_rates(max_rate: float, percents: Sequence[float]) -> list[tuple[float, float]]:
    """(percent, rate) points of a latency-against-load curve."""
    return [(p, max_rate * p / 100.0) for p in percents]


def curve_points(
    run_step: Callable[[float, float], Step], max_rate: float, percents: Sequence[float]
) -> list[dict[str, Any]]:
    """Latency against load: ``run_step(percent, rate)`` at each percent of ``max_rate``.

    As in :func:`search`, a point failed on the schedule lag alone is run once more (:func:`confirmed`)
    and its row keeps the first run's reason in ``rerun_after``: one stall of a shared machine should
    not stand for the broker's latency.
    """
    points = []
    for percent, rate in curve_rates(max_rate, percents):
        *rerun, step = confirmed(partial(run_step, percent, rate))
        points.append({"percent": percent, "offered": rate, **step.row(),
                       "rerun_after": rerun[0].reason if rerun else None})  # fmt: skip
    return points
