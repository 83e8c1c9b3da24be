"""Interval arithmetic for the listener: histogram figures, the master's merge by interval, run totals.

Pure data, no I/O and no Locust, so it is tested on its own. Tallies are the :class:`Book`'s; what
workers ship is :meth:`Book.drain` output, merged with :meth:`Book.merge`, so the master's interval
percentiles come from the merged histograms, never from an average of the workers' percentiles.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from hdrh.histogram import HdrHistogram

from mqusers.measure.book import Book, Tally
from mqusers.sinks.schema import PERCENTILE_FIELDS

Drained = dict[str, list[Any]]
_QUEUE_PREFIXES = ("/queue/", "/amq/queue/", "/temp-queue/")


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
    """``"receive /topic/x"`` -> ``("receive", "/topic/x")``; the target may be a broker URL."""
    operation, _, target = name.partition(" ")
    return operation, target or "-"


def tally_fields(tally: Tally) -> dict[str, int | float]:
    return {
        "count": tally.count,
        "errors": tally.failures,
        "bytes": tally.bytes,
        "negative": tally.negative,
        **figures(tally.histogram),
    }


def tallies_of(drained: Drained) -> dict[str, Tally]:
    book = Book()
    book.merge(drained)
    return book.tallies


def drain(book: Book) -> tuple[dict[str, Tally], Drained]:
    """Take a book's tallies (for this process's own points) and their encoded form (for the master)."""
    taken = Book(book.request_type)
    taken.tallies, book.tallies = book.tallies, {}
    tallies = dict(taken.tallies)
    return tallies, taken.drain()


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

    def add(self, source: str, ts_ms: int, duration_s: float, drained: Drained) -> bool:
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


@dataclass(frozen=True)
class DestinationTotals:
    sent: int
    received: int
    subscriptions: int
    backlog: int
    errors: int


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

    def destinations(self) -> dict[str, DestinationTotals]:
        """Per destination with sends or receives: totals and the backlog still expected to arrive."""
        grouped: dict[str, dict[str, Tally]] = {}
        for name, tally in self.tallies.items():
            operation, target = split_name(name)
            if target.startswith("/"):
                grouped.setdefault(target, {})[operation] = tally
        rows = {}
        for destination, operations in sorted(grouped.items()):
            if "send" not in operations and "receive" not in operations:
                continue
            send, receive, subscribe = (operations.get(op, Tally()) for op in ("send", "receive", "subscribe"))
            sent, subscriptions = send.count - send.failures, subscribe.count - subscribe.failures
            # A topic delivers every message to every subscription; a queue delivers it once.
            fan_out = 1 if destination.startswith(_QUEUE_PREFIXES) else subscriptions
            errors = sum(t.failures for t in operations.values())
            rows[destination] = DestinationTotals(
                sent, receive.count, subscriptions, sent * fan_out - receive.count, errors
            )
        return rows

    def summary(self) -> Iterator[tuple[str, Tally]]:
        yield from sorted(self.tallies.items())
