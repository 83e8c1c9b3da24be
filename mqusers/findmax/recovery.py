"""Has the broker recovered from a step it fell behind on? The probe's load and its verdict, pure.

A step the broker could not keep up with leaves it working off a backlog (and a JVM collecting what
the burst allocated); a step started then is judged on that, not on its own rate, and the search
answers far below what plain runs sustain. So after such a step a light *probe* runs on the same
destination (its consumers drain what the step left) until one keeps up at the light load's latency.

The probe's *median* is held against the light load's: a backlog delays every message, so it moves the
median; a collector's pause or a stall of a machine the broker shares delays a few, so it moves only the
tail. A probe's 2 s at a few thousand msg/s puts a single 15 ms pause into its p99: held against the
light load's p99 (1.0-1.3 ms), probes read 4.7-5.7 ms three times over on a broker with nothing left to
work off, and searches ended at 8,000 msg/s where plain runs kept up at 8,889-9,689.
"""

from __future__ import annotations

import math

from mqusers.findmax.findstep import Step

#: Probes after a failed step before the broker is called not recovered.
PROBES = 3
#: A probe offers this share of the rate the broker fell behind at (never more than the light load's rate).
FRACTION = 0.2
#: A probe's warm-up and measured window, s: long enough to see a backlog, short beside a step.
WARMUP_S, WINDOW_S = 1.0, 2.0
#: A probe's p50 (send to receive) may be this many times the light load's (the baseline step's), or 1 ms more.
P50_FACTOR, P50_SLACK_MS = 2.0, 1.0


def probe_rate(failed: Step, baseline: Step | None) -> float:
    """A light load: a fifth of the failed rate, at most the light load's, at least 1 msg/s."""
    light = FRACTION * failed.rate
    if baseline is not None:
        light = min(light, baseline.rate)
    return max(1.0, light)


def unrecovered(probe: Step, baseline: Step | None) -> str:
    """Why the probe says the broker is still behind ("" when it has recovered)."""
    if not probe.sustained:
        return probe.reason or "the probe did not keep up"
    if baseline is None or math.isnan(baseline.p50_ms) or math.isnan(probe.p50_ms):
        return ""
    limit = max(P50_FACTOR * baseline.p50_ms, baseline.p50_ms + P50_SLACK_MS)
    if round(probe.p50_ms, 3) > round(limit, 3):
        doubled = "doubled" if limit == P50_FACTOR * baseline.p50_ms else f"+ {P50_SLACK_MS:g} ms"
        return f"p50 {probe.p50_ms:,.3f} ms > {limit:,.3f} ms (the light load's {baseline.p50_ms:,.3f} ms, {doubled})"
    return ""
