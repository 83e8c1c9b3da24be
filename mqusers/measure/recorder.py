"""Per-message successes recorded cheaply on the hot path and handed on in bulk.

A send or a delivery costs one :meth:`Operation.record`: a list append and two attribute updates.
Every :meth:`Recorder.flush` (a few times a second, before each report, at stop) turns each
operation's samples into one :class:`Batch` per second and gives the batches, in time order, to
every consumer: the exact book, Locust's own statistics (:mod:`mqusers.run.locust_stats`), the
InfluxDB interval book. Each consumer gets what one event per message would have given it.

Failures are rare and carry the broker's message: they still fire one Locust request event each,
and the recorder flushes first, so every consumer sees events in the order they happened.
With ``per_message`` the recorder hands out operations that fire an event per message instead
(for users whose own request listeners must see every message).

A warm-up (:meth:`Recorder.measure_from`) is cut at one instant: samples recorded before it are
dropped. The cut costs the hot path nothing: it is one more boundary where an operation opens a
new segment, as it does at each second. Senders and receivers cut by each message's send stamp
before they record (a receiver's operations opt out of the cut by record time: ``cut = False``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mqusers.measure.names import REQUEST_TYPE

Fire = Callable[..., Any]


@dataclass(frozen=True)
class Batch:
    """One operation's successes within one epoch second."""

    name: str
    #: ``int(t)`` of the samples' epoch times ``t``, as Locust keys its requests per second.
    second: int
    #: Response time in µs -> how many samples had it (negative: clocks out of step).
    micros: Counter[int]
    count: int
    bytes: int
    #: Epoch ns of the first and the last sample.
    first_ns: int
    last_ns: int


class Record(Protocol):
    """What the hot path holds per operation: ``record(micros, size, now_ns)`` for one success."""

    name: str
    cut: bool

    def record(self, micros: int, size: int, now_ns: int) -> None: ...

    def record_many(self, micros: int, size: int, now_ns: int, count: int) -> None: ...


def second_of(now_ns: int) -> int:
    """The second Locust would file an event at ``now_ns`` under: ``int(time.time())``."""
    return int(now_ns / 1e9)


def _second_end_ns(second: int) -> int:
    """The first ns whose :func:`second_of` is past ``second`` (float rounding moves it a little)."""
    end = (second + 1) * 1_000_000_000
    while second_of(end - 1) > second:
        end -= 1
    while second_of(end) <= second:
        end += 1
    return end


class Operation:
    """One event name's successes since the last flush, cut into seconds."""

    __slots__ = ("_bytes", "_dirty", "_end_ns", "_last_ns", "_recorder", "_samples", "_seconds", "cut", "name")

    def __init__(self, name: str, recorder: Recorder):
        self.name = name
        #: False: its caller leaves the warm-up out itself (a receiver, by each message's send time).
        self.cut = True
        self._recorder = recorder
        self._dirty = recorder._pending
        self._samples: list[int] = []
        self._bytes = 0
        self._last_ns = 0
        #: (start index, second, bytes before, first ns, last ns, kept) per second, and per side of
        #: the warm-up's end (kept 0: before it); the last one is open.
        self._seconds: list[list[int]] = []
        self._end_ns = 0  # forces :meth:`_open` on the first record after a flush

    def record(self, micros: int, size: int, now_ns: int) -> None:
        if now_ns >= self._end_ns:
            self._open(now_ns)
        self._samples.append(micros)
        self._bytes += size
        self._last_ns = now_ns

    def record_many(self, micros: int, size: int, now_ns: int, count: int) -> None:
        """``count`` successes alike (messages written together)."""
        if now_ns >= self._end_ns:
            self._open(now_ns)
        self._samples.extend([micros] * count)
        self._bytes += size * count
        self._last_ns = now_ns

    def _open(self, now_ns: int) -> None:
        if not self._seconds:
            self._dirty(self)
        else:
            self._seconds[-1][4] = self._last_ns
        second = second_of(now_ns)
        cut_ns = self._recorder.measured_from_ns
        kept = now_ns >= cut_ns or not self.cut
        self._seconds.append([len(self._samples), second, self._bytes, now_ns, now_ns, kept])
        self._end_ns = _second_end_ns(second) if kept else min(_second_end_ns(second), cut_ns)

    def take(self) -> list[Batch]:
        """The batches since the last take, oldest first; then start afresh."""
        if not self._seconds:
            return []
        self._seconds[-1][4] = self._last_ns
        samples, seconds, total = self._samples, self._seconds, self._bytes
        self._samples, self._seconds, self._bytes, self._end_ns = [], [], 0, 0
        batches = []
        for index, (start, second, bytes_before, first_ns, last_ns, kept) in enumerate(seconds):
            end, bytes_after = (seconds[index + 1][0], seconds[index + 1][2]) if index + 1 < len(seconds) else (
                len(samples), total)  # fmt: skip
            if end > start and kept:
                micros = Counter(samples[start:end])  # C-speed grouping of equal samples
                batches.append(Batch(self.name, second, micros, end - start, bytes_after - bytes_before,
                                     first_ns, last_ns))  # fmt: skip
        return batches


class PerMessage:
    """An operation that fires one Locust request event per message (``--mq-request-events per-message``)."""

    __slots__ = ("_fire", "_recorder", "cut", "name")

    def __init__(self, name: str, recorder: Recorder):
        self.name, self._fire, self._recorder, self.cut = name, recorder.fire, recorder, True

    def record(self, micros: int, size: int, now_ns: int) -> None:
        if now_ns < self._recorder.measured_from_ns and self.cut:
            return  # the warm-up's
        # The same float the bulk path derives from the same µs, so both modes log identical values.
        self._fire(request_type=REQUEST_TYPE, name=self.name, response_time=micros / 1000.0,
                   response_length=size, exception=None, context={})  # fmt: skip

    def record_many(self, micros: int, size: int, now_ns: int, count: int) -> None:
        for _ in range(count):
            self.record(micros, size, now_ns)


BatchConsumer = Callable[[Sequence[Batch]], None]


class Recorder:
    """This process's operations by name, and the consumers their batches go to.

    ``fire`` is ``environment.events.request.fire``; :meth:`fire` is what the client uses for
    failures and rare operations: it flushes first, so consumers see events in order.
    """

    def __init__(self, fire: Fire, per_message: bool = False):
        self._fire = fire
        self.per_message = per_message
        self._operations: dict[str, Record] = {}
        self._dirty: list[Operation] = []
        self._consumers: list[BatchConsumer] = []
        #: Epoch ns the measured window starts at (0: no warm-up): earlier samples are dropped.
        self.measured_from_ns = 0
        #: Runs once, at the first flush or event at or after ``measured_from_ns``, before any consumer
        #: sees the window's first sample (resets what counted the warm-up's events).
        self._on_measured: Callable[[], None] | None = None

    def measure_from(self, from_ns: int, on_measured: Callable[[], None] | None = None) -> None:
        """Leave out samples recorded before ``from_ns``; ``on_measured()`` when the window opens."""
        self.flush()
        self.measured_from_ns, self._on_measured = from_ns, on_measured

    def move_measured_from(self, from_ns: int) -> None:
        """The same window's start as another process set it (the master's): only before it opens."""
        if self._on_measured is not None:
            self.flush()
            if self._on_measured is not None:
                self.measured_from_ns = from_ns

    def _opens(self, measured: bool = False) -> None:
        """Run the window's callback once it has opened (or ``measured``: a sample of it is pending)."""
        if self._on_measured is not None and (measured or time.time_ns() >= self.measured_from_ns):
            on_measured, self._on_measured = self._on_measured, None
            on_measured()

    def operation(self, name: str) -> Record:
        """The shared operation for ``name`` (every producer on a destination records into one)."""
        operation = self._operations.get(name)
        if operation is None:
            operation = self._operations[name] = PerMessage(name, self) if self.per_message else Operation(name, self)
        return operation

    def restart(self, per_message: bool) -> None:
        """A new test (its options may have changed in the web UI): new operations from now on."""
        self.flush()
        self.per_message = per_message
        self._operations.clear()

    def _pending(self, operation: Operation) -> None:
        self._dirty.append(operation)

    def add_consumer(self, consumer: BatchConsumer) -> None:
        self._consumers.append(consumer)

    def fire(self, **event: Any) -> None:
        if self._dirty:
            self.flush()
        elif self._on_measured is not None:
            self._opens()
        self._fire(**event)

    def flush(self) -> None:
        """Hand every pending sample to the consumers, in time order."""
        dirty, self._dirty = self._dirty, []
        batches = [batch for operation in dirty for batch in operation.take()]
        if self._on_measured is not None:
            self._opens(measured=bool(batches))  # batches hold no sample of the warm-up
        if not batches:
            return
        batches.sort(key=lambda batch: batch.second)  # stable: operations keep their order within a second
        for consumer in self._consumers:
            consumer(batches)
