"""A paced drain: every consumer's ACKs released at most ``rate`` a second in all (``--mq-backlog-drain-rate``).

STOMP has no pull: a broker pushes each subscription up to its prefetch of unacknowledged messages,
then one more per message acknowledged. Holding each delivery's ACK until its turn on one schedule
for the process (ACK ``n`` due ``n / rate`` after the first) keeps the broker to that rate; with a
small prefetch the consumers take at most ``rate`` msg/s beyond the prefetch they start with. Each
delivery is still measured and counted when it arrives, so the drain per second is the paced rate
and the audit stays exact. ACKs of a connection that has since dropped are void and dropped: the
broker delivers those messages again (counted as redelivered).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

import gevent
from gevent.event import Event


class Acker(Protocol):
    """What holds ACKs here (a :class:`~mqusers.stomp.receiver.Receiver`): its connection's generation, and
    how it writes ACK frames."""

    @property
    def generation(self) -> int: ...

    def write_acks(self, frames: list[bytes]) -> None: ...


class AckPace:
    """One per process and test; :meth:`hold` takes an ACK frame, a greenlet writes it when due."""

    def __init__(
        self, rate: float, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = gevent.sleep
    ):
        self.rate = rate
        self._clock, self._sleep = clock, sleep
        self._held: deque[tuple[Acker, int, bytes]] = deque()
        self._waiting = Event()
        #: When the next ACK is due; moved up to now when ACKs come after a quiet spell (no catching up).
        self._next = 0.0
        self._worker: gevent.Greenlet | None = None
        #: ACKs released so far.
        self.released = 0

    def hold(self, acker: Acker, frame: bytes) -> None:
        if not self._held:
            self._next = max(self._next, self._clock())
        self._held.append((acker, acker.generation, frame))
        self._waiting.set()
        if self._worker is None:
            self._worker = gevent.spawn(self._run)

    def due(self) -> int:
        """How many held ACKs are due now (at least 1 once the first is), counted as released."""
        now = self._clock()
        if not self._held or now < self._next:
            return 0
        count = min(len(self._held), 1 + int((now - self._next) * self.rate))
        self._next += count / self.rate
        return count

    def release(self, count: int) -> None:
        """Write the ``count`` oldest held ACKs, one write per acker (void ones dropped)."""
        writes: dict[Acker, list[bytes]] = {}
        for _ in range(count):
            acker, generation, frame = self._held.popleft()
            if acker.generation == generation:
                writes.setdefault(acker, []).append(frame)
        self.released += count
        for acker, frames in writes.items():
            acker.write_acks(frames)

    def release_all(self, acker: Acker) -> None:
        """Write every ACK ``acker`` holds at once (its User stops: what it received is acknowledged)."""
        mine = [frame for held, generation, frame in self._held if held is acker and generation == acker.generation]
        self._held = deque(entry for entry in self._held if entry[0] is not acker)
        if mine:
            acker.write_acks(mine)

    def _run(self) -> None:
        while True:
            if not self._held:
                self._waiting.clear()
                self._waiting.wait()
                continue
            count = self.due()
            if count:
                self.release(count)
            else:
                self._sleep(max(0.0, self._next - self._clock()))

    def stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill(block=False)
