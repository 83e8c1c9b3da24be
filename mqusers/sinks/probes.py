"""The gevent loop-lag probe: how late a greenlet wakes up, the generator's own health signal.

A generator whose loop is busy stamps receive times late and paces sends late; CPU percent says
that only every 10 s and only on average. This greenlet sleeps a fixed ``period`` and records by
how much each wake-up overshot it.
"""

from __future__ import annotations

import time

import gevent

PERIOD_S = 0.1


class LoopLag:
    def __init__(self, period: float = PERIOD_S):
        self.period = period
        self._max = 0.0
        self._sum = 0.0
        self._samples = 0
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=True)
            self._greenlet = None

    def _run(self) -> None:
        while True:
            began = time.perf_counter()
            gevent.sleep(self.period)
            self.record(max(0.0, time.perf_counter() - began - self.period))

    def record(self, lag_s: float) -> None:
        self._max = max(self._max, lag_s)
        self._sum += lag_s
        self._samples += 1

    def take(self) -> tuple[float, float]:
        """(max, mean) lag in milliseconds since the last call; then start afresh."""
        result = (self._max * 1000.0, self._sum / self._samples * 1000.0 if self._samples else 0.0)
        self._max, self._sum, self._samples = 0.0, 0.0, 0
        return result
