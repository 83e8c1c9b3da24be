"""The listener's points for each interval: a process's own, the master's merged ones, run totals, its process.

:class:`IntervalLines` holds what an interval's points are computed from (the interval's book, the
master's merger of workers' intervals, the run's running totals, the flow operations seen) and
returns points (:class:`~mqusers.sinks.schema.Point`); :class:`~mqusers.sinks.listener.InfluxSink` decides
when, and hands them to its outputs (InfluxDB's line writer, the Prometheus endpoint).
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import MasterRunner

import logging
from collections.abc import Callable, Mapping
from typing import TypedDict

from mqusers.measure.book import EncodedTallies
from mqusers.measure.recorder import Recorder
from mqusers.run.looplag import IntervalLag
from mqusers.sinks import points, schema
from mqusers.sinks.windows import IntervalBook, IntervalMerger, RunTotals, drain

logger = logging.getLogger(__name__)

AuditSource = Callable[[], Mapping[str, Mapping[str, float]]]


class ShippedInterval(TypedDict):
    """One of a worker's intervals, for the master's merge."""

    ts_ms: int
    duration_s: float
    tallies: EncodedTallies


class IntervalLines:
    """One process's interval points; ``role`` is ``local``, ``worker`` or ``master``."""

    def __init__(
        self,
        environment: Environment,
        run_id: Callable[[], str],
        recorder: Callable[[], Recorder],
        role: str,
        node: str,
        scenario: str,
        interval_ms: int,
        grace_ms: int,
        audit: AuditSource | None = None,
    ) -> None:
        self.environment, self.run_id, self.recorder, self.audit = environment, run_id, recorder, audit
        self.role, self.node, self.scenario, self.interval_ms = role, node, scenario, interval_ms
        self.book = IntervalBook()
        self.totals = RunTotals()
        self.merger = IntervalMerger(interval_ms, grace_ms)
        self.outbox: list[ShippedInterval] = []
        # Flow operations seen this test, per series family: they get zero points when silent.
        self.seen_own: set[str] = set()
        self.seen_merged: set[str] = set()
        self.lag = IntervalLag()
        self.started_ms = self.interval_start_ms = 0
        self._audit_errors: set[str] = set()

    def tags(self, **extra: str) -> dict[str, str]:
        return {schema.RUN: self.run_id(), schema.SCENARIO: self.scenario, **extra}

    def start_test(self, now_ms: int) -> None:
        self.book.clear()
        self.totals.clear()
        self.merger.clear()
        self.outbox, self.seen_own, self.seen_merged = [], set(), set()
        self.started_ms = self.interval_start_ms = now_ms

    def take_outbox(self) -> list[ShippedInterval]:
        outbox, self.outbox = self.outbox, []
        return outbox

    def receive_intervals(self, intervals: list[ShippedInterval], client_id: str) -> None:
        for i in intervals:
            self.merger.add(client_id, int(i["ts_ms"]), float(i["duration_s"]), i["tallies"])

    def own_interval(self, end_ms: int) -> list[schema.Point]:
        """This process's points for the interval ending now; ships it (worker) or merges it (local)."""
        self.recorder().flush()  # every success recorded before the boundary belongs to this interval
        tallies, drained = drain(self.book, encode=self.role == "worker")
        start_ms, self.interval_start_ms = self.interval_start_ms, end_ms
        ts = start_ms // self.interval_ms * self.interval_ms
        duration_s = max(end_ms - start_ms, 1) / 1000.0
        figures = points.interval_fields(tallies)
        lines = points.ops_points(schema.OPS, self.tags(worker=self.node), ts, duration_s, figures, self.seen_own, {})
        if self.role == "worker":
            if drained:
                self.outbox.append(ShippedInterval(ts_ms=ts, duration_s=duration_s, tallies=drained))
        elif self.role == "local":
            self.totals.add(tallies)
            extra = {"sources": 1}
            lines += points.ops_points(schema.MERGED, self.tags(), ts, duration_s, figures, self.seen_merged, extra)
        return lines

    def run_points(self, ts: int, now_ms: int, final: bool = False) -> list[schema.Point]:
        """Master / local: merged intervals final by ``now_ms`` (all with ``final``), then run totals at ``ts``."""
        lines: list[schema.Point] = []
        if self.role == "master":
            for merged in self.merger.ready(now_ms, everything=final):
                self.totals.add(merged.tallies)
                extra = {"sources": merged.sources}
                args = (
                    merged.ts_ms,
                    merged.duration_s,
                    points.interval_fields(merged.tallies),
                    self.seen_merged,
                    extra,
                )
                lines += points.ops_points(schema.MERGED, self.tags(), *args)
        lines += points.destination_points(self.tags(), self.totals, ts)
        lines.append(schema.point(schema.RUNS, self.tags(), self._run_fields(), ts))
        lines += self._audit_points(ts)
        return lines

    def final_points(self, now_ms: int) -> list[schema.Point]:
        """Master / local: the last interval, the run's totals and summary, the test's stop."""
        lines = self.own_interval(now_ms) if self.role == "local" else []
        lines += self.run_points(now_ms, now_ms, final=True)
        duration_s = max(now_ms - self.started_ms, 1) / 1000.0
        lines += points.summary_points(self.tags(), self.totals, now_ms, duration_s)
        lines.append(self.event_point("test_stop", f"test stop after {duration_s:.1f} s", now_ms))
        return lines

    def _run_fields(self) -> dict[str, schema.FieldValue]:
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            cpu = max((float(c.cpu_usage) for c in runner.clients.values()), default=0.0)
            users, workers = runner.user_count, runner.worker_count
        else:
            users, workers = (runner.user_count if runner is not None else 0), 1
            cpu = float(getattr(runner, "current_cpu_usage", 0.0))
        return {"users": users, "workers": workers, "cpu_max_percent": cpu, "late_intervals": self.merger.late}

    def _audit_points(self, ts: int) -> list[schema.Point]:
        if self.audit is None:
            return []
        try:
            return points.audit_points(self.tags(), self.audit(), ts)
        except Exception as error:  # someone else's code: log once per reason, never stop the listener
            if str(error) not in self._audit_errors:
                self._audit_errors.add(str(error))
                logger.warning("mqusers: influx: the audit source failed: %s", error)
            return []

    def process_point(self, ts: int, buffered: int, dropped: int) -> schema.Point:
        """This process's own point: loop lag, users, CPU, memory, the writer's buffer."""
        runner = self.environment.runner
        lag_max, lag_mean = self.lag.take()
        fields: dict[str, schema.FieldValue] = {"loop_lag_max_ms": lag_max, "loop_lag_mean_ms": lag_mean}
        if runner is not None:
            if not isinstance(runner, MasterRunner):
                fields["users"] = runner.user_count
            fields["cpu_percent"] = float(runner.current_cpu_usage)
            fields["memory_mb"] = float(getattr(runner, "current_memory_usage", 0)) / 2**20
        fields.update(points_buffered=buffered, points_dropped=dropped)
        return schema.point(schema.PROCESSES, self.tags(worker=self.node), fields, ts)

    def event_point(self, kind: str, text: str, ts: int) -> schema.Point:
        return points.event_point(self.tags(), self.node, kind, text, ts)
