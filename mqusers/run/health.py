"""The generator's own health: is this process, rather than the broker, the limit? Judged each second.

While a test runs :class:`Health` hears every loop-lag sample (:mod:`mqusers.run.looplag`) and,
once a second by its clock, judges that second from:

- **gevent loop lag**: the worst wake-up overshoot of the second. A late loop stamps receive times
  late and paces sends late, so latency measured meanwhile is the generator's own.
- **CPU** (:class:`~mqusers.run.cpu.CpuSampler`): the process's CPU time over the second, in
  percent of one core (gevent runs on one); the loop's wait for a core, the machine's busy and steal
  time: why a loop that did not use its core was late.

It also samples blocked sends then (:mod:`mqusers.run.blocked`: the broker's doing, reported apart).
Each second is ``ok``, ``saturated`` or ``contended`` and the process's verdict follows
(:mod:`mqusers.run.verdicts`, which also says the run's). The thresholds come from runs on a 2-core
machine (docs/results.md, "The generator's verdict"): a paced light run stays below 25 % CPU and 3 ms lag;
an unpaced run pins one core at 97-100 % with lag of 20-200 ms.

The public interface is :meth:`Health.start`, :meth:`Health.on_lag` (what the probe calls),
:meth:`Health.stop` and :meth:`Health.report`; the clock, the CPU source and the probe are
injected, so a test drives seconds with a fake clock instead of sleeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import value_at
from mqusers.run import verdicts
from mqusers.run.blocked import BlockedSends, Sender
from mqusers.run.cpu import CpuInterval, CpuSampler, peak_rss_mb
from mqusers.run.looplag import PROBE, LagWatcher
from mqusers.run.openfiles import open_files
from mqusers.run.verdicts import HealthReport

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Clock:
    """Where the monitor reads the time: a monotonic clock for its seconds, the wall clock for stamps."""

    monotonic: Callable[[], float] = time.perf_counter
    wall: Callable[[], float] = time.time


class CpuSource(Protocol):
    """Figures since the previous :meth:`sample` (or :meth:`start`): :class:`CpuSampler`."""

    def start(self) -> None: ...

    def sample(self) -> CpuInterval: ...


class LagProbe(Protocol):
    """Hands each loop-lag sample (ms) to its watchers: :data:`mqusers.run.looplag.PROBE`."""

    def watch(self, watcher: LagWatcher) -> None: ...

    def unwatch(self, watcher: LagWatcher) -> None: ...


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
    clock: Clock = field(default_factory=Clock)
    cpu: CpuSource = field(default_factory=CpuSampler)
    probe: LagProbe = PROBE
    #: Reads the process's open files: at the start and once the Users are gone (a leak shows as more).
    files: Callable[[], int | None] = open_files
    files_start: int | None = None
    files_end: int | None = None
    cpu_percent_max: float = 0.0
    cpu_percent_sum: float = 0.0
    seconds: int = 0
    saturated_s: int = 0
    contended_s: int = 0
    #: Maxima over the late seconds: own CPU, machine busy, steal, the loop's wait for a core.
    late: dict[str, float | None] = field(default_factory=dict)
    lag: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 3_600_000_000, 2))
    blocked: BlockedSends = field(init=False)
    _warned: bool = False
    _wall: float = 0.0
    _second_lag: float = 0.0

    def __post_init__(self) -> None:
        self.blocked = BlockedSends(self.producers, self.fire)

    def start(self) -> None:
        """A test starts: every figure afresh, the probe watched."""
        self.stop()
        self.cpu_percent_max, self.cpu_percent_sum, self.seconds, self.saturated_s, self.contended_s = 0.0, 0.0, 0, 0, 0
        self._warned, self.late = False, {}
        self.lag.reset()
        self.blocked.reset()
        self._wall, self._second_lag = self.clock.monotonic(), 0.0
        self.cpu.start()
        self.files_start, self.files_end = self.files(), None
        self.probe.watch(self.on_lag)

    def stop(self) -> None:
        self.probe.unwatch(self.on_lag)

    def finish(self) -> None:
        """The Users are gone and the broker's reader closed: the open files now, against the start's."""
        self.files_end = self.files()

    def on_lag(self, lag_ms: float) -> None:
        """One loop-lag sample; the first after a second has passed on the clock judges that second."""
        self.lag.record_value(max(1, int(lag_ms * 1000.0)))
        self._second_lag = max(self._second_lag, lag_ms)
        now = self.clock.monotonic()
        if now - self._wall >= 1.0:
            interval = self.cpu.sample()
            self._judge(interval, self._second_lag)
            wall = self.clock.wall()
            if self.on_second is not None:
                self.on_second(self.node, int(wall), interval.cpu_percent, self._second_lag)
            self.blocked.sample(now, wall)
            self._wall, self._second_lag = now, 0.0

    def _judge(self, interval: CpuInterval, lag_ms: float) -> None:
        self.seconds += 1
        self.cpu_percent_max = max(self.cpu_percent_max, interval.cpu_percent)
        self.cpu_percent_sum += interval.cpu_percent
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
            if self.node == "master":
                logger.warning("mqusers: %s", verdicts.master_sentence(self.report()))
            else:
                judged = {"verdict": verdict, "processes": {self.node: self.report()}}
                logger.warning("mqusers: %s", verdicts.sentence(judged))

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
            "cpu_percent_mean": round(self.cpu_percent_sum / self.seconds, 1) if self.seconds else 0.0,
            "rss_mb_max": peak_rss_mb(),
            "loop_lag_ms_max": lag.get_max_value() / 1000.0 if lag.get_total_count() else 0.0,
            "loop_lag_ms_p99": value_at(lag, 99.0) / 1000.0 if lag.get_total_count() else 0.0,
            "seconds": self.seconds,
            "saturated_s": self.saturated_s,
            "contended_s": self.contended_s,
            "late_cpu_percent_max": rounded("cpu"),
            "machine_cpu_percent_max": rounded("machine"),
            "steal_percent_max": rounded("steal"),
            "cpu_wait_ms_max": rounded("wait"),
            "verdict": self.verdict(),
            "blocked": self.blocked.report(),
            "stalled": self.blocked.report_stalled(),
            "open_files_start": self.files_start,
            "open_files_end": self.files_end,
        }
