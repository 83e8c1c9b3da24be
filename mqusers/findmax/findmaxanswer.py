"""What a find-max search or a curve found, said once for the console and the JSON: the figures, which bound each is.

The two figures a performance engineer asks for: the highest rate the broker *keeps up* with
(delivery and schedule) and the highest that is also within the latency bound. Each is ``found``
(a higher step failed on the broker's account), ``lower`` (nothing above it failed: the search ran
into its ceiling, its steps, its time, or the generator's or the machine's limit; "at least") or
``none``. The criterion is stated with them. A curve's headline names only points that kept up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mqusers.findmax.findstep import RATE_FRACTION
from mqusers.findmax.latencybound import LatencyBound
from mqusers.findmax.search import Search

BOUNDS = ("found", "lower", "none")
KEEPS_UP = "highest rate kept up with"


@dataclass(frozen=True)
class Figure:
    """One of the two answers."""

    rate: float | None
    bound: str
    #: What stopped it: the first step above it that failed, or why nothing above it was tried.
    why: str
    mb_per_s: float | None = None
    #: The step at ``rate`` held only on a rerun after failing (its first failure).
    flaky: str = ""

    def text(self) -> str:
        if self.rate is None:
            return f"none ({self.why})"
        rate = f"{self.rate:,.0f} msg/s" + (f", {self.mb_per_s:,.2f} MB/s" if self.mb_per_s is not None else "")
        flaky = f" [flaky: failed once ({self.flaky}), held on a rerun]" if self.flaky else ""
        return f"{'at least ' if self.bound == 'lower' else ''}{rate} ({self.why}){flaky}"

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "bound": self.bound, "why": self.why, "mb_per_s": self.mb_per_s,
                "flaky": bool(self.flaky), "flaky_after": self.flaky or None, "text": self.text()}  # fmt: skip


def criterion(
    window_s: float, warmup_s: float, max_lag_ms: float | None, bound: LatencyBound | None, found: Search
) -> str:
    """What "keeps up" and "sustainable" meant in this search, in one sentence."""
    lag = f", the schedule lag p99 is <= {max_lag_ms:g} ms" if max_lag_ms else ""
    keeps_up = (f"a step keeps up when, over its {window_s:g} s window after a {warmup_s:g} s warm-up, at least"
                f" {RATE_FRACTION:.0%} of the offered rate is sent and received (first send to last receive),"
                f" nothing is lost, unreceived or failed{lag} and the generator's verdict is ok")  # fmt: skip
    if bound is None:
        return keeps_up + "; no latency bound"
    return (f"{keeps_up}; it is sustainable when it also has due-time latency (from when each message was due: "
            f"late sends count) {bound.describe(found.baseline)}")  # fmt: skip


def figures(found: Search, bound: LatencyBound | None) -> tuple[Figure, Figure | None]:
    """The highest rate kept up with, and the highest also within ``bound`` (None without one)."""
    keeps_up = _figure(found, found.max_rate, found.failed_rate, lambda s: s.sustained, lambda s: s.reason)
    if bound is None:
        return keeps_up, None
    within = _figure(found, found.slo_rate, found.slo_failed_rate, lambda s: s.sustainable,
                     lambda s: s.reason or s.latency_reason)  # fmt: skip
    return keeps_up, within


def _figure(found: Search, rate: float | None, failed: float | None, held: Any, why_not: Any) -> Figure:
    if rate is None:
        return Figure(None, "none", f"{found.ended}; {_limited(found)}" if found.limit else found.ended)
    step = max((s for s in found.steps if s.rate == rate and held(s)), key=lambda s: s.flaky is False)
    flaky = step.rerun_after if step.flaky else ""
    if failed is not None:
        above = next((s for s in reversed(found.steps) if s.rate == failed and not held(s)), None)
        why = f"{failed:,.0f} msg/s did not" + (f": {why_not(above)}" if above else "")
        return Figure(rate, "found", why, step.mb_per_s, flaky)
    return Figure(rate, "lower", _why_lower(found), step.mb_per_s, flaky)


def _limited(found: Search) -> str:
    advice = "run the generator on another machine than the broker"
    if found.limit == "generator":
        advice = "add workers on other machines (--master --expect-workers N)"
    return f"limit: {found.limit}, not the broker, {found.limited}; {advice}"


def _why_lower(found: Search) -> str:
    if found.limit:
        return _limited(found)
    if found.ended.startswith("no step failed up to the ceiling"):
        return "no step failed up to the ceiling; raise --max-rate"
    if found.ended.endswith("steps run"):
        return f"no step failed in {found.ended}; raise --steps"
    return "no step failed before the time budget ran out; raise --budget"


def within_label(found: Search, bound: LatencyBound) -> str:
    return f"highest rate also within {bound.describe(found.baseline)}"


def lines(found: Search, bound: LatencyBound | None, criterion_text: str) -> list[str]:
    """The end of find-max's console output."""
    keeps_up, within = figures(found, bound)
    out = [f"search ended: {found.ended}", f"criterion: {criterion_text}",
           f"{KEEPS_UP}: {keeps_up.text()}"]  # fmt: skip
    if within is not None and bound is not None:
        out.append(f"{within_label(found, bound)}: {within.text()}")
    grown = [s for s in found.steps if s.sustained and s.rerun_after and not s.flaky]
    out += [f"note: {s.rate:,.0f} msg/s held with {s.processes} generator processes after failing with fewer"
            f" ({s.rerun_after})" for s in grown]  # fmt: skip
    starved = list(dict.fromkeys(f"{s.rate:,.0f}" for s in found.steps if s.limit == "machine"))
    if starved:
        out.append(f"note: at {', '.join(starved)} msg/s the generator lagged with CPU to spare: other processes"
                   " (a broker on the same machine) took the CPU; those steps tell the machine's limit")  # fmt: skip
    return out


def document(found: Search, bound: LatencyBound | None, criterion_text: str) -> dict[str, Any]:
    """The answer's part of find-max's JSON (``max_rate`` and ``bound`` as before, and the rest)."""
    keeps_up, within = figures(found, bound)
    final = found.steps[-1].processes if found.steps else None
    return {"max_rate": keeps_up.rate, "bound": keeps_up.bound, "mb_per_s": keeps_up.mb_per_s,
            "keeps_up": {**keeps_up.as_dict(), "label": KEEPS_UP},
            "within_latency": {**within.as_dict(), "label": within_label(found, bound)} if within and bound else None,
            "latency_bound": bound.as_dict(found.baseline) if bound else None, "criterion": criterion_text,
            "ended": found.ended, "limit": found.limit, "processes": final}  # fmt: skip


def curve_headline(points: Sequence[dict[str, Any]], max_rate: float) -> dict[str, Any]:
    """A curve's answer: the highest point that kept up (None: none did), and its headline in words.

    ``--max-rate`` is only the curve's 100 %: a point above the highest kept-up one did not keep up, so
    the headline never calls a rate the maximum unless its row says "yes" (or "flaky"). Its p99 is the
    kept-up point's nearest 50 %: a point that fell behind measures its backlog, not the broker's latency.
    """
    base = f"--max-rate {max_rate:,.0f} msg/s"
    held = [p for p in points if p.get("sustained")]
    if not held:
        lowest = min(points, key=lambda p: p["offered"], default=None)
        where = f", down to {lowest['offered']:,.0f} msg/s ({lowest['percent']:g} % of {base}): each row says why" \
            if lowest is not None else ""  # fmt: skip
        return {"kept_up": None, "text": f"no point kept up{where}"}
    top = max(held, key=lambda p: p["offered"])
    above = [p for p in points if p["offered"] > top["offered"]]
    flaky = " [flaky: held on a rerun]" if top.get("flaky") else ""
    failed = f"; {min(p['offered'] for p in above):,.0f} msg/s did not" if above else ""
    half = min(held, key=lambda p: abs(p["percent"] - 50))
    p99 = "-" if half.get("p99_ms") is None else f"{half['p99_ms']:,.3f} ms"
    text = (f"highest rate kept up with {top['offered']:,.0f} msg/s ({top['percent']:g} % of {base}{failed}){flaky};"
            f" p99 at {half['percent']:g} % ({half['offered']:,.0f} msg/s): {p99}")  # fmt: skip
    kept_up = {"rate": top["offered"], "percent": top["percent"], "flaky": bool(top.get("flaky"))}
    return {"kept_up": kept_up, "text": text}
