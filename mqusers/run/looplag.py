"""The process's one gevent loop-lag probe: how late each wake-up was, handed to every watcher.

The probe sleeps ``LAG_PERIOD_S`` and measures by how much each wake-up overshot. A late loop
stamps receive times late and paces sends late, so latency measured meanwhile is the generator's
own. One greenlet per process (:data:`PROBE`) feeds every watcher: the health monitor
(:mod:`mqusers.run.health`) and the InfluxDB listener (:class:`IntervalLag`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent

LAG_PERIOD_S = 0.05

LagWatcher = Callable[[float], None]


class LoopLag:
    """The process's one loop-lag probe: runs while anyone watches, hands each sample (ms) to all."""

    def __init__(
        self,
        period: float = LAG_PERIOD_S,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = gevent.sleep,
    ):
        self.period, self._clock, self._sleep = period, clock, sleep
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
            began = self._clock()
            self._sleep(self.period)
            lag_ms = max(0.0, self._clock() - began - self.period) * 1000.0
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
