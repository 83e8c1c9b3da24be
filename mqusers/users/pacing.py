"""When a producer sends: its own fixed rate, or its turn on the run-wide shared schedule.

Pure arithmetic over an injected clock (no sockets; sleeping only through an injected ``sleep``),
so it is unit-tested as such; the producer User sleeps for what these return, the way Locust's
``wait_time`` works.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mqusers.errors import MqusersError

#: Behind schedule by more than this (a stall, a reconnect), a fixed rate resumes from now.
RESYNC_S = 1.0

Clock = Callable[[], float]
Sleep = Callable[[float], object]
#: Draws the next block of global message indexes: (start, count), count 0 when all are handed
#: out; None when the conductor did not answer in time. The argument says "first draw".
Draw = Callable[[bool], "tuple[int, int] | None"]


class FixedRate:
    """Sends at ``rate`` messages/s on a fixed schedule (next = previous + 1/rate): exact over the run.

    Asked after each send, as Locust asks a User's ``wait_time`` after each task: the first call
    follows the first message, which went out a moment ago.
    """

    def __init__(self, rate: float, clock: Clock = time.perf_counter):
        self.rate, self._clock, self._next_due = rate, clock, 0.0

    def delay(self) -> float:
        """Seconds to wait before the next message (0 when unpaced or late)."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        previous = self._next_due or now
        self._next_due = max(previous + 1.0 / self.rate, now - RESYNC_S)
        return max(0.0, self._next_due - now)


@dataclass(frozen=True)
class Slot:
    """One message's turn on the shared schedule: when it is due (this process's perf clock), or
    ``None`` when the run is unpaced (nothing is due, so there is no lag either)."""

    index: int
    due: float | None


class NoBlock(MqusersError):
    """The conductor did not hand out a block in time: a failure, and the producer tries again."""


class SharedSchedule:
    """Message ``k`` of the run is due at ``t0 + k * interval``, whichever producer sends it.

    Producers draw blocks of indexes; :meth:`next` is None once the conductor has handed out all.
    """

    def __init__(self, draw: Draw):
        self._draw = draw
        self._t0, self._interval = 0.0, 0.0
        self._due_s: Callable[[int], float] | None = None
        self._index = self._end = 0
        self._drawn = False
        self.finished = False

    def start(self, t0: float, rate: float, due_s: Callable[[int], float] | None = None) -> None:
        """``t0`` on this process's perf clock; ``rate`` 0 = as fast as possible; ``due_s``: when message
        ``k`` is due, in seconds after ``t0`` (a rate profile), instead of ``k / rate``."""
        self._t0, self._interval, self._due_s = t0, (1.0 / rate if rate > 0 else 0.0), due_s

    def next(self) -> Slot | None:
        """The next slot, None when every message has been handed out; raises :class:`NoBlock`."""
        if self.finished:
            return None
        if self._index >= self._end:
            block = self._draw(not self._drawn)
            if block is None:
                raise NoBlock("no block of the shared schedule from the master in time")
            self._drawn = True
            start, count = block
            if count == 0:
                self.finished = True
                return None
            self._index, self._end = start, start + count
        index = self._index
        self._index += 1
        if self._due_s is not None:
            return Slot(index, self._t0 + self._due_s(index))
        return Slot(index, self._t0 + index * self._interval if self._interval else None)


def until_due(due: float, clock: Clock, sleep: Sleep) -> float:
    """Sleep until ``clock()`` reaches ``due``, never less; returns how late (s) it is then.

    gevent's timers count from the loop's cached time, so a wake-up can come before the time asked
    for: a message sent then would leave before its due time, and its latency from the schedule
    would come out below its latency from the send. Sleep again until it is due.
    """
    while (early := due - clock()) > 0:
        sleep(early)
    return clock() - due


def due_epoch_ns(due: float, clock_now: float, epoch_now_ns: int) -> int:
    """``due`` (on the ``clock`` read as ``clock_now``, at or after it) in epoch ns, from an epoch
    reading ``epoch_now_ns`` taken just after: never later than that reading, so a send stamped after
    it is never stamped before its due time."""
    return epoch_now_ns - int((clock_now - due) * 1e9)
