"""A fake clock, CPU and loop-lag probe for the health monitor: seconds planted, no sleeping.

``FakeHealth`` is a :class:`~mqusers.run.health.Health` started on fakes; :meth:`FakeHealth.second`
passes one second on the clock with the CPU figures given and feeds the probe's sample that ends it,
exactly as the real probe's greenlet would call the monitor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mqusers.run.blocked import Sender
from mqusers.run.cpu import CpuInterval
from mqusers.run.health import Clock, Health
from mqusers.run.looplag import LagWatcher

#: A quiet second: little CPU, an idle machine.
QUIET = CpuInterval(10.0, 0.0, 20.0, 0.0)
#: The fake wall clock's start: an epoch second, so stamps look real.
WALL_START = 1_700_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return WALL_START + self.now

    def clock(self) -> Clock:
        return Clock(self.monotonic, self.wall)


class PlantedCpu:
    """Each sample is the next interval the test planted."""

    def __init__(self) -> None:
        self.planted: list[CpuInterval] = []
        self.started = 0

    def start(self) -> None:
        self.started += 1

    def sample(self) -> CpuInterval:
        return self.planted.pop(0)


class FakeProbe:
    def __init__(self) -> None:
        self.watchers: list[LagWatcher] = []

    def watch(self, watcher: LagWatcher) -> None:
        self.watchers.append(watcher)

    def unwatch(self, watcher: LagWatcher) -> None:
        if watcher in self.watchers:
            self.watchers.remove(watcher)

    def feed(self, lag_ms: float) -> None:
        for watcher in list(self.watchers):
            watcher(lag_ms)


class FakeHealth:
    """A monitor on a fake clock, CPU and probe, started."""

    def __init__(
        self,
        producers: Callable[[], Iterable[tuple[str, Sender]]] = lambda: (),
        fire: Callable[..., Any] | None = None,
        on_second: Callable[[str, int, float, float], None] | None = None,
    ) -> None:
        self.time, self.cpu, self.probe = FakeClock(), PlantedCpu(), FakeProbe()
        self.health = Health(
            "local", producers, fire, on_second, clock=self.time.clock(), cpu=self.cpu, probe=self.probe
        )
        self.health.start()

    def second(self, interval: CpuInterval = QUIET, lag_ms: float = 1.0) -> None:
        """One second passes: its last loop-lag sample is ``lag_ms``, its CPU figures ``interval``."""
        self.time.now += 1.0
        self.cpu.planted.append(interval)
        self.probe.feed(lag_ms)


def monitor(*seconds: tuple[CpuInterval, float]) -> Health:
    """A monitor that lived through the seconds given, each ``(CPU figures, worst loop lag ms)``."""
    fake = FakeHealth()
    for interval, lag_ms in seconds:
        fake.second(interval, lag_ms)
    return fake.health
