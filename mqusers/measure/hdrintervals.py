"""Per-interval µs HdrHistograms per event name (the run JSON's ``intervals``): bounded, shipped, merged.

Each interval is a :class:`~mqusers.measure.book.Book` of its own (the same tallies, request-key
names, failure and negative-latency rules), keyed by when a message was measured: the recorder's
batches by their second, request events (failures, other Users' requests) by their own time.
Workers ship :meth:`Intervals.drain` with their reports; the master :meth:`Intervals.merge`\\ s
each interval's histograms, so an interval's (or the run's) percentiles come from merged histograms.

Bounded: an interval more than ``SEAL_AFTER_S`` behind the newest keeps its tallies encoded
(hdrh's compressed strings, ~1-2 KB, not a 190 KB counts array each); when a run holds more than
``MAX_INTERVALS``, or its encoded intervals more than ``MAX_BYTES``, the width doubles and neighbours
merge (as :class:`~mqusers.measure.series.Series`). The bytes matter as much as the count: a merged
interval's histogram holds more distinct latencies than either half, so at a fixed count a long run's
intervals grow fatter with every doubling (a soak's memory rose ~2 MB an hour so); under a budget of
bytes it stops growing once the budget is first reached.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypedDict

from mqusers.measure.book import Book, EncodedTallies
from mqusers.measure.recorder import Batch

#: Intervals kept before the width doubles: 10 min at 1 s (a one-hour run ends with 8 s intervals).
MAX_INTERVALS = 600
#: An interval this far behind the newest is encoded: a live one holds ~190 KB per event name. A
#: worker's report (every 3 s) for an older one decodes it, adds, and it is encoded again.
SEAL_AFTER_S = 3
#: Encoded bytes the intervals hold before the width doubles (a 2,000 msg/s queue run reaches it in ~8 min).
MAX_BYTES = 2 * 1024 * 1024
#: Under the byte budget alone the width doubles only while more than twice this many intervals are held:
#: a run of many destinations keeps enough intervals for compare's bootstrap (docs/compare.md).
MIN_INTERVALS = 60
#: A sealed tally's bytes beside its histogram string (the dict, its numbers).
TALLY_OVERHEAD = 400


class IntervalPayload(TypedDict):
    t: int
    tallies: EncodedTallies


class IntervalsPayload(TypedDict):
    """What a worker ships: its intervals since the last drain, at its width."""

    width_s: int
    intervals: list[IntervalPayload]


class Interval:
    """One interval's tallies: a live :class:`Book`, or once sealed its encoding."""

    __slots__ = ("_book", "_packed", "size")

    def __init__(self) -> None:
        self._book: Book | None = Book()
        self._packed: EncodedTallies = {}
        #: Its encoded bytes once sealed (0 while live: only the newest few are, bounded by ``SEAL_AFTER_S``).
        self.size = 0

    @property
    def book(self) -> Book:
        """The tallies to add to (a sealed interval is decoded)."""
        if self._book is None:
            self._book = Book()
            self._book.merge(self._packed)
            self._packed, self.size = {}, 0
        return self._book

    @property
    def sealed(self) -> bool:
        return self._book is None

    def seal(self) -> None:
        if self._book is not None:
            self._packed, self._book = self._book.drain(), None
            self.size = sum(len(tally["histogram"]) + TALLY_OVERHEAD for tally in self._packed.values())

    def encoded(self) -> EncodedTallies:
        """The tallies encoded, without unsealing (the live book keeps its own)."""
        return self._packed if self._book is None else self._book.encoded()

    def packed(self) -> EncodedTallies:
        """The tallies encoded, sealed: for an interval about to be dropped."""
        self.seal()
        return self._packed


class Intervals:
    """Per-interval tallies of every event name; see the module's docstring."""

    def __init__(self, max_intervals: int = MAX_INTERVALS, max_bytes: int = MAX_BYTES) -> None:
        self.max_intervals, self.max_bytes = max_intervals, max_bytes
        self.width_s = 1
        self.intervals: dict[int, Interval] = {}
        #: False during a warm-up, as the book's: request events are not counted.
        self.recording = True
        self._newest = 0

    def clear(self) -> None:
        self.width_s, self.intervals, self._newest = 1, {}, 0

    def _interval(self, second: int) -> Interval:
        key = second - second % self.width_s
        interval = self.intervals.get(key)
        if interval is None:
            interval = self.intervals[key] = Interval()
            if self._full():
                self._coarsen()
                return self._interval(second)
        self._newest = max(self._newest, key)
        return interval

    def _full(self) -> bool:
        held = len(self.intervals)
        if held > self.max_intervals:
            return True
        return held > 2 * MIN_INTERVALS and sum(i.size for i in self.intervals.values()) > self.max_bytes

    def _seal_old(self) -> None:
        horizon = self._newest - max(SEAL_AFTER_S, 2 * self.width_s)
        for key, interval in self.intervals.items():
            if key < horizon:
                interval.seal()

    def _coarsen(self) -> None:
        """Double the width, merging each pair of neighbours (their histograms added)."""
        self.width_s *= 2
        horizon = self._newest - max(SEAL_AFTER_S, 2 * self.width_s)
        merged: dict[int, Interval] = {}
        for key in sorted(self.intervals):
            interval = self.intervals[key]
            target = key - key % self.width_s
            if (into := merged.get(target)) is None:
                merged[target] = interval
            else:
                into.book.merge(interval.packed())
                if target < horizon:
                    into.seal()  # old: encoded at once, so no more than one is decoded at a time
        self.intervals = merged

    def add_batches(self, batches: Sequence[Batch]) -> None:
        """The recorder's successes, each batch into its second's interval."""
        width = self.width_s
        groups: dict[int, list[Batch]] = {}
        for batch in batches:
            groups.setdefault(batch.second - batch.second % width, []).append(batch)
        for second, group in groups.items():
            self._interval(second).book.add_batches(group)
        self._seal_old()

    def on_request(
        self, request_type: str, name: str, response_time: float, response_length: int, exception: Any, **_: Any
    ) -> None:
        """A Locust request event (failures, other Users' requests) into the interval of its own time."""
        if self.recording:
            self._interval(int(time.time())).book.on_request(
                request_type, name, response_time, response_length, exception
            )

    def drain(self) -> IntervalsPayload:
        """Everything since the last drain, for the master; then start afresh."""
        intervals = [IntervalPayload(t=key, tallies=i.packed()) for key, i in sorted(self.intervals.items())]
        self.intervals = {}
        return {"width_s": self.width_s, "intervals": intervals}

    def merge(self, payload: IntervalsPayload) -> None:
        while self.width_s < payload["width_s"]:
            self._coarsen()
        for interval in payload["intervals"]:
            self._interval(interval["t"]).book.merge(interval["tallies"])
        self._seal_old()

    def totals(self) -> Book:
        """Every interval's tallies merged: what the run's book holds (tests and the HDR log read it)."""
        book = Book()
        for interval in self.intervals.values():
            book.merge(interval.encoded())
        return book

    def document(self, measured_from: float) -> dict[str, Any]:
        """The JSON report's ``intervals``: per event name ``[start, seconds, count, failures, histogram]``,
        oldest first. The interval holding ``measured_from`` starts there and the last ends at the last
        event, so sum(count) / sum(seconds) is a rate over the time measured."""
        width = self.width_s
        encoded = {key: interval.encoded() for key, interval in sorted(self.intervals.items())}
        end = max((tally["last"] for tallies in encoded.values() for tally in tallies.values()), default=0.0)
        operations: dict[str, list[list[Any]]] = {}
        for key, tallies in encoded.items():
            start = measured_from if key < measured_from < key + width else float(key)
            seconds = round(max(0.0, min(key + width, max(end, start)) - start), 6)
            for name, tally in sorted(tallies.items()):
                count = tally["count"] - tally["failures"]
                operations.setdefault(name, []).append([start, seconds, count, tally["failures"], tally["histogram"]])
        return {"width_s": float(width), "measured_from": measured_from, "operations": operations}
