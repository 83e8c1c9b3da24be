"""find-max's latency bound (``--slo``): parsed strictly, stated in words, applied to a step.

``p99<=10ms`` bounds a step's worst destination's due-time p99 at 10 ms; ``p99<=20x`` at twenty times
the light load's: the median of the search's first :data:`LIGHT_STEPS` kept-up steps (the default: a
rate whose p99 is 50 times the light load's is not sustainable, however well the broker keeps up). One
light step's p99 on a shared machine moves 2.5-fold between searches (2.0 to 5.1 ms at 1,000 msg/s
here); near the knee a window's p99 is bimodal (10-40 ms, or 90-500 ms with a stall of a shared machine in it),
and twenty times the median sits between the two. Due-time latency (``receive-due``)
runs from when a message was due on the schedule, so a send the generator made late counts in it:
the bound judges what a user of the schedule saw, and no separate rule on late sends is needed. A
step without it (no shared schedule) is judged on send-to-receive latency.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from mqusers.findmax.findstep import Step, over

#: The figure's name in ``--slo`` and its field in a step: due-time first, send-to-receive without it.
FIGURES = {"p50": "p50_ms", "p99": "p99_ms", "p99.9": "p999_ms", "max": "max_ms"}
DUE_FIGURES = {"p50": "due_p50_ms", "p99": "due_p99_ms", "p99.9": "due_p999_ms", "max": "due_max_ms"}


def figure_ms(step: Step, figure: str) -> float:
    """The step's due-time figure, or its send-to-receive one when it has no due-time latency."""
    due = float(getattr(step, DUE_FIGURES[figure]))
    return due if not math.isnan(due) else float(getattr(step, FIGURES[figure]))


UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "x": 1.0}
DEFAULT = "p99<=20x"
#: Kept-up steps whose median figure is the relative bound's light load (the first ones of a search).
LIGHT_STEPS = 3
#: A median of the light steps more than this times the first one's says the knee came among them.
LIGHT_SPREAD = 2.0
_SYNTAX = re.compile(r"(p50|p99|p99\.9|max)<=([0-9]+(?:\.[0-9]+)?)(us|ms|s|x)")


@dataclass(frozen=True)
class LatencyBound:
    """``figure <= limit`` ms, or ``figure <= limit`` times the baseline step's (:func:`light_load`) when
    ``relative``."""

    figure: str
    limit: float
    relative: bool
    spec: str

    def limit_ms(self, baseline: Step) -> float:
        """The bound in ms (NaN: relative to a baseline that measured no latency)."""
        return self.limit * figure_ms(baseline, self.figure) if self.relative else self.limit

    def judge(self, step: Step, baseline: Step) -> dict[str, Any]:
        """``latency_ok`` and ``latency_reason`` for :func:`dataclasses.replace` of a step."""
        value, limit = figure_ms(step, self.figure), self.limit_ms(baseline)
        if math.isnan(value) or math.isnan(limit):
            return {"latency_ok": None, "latency_reason": "no receive latency measured"}
        named = f"due {self.figure}" if not math.isnan(getattr(step, DUE_FIGURES[self.figure])) else self.figure
        reason = over(named, value, limit, 3)  # judged at the µs it prints, as the table shows it
        return {"latency_ok": not reason, "latency_reason": reason}

    def describe(self, baseline: Step | None) -> str:
        """The bound in words: ``p99 <= 10 ms``, or the relative one with what it came to."""
        if not self.relative:
            return f"{self.figure} <= {self.limit:g} ms"
        words = f"{self.figure} <= {self.limit:g} x the light load's"
        if baseline is None or math.isnan(self.limit_ms(baseline)):
            return words
        base = figure_ms(baseline, self.figure)
        # "light load", not "median": when the knee came among the first steps, the light load is the first one.
        return f"{words} ({base:,.3f} ms at {baseline.rate:,.0f} msg/s) = {self.limit_ms(baseline):,.3f} ms"

    def as_dict(self, baseline: Step | None) -> dict[str, Any]:
        limit = self.limit if not self.relative else self.limit_ms(baseline) if baseline is not None else math.nan
        return {"spec": self.spec, "figure": self.figure, "relative": self.relative,
                "limit_ms": None if math.isnan(limit) else limit, "text": self.describe(baseline),
                "baseline_rate": baseline.rate if baseline is not None and self.relative else None}  # fmt: skip


def light_load(steps: list[Step], figure: str) -> Step:
    """The baseline of a relative bound: of these kept-up steps (the first ones, at most :data:`LIGHT_STEPS`),
    the median by ``figure`` (of two, the lower); the first step when the median is more than
    :data:`LIGHT_SPREAD` times its figure (the knee came within the first steps: they are no light load)."""

    def value(step: Step) -> float:
        ms = figure_ms(step, figure)
        return math.inf if math.isnan(ms) else ms

    median = sorted(steps, key=value)[(len(steps) - 1) // 2]
    return median if value(median) <= LIGHT_SPREAD * value(steps[0]) else steps[0]


def parse(text: str) -> LatencyBound:
    """``p99<=10ms`` (units us, ms, s) or ``p99<=10x``; figures p50, p99, p99.9, max. ValueError: one line."""
    match = _SYNTAX.fullmatch(text.strip().replace(" ", ""))
    if match is None:
        raise ValueError(
            f"--slo {text!r} is not FIGURE<=VALUE with a unit, e.g. p99<=10ms or p99<=10x (figures: "
            f"{', '.join(FIGURES)}; units: us, ms, s, or x for times the light load's)"
        )
    figure, number, unit = match.groups()
    limit = float(number) * UNITS[unit]
    if limit <= 0:
        raise ValueError(f"--slo {text!r}: the bound must be above 0")
    return LatencyBound(figure, limit, unit == "x", f"{figure}<={number}{unit}")
