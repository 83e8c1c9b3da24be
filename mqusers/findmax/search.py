"""The highest rate a broker keeps up with, and latency against load: searches over paced Locust runs.

Each *step* is one ``locust`` run on the run-wide shared schedule (``--mq-total-rate R``) with a
warm-up left out of the figures (``--mq-warmup``) and a fixed measured window, judged by
:func:`mqusers.findmax.findstep.judge` (did it keep up, whose limit was it); it is *sustainable* when it
also meets the latency bound (:mod:`mqusers.findmax.latencybound`).

:func:`search` is pure (a step is a function of the rate and the generator's size), so its strategy
is unit-tested on a model broker: doubling from a start rate until a step fails, then bisection
down to a 5 % bracket, then the same between the highest step within the latency bound and the
lowest above it. A failed step whose generator was not clearly idle is run again with more
generator processes before the broker is blamed; when the generator or the machine stays the
limit, the search narrows below it and says so rather than report that limit as the broker's.
After a step the broker fell behind on, the next starts only once the broker has recovered
(``recover``: its backlog drained and a light load kept up at the light load's latency), so no
step is judged on a broker still working off the last one; one that does not recover ends the search.
A step over the latency bound, or one the generator or the machine failed, asks for the same check.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from mqusers.findmax.findstep import Step, generator_figures
from mqusers.findmax.latencybound import LIGHT_STEPS, LatencyBound, light_load

#: A failed step's achieved rate says what the broker managed only when clearly below the offer.
CAPPED_FRACTION = 0.97
#: The search stops bisecting once the bracket is this narrow (upper / lower).
BRACKET = 1.05
#: Steps kept for the latency bound's search (of ``steps``, when it is at least twice this): halving a 2x
#: bracket to 5 % takes 4, and a latency failure at the bracket's top is run twice.
LATENCY_STEPS = 6
#: A latency failure at the top of the latency bound's bracket is run again once the bracket is this narrow
#: (two halvings of a doubling): above it, the steps are better spent narrowing.
CONFIRM_WITHIN = 1.25


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
    #: The light load's step, the relative latency bound's baseline: the median of the first kept-up steps.
    baseline: Step | None = None
    #: After each step the broker fell behind on: how the broker's recovery went, in words.
    recoveries: list[str] = field(default_factory=list)
    #: Why the broker did not recover from the last step ("" when it did, or none was asked): no step follows.
    not_recovered: str = ""


RunStep = Callable[[float, int], Step]
#: ``recover(failed, baseline)``: "" once the broker has recovered from ``failed``, else why not.
Recover = Callable[[Step, "Step | None"], str]


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
    recover: Recover | None = None,
) -> Search:
    """Double from ``start`` until a step fails (or ``ceiling``), then narrow to a 5 % bracket; then
    the same for the latency bound, between its highest passing step and its lowest failing one.

    ``run_step(rate, processes)`` runs one step with that many generator processes; a failed step
    whose generator was not clearly idle runs again with twice as many (up to ``max_processes``,
    kept for later steps) and a step failed on the schedule lag alone once more (:func:`attempt`).
    A step that fails because the broker fell behind still says what the broker managed (its
    achieved rate): just under and just over that are tried first, then the bracket is halved on a
    log scale. ``on_step`` sees every run, judged against the latency bound too. After a step that did not
    keep up or was over the latency bound, ``recover`` is asked before the next; when it says why not, the
    search ends.
    """
    found, deadline = Search(), clock() + budget_s
    size, tried, hint = processes, set[float](), 0.0
    # With a latency bound, the last steps are the latency search's: a throughput search the machine limits can
    # spend every step narrowing above it and leave the bound's bracket as wide as doubling left it.
    cap = steps - LATENCY_STEPS if bound is not None and steps >= 2 * LATENCY_STEPS else steps
    latency_phase = False
    low, high, rate = 0.0, math.inf, min(start, ceiling)

    light: list[Step] = []  # the first kept-up steps, as run: their median is the light load (latencybound)

    def judged(step: Step, after: Step | None = None) -> Step:
        if step.sustained and len(light) < LIGHT_STEPS and not latency_phase:
            light.append(step)
            found.baseline = light_load(light, bound.figure if bound is not None else "p99")
        if bound is not None and found.baseline is not None:
            step = replace(step, **bound.judge(step, found.baseline))
        if after is not None and step.sustainable:  # a rerun of a step over the latency bound, within it now
            step = replace(step, flaky=after.processes == step.processes, rerun_after=after.latency_reason)
        on_step(step)
        return step

    def run(at: float, after: Step | None = None) -> Step | None:
        nonlocal size
        if found.not_recovered or len(found.steps) >= cap or clock() >= deadline:
            return None
        # The latency search starts each step at the generator size that kept up nearest below: a latency judged
        # at 8,354 msg/s with the 2 processes 16,000 needed read 55-92 ms where 1 process (as a plain run) held
        # 10-15 ms at 8,000-8,800, both cores shared with the broker. The throughput search keeps its grown size.
        below = [s for s in found.steps if s.sustained and s.rate <= at] if latency_phase else []
        start = max(below, key=lambda s: s.rate).processes if below else size
        runs = attempt(lambda n: run_step(at, n), start, max_processes, cap - len(found.steps),
                       partial(judged, after=after))  # fmt: skip
        found.steps.extend(runs)
        tried.add(at)
        size = runs[-1].processes
        last = runs[-1]
        # Any overload leaves the broker work to do: a backlog, or a collector catching up (the latency search's
        # first steps, run after a machine-limited 22,627 msg/s, read 195-240 ms where plain runs at the same
        # rates held 10-30): the next step waits for the broker to hold a light load again.
        if recover is not None and (not last.sustained or last.latency_ok is False):
            sick = found.not_recovered = recover(last, found.baseline)
            found.recoveries.append(f"after {at:,.0f} msg/s: " + (f"not recovered ({sick})" if sick else "recovered"))
            if sick:
                found.ended = f"the broker did not recover after {at:,.0f} msg/s: {sick}"
        return last

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
        found.ended = found.ended or _spent(found, cap) + (
            f" ({steps - cap} kept for the latency bound)" if cap < steps else ""
        )
    found.max_rate, found.failed_rate = low or None, high if high < math.inf and not found.limit else None
    cap, latency_phase = steps, True
    if bound is not None and found.baseline is not None:  # the light load settled: every step against it
        found.steps = [replace(s, **bound.judge(s, found.baseline)) if s.latency_ok is not None else s
                       for s in found.steps]  # fmt: skip
    _latency_search(found, run, steps)
    return found


def _latency_search(found: Search, run: Callable[[float, Step | None], Step | None], steps: int) -> None:
    """Bisect between the highest sustainable step and the lowest one above it that is not.

    The rate that bounds the bracket from above on latency alone (kept up, over the bound) is run once
    more once the bracket is within ``CONFIRM_WITHIN``: one window's p99 near the knee swings by several
    times between runs of the same rate (a stall of a shared machine in the window or not: 218 then 100 ms, or
    90 then 25 ms, against a bound of 78.5), so a latency failure counts when it recurs, as a
    schedule-lag failure does (:func:`attempt`). A failure further above is not run again: the steps go
    to the bracket's top, where a rerun decides the answer."""
    while True:
        slo_low = max((s.rate for s in found.steps if s.sustainable), default=0.0)
        slo_high = min((s.rate for s in found.steps if s.rate > slo_low and not s.sustainable
                        and (s.sustained or s.limit == "broker")), default=math.inf)  # fmt: skip
        found.slo_rate, found.slo_failed_rate = slo_low or None, slo_high if slo_high < math.inf else None
        if not slo_low or slo_high == math.inf or found.not_recovered:
            return
        runs_at = [s for s in found.steps if s.rate == slo_high]
        if len(runs_at) == 1 and runs_at[0].sustained and slo_high / slo_low <= CONFIRM_WITHIN:
            if run(slo_high, runs_at[0]) is None:
                found.ended += f"; the latency bound's bracket not confirmed ({_spent(found, steps)})"
                return
            continue
        if slo_high / slo_low <= BRACKET:
            return
        if run(math.sqrt(slo_low * slo_high), None) is None:
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
