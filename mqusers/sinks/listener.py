"""One process's InfluxDB listener: interval points from its own Users, the master's merged view.

Each process keeps a second :class:`Book` on ``events.request`` and, every ``--influx-interval``
(aligned on multiples of it since the epoch, so all workers' intervals coincide), turns what it
drained into ``mqusers_ops`` points tagged with its own worker id. Workers also ship the encoded
interval tallies to the master through mqusers' shipping (:class:`mqusers.run.context.Shipping`, with the
last partial interval in the final shipment); the master merges them per interval into
``mqusers_merged`` and writes run-wide points (users, workers, backlog, audit totals, the
whole-run summary once every worker's intervals are in), the test's events and each broker-metrics
sample it is handed (:meth:`InfluxSink.broker_sample`, a listener on ``ctx.broker_listeners``). A
local runner does both. Points go through a bounded :class:`LineWriter`: the Users never wait for the store.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import WORKER_REPORT_INTERVAL, MasterRunner, WorkerRunner

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypedDict

import gevent

from mqusers.brokers.model import BrokerSample
from mqusers.measure.book import EncodedTallies
from mqusers.measure.recorder import Recorder
from mqusers.run.context import Shipping
from mqusers.run.looplag import PROBE, IntervalLag
from mqusers.sinks import points, schema
from mqusers.sinks.settings import InfluxSettings, http_sender
from mqusers.sinks.windows import IntervalBook, IntervalMerger, RunTotals, drain
from mqusers.sinks.writer import LineWriter

logger = logging.getLogger(__name__)

SHIPPING_KEY = "mqusers_influx"
CPU_WARNING_EVERY_S = 60.0
AuditSource = Callable[[], Mapping[str, Mapping[str, float]]]


class ShippedInterval(TypedDict):
    """One of a worker's intervals, for the master's merge."""

    ts_ms: int
    duration_s: float
    tallies: EncodedTallies


class RunInfo(Protocol):
    """What the listener needs from mqusers' per-environment run context."""

    @property
    def run_id(self) -> str: ...

    @property
    def shipping(self) -> Shipping: ...

    @property
    def recorder(self) -> Recorder: ...

    @property
    def annotations(self) -> list[Callable[[str, str, int], None]]: ...

    @property
    def broker_listeners(self) -> list[Callable[[BrokerSample], None]]: ...


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class InfluxSink:
    """One process's listener. ``send`` replaces the HTTP write (tests, benchmarks)."""

    def __init__(
        self,
        environment: Environment,
        ctx: RunInfo,
        settings: InfluxSettings,
        *,
        audit: AuditSource | None = None,
        send: Callable[[str], None] | None = None,
    ):
        self.environment, self.ctx, self.settings, self.audit = environment, ctx, settings, audit
        runner = environment.runner
        self.role = (
            "worker" if isinstance(runner, WorkerRunner) else "master" if isinstance(runner, MasterRunner) else "local"
        )
        self.node = runner.client_id if isinstance(runner, WorkerRunner) else self.role
        self.scenario = Path(environment.locustfile or "mqusers").stem
        self.interval_ms = max(1, round(settings.interval * 1000))
        self.book = IntervalBook()
        self.totals = RunTotals()
        grace_ms = int(WORKER_REPORT_INTERVAL * 1000) + 2 * self.interval_ms + 1000
        self.merger = IntervalMerger(self.interval_ms, grace_ms)
        self.outbox: list[ShippedInterval] = []
        # Flow operations seen this test, per series family: they get zero points when silent.
        self.seen_own: set[str] = set()
        self.seen_merged: set[str] = set()
        self.lag = IntervalLag()
        self.writer = LineWriter(
            send or http_sender(settings),
            capacity=settings.buffer,
            batch=settings.batch,
            flush_every=settings.interval,
            copy_to=settings.line_file,
        )
        self.running = False
        self.started_ms = self.interval_start_ms = 0
        self._last_cpu_warning = 0.0
        self._audit_errors: set[str] = set()
        self._broker_errors: set[str] = set()
        self._ticker: Any = None
        self._closed = False

    # ----------------------------------------------------------------------------- wiring

    def start(self) -> None:
        events = self.environment.events
        listen(events.request, self.book.on_request)
        self.ctx.recorder.add_consumer(self.book.add_batches)  # the per-message successes, in bulk
        listen(events.test_start, self.on_test_start)
        # Intervals travel with mqusers' own shipping; the last points come once everything is in.
        self.ctx.shipping.register(SHIPPING_KEY, self._ship, self.receive_intervals)
        self.ctx.shipping.on_complete(self.finish)
        listen(events.spawning_complete, self._on_spawning_complete)
        listen(events.cpu_warning, self._on_cpu_warning)
        listen(events.quitting, self.close)
        self.ctx.annotations.append(self.annotate)
        if self.role != "worker":  # the master (or local runner) samples the broker
            self.ctx.broker_listeners.append(self.broker_sample)
        self.writer.start()
        PROBE.watch(self.lag)
        self._ticker = gevent.spawn(self._tick_forever)

    def tags(self, **extra: str) -> dict[str, str]:
        return {schema.RUN: self.ctx.run_id, schema.SCENARIO: self.scenario, **extra}

    def event(self, kind: str, text: str) -> None:
        """An annotation point now; also for others' phases (``kind="phase"``)."""
        self.writer.add([self._event_line(kind, text, _now_ms())])

    def annotate(self, kind: str, text: str, ts_ns: int) -> None:
        """An annotation point at ``ts_ns`` (a fault's start, an outage's first second without service)."""
        self.writer.add([self._event_line(kind, text, ts_ns // 1_000_000)])

    def broker_sample(self, sample: BrokerSample) -> None:
        """A broker-metrics sample's points, at the sample's time (master or local runner; never raises)."""
        if self.role == "worker" or self._closed:
            return
        try:
            lines = points.broker_lines(self.tags(), sample, sample["ts_ns"] // 1_000_000)
        except Exception as error:  # a malformed sample costs its points, never the sampler
            if str(error) not in self._broker_errors:
                self._broker_errors.add(str(error))
                logger.warning("mqusers: influx: a broker sample was not written: %r", error)
            return
        self.writer.add(lines)

    # ----------------------------------------------------------------------------- test lifecycle

    def on_test_start(self, **_: Any) -> None:
        self.book.clear()
        self.totals.clear()
        self.merger.clear()
        self.outbox, self.seen_own, self.seen_merged = [], set(), set()
        self.started_ms = self.interval_start_ms = _now_ms()
        self.running = True
        if self.role != "worker":
            # Later: mqusers' own test_start listener may set this test's run id after this one ran.
            gevent.spawn(lambda: self.event("test_start", f"test start: {self.scenario}, run {self.ctx.run_id}"))

    def finish(self) -> None:
        """The test is over and (master) every worker's intervals are in: the last points."""
        if not self.running:
            return
        try:
            self._final_points()
        except Exception:  # never turn a listener bug into a failed test (Locust's exit code 2)
            logger.exception("mqusers: influx: the final interval is lost")
        self.running = False
        self.writer.wake()

    def _ship(self, final: bool) -> list[ShippedInterval]:
        """A worker's completed intervals for the master; at stop, the last partial one too."""
        if final and self.running:
            self.writer.add(self._own_interval(_now_ms()))
        outbox, self.outbox = self.outbox, []
        return outbox

    def _final_points(self) -> None:
        if self.role == "worker":
            return  # its last interval went with the final shipment
        now = _now_ms()
        lines = self._own_interval(now) if self.role == "local" else []
        lines += self._run_lines(now, final=True)
        duration_s = max(now - self.started_ms, 1) / 1000.0
        lines += points.summary_lines(self.tags(), self.totals, now, duration_s)
        lines.append(self._event_line("test_stop", f"test stop after {duration_s:.1f} s", now))
        self.writer.add(lines)

    def close(self, **_: Any) -> None:
        """Final flush (bounded by ``--influx-flush-timeout``) and the one line saying what was lost."""
        if self._closed:
            return
        self._closed = True
        if self._ticker is not None:
            self._ticker.kill(block=True)
        PROBE.unwatch(self.lag)
        self.writer.add([self._process_line(_now_ms())])
        unsent = self.writer.close(self.settings.flush_timeout)
        stats = self.writer.stats
        dropped = stats.dropped + unsent
        message = (
            f"mqusers: influx: {stats.written} points written to {self.settings.url}, {dropped} dropped "
            f"({stats.overflowed} buffer full, {stats.rejected} rejected, {unsent} unsent at exit)"
        )
        if self.merger.late:
            message += f", {self.merger.late} worker intervals too late to merge"
        if dropped:
            logger.warning("%s; last error: %s", message, stats.last_error or "-")
        else:
            logger.info("%s", message)

    # ----------------------------------------------------------------------------- per interval

    def _tick_forever(self) -> None:
        last = 0
        while True:
            now = _now_ms()
            # A timer may fire a hair early: never close the same interval twice.
            boundary = max((now // self.interval_ms + 1) * self.interval_ms, last + self.interval_ms)
            gevent.sleep((boundary - now) / 1000.0)
            last = boundary
            try:
                lines = self._own_interval(boundary) if self.running and self.role != "master" else []
                if self.role != "worker" and self.running:
                    lines += self._run_lines(boundary - self.interval_ms)
                lines.append(self._process_line(boundary - self.interval_ms))
                self.writer.add(lines)
            except Exception:  # a bug here must cost one interval, not the listener or the test
                logger.exception("mqusers: influx: interval at %d lost", boundary)

    def _own_interval(self, end_ms: int) -> list[str]:
        """This process's points for the interval ending now; ships it (worker) or merges it (local)."""
        self.ctx.recorder.flush()  # every success recorded before the boundary belongs to this interval
        tallies, drained = drain(self.book, encode=self.role == "worker")
        start_ms, self.interval_start_ms = self.interval_start_ms, end_ms
        ts = start_ms // self.interval_ms * self.interval_ms
        duration_s = max(end_ms - start_ms, 1) / 1000.0
        figures = points.interval_fields(tallies)
        lines = points.ops_lines(schema.OPS, self.tags(worker=self.node), ts, duration_s, figures, self.seen_own, {})
        if self.role == "worker":
            if drained:
                self.outbox.append(ShippedInterval(ts_ms=ts, duration_s=duration_s, tallies=drained))
        elif self.role == "local":
            self.totals.add(tallies)
            extra = {"sources": 1}
            lines += points.ops_lines(schema.MERGED, self.tags(), ts, duration_s, figures, self.seen_merged, extra)
        return lines

    def _run_lines(self, ts: int, final: bool = False) -> list[str]:
        """Master / local: merged intervals now final, then run-wide running totals at ``ts``."""
        lines = []
        if self.role == "master":
            for merged in self.merger.ready(_now_ms(), everything=final):
                self.totals.add(merged.tallies)
                extra = {"sources": merged.sources}
                args = (
                    merged.ts_ms,
                    merged.duration_s,
                    points.interval_fields(merged.tallies),
                    self.seen_merged,
                    extra,
                )
                lines += points.ops_lines(schema.MERGED, self.tags(), *args)
        lines += points.destination_lines(self.tags(), self.totals, ts)
        lines.append(schema.line(schema.RUNS, self.tags(), self._run_fields(), ts))
        lines += self._audit_lines(ts)
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

    def _audit_lines(self, ts: int) -> list[str]:
        if self.audit is None:
            return []
        try:
            return points.audit_lines(self.tags(), self.audit(), ts)
        except Exception as error:  # someone else's code: log once per reason, never stop the listener
            if str(error) not in self._audit_errors:
                self._audit_errors.add(str(error))
                logger.warning("mqusers: influx: the audit source failed: %s", error)
            return []

    def _process_line(self, ts: int) -> str:
        runner = self.environment.runner
        lag_max, lag_mean = self.lag.take()
        fields: dict[str, schema.FieldValue] = {"loop_lag_max_ms": lag_max, "loop_lag_mean_ms": lag_mean}
        if runner is not None:
            if not isinstance(runner, MasterRunner):
                fields["users"] = runner.user_count
            fields["cpu_percent"] = float(runner.current_cpu_usage)
            fields["memory_mb"] = float(getattr(runner, "current_memory_usage", 0)) / 2**20
        fields.update(points_buffered=self.writer.buffered, points_dropped=self.writer.stats.dropped)
        return schema.line(schema.PROCESSES, self.tags(worker=self.node), fields, ts)

    def _event_line(self, kind: str, text: str, ts: int) -> str:
        return points.event_line(self.tags(), self.node, kind, text, ts)

    # ----------------------------------------------------------------------------- Locust events

    def receive_intervals(self, intervals: list[ShippedInterval], client_id: str) -> None:
        for i in intervals:
            self.merger.add(client_id, int(i["ts_ms"]), float(i["duration_s"]), i["tallies"])

    def _on_spawning_complete(self, user_count: int, **_: Any) -> None:
        if self.role != "worker":
            self.event("spawning_complete", f"spawning complete: {user_count} users")

    def _on_cpu_warning(self, cpu_usage: float, **_: Any) -> None:
        now = time.monotonic()
        if now - self._last_cpu_warning >= CPU_WARNING_EVERY_S or not self._last_cpu_warning:
            self._last_cpu_warning = now
            self.event("cpu_warning", f"CPU {cpu_usage:.0f}% on {self.node}: figures may be unreliable")


def listen(hook: Any, handler: Callable[..., Any]) -> None:
    # Locust's EventHook.add_listener is unannotated; this keeps strict typing everywhere else.
    hook.add_listener(handler)
