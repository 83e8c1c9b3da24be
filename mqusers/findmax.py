"""The highest rate a broker keeps up with, and latency against load: searches over paced Locust runs.

Each *step* is one ``locust`` run on the run-wide shared schedule (``--mq-total-rate R``) with a
warm-up left out of the figures (``--mq-warmup``) and a fixed measured window; :func:`judge` reads
its JSON report. A step *keeps up* when, over the window: the destinations' throughput is at least
99 % of R (sent over first send to last receive, so a backlog still draining after the window
pulls it down), nothing is lost, unreceived or failed, the schedule lag p99 is within bounds, and
the generator's verdict is ``ok``. It is *sustainable* when it also meets the latency bound
(:mod:`mqusers.latencybound`).

:func:`search` is pure (a step is a function of the rate and the generator's size), so its strategy
is unit-tested on a model broker: doubling from a start rate until a step fails, then bisection
down to a 5 % bracket, then the same between the highest step within the latency bound and the
lowest above it. A failed step whose generator was not clearly idle is run again with more
generator processes before the broker is blamed; when the generator or the machine stays the
limit, the search narrows below it and says so rather than report that limit as the broker's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from mqusers.latencybound import LatencyBound

#: A step keeps up at >= this fraction of the offered rate.
RATE_FRACTION = 0.99
#: A saturated process using this much of a core is its own limit (health.py judges at 90 %).
CPU_BOUND_PERCENT = 90.0
#: A process this busy at its busiest second is near its limit (gevent runs on one core): a step
#: that failed so is run again with more generator processes before the broker is blamed.
BUSY_PERCENT = 70.0
#: A failed step's achieved rate says what the broker managed only when clearly below the offer.
CAPPED_FRACTION = 0.97
#: The search stops bisecting once the bracket is this narrow (upper / lower).
BRACKET = 1.05
#: What limited a failed step, worst first (the generator's verdict names it, :func:`generator_kind`).
KINDS = ("generator", "machine", "broker", "ok")


@dataclass(frozen=True)
class Step:
    """One paced run's evidence."""

    rate: float
    achieved: float = 0.0
    #: Kept up: delivered at the offered rate on schedule (the latency bound is apart: ``latency_ok``).
    sustained: bool = False
    #: Why it did not keep up (empty when it did).
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
    #: Generator processes the step ran with, and the busiest one's CPU (% of a core) and loop lag p99.
    processes: int = 1
    cpu_percent_max: float = math.nan
    loop_lag_ms_p99: float = math.nan
    #: Failed with the generator not clearly idle: more processes are tried before the broker is blamed.
    generator_suspect: bool = False
    #: Failed once, then held on a rerun at the same generator size: not a plain "yes".
    flaky: bool = False
    #: The reason of the failed run this one re-ran.
    rerun_after: str = ""
    #: Within the latency bound (None: not judged, no latency measured).
    latency_ok: bool | None = None
    latency_reason: str = ""

    def row(self) -> dict[str, Any]:
        row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}
        return {**row, "why": self.why}

    @property
    def why(self) -> str:
        """Everything said against the step, and the failure it was re-run after."""
        over = self.latency_reason if self.latency_ok is False else ""
        rerun = f"held on a rerun after: {self.rerun_after}" if self.rerun_after else ""
        return "; ".join(filter(None, (self.reason, over, rerun)))

    @property
    def sustainable(self) -> bool:
        """Kept up and within the latency bound (or none could be judged)."""
        return self.sustained and self.latency_ok is not False


def judge(document: dict[str, Any], rate: float, max_lag_ms: float, report: str = "", processes: int = 1) -> Step:
    """A step's verdict from its ``--mq-report-json`` document, offered ``rate`` msg/s in total."""
    rows = [row for row in document.get("destinations", []) if row.get("sent")]
    generator = document.get("generator") or {}
    kind, cpu, loop_lag = generator_kind(generator)
    lags = [op["latency_ms"].get("p99", 0.0) for op in document.get("operations", [])
            if op["name"].startswith("schedule-lag ") and op.get("latency_ms")]  # fmt: skip
    achieved = sum(row["throughput_msgs"] for row in rows)  # to the last receive: a backlog pulls it down
    lost = sum(row["lost"] + row["unreceived"] for row in rows)
    errors = sum(row["errors"] for row in rows)
    evidence = {
        "rate": rate, "achieved": achieved, "lost": lost, "errors": errors,
        "verdict": str(generator.get("verdict", "ok")), "lag_p99_ms": max(lags, default=math.nan),
        "drain_s": document.get("drain", {}).get("seconds", 0.0),
        "mb_per_s": sum(row["throughput_mbit"] for row in rows) / 8,
        "report": report, "processes": processes, "cpu_percent_max": cpu, "loop_lag_ms_p99": loop_lag,
        **_worst_latency(rows),
    }  # fmt: skip
    reasons = []
    if not rows:
        reasons.append("nothing was sent")
    if achieved < RATE_FRACTION * rate:
        reasons.append(f"{achieved:,.0f} msg/s < {RATE_FRACTION:.0%} of {rate:,.0f} (send to last receive)")
    if lost:
        reasons.append(f"{lost:,} lost or never received")
    if errors:
        reasons.append(f"{errors:,} errors")
    lagging = bool(lags) and max(lags) > max_lag_ms
    if lagging:
        reasons.append(f"schedule lag p99 {max(lags):.2f} ms > {max_lag_ms:g} ms")
    if kind in ("generator", "machine"):
        reasons.append(f"generator {evidence['verdict']}")
    if not reasons:
        return Step(sustained=True, **evidence)
    lag_only = lagging and len(reasons) == 1
    if kind == "ok" and loop_lag > max_lag_ms:
        # Its own loop was later than the schedule allows: sends were late before any broker could be
        # slow. With CPU to spare, other processes had the cores (the machine, not the broker).
        kind = "generator" if cpu >= CPU_BOUND_PERCENT else "machine"
        reasons.append(f"generator loop lag p99 {loop_lag:.1f} ms > {max_lag_ms:g} ms at {cpu:.0f} % CPU")
    return Step(reason="; ".join(reasons), limit=kind if kind in ("generator", "machine") else "broker",
                lag_only=lag_only, generator_suspect=kind != "broker" and (kind != "ok" or cpu >= BUSY_PERCENT
                                                                            or lag_only), **evidence)  # fmt: skip


def generator_kind(generator: dict[str, Any]) -> tuple[str, float, float]:
    """What the generator's verdict blames, with the busiest process's CPU % and loop lag p99 ms.

    Read defensively: a verdict naming the machine (contended) or the broker is taken at its word; a
    plain ``saturated`` one is the generator's own limit when it used its CPU, else the machine's (a
    generator starved by other processes, a broker on the same cores, shows loop lag with CPU to spare).
    """
    processes = [p for p in (generator.get("processes") or {}).values() if isinstance(p, dict)]
    cpu = max((float(p.get("cpu_percent_max") or 0.0) for p in processes), default=math.nan)
    loop_lag = max((float(p.get("loop_lag_ms_p99") or 0.0) for p in processes), default=math.nan)
    verdicts = [(str(p.get("verdict", "ok")), float(p.get("cpu_percent_max") or 0.0)) for p in processes]
    kinds = [_kind(v, c) for v, c in verdicts or [(str(generator.get("verdict", "ok")), cpu)]]
    return min(kinds, key=KINDS.index, default="ok"), cpu, loop_lag


def _kind(verdict: str, cpu: float) -> str:
    words = verdict.lower()
    if words in ("", "ok"):
        return "ok"
    if "contend" in words or "machine" in words:
        return "machine"
    if "broker" in words:
        return "broker"
    return "generator" if cpu >= CPU_BOUND_PERCENT else "machine"


def _worst_latency(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Send-to-receive p50 / p99 / p99.9 / max of the destination that did worst."""
    keys = {"p50": "p50_ms", "p99": "p99_ms", "p999": "p999_ms", "max": "max_ms"}
    figures = [row["latency_ms"] for row in rows if row.get("latency_ms")]
    return {out: max((f.get(key, math.nan) for f in figures), default=math.nan) for key, out in keys.items()}


@dataclass
class Search:
    """The steps of one search and what they found."""

    steps: list[Step] = field(default_factory=list)
    #: The highest rate kept up with (None: not even the start rate was).
    max_rate: float | None = None
    #: The lowest rate the broker did not keep up with (None: no step failed on the broker's account).
    failed_rate: float | None = None
    #: The highest rate kept up with within the latency bound, and the lowest not (None: none).
    slo_rate: float | None = None
    slo_failed_rate: float | None = None
    #: Why the search ended.
    ended: str = ""
    #: ``generator`` or ``machine`` when that, not the broker, failed at the lowest failed rate: the
    #: figures are lower bounds; ``limited`` says where and with which figures.
    limit: str = ""
    limited: str = ""
    #: The step that first set the relative latency bound (the first to keep up).
    baseline: Step | None = None


RunStep = Callable[[float, int], Step]


def search(
    run_step: RunStep,
    start: float,
    *,
    ceiling: float = math.inf,
    steps: int = 10,
    budget_s: float = math.inf,
    processes: int = 1,
    max_processes: int = 1,
    bound: LatencyBound | None = None,
    on_step: Callable[[Step], None] = lambda step: None,
    clock: Callable[[], float] = time.monotonic,
) -> Search:
    """Double from ``start`` until a step fails (or ``ceiling``), then narrow to a 5 % bracket; then
    the same for the latency bound, between its highest passing step and its lowest failing one.

    ``run_step(rate, processes)`` runs one step with that many generator processes; a failed step
    whose generator was not clearly idle runs again with twice as many (up to ``max_processes``,
    kept for later steps) and a step failed on the schedule lag alone once more (:func:`attempt`).
    A step that fails because the broker fell behind still says what the broker managed (its
    achieved rate): just under and just over that are tried first, then the bracket is halved on a
    log scale. ``on_step`` sees every run, judged against the latency bound too.
    """
    found, deadline = Search(), clock() + budget_s
    size, tried, hint = processes, set[float](), 0.0
    low, high, rate = 0.0, math.inf, min(start, ceiling)

    def judged(step: Step) -> Step:
        first = found.baseline is None and step.sustained
        if bound is not None and (first or found.baseline is not None):
            step = replace(step, **bound.judge(step, found.baseline or step))
        if first:
            found.baseline = step
        on_step(step)
        return step

    def run(at: float) -> Step | None:
        nonlocal size
        if len(found.steps) >= steps or clock() >= deadline:
            return None
        runs = attempt(lambda n: run_step(at, n), size, max_processes, steps - len(found.steps), judged)
        found.steps.extend(runs)
        tried.add(at)
        size = runs[-1].processes
        return runs[-1]

    while (step := run(rate)) is not None:
        if step.sustained:
            low = max(low, rate)
        elif rate < high:  # the lowest failure says whose limit bounds the search from above
            high = rate
            found.limit = step.limit if step.limit in ("generator", "machine") else ""
            found.limited = f"at {rate:,.0f} msg/s ({generator_figures(step)})" if found.limit else ""
            hint = step.achieved if step.achieved < CAPPED_FRACTION * rate and not found.limit else hint
        if high == math.inf:
            if rate >= ceiling:
                found.ended = f"no step failed up to the ceiling {ceiling:,.0f} msg/s"
                break
            rate = min(rate * 2, ceiling)
            continue
        if low and high / low <= BRACKET:
            found.ended = f"bracketed within {BRACKET - 1:.0%}"
            break
        rate = _next_rate(low, high, hint, tried)
        if rate < 1.0:
            found.ended = "not kept up with even at 1 msg/s"
            break
    else:
        found.ended = found.ended or _spent(found, steps)
    found.max_rate, found.failed_rate = low or None, high if high < math.inf and not found.limit else None
    _latency_search(found, run, steps)
    return found


def _latency_search(found: Search, run: Callable[[float], Step | None], steps: int) -> None:
    """Bisect between the highest sustainable step and the lowest one above it that is not."""
    while True:
        slo_low = max((s.rate for s in found.steps if s.sustainable), default=0.0)
        slo_high = min((s.rate for s in found.steps if s.rate > slo_low and not s.sustainable
                        and (s.sustained or s.limit == "broker")), default=math.inf)  # fmt: skip
        found.slo_rate, found.slo_failed_rate = slo_low or None, slo_high if slo_high < math.inf else None
        if not slo_low or slo_high == math.inf or slo_high / slo_low <= BRACKET:
            return
        if run(math.sqrt(slo_low * slo_high)) is None:
            found.ended += f"; the latency bound's bracket left wider than {BRACKET - 1:.0%} ({_spent(found, steps)})"
            return


def _spent(found: Search, steps: int) -> str:
    return f"{steps} steps run" if len(found.steps) >= steps else "time budget spent"


def attempt(
    run: Callable[[int], Step], size: int, max_size: int, runs: int, judged: Callable[[Step], Step] = lambda s: s
) -> list[Step]:
    """The runs of one step (at most ``runs``), the last one standing.

    A failed step whose generator was suspect runs again with twice the processes while below
    ``max_size``; one failed on the schedule lag alone, once more at the same size (one stall of a
    shared machine; it counts when it recurs). A pass after a failure at the same size is *flaky*.
    """
    done, sizes = [judged(run(size))], [size]
    while not done[-1].sustained and len(done) < runs:
        last = done[-1]
        if last.generator_suspect and size < max_size:
            size = min(max_size, size * 2)
        elif not (last.lag_only and sizes.count(size) == 1):
            break
        step = run(size)
        if step.sustained:
            step = replace(step, flaky=sizes[-1] == size, rerun_after=last.reason)
        done.append(judged(step))
        sizes.append(size)
    return done


def generator_figures(step: Step) -> str:
    """The generator's evidence for a step, for a sentence."""
    cpu = "-" if math.isnan(step.cpu_percent_max) else f"{step.cpu_percent_max:.0f} %"
    lag = "-" if math.isnan(step.loop_lag_ms_p99) else f"{step.loop_lag_ms_p99:.1f} ms"
    plural = "es" if step.processes != 1 else ""
    return f"{step.processes} generator process{plural}, busiest CPU {cpu} of a core, loop lag p99 {lag}: {step.reason}"


def _next_rate(low: float, high: float, hint: float, tried: set[float]) -> float:
    """Just under, then just over, what the broker managed when it fell behind; else the log middle."""
    for candidate in (hint * 0.99, hint * 1.03):
        if low < candidate < high and candidate not in tried:
            return candidate
    return math.sqrt(low * high) if low else high / 2


def _point(run_step: Callable[[float, float], Step], percent: float, rate: float, size: int) -> Step:
    return run_step(percent, rate)


def _shown(on_step: Callable[[float, Step], None], percent: float, step: Step) -> Step:
    on_step(percent, step)
    return step


def curve_rates(max_rate: float, percents: Sequence[float]) -> list[tuple[float, float]]:
    """(percent, rate) points of a latency-against-load curve."""
    return [(p, max_rate * p / 100.0) for p in percents]


def curve_points(
    run_step: Callable[[float, float], Step],
    max_rate: float,
    percents: Sequence[float],
    on_step: Callable[[float, Step], None] = lambda percent, step: None,
) -> list[dict[str, Any]]:
    """Latency against load: ``run_step(percent, rate)`` at each percent of ``max_rate``.

    As in :func:`search`, a point failed on the schedule lag alone is run once more (:func:`attempt`)
    and its row keeps the first run's reason in ``rerun_after`` and says ``flaky``: one stall of a
    shared machine should not stand for the broker's latency. ``on_step`` sees every run.
    """
    points = []
    for percent, rate in curve_rates(max_rate, percents):
        step = attempt(partial(_point, run_step, percent, rate), 1, 1, 2, partial(_shown, on_step, percent))[-1]
        points.append({"percent": percent, "offered": rate, **step.row()})
    return points
