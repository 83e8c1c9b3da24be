"""Where this process's CPU went each interval: its own use, its wait for a core, the machine's load.

:class:`CpuSampler` reads, at each :meth:`~CpuSampler.sample`, the process's CPU time
(``time.process_time``), the gevent loop thread's run-queue wait (``/proc/self/schedstat``: time
runnable but not running, i.e. waiting for a core) and the machine's busy and steal time over all
cores (``/proc/stat``), and returns the figures over the interval since the previous sample. Where
``/proc`` is missing (not Linux) the wait and machine figures are ``None``. The parsers are pure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Read = Callable[[str], str]


@dataclass(frozen=True)
class MachineTimes:
    """``/proc/stat``'s first line, in clock ticks summed over every core."""

    busy: int
    total: int
    steal: int


def parse_stat(text: str) -> MachineTimes:
    """The ``cpu`` line: user nice system idle iowait irq softirq steal ...; idle and iowait are not busy,
    steal (another guest ran on our core) is counted apart."""
    fields = [int(v) for v in text.split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    steal = fields[7] if len(fields) > 7 else 0
    total = sum(fields[:8])  # guest times are already in user and nice
    return MachineTimes(busy=total - idle - steal, total=total, steal=steal)


def parse_schedstat(text: str) -> int:
    """``/proc/<pid>/schedstat``: ns on a CPU, ns waiting on a run queue, timeslices; the wait."""
    return int(text.split()[1])


@dataclass(frozen=True)
class CpuInterval:
    """One interval's figures, in percent of one core (own) or of the whole machine (machine, steal)."""

    cpu_percent: float
    #: The loop thread's wait for a core, ms per second of the interval; None without /proc.
    wait_ms: float | None
    machine_percent: float | None
    steal_percent: float | None


def _read(path: str) -> str:
    with open(path, encoding="ascii") as handle:
        return handle.read()


class CpuSampler:
    """Figures since the previous :meth:`sample` (or :meth:`start`)."""

    def __init__(self, read: Read = _read, clock: Callable[[], float] = time.perf_counter,
                 cpu_clock: Callable[[], float] = time.process_time):  # fmt: skip
        self._read, self._clock, self._cpu_clock = read, clock, cpu_clock
        self._wall = self._cpu = 0.0
        self._wait: int | None = None
        self._machine: MachineTimes | None = None

    def _wait_ns(self) -> int | None:
        try:
            return parse_schedstat(self._read("/proc/self/schedstat"))
        except (OSError, ValueError, IndexError):
            return None

    def _machine_times(self) -> MachineTimes | None:
        try:
            return parse_stat(self._read("/proc/stat"))
        except (OSError, ValueError, IndexError):
            return None

    def start(self) -> None:
        self._wall, self._cpu = self._clock(), self._cpu_clock()
        self._wait, self._machine = self._wait_ns(), self._machine_times()

    def sample(self) -> CpuInterval:
        wall, cpu, wait, machine = self._clock(), self._cpu_clock(), self._wait_ns(), self._machine_times()
        seconds = max(wall - self._wall, 1e-9)
        wait_ms = (wait - self._wait) / 1e6 / seconds if wait is not None and self._wait is not None else None
        machine_percent = steal_percent = None
        if machine is not None and self._machine is not None and machine.total > self._machine.total:
            ticks = machine.total - self._machine.total
            machine_percent = 100.0 * (machine.busy - self._machine.busy) / ticks
            steal_percent = 100.0 * (machine.steal - self._machine.steal) / ticks
        result = CpuInterval(100.0 * (cpu - self._cpu) / seconds, wait_ms, machine_percent, steal_percent)
        self._wall, self._cpu, self._wait, self._machine = wall, cpu, wait, machine
        return result


def peak_rss_mb() -> float | None:
    """The process's peak resident memory so far, MB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    # Linux counts ru_maxrss in KiB.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
