"""One find-max step's verdict from its run's JSON report: did it keep up, and if not, whose limit was it?

A step *keeps up* when, over the window: the destinations' throughput is at least 99 % of the
offered rate (sent over first send to last receive, so a backlog still draining after the window
pulls it down), nothing is lost, unreceived or failed, and the generator's verdict is ``ok``. Late
sends are not a rule of their own by default: the due-time latency (``receive-due``: from when a
message was due, so a late send counts in it) is what the latency bound judges; ``max_lag_ms`` adds
the schedule lag p99 as a rule for those who want one. A failed step is the broker's limit only when the generator's
own figures clear it: its verdict, its CPU, its loop lag, and the machine's cores (``machine_busy``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mqusers.measure.names import RECEIVE_DUE

DUE_PREFIX = RECEIVE_DUE + " "

#: A step keeps up at >= this fraction of the offered rate.
RATE_FRACTION = 0.99
#: The last delivery may land this long after the last send without counting against the rate: one late
#: message (a scheduler stall, a GC pause) lands there as easily as anywhere, and at 1 % of a 3 s window it
#: failed steps plain runs keep up at. A backlog beyond it counts, and a growing one shows in the due-time
#: latency the bound judges.
TAIL_GRACE_S = 0.1
#: A saturated process using this much of a core is its own limit (health.py judges at 90 %).
CPU_BOUND_PERCENT = 90.0
#: A process this busy at its busiest second is near its limit (gevent runs on one core): a step
#: that failed so is run again with more generator processes before the broker is blamed.
BUSY_PERCENT = 70.0
#: A failed step on a machine this busy (all cores, over its window) was the machine's limit.
MACHINE_BUSY_PERCENT = 95.0
#: A generator loop later than this (p99) had its sends late before any broker could be slow: the blame
#: of a failed step, when no ``max_lag_ms`` rule says otherwise.
LOOP_LAG_MS = 5.0
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
    #: The same from when each message was due (``receive-due``): late sends count in it.
    due_p50_ms: float = math.nan
    due_p99_ms: float = math.nan
    due_p999_ms: float = math.nan
    due_max_ms: float = math.nan
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
    #: How busy all the machine's cores were over the window (NaN: not measured, not Linux).
    machine_busy_percent: float = math.nan
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


def judge(
    document: dict[str, Any],
    rate: float,
    max_lag_ms: float | None = None,
    report: str = "",
    processes: int = 1,
    machine_busy: float = math.nan,
) -> Step:
    """A step's verdict from its ``--mq-report-json`` document, offered ``rate`` msg/s in total, and
    how busy the machine's cores were over its window (% of all of them; NaN: not measured); ``max_lag_ms``
    (None: no such rule) bounds the schedule lag p99 of a step that keeps up."""
    rows = [row for row in document.get("destinations", []) if row.get("sent")]
    generator = document.get("generator") or {}
    kind, cpu, loop_lag = generator_kind(generator)
    lags = [op["latency_ms"].get("p99", 0.0) for op in document.get("operations", [])
            if op["name"].startswith("schedule-lag ") and op.get("latency_ms")]  # fmt: skip
    achieved = sum(_achieved(row) for row in rows)  # to the last receive: a backlog pulls it down
    lost = sum(row["lost"] + row["unreceived"] for row in rows)
    errors = sum(row["errors"] for row in rows)
    evidence = {
        "rate": rate, "achieved": achieved, "lost": lost, "errors": errors,
        "verdict": str(generator.get("verdict", "ok")), "lag_p99_ms": max(lags, default=math.nan),
        "drain_s": document.get("drain", {}).get("seconds", 0.0),
        "mb_per_s": sum(row["throughput_mbit"] for row in rows) / 8,
        "report": report, "processes": processes, "cpu_percent_max": cpu, "loop_lag_ms_p99": loop_lag,
        "machine_busy_percent": machine_busy,
        **_worst_latency(rows),
        **_worst_due(document.get("operations", [])),
    }  # fmt: skip
    reasons = []
    if not rows:
        reasons.append("nothing was sent")
    floor = RATE_FRACTION * rate
    if shown(achieved, 0) < shown(floor, 0):
        reasons.append(f"{achieved:,.0f} msg/s < {floor:,.0f}, {RATE_FRACTION:.0%} of {rate:,.0f}"
                       " (send to last receive)")  # fmt: skip
    if lost:
        reasons.append(f"{lost:,} lost or never received")
    if errors:
        reasons.append(f"{errors:,} errors")
    # At the table's precision (the histograms keep µs): the reason and the "lag p99 ms" column agree.
    lag_reason = over("schedule lag p99", max(lags, default=math.nan), max_lag_ms, 3) if max_lag_ms else ""
    lagging = bool(lag_reason)
    if lagging:
        reasons.append(lag_reason)
    if kind in ("generator", "machine"):
        reasons.append(f"generator {evidence['verdict']}")
    if not reasons:
        return Step(sustained=True, **evidence)
    lag_only = lagging and len(reasons) == 1
    suspect = kind != "broker" and (kind != "ok" or cpu >= BUSY_PERCENT or lag_only)
    if kind == "ok" and (late := over("generator loop lag p99", loop_lag, max_lag_ms or LOOP_LAG_MS, 1)):
        # Its own loop was later than the schedule allows: sends were late before any broker could be
        # slow. With CPU to spare, other processes had the cores (the machine, not the broker).
        kind, suspect = "generator" if cpu >= CPU_BOUND_PERCENT else "machine", True
        reasons.append(f"{late} at {cpu:.0f} % CPU")
    elif kind == "ok" and machine_busy >= MACHINE_BUSY_PERCENT:
        kind = "machine"  # every core was taken (a broker on this machine counts): more processes cannot help
        reasons.append(f"the machine's cores {machine_busy:.0f} % busy")
    return Step(
        reason="; ".join(reasons),
        limit=kind if kind in ("generator", "machine") else "broker",
        lag_only=lag_only,
        generator_suspect=suspect,
        **evidence,
    )


def shown(value: float, decimals: int) -> float:
    """``value`` as a reason prints it, at ``decimals`` places: every rule is judged on this."""
    return round(value, decimals)


def over(figure: str, value: float, bound: float, decimals: int, unit: str = "ms") -> str:
    """``figure VALUE unit > BOUND unit``, both at ``decimals`` places, when the first exceeds the second, else "".

    The rule and its words are one: a value over the bound by less than its last printed place is
    within it, so a reason never reads "schedule lag p99 5.00 ms > 5 ms" (NaN: never over).
    """
    if not shown(value, decimals) > shown(bound, decimals):
        return ""
    return f"{figure} {value:,.{decimals}f} {unit} > {bound:,.{decimals}f} {unit}"


def generator_kind(generator: dict[str, Any]) -> tuple[str, float, float]:
    """What the generator's verdict blames, with the busiest process's CPU % and loop lag p99 ms.

    The verdict (:mod:`mqusers.run.verdicts`) is taken at its word: ``contended`` is the machine's limit
    (a generator starved by other processes or a broker on the same cores), ``saturated`` the
    generator's own (its rule already tells the two apart by where the loop's lag went), ``broker-slow``
    the broker's.
    """
    processes = [p for p in (generator.get("processes") or {}).values() if isinstance(p, dict)]
    cpu = max((float(p.get("cpu_percent_max") or 0.0) for p in processes), default=math.nan)
    loop_lag = max((float(p.get("loop_lag_ms_p99") or 0.0) for p in processes), default=math.nan)
    verdicts = [str(p.get("verdict", "ok")) for p in processes] or [str(generator.get("verdict", "ok"))]
    kinds = [_kind(v) for v in verdicts]
    return min(kinds, key=KINDS.index, default="ok"), cpu, loop_lag


def _kind(verdict: str) -> str:
    words = verdict.lower()
    if words in ("", "ok"):
        return "ok"
    if "contend" in words or "machine" in words:
        return "machine"
    if "broker" in words:
        return "broker"
    return "generator"


def _worst_latency(rows: Sequence[dict[str, Any]], prefix: str = "") -> dict[str, float]:
    """p50 / p99 / p99.9 / max of the rows' ``latency_ms``, each the worst row's, as the step's ``{prefix}p50_ms``..."""
    figures = [row["latency_ms"] for row in rows if row.get("latency_ms")]
    return {f"{prefix}{key}_ms": max((f.get(key, math.nan) for f in figures), default=math.nan)
            for key in ("p50", "p99", "p999", "max")}  # fmt: skip


def _achieved(row: dict[str, Any]) -> float:
    """Sent over first send to last receive, less up to ``TAIL_GRACE_S`` of the tail after the last send."""
    span, send_span = row.get("span_s"), row.get("send_span_s")
    if not span or send_span is None or not row.get("sent"):
        return float(row["throughput_msgs"])
    tail = max(0.0, float(span) - float(send_span))
    return float(row["sent"]) / max(float(send_span) + max(0.0, tail - TAIL_GRACE_S), 1e-9)


def _worst_due(operations: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Due-time p50 / p99 / p99.9 / max of the destination that did worst (NaN: no shared schedule)."""
    return _worst_latency([op for op in operations if op["name"].startswith(DUE_PREFIX)], "due_")


def generator_figures(step: Step) -> str:
    """The generator's evidence for a step, for a sentence."""
    cpu = "-" if math.isnan(step.cpu_percent_max) else f"{step.cpu_percent_max:.0f} %"
    lag = "-" if math.isnan(step.loop_lag_ms_p99) else f"{step.loop_lag_ms_p99:.1f} ms"
    plural = "es" if step.processes != 1 else ""
    return f"{step.processes} generator process{plural}, busiest CPU {cpu} of a core, loop lag p99 {lag}: {step.reason}"
