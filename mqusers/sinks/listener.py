"""One process's listener: interval points from its own Users, the master's merged view, to its outputs.

Each process keeps a second :class:`Book` on ``events.request`` and, every ``--influx-interval``
(aligned on multiples of it since the epoch, so all workers' intervals coincide), turns what it
drained into ``mqusers_ops`` points tagged with its own worker id. Workers also ship the encoded
interval tallies to the master through mqusers' shipping (:class:`mqusers.run.context.Shipping`, with the
last partial interval in the final shipment); the master merges them per interval into
``mqusers_merged`` and writes run-wide points (users, workers, backlog, audit totals, the
whole-run summary once every worker's intervals are in), the test's events and each broker-metrics
sample it is handed (:meth:`InfluxSink.broker_sample`, a listener on ``ctx.broker_listeners``). A
local runner does both. What each interval's points are is :mod:`mqusers.sinks.lines`'; this module
decides when they are written, and hands each to its outputs: InfluxDB's bounded :class:`LineWriter`
(``--influx-url``: the Users never wait for the store) and the Prometheus endpoint (``--prometheus-port``,
:mod:`mqusers.sinks.prometheus`), either or both, so both show the same points.
"""

from __future__ import annotations

from locust.env import Environment
from locust.runners import WORKER_REPORT_INTERVAL, MasterRunner, WorkerRunner

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import gevent

from mqusers.brokers.model import BrokerSample
from mqusers.measure.recorder import Recorder
from mqusers.run.context import Shipping
from mqusers.run.looplag import PROBE
from mqusers.sinks import points, schema
from mqusers.sinks.lines import AuditSource, IntervalLines, ShippedInterval
from mqusers.sinks.prometheus import Endpoint
from mqusers.sinks.sinkoptions import InfluxSettings, http_sender
from mqusers.sinks.writer import LineWriter

logger = logging.getLogger(__name__)

SHIPPING_KEY = "mqusers_influx"
CPU_WARNING_EVERY_S = 60.0


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
    """One process's listener; ``settings`` None: no InfluxDB, ``endpoint`` None: no Prometheus.

    ``send`` replaces the HTTP write (tests, benchmarks).
    """

    def __init__(
        self,
        environment: Environment,
        ctx: RunInfo,
        settings: InfluxSettings | None,
        *,
        audit: AuditSource | None = None,
        send: Callable[[str], None] | None = None,
        endpoint: Endpoint | None = None,
    ):
        self.environment, self.ctx, self.settings, self.audit = environment, ctx, settings, audit
        self.endpoint = endpoint
        interval = settings.interval if settings is not None else InfluxSettings.interval
        runner = environment.runner
        role = (
            "worker" if isinstance(runner, WorkerRunner) else "master" if isinstance(runner, MasterRunner) else "local"
        )
        node = runner.client_id if isinstance(runner, WorkerRunner) else role
        self.interval_ms = max(1, round(interval * 1000))
        grace_ms = int(WORKER_REPORT_INTERVAL * 1000) + 2 * self.interval_ms + 1000
        scenario = Path(environment.locustfile or "mqusers").stem
        self.lines = IntervalLines(
            environment,
            lambda: ctx.run_id,
            lambda: ctx.recorder,
            role,
            node,
            scenario,
            self.interval_ms,
            grace_ms,
            audit,
        )
        self.writer = (
            LineWriter(
                send or http_sender(settings),
                capacity=settings.buffer,
                batch=settings.batch,
                flush_every=settings.interval,
                copy_to=settings.line_file,
            )
            if settings is not None
            else None
        )
        self.running = False
        self._last_cpu_warning = 0.0
        self._broker_errors: set[str] = set()
        self._ticker: Any = None
        self._closed = False

    @property
    def role(self) -> str:
        """``local``, ``worker`` (its points shipped to the master) or ``master`` (the merged view)."""
        return self.lines.role

    @role.setter
    def role(self, role: str) -> None:
        self.lines.role = role

    @property
    def node(self) -> str:
        return self.lines.node

    # ----------------------------------------------------------------------------- wiring

    def start(self) -> None:
        events = self.environment.events
        listen(events.request, self.lines.book.on_request)
        self.ctx.recorder.add_consumer(self.lines.book.add_batches)  # the per-message successes, in bulk
        listen(events.test_start, self.on_test_start)
        # Intervals travel with mqusers' own shipping; the last points come once everything is in.
        self.ctx.shipping.register(SHIPPING_KEY, self._ship, self.lines.receive_intervals)
        self.ctx.shipping.on_complete(self.finish)
        listen(events.spawning_complete, self._on_spawning_complete)
        listen(events.cpu_warning, self._on_cpu_warning)
        listen(events.quitting, self.close)
        self.ctx.annotations.append(self.annotate)
        if self.role != "worker":  # the master (or local runner) samples the broker
            self.ctx.broker_listeners.append(self.broker_sample)
        if self.writer is not None:
            self.writer.start()
        PROBE.watch(self.lines.lag)
        self._ticker = gevent.spawn(self._tick_forever)

    def event(self, kind: str, text: str) -> None:
        """An annotation point now; also for others' phases (``kind="phase"``)."""
        self.emit([self.lines.event_point(kind, text, _now_ms())])

    def annotate(self, kind: str, text: str, ts_ns: int) -> None:
        """An annotation point at ``ts_ns`` (a fault's start, an outage's first second without service)."""
        self.emit([self.lines.event_point(kind, text, ts_ns // 1_000_000)])

    def broker_sample(self, sample: BrokerSample) -> None:
        """A broker-metrics sample's points, at the sample's time (master or local runner; never raises)."""
        if self.role == "worker" or self._closed:
            return
        try:
            found = points.broker_points(self.lines.tags(), sample, sample["ts_ns"] // 1_000_000)
        except Exception as error:  # a malformed sample costs its points, never the sampler
            if str(error) not in self._broker_errors:
                self._broker_errors.add(str(error))
                logger.warning("mqusers: influx: a broker sample was not written: %r", error)
            return
        self.emit(found)

    def emit(self, found: list[schema.Point]) -> None:
        """Points to every output: encoded for InfluxDB's writer, read by the Prometheus endpoint."""
        if self.writer is not None:
            self.writer.add([p.line() for p in found])
        if self.endpoint is not None:
            self.endpoint.exposition.add(found)

    # ----------------------------------------------------------------------------- test lifecycle

    def on_test_start(self, **_: Any) -> None:
        self.lines.start_test(_now_ms())
        if self.endpoint is not None:
            self.endpoint.exposition.clear()
        self.running = True
        if self.role != "worker":
            # Later: mqusers' own test_start listener may set this test's run id after this one ran.
            gevent.spawn(lambda: self.event("test_start", f"test start: {self.lines.scenario}, run {self.ctx.run_id}"))

    def finish(self) -> None:
        """The test is over and (master) every worker's intervals are in: the last points."""
        if not self.running:
            return
        try:
            self._final_points()
        except Exception:  # never turn a listener bug into a failed test (Locust's exit code 2)
            logger.exception("mqusers: influx: the final interval is lost")
        self.running = False
        if self.writer is not None:
            self.writer.wake()

    def _ship(self, final: bool) -> list[ShippedInterval]:
        """A worker's completed intervals for the master; at stop, the last partial one too."""
        if final and self.running:
            self.emit(self.lines.own_interval(_now_ms()))
        return self.lines.take_outbox()

    def _final_points(self) -> None:
        if self.role == "worker":
            return  # its last interval went with the final shipment
        self.emit(self.lines.final_points(_now_ms()))

    def close(self, **_: Any) -> None:
        """The outputs' ends, side by side: InfluxDB's final flush (bounded by ``--influx-flush-timeout``) and
        the endpoint's last scrape (bounded by ``--prometheus-linger``); one line each says what was lost."""
        if self._closed:
            return
        self._closed = True
        if self._ticker is not None:
            self._ticker.kill(block=True)
        PROBE.unwatch(self.lines.lag)
        self.emit([self._process_point(_now_ms())])
        lingering = gevent.spawn(self.endpoint.close) if self.endpoint is not None else None
        late = f", {self.lines.merger.late} worker intervals too late to merge" if self.lines.merger.late else ""
        if self.writer is not None and self.settings is not None:
            unsent = self.writer.close(self.settings.flush_timeout)
            stats = self.writer.stats
            dropped = stats.dropped + unsent
            message = (
                f"mqusers: influx: {stats.written} points written to {self.settings.url}, {dropped} dropped "
                f"({stats.overflowed} buffer full, {stats.rejected} rejected, {unsent} unsent at exit){late}"
            )
            if dropped:
                logger.warning("%s; last error: %s", message, stats.last_error or "-")
            else:
                logger.info("%s", message)
        if lingering is not None and self.endpoint is not None:
            where = f"mqusers: prometheus: {self.endpoint.url}: {self.endpoint.exposition.scrapes} scrapes{late}"
            if lingering.get():
                logger.info("%s, the last one read the final figures", where)
            elif not self.endpoint.settings.linger:
                logger.info("%s (--prometheus-linger 0: the final figures were not waited for)", where)
            else:
                linger = self.endpoint.settings.linger
                logger.warning("%s; no scrape read the final figures within --prometheus-linger (%g s)", where, linger)

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
                found = self.lines.own_interval(boundary) if self.running and self.role != "master" else []
                if self.role != "worker" and self.running:
                    found += self.lines.run_points(boundary - self.interval_ms, _now_ms())
                found.append(self._process_point(boundary - self.interval_ms))
                self.emit(found)
            except Exception:  # a bug here must cost one interval, not the listener or the test
                logger.exception("mqusers: influx: interval at %d lost", boundary)

    def _process_point(self, ts: int) -> schema.Point:
        if self.writer is None:
            return self.lines.process_point(ts, 0, 0)
        return self.lines.process_point(ts, self.writer.buffered, self.writer.stats.dropped)

    # ----------------------------------------------------------------------------- Locust events

    def receive_intervals(self, intervals: list[ShippedInterval], client_id: str) -> None:
        self.lines.receive_intervals(intervals, client_id)

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
