"""How busy this machine's cores were over a span: /proc/stat read once a second beside a find-max step.

A failed step on a machine whose cores were all busy says nothing about the broker alone: whichever
process took them (a broker on the same machine, the generator, other work), the machine was the
limit. Linux only; elsewhere (no /proc/stat) the figure is NaN and nothing is judged on it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from types import TracebackType

from mqusers.run.cpu import parse_stat

Reading = tuple[float, int, int]  # (epoch s, busy jiffies, all jiffies)


def read_jiffies(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, all) jiffies summed over every core since boot; None without a /proc/stat.

    Steal counts as busy here: a core another guest ran on was not free for this machine's work."""
    try:
        with open(path, encoding="ascii") as stat:
            times = parse_stat(stat.read())
    except (OSError, ValueError, IndexError):
        return None
    return times.busy + times.steal, times.total


def busy_percent(readings: list[Reading], start: float, end: float) -> float:
    """Busy share of all cores between the first and last readings within [start, end] (NaN: < 2)."""
    inside = [r for r in readings if start <= r[0] <= end]
    if len(inside) < 2 or inside[-1][2] == inside[0][2]:
        return math.nan
    return 100.0 * (inside[-1][1] - inside[0][1]) / (inside[-1][2] - inside[0][2])


class Sampler:
    """``with Sampler() as load:`` reads /proc/stat every ``period`` s until the block ends."""

    def __init__(self, period: float = 1.0, read: Callable[[], tuple[int, int] | None] = read_jiffies) -> None:
        self.period, self._read = period, read
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mqusers-machine-load", daemon=True)

    def _run(self) -> None:
        while True:
            reading = self._read()
            if reading is None:
                return
            self.readings.append((time.time(), *reading))
            if self._stop.wait(self.period):
                return

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def busy_percent(self, start: float, end: float) -> float:
        return busy_percent(list(self.readings), start, end)
