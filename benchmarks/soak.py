"""Does a long single-process run stay flat? RSS, received rate and latency p99 over an hour.

    python -m benchmarks.soak --host stomp://127.0.0.1:61613 [--minutes 60] [--rate 2000] [--size 1KB]

Runs the command a user types -- ``locust -f locustfiles/put_get.py --headless -u 2 -r 2
--mq-consumers 1 -t ... --mq-total-rate RATE --mq-size SIZE`` on a fresh queue, one process (one
producer, one consumer), this checkout's mqusers first on PYTHONPATH -- and reads its VmRSS from
/proc every few seconds. At the end it prints RSS after the warm-up against RSS at the end, the
received rate and latency p99 per window (default 5 minutes) from the run's ``--mq-report-json``
per-second series, their drift (last window against the first) and a verdict against the targets:

- RSS after the warm-up (default 15 min: the bounded structures' first fill): its least-squares slope < 1 MB per
  hour, and growth < 5 %;
- received rate without drift: the last window's within 2 % of the first's after the warm-up;
- p99 without drift: the last window's within 50 % or 1 ms (whichever is larger) of that first one's.

The JSON keeps per-second percentiles, not a histogram per window, so a window's p99 is the median
of its seconds' p99s (what a typical second saw); its worst second's p99 is printed beside it.
Exit status: 0 measured, 1 a target missed with ``--strict``, 2 no measurement.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, check_broker, parse_size
from benchmarks.locust_cli import (
    MB,
    PUT_GET,
    ROOT,
    Growth,
    ProcessRun,
    RssSamples,
    checkout,
    locust_argv,
    report_row,
    run_process,
)

RSS_TARGET_PCT = 5.0
#: The slope a process that runs for days can afford: 24 MB a day.
RSS_SLOPE_MB_PER_HOUR = 1.0
RATE_DRIFT_PCT = 2.0
P99_DRIFT_PCT, P99_DRIFT_MS = 50.0, 1.0
#: Below this share of the asked rate the run was not the asked load, whatever else it shows.
RATE_FLOOR = 0.95


@dataclass(frozen=True)
class Window:
    """A stretch of the load: its received rate and latency, from the report's per-second series."""

    start_s: float  # since the first whole second of deliveries
    seconds: float
    received: float
    p99_ms: float | None  # the median of its seconds' p99s
    worst_p99_ms: float | None

    @property
    def rate(self) -> float:
        return self.received / self.seconds


def windows(column: dict[str, Any], width: int, load_end: float, window_s: float) -> list[Window]:
    """Consecutive windows of ``window_s`` over one destination's series, up to ``load_end`` (epoch s).

    They start at the second bucket with a delivery: the first is usually a part of a second. Only
    whole buckets before ``load_end`` (the ``-t`` end, after which producers stop) count, each in the
    window its start falls in (a run over 30 min has buckets of 2 s or more). The last window is kept
    when it holds at least half of ``window_s``.
    """
    times: list[int] = column["t"]
    received: list[float] = column["received_per_s"]
    p99s: list[float | None] = column["p99_ms"]
    first = next((i for i, r in enumerate(received) if r > 0), None)
    if first is None:
        return []
    origin = times[first] + width
    buckets: dict[int, list[int]] = {}
    for i, t in enumerate(times):
        if origin <= t and t + width <= load_end:
            buckets.setdefault(int((t - origin) // window_s), []).append(i)
    result = []
    for k, indexes in sorted(buckets.items()):
        seconds = len(indexes) * width
        if seconds < window_s / 2:
            continue
        p99 = [p for p in (p99s[i] for i in indexes) if p is not None]
        result.append(
            Window(
                start_s=k * window_s,
                seconds=seconds,
                received=sum(received[i] * width for i in indexes),
                p99_ms=statistics.median(p99) if p99 else None,
                worst_p99_ms=max(p99) if p99 else None,
            )
        )
    return result


@dataclass(frozen=True)
class Drift:
    rate_pct: float
    p99_ms: float
    p99_pct: float

    @property
    def rate_ok(self) -> bool:
        return abs(self.rate_pct) <= RATE_DRIFT_PCT

    @property
    def p99_ok(self) -> bool:
        return abs(self.p99_pct) <= P99_DRIFT_PCT or abs(self.p99_ms) <= P99_DRIFT_MS


def judged(found: list[Window], warmup_s: float) -> list[Window]:
    """The windows the drift compares: from the first that starts after the warm-up (the broker's JIT and the
    bounded structures' first fill are no drift), or all when fewer than two do."""
    after = [w for w in found if w.start_s >= warmup_s]
    return after if len(after) >= 2 else found


def drift(first: Window, last: Window) -> Drift | None:
    """The last window against the first; None when either has no latency (no delivery)."""
    if first.p99_ms is None or last.p99_ms is None or first.rate <= 0:
        return None
    p99_pct = 100.0 * (last.p99_ms - first.p99_ms) / first.p99_ms if first.p99_ms > 0 else 0.0
    return Drift(100.0 * (last.rate - first.rate) / first.rate, last.p99_ms - first.p99_ms, p99_pct)


@dataclass
class SoakRun:
    samples: RssSamples
    document: dict[str, Any]  # the JSON report
    row: dict[str, Any]  # its queue's row
    destination: str
    process: ProcessRun


def run(options: argparse.Namespace, report: Path, workdir: Path) -> SoakRun:
    """The locust run: its RSS samples, its JSON report and how it ended."""
    seconds = round(options.minutes * 60)
    destination = f"/queue/bench.soak.{uuid.uuid4().hex[:12]}"
    load = ["-t", f"{seconds}s", "--mq-consumers", str(options.consumers), "--mq-total-rate", f"{options.rate:g}"]
    command = locust_argv(
        options.locustfile, options.host, options.users, destination, report, [*load, "--mq-size", options.size]
    )
    print("$ " + " ".join(command), flush=True)
    samples = RssSamples(seconds)
    done = run_process(command, workdir / "locust.log", seconds + max(60.0, 0.1 * seconds), options.interval, samples)
    document, row = report_row(report, destination, done)
    return SoakRun(samples, document, row, destination, done)


def print_figures(options: argparse.Namespace, growth: Growth, samples: RssSamples, found: list[Window]) -> None:
    print(f"RSS at {growth.first_s:5.0f} s (after warm-up) {growth.first_bytes / MB:9.1f} MB")
    peak = samples.peak_bytes / MB
    print(f"RSS at {growth.last_s:5.0f} s (end)           {growth.last_bytes / MB:9.1f} MB   peak {peak:.1f} MB")
    print(
        f"RSS growth after warm-up         {growth.percent:+9.2f} %    ({growth.mb_per_min * 60:+.2f} MB/hour fitted"
        f" over {growth.samples} samples)"
    )
    print(f"per {options.window:g}-minute window (from the first whole second of deliveries):")
    print("  window (min)    received/s   p99 ms (median of its seconds)   worst second's p99 ms")
    for w in found:
        span = f"{w.start_s / 60:.1f}-{(w.start_s + w.seconds) / 60:.1f}"
        p99 = "-" if w.p99_ms is None else f"{w.p99_ms:.3f}"
        worst = "-" if w.worst_p99_ms is None else f"{w.worst_p99_ms:.3f}"
        print(f"  {span:<14} {w.rate:11,.1f}   {p99:>30}   {worst:>21}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="stomp://127.0.0.1:61613", help="the broker, stomp://HOST:PORT")
    parser.add_argument("--minutes", type=float, default=60.0, help="load duration, -t (default 60)")
    parser.add_argument("--rate", type=float, default=2000.0, help="total msg/s, --mq-total-rate (default 2000)")
    parser.add_argument("--size", default="1KB", help="message size, --mq-size (default 1KB)")
    parser.add_argument("--window", type=float, default=5.0, help="minutes per rate/p99 window (default 5)")
    # 15: imports and connections, and the bounded structures' first fill (the per-interval histograms double
    # their width at 10 min, the per-second series at 15): RSS keeps its high-water mark after they halve.
    parser.add_argument("--warmup", type=float, default=15.0, help="minutes before the first RSS figure (default 15)")
    parser.add_argument("--interval", type=float, default=5.0, help="RSS sample period, s (default 5)")
    parser.add_argument("--locustfile", default=PUT_GET, help=f"a producer+consumer scenario (default {PUT_GET})")
    parser.add_argument("--users", type=int, default=2, help="-u and -r (default 2)")
    parser.add_argument("--consumers", type=int, default=1, help="--mq-consumers (default 1)")
    parser.add_argument("--report-json", type=Path, help="keep the run's --mq-report-json here (default: dropped)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args(argv)
    try:
        parse_size(options.size)
    except ValueError as error:
        parser.error(f"--size: {error}")
    if options.rate <= 0 or options.interval <= 0 or options.window <= 0 or options.warmup < 0:
        parser.error("--rate, --interval and --window must be > 0, --warmup >= 0")
    if options.minutes < 2 * options.window or options.minutes <= options.warmup:
        parser.error(
            f"--minutes {options.minutes:g} must hold two --window {options.window:g} windows and outlast --warmup"
            f" {options.warmup:g}: for a short run, e.g. --minutes 3 --window 1 --warmup 1"
        )
    if options.users <= options.consumers or options.consumers < 1:
        parser.error("--users must exceed --consumers (>= 1): a producer and a consumer at least")
    print(
        f"mqusers soak benchmark: {options.host}, {options.locustfile}, {options.users} users ({options.consumers}"
        f" consumer), one process, {options.rate:,.0f} msg/s of {options.size} for {options.minutes:g} min;"
        f" mqusers {ROOT} @ {checkout()}",
        flush=True,
    )
    try:
        check_broker(options.host)
        with tempfile.TemporaryDirectory(prefix="bench-soak.") as workdir:
            report = Path(workdir) / "report.json"
            soak = run(options, report, Path(workdir))
            if options.report_json is not None:
                shutil.copyfile(report, options.report_json)
    except (BenchError, ValueError, OSError) as error:
        print(f"benchmark failed: {error}", file=sys.stderr)
        return 2
    growth = soak.samples.growth(options.warmup * 60)
    if growth is None:
        print(f"benchmark failed: no RSS sample after {options.warmup:g} min (locust ended early?)", file=sys.stderr)
        return 2
    row, series = soak.row, soak.document["series"]
    load_end = soak.document["started"] + options.minutes * 60
    found = windows(series["destinations"][soak.destination], series["width_s"], load_end, options.window * 60)
    print_figures(options, growth, soak.samples, found)
    print(
        f"delivered {row['received']:,} messages ({row['sent']:,} sent) at {row['receive_rate_msgs']:,.1f} msg/s"
        f" (asked {options.rate:,.0f}); errors {row['errors']}, lost {row['lost']}, duplicated {row['duplicated']};"
        f" locust exit status {soak.process.returncode}"
    )
    # Seconds the generator judged itself saturated hold its latency, not the broker's: say how many.
    for node, health in soak.document["generator"]["processes"].items():
        print(
            f"generator {node}: {health['verdict']}, saturated in {health['saturated_s']} of {health['seconds']} s"
            f" (CPU max {health['cpu_percent_max']:.1f} %, loop lag p99 {health['loop_lag_ms_p99']:.1f} ms,"
            f" max {health['loop_lag_ms_max']:.1f} ms)"
        )
    compared = judged(found, options.warmup * 60)
    if len(compared) < 2 or (change := drift(compared[0], compared[-1])) is None:
        print("benchmark failed: fewer than two windows with deliveries, no drift to judge", file=sys.stderr)
        return 2
    print(
        f"drift, last window vs the first from {compared[0].start_s / 60:.1f} min: received rate"
        f" {change.rate_pct:+.2f} %, p99 {change.p99_ms:+.3f} ms ({change.p99_pct:+.1f} %)"
    )
    slope = growth.mb_per_min * 60
    rss_ok = growth.percent < RSS_TARGET_PCT and slope < RSS_SLOPE_MB_PER_HOUR
    load_ok = row["receive_rate_msgs"] >= RATE_FLOOR * options.rate
    failed = [
        *([] if rss_ok else [f"RSS growth {growth.percent:+.2f} % ({slope:+.2f} MB/hour)"]),
        *([] if change.rate_ok else [f"rate drift {change.rate_pct:+.2f} %"]),
        *([] if change.p99_ok else [f"p99 drift {change.p99_ms:+.3f} ms ({change.p99_pct:+.1f} %)"]),
        *([] if load_ok else [f"delivered < {RATE_FLOOR:.0%} of {options.rate:,.0f} msg/s: not the asked load"]),
    ]
    targets = (
        f"targets: RSS slope < {RSS_SLOPE_MB_PER_HOUR:g} MB/hour and growth < {RSS_TARGET_PCT:g} %, rate within"
        f" {RATE_DRIFT_PCT:g} %,"
        f" p99 within {P99_DRIFT_PCT:g} % or {P99_DRIFT_MS:g} ms"
    )
    figures = (
        f"RSS slope {slope:+.2f} MB/hour, growth {growth.percent:+.2f} %, rate drift {change.rate_pct:+.2f} %,"
        f" p99 drift {change.p99_ms:+.3f} ms ({change.p99_pct:+.1f} %)"
    )
    print(f"PASS: {figures} ({targets})" if not failed else f"FAIL: {'; '.join(failed)} ({targets})")
    return 1 if options.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
