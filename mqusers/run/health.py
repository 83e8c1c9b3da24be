"""The generator's own health: is this process, rather than the broker, the limit?

One :class:`LoopLag` greenlet per process feeds every watcher (this monitor, the InfluxDB
listener); while a test runs :class:`Health` judges each second from:

- **gevent loop lag**: the probe sleeps ``LAG_PERIOD_S`` and records by how much each wake-up
  overshot. A late loop stamps receive times late and paces sends late, so latency measured
  meanwhile is the generator's own.
- **CPU** (:class:`~mqusers.measure.cpu.CpuSampler`): the process's CPU time over each second, in
  percent of one core (gevent runs on one); the loop's wait for a core, the machine's busy and steal
  time: why a loop that did not use its core was late.
- **Blocked sends**: a producer whose send is in progress and has not moved for ``BLOCKED_S`` is
  blocked by the broker (producer flow control, a full store, a stalled broker): the broker's
  doing, reported apart from the generator's verdict.

Each second is ``ok``, ``saturated`` or ``contended`` and the process's verdict follows
(:mod:`mqusers.run.verdicts`, which also says the run's). The thresholds come from runs on a 2-core
machine (README, "The generator's verdict"): a paced light run stays below 25 % CPU and 3 ms lag;
an unpaced run pins one core at 97-100 % with lag of 20-200 ms.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import gevent
from hdrh.histogram import HdrHistogram

from mqusers.measure.cpu import CpuInterval, CpuSampler
from mqusers.measure.names import BLOCKED, REQUEST_TYPE, event_name
from mqusers.run import verdicts
from mqusers.run.verdicts import BlockedReport, HealthReport

LAG_PERIOD_S = 0.05
BLOCKED_S = 1.0

logger = logging.getLogger(__name__)
BLOCKED_MESSAGE = "send blocked by the broker for over 1 s (producer flow control, a full store or a stalled broker)"


class BlockedError(Exception):
    """A producer's send did not move: the broker stopped reading."""


class Sender(Protocol):
    def send_progress(self) -> tuple[bool, int]: ...


@dataclass
class Blocked:
    """Blocked-send episodes of one destination's producers."""

    episodes: int = 0
    longest_s: float = 0.0
    now: int = 0  # producers blocked at the last sample
    until_s: float = 0.0

    def as_dict(self) -> BlockedReport:
        return {"episodes": self.episodes, "longest_s": round(self.longest_s, 3), "blocked_now": self.now,
                "until_s": self.until_s}  # fmt: skip


LagWatcher = Callable[[float], None]


class LoopLag:
    """The process's one loop-lag probe: runs while anyone watches, hands each sample (ms) to all."""

    def __init__(self, period: float = LAG_PERIOD_S):
        self.period = period
        self._watchers: list[LagWatcher] = []
        self._greenlet: Any = None

    def watch(self, watcher: LagWatcher) -> None:
        self._watchers.append(watcher)
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def unwatch(self, watcher: LagWatcher) -> None:
        if watcher in self._watchers:
            self._watchers.remove(watcher)
        if not self._watchers and self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _run(self) -> None:
        while True:
            began = time.perf_counter()
            gevent.sleep(self.period)
            lag_ms = max(0.0, time.perf_counter() - began - self.period) * 1000.0
            for watcher in list(self._watchers):
                watcher(lag_ms)


PROBE = LoopLag()


class IntervalLag:
    """Max and mean loop lag per interval, for the live stack: ``take()`` returns them and starts afresh."""

    def __init__(self) -> None:
        self._max = self._sum = 0.0
        self._samples = 0

    def __call__(self, lag_ms: float) -> None:
        self._max = max(self._max, lag_ms)
        self._sum += lag_ms
        self._samples += 1

    def take(self) -> tuple[float, float]:
        result = (self._max, self._sum / self._samples if self._samples else 0.0)
        self._max, self._sum, self._samples = 0.0, 0.0, 0
        return result


@dataclass
class _Watch:
    sends: int
    since: float
    counted: bool = False


def _max(current: float | None, value: float | None) -> float | None:
    return current if value is None else value if current is None else max(current, value)


@dataclass
class Health:
    """One process's monitor; :meth:`report` is JSON-able and merges on the master by process."""

    node: str
    producers: Callable[[], Iterable[tuple[str, Sender]]] = lambda: ()
    #: ``events.request.fire``: each blocked episode is also a failure in Locust's statistics.
    fire: Callable[..., Any] | None = None
    #: ``(node, epoch second, CPU %, worst loop lag ms)`` once a second: the report's series over time.
    on_second: Callable[[str, int, float, float], None] | None = None
    cpu_percent_max: float = 0.0
    seconds: int = 0
    saturated_s: int = 0
    contended_s: int = 0
    #: Maxima over the late seconds: own CPU, machine busy, steal, the loop's wait for a core.
    late: dict[str, float | None] = field(default_factory=dict)
    lag: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 3_600_000_000, 2))
    blocked: dict[str, Blocked] = field(default_factory=dict)
    cpu: CpuSampler = field(default_factory=CpuSampler)
    _watch: dict[int, _Watch] = field(default_factory=dict)
    _warned: bool = False
    _wall: float = 0.0
    _second_lag: float = 0.0

    def start(self) -> None:
        self.stop()
        self.cpu_percent_max, self.seconds, self.saturated_s, self.contended_s = 0.0, 0, 0, 0
        self._warned, self.late = False, {}
        self.lag.reset()
        self.blocked, self._watch = {}, {}
        self._wall, self._second_lag = time.perf_counter(), 0.0
        self.cpu.start()
        PROBE.watch(self._on_lag)

    def stop(self) -> None:
        PROBE.unwatch(self._on_lag)

    def _on_lag(self, lag_ms: float) -> None:
        self.lag.record_value(max(1, int(lag_ms * 1000.0)))
        self._second_lag = max(self._second_lag, lag_ms)
        now = time.perf_counter()
        if now - self._wall >= 1.0:
            interval = self.cpu.sample()
            self._second(interval, self._second_lag)
            if self.on_second is not None:
                self.on_second(self.node, int(time.time()), interval.cpu_percent, self._second_lag)
            self._sample_blocked(now)
            self._wall, self._second_lag = now, 0.0

    def _second(self, interval: CpuInterval, lag_ms: float) -> None:
        self.seconds += 1
        self.cpu_percent_max = max(self.cpu_percent_max, interval.cpu_percent)
        kind = verdicts.second(interval.cpu_percent, lag_ms, interval.wait_ms)
        if kind == "ok":
            return
        if kind == "saturated":
            self.saturated_s += 1
        else:
            self.contended_s += 1
        for key, value in (("cpu", interval.cpu_percent), ("machine", interval.machine_percent),
                           ("steal", interval.steal_percent), ("wait", interval.wait_ms)):  # fmt: skip
            self.late[key] = _max(self.late.get(key), value)
        verdict = self.verdict()
        if verdict != "ok" and not self._warned:
            self._warned = True
            judged = {"verdict": verdict, "processes": {self.node: self.report()}}
            logger.warning("mqusers: %s", verdicts.sentence(judged))

    def _sample_blocked(self, now: float) -> None:
        live: set[int] = set()
        for blocked in self.blocked.values():
            blocked.now = 0
        for destination, sender in self.producers():
            in_send, sends = sender.send_progress()
            key = id(sender)
            watch = self._watch.get(key)
            if not in_send:
                continue
            if watch is not None and watch.counted and sends == watch.sends + 1:
                watch.sends = sends  # one write more, blocked again (its DISCONNECT, a trickle): the same episode
            elif watch is None or watch.sends != sends:
                self._watch[key] = _Watch(sends, now)
                live.add(key)
                continue
            live.add(key)
            stalled = now - watch.since
            if stalled < BLOCKED_S:
                continue
            entry = self.blocked.setdefault(destination, Blocked())
            entry.now += 1
            entry.longest_s = max(entry.longest_s, stalled)
            entry.until_s = time.time()
            if not watch.counted:
                watch.counted = True
                entry.episodes += 1
                if self.fire is not None:
                    self.fire(request_type=REQUEST_TYPE, name=event_name(BLOCKED, destination),
                              response_time=stalled * 1000.0, response_length=0,
                              exception=BlockedError(BLOCKED_MESSAGE), context={})  # fmt: skip
                logger.warning(
                    "mqusers: a producer to %s is blocked by the broker (flow control, a full store or a stalled "
                    "broker): its send has not moved for %.0f s", destination, stalled,
                )  # fmt: skip
        self._watch = {k: w for k, w in self._watch.items() if k in live}

    def verdict(self) -> str:
        return verdicts.process_verdict(self.saturated_s, self.contended_s)

    def report(self) -> HealthReport:
        lag, late = self.lag, self.late

        def rounded(key: str) -> float | None:
            value = late.get(key)
            return None if value is None else round(value, 1)

        return {
            "node": self.node,
            "cpu_percent_max": round(self.cpu_percent_max, 1),
            "loop_lag_ms_max": lag.get_max_value() / 1000.0 if lag.get_total_count() else 0.0,
            "loop_lag_ms_p99": lag.get_value_at_percentile(99) / 1000.0 if lag.get_total_count() else 0.0,
            "seconds": self.seconds,
            "saturated_s": self.saturated_s,
            "contended_s": self.contended_s,
            "late_cpu_percent_max": rounded("cpu"),
            "machine_cpu_percent_max": rounded("machine"),
            "steal_percent_max": rounded("steal"),
            "cpu_wait_ms_max": rounded("wait"),
            "verdict": self.verdict(),
            "blocked": {d: b.as_dict() for d, b in self.blocked.items()},
        }
