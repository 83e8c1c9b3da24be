"""Time windows for the listener: histogram figures, the master's merge by window, run totals.

Pure data, no I/O and no Locust, so it is tested on its own. Tallies are the :class:`Book`'s; what
workers ship is :meth:`Book.drain` output, merged with :meth:`Book.merge`, so the master's interval
percentiles come from the merged histograms, never from an average of the workers' percentiles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import compress

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import Book, EncodedTallies, EventTallies, Tally, record_grouped
from mqusers.measure.names import split_event_name
from mqusers.sinks.schema import PERCENTILE_FIELDS


def figures(histogram: HdrHistogram) -> dict[str, float]:
    """mean, p50, p90, p99, p99.9 and max in milliseconds; the same values as hdrh's own methods.

    hdrh walks all ~23,500 counters in Python once per percentile (~30 ms a histogram); this
    walks only the non-zero ones, found at C speed, once (~1-3 ms), which matters every second.
    """
    total = histogram.get_total_count()
    if total == 0:
        return {}
    size = min(histogram.counts_len, histogram.encoder.payload.counts_len)
    counts = histogram.counts[:size]
    targets = sorted((histogram.get_target_count_at_percentile(p), key) for key, p in PERCENTILE_FIELDS.items())
    half_magnitude = histogram.sub_bucket_half_count_magnitude
    half, unit = histogram.sub_bucket_half_count, histogram.unit_magnitude
    found: dict[str, float] = {}
    running = weighted = highest = 0
    pending = 0
    for index in compress(range(size), counts):
        count = counts[index]
        # hdrh's get_value_from_index and equivalent-range arithmetic, inlined.
        bucket = (index >> half_magnitude) - 1
        sub_bucket = (index & (half - 1)) + half
        if bucket < 0:
            sub_bucket -= half
            bucket = 0
        lowest = sub_bucket << (bucket + unit)
        width = 1 << (unit + bucket)
        highest = lowest + width - 1
        running += count
        weighted += count * (lowest + (width >> 1))
        while pending < len(targets) and running >= targets[pending][0]:
            found[targets[pending][1]] = highest / 1000.0
            pending += 1
    return {"mean": weighted / total / 1000.0, **found, "max": highest / 1000.0}


def split_name(name: str) -> tuple[str, str]:
    """An event name's operation and target as tag values: a tag value cannot be empty."""
    operation, target = split_event_name(name)
    return operation, target or "-"


def tally_fields(tally: Tally) -> dict[str, int | float]:
    return {
        "count": tally.count,
        "errors": tally.failures,
        "bytes": tally.bytes,
        "negative": tally.negative,
        **figures(tally.histogram),
    }


def tallies_of(drained: EncodedTallies) -> dict[str, Tally]:
    book = Book()
    book.merge(drained)
    return book.tallies


@dataclass
class _Deferred(Tally):
    """A tally whose latencies wait as integers and reach its histogram once, when the interval is taken."""

    samples: list[int] = field(default_factory=list)
    #: Samples that came already grouped (the recorder's batches), merged only when taken.
    groups: list[Mapping[int, int]] = field(default_factory=list)

    def time(self, micros: int) -> None:
        self.samples.append(micros)

    def time_grouped(self, micros: Mapping[int, int]) -> None:
        self.groups.append(micros)

    def settled(self) -> Tally:
        tally = Tally(self.count, self.failures, self.bytes, self.negative, self.histogram, self.first, self.last)
        # Counter(list) groups equal samples at C speed.
        tally.negative += record_grouped(tally.histogram, Counter(self.samples), *self.groups)
        return tally


class IntervalBook(EventTallies[_Deferred]):
    """A :class:`Book` for one interval, cheaper per event: samples are kept as integers and put
    into the HdrHistogram once per interval, one ``record_value(value, count)`` per distinct value.

    hdrh's ``record_value`` is Python (~1 µs); this listener sees every message a second time, so
    per event it only appends an int. Counted as a Book counts (:class:`EventTallies`: the same code).
    """

    def __init__(self) -> None:
        super().__init__(_Deferred)

    def clear(self) -> None:
        self.tallies = {}

    def take(self) -> dict[str, Tally]:
        """This interval's tallies; then start afresh."""
        deferred, self.tallies = self.tallies, {}
        return {name: tally.settled() for name, tally in deferred.items()}


def drain(book: IntervalBook, encode: bool = True) -> tuple[dict[str, Tally], EncodedTallies]:
    """Take an interval's tallies (for this process's own points) and, for a worker to ship to the
    master, their encoded form (``{}`` without ``encode``)."""
    tallies = book.take()
    if not encode:
        return tallies, {}
    encoder = Book()
    encoder.tallies = dict(tallies)
    return tallies, encoder.drain()


@dataclass
class _Pending:
    duration_s: float = 0.0
    sources: set[str] = field(default_factory=set)
    book: Book = field(default_factory=Book)


@dataclass(frozen=True)
class MergedInterval:
    ts_ms: int
    duration_s: float
    sources: int
    tallies: dict[str, Tally]


class IntervalMerger:
    """The master's view: workers' intervals keyed by their start, merged once all had time to report.

    Workers align intervals on multiples of the interval since the epoch, so the same ``ts_ms``
    from two workers covers the same wall-clock second. An interval is final ``grace_ms`` after
    it ended (workers report every few seconds); data for an interval already written is counted
    as late and left out of the merged series (each worker's own series still has it).
    """

    def __init__(self, interval_ms: int, grace_ms: int):
        self.interval_ms = interval_ms
        self.grace_ms = grace_ms
        self.pending: dict[int, _Pending] = {}
        self.watermark = 0  # every interval starting before this has been written
        self.late = 0

    def add(self, source: str, ts_ms: int, duration_s: float, drained: EncodedTallies) -> bool:
        if ts_ms < self.watermark:
            self.late += 1
            return False
        slot = self.pending.setdefault(ts_ms, _Pending())
        slot.duration_s = max(slot.duration_s, duration_s)
        slot.sources.add(source)
        slot.book.merge(drained)
        return True

    def ready(self, now_ms: int, everything: bool = False) -> list[MergedInterval]:
        """Intervals now final (all of them with ``everything``), oldest first."""
        done = sorted(ts for ts in self.pending if everything or ts + self.interval_ms + self.grace_ms <= now_ms)
        out = []
        for ts in done:
            slot = self.pending.pop(ts)
            out.append(MergedInterval(ts, slot.duration_s, len(slot.sources), slot.book.tallies))
            self.watermark = max(self.watermark, ts + 1)
        return out

    def clear(self) -> None:
        self.pending.clear()
        self.watermark = 0
        self.late = 0


class RunTotals:
    """Running totals since test start, one tally (histogram included) per event name."""

    def __init__(self) -> None:
        self.tallies: dict[str, Tally] = {}

    def add(self, tallies: Mapping[str, Tally]) -> None:
        for name, tally in tallies.items():
            mine = self.tallies.get(name)
            if mine is None:
                mine = self.tallies[name] = Tally()
            mine.add(tally)

    def clear(self) -> None:
        self.tallies = {}

    def summary(self) -> Iterator[tuple[str, Tally]]:
        yield from sorted(self.tallies.items())
