"""Exact per-operation tallies with microsecond HdrHistograms, mergeable across Locust workers.

The book listens to ``events.request`` and keeps, per event name (``"receive /topic/x"``..., and
``"GET /api/x"`` for other request types: :func:`~mqusers.measure.names.request_key`), the count,
failures, bytes and a histogram of successful response times in microseconds (3 significant
digits, 1 µs to 1 h). Workers ship :meth:`Book.drain` output with their reports; the master
:meth:`Book.merge`\\ s it, so percentiles come from the merged histogram, never from an average of
per-worker percentiles. Negative latencies (unsynchronised clocks) are counted, not
clipped into the histogram.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from hdrh.histogram import HdrHistogram

from mqusers.measure.names import REQUEST_TYPE, destination_operation, request_key
from mqusers.measure.recorder import Batch

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3
PERCENTILES = (50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99)
#: 3 significant digits: values below 2^11 µs have a counts slot each (hdrh's sub-bucket count, 2,048).
_EXACT_BITS = 11
_EXACT = 1 << _EXACT_BITS


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def release(histogram: HdrHistogram) -> None:
    """Free a histogram no longer used now: hdrh's histogram and its encoder refer to each other, so
    only the cycle collector's rare full passes would free one that lived a few seconds, with its
    ~190 KB counts array (an hour of per-interval histograms reached 1 GB waiting for one)."""
    histogram.encoder.histogram = None


@dataclass
class Tally:
    count: int = 0
    failures: int = 0
    bytes: int = 0
    negative: int = 0
    histogram: HdrHistogram = field(default_factory=new_histogram)
    #: Epoch seconds of the first and the last event: the span rates are measured over.
    first: float = math.inf
    last: float = 0.0

    def time(self, micros: int) -> None:
        """One success's latency in µs (not negative)."""
        self.histogram.record_value(LOWEST_US if micros < LOWEST_US else min(micros, HIGHEST_US))

    def time_grouped(self, micros: Mapping[int, int]) -> None:
        """Successes' latencies as µs -> count (a recorder's batch); negative ones are counted apart."""
        self.negative += record_grouped(self.histogram, micros)

    def add(self, other: Tally) -> None:
        self.count += other.count
        self.failures += other.failures
        self.bytes += other.bytes
        self.negative += other.negative
        self.histogram.add(other.histogram)
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)

    def latency_ms(self) -> dict[str, float]:
        """mean, p50 ... p99.99 and max of the successful samples, in milliseconds."""
        hist = self.histogram
        if hist.get_total_count() == 0:
            return {}
        mean, values = walk(hist, PERCENTILES)
        figures = {"mean": mean / 1000.0}
        for percentile, value in zip(PERCENTILES, values, strict=True):
            figures[_percentile_key(percentile)] = value / 1000.0
        figures["max"] = hist.get_max_value() / 1000.0
        return figures


def walk(histogram: HdrHistogram, percentiles: Sequence[float]) -> tuple[float, list[int]]:
    """The mean and the values at ``percentiles`` (ascending) that hdrh's ``get_mean_value`` and
    ``get_value_at_percentile`` give, from one pass over the non-zero counts: hdrh steps through every
    counter in Python, each figure on its own (0.2 CPU-s for one report's means)."""
    total = histogram.total_count
    counts = histogram.counts[: histogram._counts_index_for(histogram.max_value) + 1]
    targets = [histogram.get_target_count_at_percentile(p) for p in percentiles]
    values: list[int] = []
    weighted, reached = 0, 0
    for index, count in enumerate(counts):
        if not count:
            continue
        value = histogram.get_value_from_index(index)
        weighted += count * histogram._hdr_median_equiv_value(value)
        reached += count
        while len(values) < len(targets) and reached >= targets[len(values)]:
            p = percentiles[len(values)]
            values.append(histogram.get_highest_equivalent_value(value) if p else
                          histogram.get_lowest_equivalent_value(value))  # fmt: skip
    values += [0] * (len(targets) - len(values))
    return (weighted / total if total else 0.0), values


def value_at(histogram: HdrHistogram, percentile: float) -> int:
    """hdrh's ``get_value_at_percentile``, from :func:`walk`'s one pass."""
    return walk(histogram, (percentile,))[1][0]


def slot_floor(value: int, exact_bits: int) -> int:
    """The lowest value of ``value``'s slot when values below 2^exact_bits are exact and each
    power-of-two range above is cut into 2^(exact_bits - 1) slots (HdrHistogram's layout)."""
    shift = value.bit_length() - exact_bits
    return value >> shift << shift if shift > 0 else value


def record_grouped(histogram: HdrHistogram, *groups: Mapping[int, int]) -> int:
    """Record µs samples given as value -> count maps; returns how many were negative (not recorded).

    hdrh's ``record_value`` is ~1 µs of Python per call and unpaced latencies are nearly all
    distinct in µs: the samples are summed per counts slot first (3 significant digits: below
    2,048 µs a slot per µs, above 2^k µs wide) and each slot's sum is added to hdrh's counts array
    at once, with the total, min and max ``record_value`` would have left (the run's book and its
    per-interval histograms both record every batch: this is most of what a message costs them).
    """
    negative = 0
    slots: dict[int, int] = {}
    for value, count in (item for micros in groups for item in micros.items()):
        if value < _EXACT:
            if value < 0:
                negative += count
                continue
            index = LOWEST_US if value < LOWEST_US else value
        else:
            value = min(value, HIGHEST_US)
            shift = value.bit_length() - _EXACT_BITS
            index = (shift << (_EXACT_BITS - 1)) + (value >> shift)  # hdrh's counts index of value
        slots[index] = slots.get(index, 0) + count
    if slots:
        counts = histogram.counts
        for index, count in slots.items():
            counts[index] += count
        histogram.total_count += sum(slots.values())
        histogram.min_value = min(histogram.min_value, histogram.get_value_from_index(min(slots)))
        histogram.max_value = max(histogram.max_value, histogram.get_value_from_index(max(slots)))
    return negative


#: Points per factor of ten on the percentile plot's "nines" axis (90 %, 99 %, 99.9 % ...).
PLOT_POINTS_PER_NINE = 10


def percentile_plot(histogram: HdrHistogram) -> list[tuple[float, float]]:
    """HdrHistogram's percentile plot: ``(1 / (1 - p), value in ms)`` points, ``p`` from 0 to the maximum.

    Values are those :meth:`HdrHistogram.get_value_at_percentile` gives, from one walk of the
    recorded values (hdrh walks every counter per percentile). The maximum sits at ``1 / (1 - p)``
    equal to the count: the last of ``count`` samples.
    """
    total = histogram.get_total_count()
    if total == 0:
        return []
    tops, reached = [], []
    for item in histogram.get_recorded_iterator():
        tops.append(item.value_iterated_to)
        reached.append(item.total_count_to_this_value)
    points = []
    step = 0
    while (x := 10 ** (step / PLOT_POINTS_PER_NINE)) < total:
        rank = max(1, int((1 - 1 / x) * total + 0.5))  # hdrh's rank for the percentile
        points.append((x, tops[bisect_left(reached, rank)] / 1000.0))
        step += 1
    points.append((float(total), tops[-1] / 1000.0))
    return points


def _percentile_key(percentile: float) -> str:
    return "p" + f"{percentile:g}".replace(".", "")


class EncodedTally(TypedDict):
    """A :class:`Tally` as a worker ships it (msgpack-able)."""

    count: int
    failures: int
    bytes: int
    negative: int
    histogram: str  # HdrHistogram's base64 encoding
    first: float
    last: float


EncodedTallies = dict[str, EncodedTally]


T = TypeVar("T", bound=Tally)


class EventTallies(Generic[T]):
    """Tallies keyed by event name, fed by ``events.request`` and the recorder's batches: the one place
    a request event is counted (:class:`Book`, and the InfluxDB sink's per-interval book).

    A STOMP event keeps its own name, any other request its :func:`request_key`. Failures count but
    are not timed; negative latencies (unsynchronised clocks) are counted, not clipped in.
    """

    def __init__(self, new_tally: Callable[[], T]) -> None:
        self._new = new_tally
        self.tallies: dict[str, T] = {}
        #: False during a warm-up: events are not tallied (the recorder cuts its batches itself).
        self.recording = True

    def on_request(
        self, request_type: str, name: str, response_time: float, response_length: int, exception: Any, **_: Any
    ) -> None:
        if not self.recording:
            return
        if request_type != REQUEST_TYPE:  # the one compare a STOMP message pays
            name = request_key(request_type, name)
        now = time.time()
        tally = self.tallies.get(name)
        if tally is None:
            tally = self.tallies[name] = self._new()
            tally.first = now
        tally.last = now
        tally.count += 1
        tally.bytes += response_length
        if exception is not None:
            tally.failures += 1
        elif response_time < 0:
            tally.negative += 1
        else:
            tally.time(round(response_time * 1000.0))  # exact for the recorder's micros / 1000

    def add_batches(self, batches: Sequence[Batch]) -> None:
        """The recorder's successes: what :meth:`on_request` per message would have tallied."""
        for batch in batches:
            tally = self.tallies.get(batch.name)
            if tally is None:
                tally = self.tallies[batch.name] = self._new()
            tally.first = min(tally.first, batch.first_ns / 1e9)
            tally.last = max(tally.last, batch.last_ns / 1e9)
            tally.count += batch.count
            tally.bytes += batch.bytes
            tally.time_grouped(batch.micros)


class Book(EventTallies[Tally]):
    """The run's tallies: STOMP events' own, any other request's :func:`request_key`; shipped and merged."""

    def __init__(self) -> None:
        super().__init__(Tally)

    def clear(self) -> None:
        self.tallies = {}

    def encoded(self) -> EncodedTallies:
        """The tallies encoded, as :meth:`merge` reads them."""
        return {
            name: EncodedTally(count=t.count, failures=t.failures, bytes=t.bytes, negative=t.negative,
                               histogram=t.histogram.encode().decode("ascii"), first=t.first, last=t.last)
            for name, t in self.tallies.items()
        }  # fmt: skip

    def drain(self) -> EncodedTallies:
        """Everything since the last drain, encoded for a worker report; then start afresh."""
        encoded, tallies, self.tallies = self.encoded(), self.tallies, {}
        for tally in tallies.values():
            release(tally.histogram)
        return encoded

    def merge(self, drained: EncodedTallies) -> None:
        for name, e in drained.items():
            histogram = HdrHistogram.decode(e["histogram"].encode("ascii"))
            other = Tally(e["count"], e["failures"], e["bytes"], e["negative"], histogram, e["first"], e["last"])
            tally = self.tallies.get(name)
            if tally is None:
                self.tallies[name] = other
            else:
                tally.add(other)
                release(histogram)


def by_destination(tallies: Mapping[str, Tally]) -> dict[str, dict[str, Tally]]:
    """Tallies of STOMP operations on destinations, grouped: ``{"/queue/a": {"send": ..., "receive": ...}}``."""
    grouped: dict[str, dict[str, Tally]] = {}
    for name, tally in tallies.items():
        if (found := destination_operation(name)) is not None:
            operation, destination = found
            grouped.setdefault(destination, {})[operation] = tally
    return grouped
