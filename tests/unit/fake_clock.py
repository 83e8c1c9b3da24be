"""A monotonic clock for unit tests: it moves only when the code under test sleeps (or a test says so)."""

from __future__ import annotations

import gevent


class Clock:
    """Seconds from 1000.0; ``sleep`` adds to them and still yields to other greenlets."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        gevent.sleep(0)
