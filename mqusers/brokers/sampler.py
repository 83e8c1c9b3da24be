"""Reads the broker's figures every interval while a test runs, without ever holding up the load.

The master (or the local runner) runs one :class:`BrokerSampler` per test in a greenlet of its own:
every ``interval`` it asks its source for the broker-wide figures and each destination of the run,
and the JVM probe for the broker's JVM, each call bounded by ``timeout``. Sources block only their
greenlet (sockets and subprocesses cooperate with gevent); a source that fails is counted and its
first error logged once, and the test runs on. Each sample goes to the listeners (the InfluxDB
sink); the first and the last of each destination, kept here, give the report its differences.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import gevent

from mqusers.brokers.model import (
    COUNTERS,
    BrokerFigures,
    BrokerSample,
    DestinationFigures,
    JvmFigures,
    MetricsError,
    Source,
)

logger = logging.getLogger(__name__)
#: Readings kept for the report's charts, as :func:`chart_point`\ s; beyond it every other one is
#: dropped (the interval doubles), so a long test costs ~100 KB.
MAX_KEPT = 360
#: At the end, counters that lag their clients (ActiveMQ counts sends without receipts
#: asynchronously) are read again, the source's ``settle_s`` apart, until two reads agree, at most
#: this often.
SETTLE_READS = 5
#: ...and for at most this long: the end of a run waits no longer for the broker's counters.
SETTLE_MAX_S = 3.0


class JvmSource(Protocol):
    def sample(self) -> JvmFigures: ...


class BrokerSampler:
    """One test's broker figures; ``destinations()`` names the run's destinations when called."""

    def __init__(
        self,
        source: Source | None,
        jvm: JvmSource | None,
        destinations: Callable[[], Iterable[str]],
        *,
        interval: float,
        timeout: float,
        listeners: Iterable[Callable[[BrokerSample], None]] = (),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = gevent.sleep,
    ) -> None:
        """``clock`` (monotonic s) and ``sleep`` are injectable, for tests on a fake clock."""
        self.source, self.jvm, self._destinations = source, jvm, destinations
        self._clock, self._sleep = clock, sleep
        self.interval, self.timeout = interval, timeout
        self._listeners = list(listeners)
        #: Per destination, its figures when first read (empty: the broker did not know it then), and the last.
        self.first: dict[str, DestinationFigures] = {}
        self.last: dict[str, DestinationFigures] = {}
        self.broker: BrokerFigures = {}
        self.jvm_first: JvmFigures | None = None
        self.jvm_last: JvmFigures | None = None
        #: Kept samples for charts (bounded) and how many were taken; failed calls; the first error of each part.
        self.kept: list[dict[str, Any]] = []
        #: Resource alarms seen in any reading (RabbitMQ's memory and disk alarms block publishers).
        self.alarms: set[str] = set()
        #: Destinations first read before the load started: their counter differences are this test's.
        self.baseline: set[str] = set()
        #: Broker processes that answered, in order (more than one: it restarted during the test).
        self.instances: list[str] = []
        #: Destinations whose cumulative counters went down between readings (a restart, or the
        #: destination deleted and made again): their differences are not this test's.
        self.counters_reset: set[str] = set()
        self.samples = self.failures = 0
        #: The source's last broker-wide reading failed.
        self.failing = False
        self.errors: dict[str, str] = {}
        self._stride = 1
        self._greenlet: Any = None
        #: When the last reading that answered was taken, and the last the broker itself answered (monotonic s).
        self._read_at = self._broker_read_at = 0.0

    @property
    def stale_s(self) -> float | None:
        """How old the figures are when the last reading failed (None: it answered, or none ever did)."""
        return self._clock() - self._broker_read_at if self.failing and self._broker_read_at else None

    def start(self, baseline_s: float) -> None:
        """The first reading now, before any message (the counters' baseline), then every interval.

        The first reading may hold the test's start up to ``baseline_s``; destinations it did not
        cover (a slow broker, or found later) have no baseline: their counters are not this test's.
        """
        with gevent.Timeout(baseline_s, False):
            self.sample()
        self.baseline = set(self.first)
        self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        while True:
            self._sleep(self.interval)
            self.sample()

    def stop(self) -> None:
        """The test ended: the last figures, once the broker's counters have settled; then close."""
        if self._greenlet is not None:
            self._greenlet.kill(block=True, timeout=self.timeout + 1)
            self._greenlet = None
        # Counters still moving since the last reading (ActiveMQ counts sends without receipts
        # asynchronously): read again until two readings agree. A source failing at its last
        # reading (a frozen broker) is not asked again: the run's end stays within its bound.
        # Agreeing readings count only that far apart: the broker may not have refreshed in between.
        settle = self.source.settle_s if self.source is not None else 0.0
        previous, since = _counts(self.last), self._read_at
        deadline = self._clock() + SETTLE_MAX_S
        for _ in range(0 if self.failing else SETTLE_READS):
            sample = self.sample()
            if sample is None or self._clock() >= deadline:
                break
            if _counts(sample["destinations"]) != previous:
                previous, since = _counts(sample["destinations"]), self._read_at
            elif self._read_at - since >= settle:
                break
            self._sleep(min(settle, max(0.0, deadline - self._clock())))
        if self.source is not None:
            self._guard("close", self.source.close)

    def _guard(self, part: str, call: Callable[[], Any]) -> Any:
        """``call()`` within the timeout; None (counted, the first error per part logged) on failure."""
        try:
            with gevent.Timeout(self.timeout * 2, MetricsError(f"no answer within {self.timeout * 2:g}s")):
                return call()
        except Exception as error:  # a source's bug must not end the sampling, nor the report at stop
            self.failures += 1
            if part not in self.errors:
                self.errors[part] = str(error) if isinstance(error, MetricsError) else repr(error)
                logger.warning("mqusers: broker metrics: %s (the test goes on without them)", self.errors[part])
            return None

    def sample(self) -> BrokerSample | None:
        """Read everything once; None when nothing answered."""
        source, jvm_figures = self.source, None
        destinations: dict[str, DestinationFigures] = {}
        broker: BrokerFigures | None = None
        if source is not None:
            broker = self._guard("broker", source.broker)
            self.failing = broker is None
            if broker is not None:
                self._broker_read_at = self._clock()
                for name in dict.fromkeys(self._destinations()):
                    figures = self._guard(name, functools.partial(source.destination, name))
                    if figures is not None:
                        destinations[name] = figures
        if self.jvm is not None:
            jvm_figures = self._guard("jvm", self.jvm.sample)
        if broker is None and jvm_figures is None:
            return None
        self._read_at = self._clock()
        sample = BrokerSample(ts_ns=time.time_ns(), source=source.name if source is not None else "jvm",
                              broker=broker or {}, destinations=destinations, jvm=jvm_figures)  # fmt: skip
        self._take(sample)
        return sample

    def _take(self, sample: BrokerSample) -> None:
        self.samples += 1
        if sample["broker"]:
            self.broker = sample["broker"]
            self.alarms.update(sample["broker"].get("alarms", []))
            instance = sample["broker"].get("instance")
            if instance and instance not in self.instances:
                self.instances.append(instance)
        for name, figures in sample["destinations"].items():
            self.first.setdefault(name, figures)
            now: Mapping[str, Any] = figures
            before: Mapping[str, Any] = self.last.get(name, {})
            if any(k in now and k in before and now[k] < before[k] for k in COUNTERS):
                self.counters_reset.add(name)
            self.last[name] = figures
        if sample["jvm"] is not None:
            self.jvm_first = self.jvm_first or sample["jvm"]
            self.jvm_last = sample["jvm"]
        if self.samples % self._stride == 0:
            self.kept.append(chart_point(sample))
            if len(self.kept) > MAX_KEPT:
                self.kept, self._stride = self.kept[::2], self._stride * 2
        for listener in self._listeners:
            listener(sample)


def _counts(destinations: dict[str, DestinationFigures]) -> dict[str, tuple[int | None, ...]]:
    """What must have settled before the last reading counts: counters and depth, not consumers leaving."""
    return {name: (f.get("enqueued"), f.get("dequeued"), f.get("depth")) for name, f in destinations.items()}


def chart_point(sample: BrokerSample) -> dict[str, Any]:
    """What the HTML report charts of a reading: depth per destination, memory and store %, JVM heap."""
    jvm, broker = sample["jvm"] or {}, sample["broker"]
    return {"t": sample["ts_ns"] / 1e9,
            "depth": {d: f["depth"] for d, f in sample["destinations"].items() if "depth" in f},
            "memory_percent": broker.get("memory_percent"), "store_percent": broker.get("store_percent"),
            "heap_used_mb": jvm.get("heap_used_mb"), "heap_committed_mb": jvm.get("heap_committed_mb")}  # fmt: skip
