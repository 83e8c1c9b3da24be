"""The per-interval histograms against one process's book: merged pieces, the bound, the encoding."""

from __future__ import annotations

import gc
import random
from collections import Counter
from typing import Any

import msgpack
import pytest
from hdrh.histogram import HdrHistogram

from mqusers.measure import hdrintervals
from mqusers.measure.book import Book
from mqusers.measure.hdrintervals import SEAL_AFTER_S, Intervals
from mqusers.measure.recorder import Batch

T0 = 1_700_000_000  # divisible by 64: coarse intervals' edges are easy to state
NAMES = ("receive /queue/hdr", "send /queue/hdr")


def batch(name: str, second: int, micros: list[int]) -> Batch:
    ns = second * 1_000_000_000
    return Batch(name, second, Counter(micros), len(micros), 10 * len(micros), ns + 1000, ns + 900_000_000)


def batches(seed: int, seconds: int) -> list[list[Batch]]:
    """Flushes of a process: per flush a batch per name and second (spread over decades of µs)."""
    rng = random.Random(seed)
    return [
        [batch(name, T0 + s, [int(10 ** rng.uniform(1, 6)) for _ in range(rng.randint(1, 400))]) for name in NAMES]
        for s in range(seconds)
    ]


def shipped(intervals: Intervals) -> Any:
    """A worker's payload as the master gets it: through msgpack, as Locust sends it."""
    return msgpack.unpackb(msgpack.packb(intervals.drain()))


def values(encoded: str) -> tuple[int, ...]:
    """The histogram's counts per slot (what its percentiles are read from)."""
    return tuple(HdrHistogram.decode(encoded.encode("ascii")).counts)


def cells(document: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Each interval's figures with its histogram's recorded values (encodings may differ in their header)."""
    return {name: [(*row[:4], values(row[4])) for row in rows] for name, rows in document["operations"].items()}


def test_two_workers_pieces_merged_equal_one_process() -> None:
    flushes = batches(1, 30)
    alone = Intervals()
    master, workers = Intervals(), [Intervals(), Intervals()]
    for n, flush in enumerate(flushes):
        alone.add_batches(flush)
        for batch_ in flush:
            half = sorted(batch_.micros.elements())
            for worker, part in zip(workers, (half[::2], half[1::2]), strict=True):
                if part:
                    worker.add_batches([Batch(batch_.name, batch_.second, Counter(part), len(part), 10 * len(part),
                                              batch_.first_ns, batch_.last_ns)])  # fmt: skip
        if n % 3 == 2:  # a report every three seconds, the last of them late
            for worker in workers:
                master.merge(shipped(worker))
    for worker in workers:
        master.merge(shipped(worker))
    assert any(interval.sealed for interval in master.intervals.values())  # merged into sealed intervals too
    assert cells(master.document(T0)) == cells(alone.document(T0))
    # ...and each interval's percentile is the merged histogram's, which equals one process's.
    for name in NAMES:
        mine, theirs = master.document(T0)["operations"][name], alone.document(T0)["operations"][name]
        for ours, its in zip(mine, theirs, strict=True):
            p99s = [HdrHistogram.decode(row[4].encode()).get_value_at_percentile(99.0) for row in (ours, its)]
            assert p99s[0] == p99s[1]


def test_all_intervals_merged_equal_the_book() -> None:
    book, intervals = Book(), Intervals()
    for flush in batches(2, 20):
        book.add_batches(flush)
        intervals.add_batches(flush)
    totals = intervals.totals()
    for name in NAMES:
        assert totals.tallies[name].count == book.tallies[name].count
        assert values(totals.tallies[name].histogram.encode().decode()) == values(
            book.tallies[name].histogram.encode().decode()
        )
        rows = intervals.document(T0)["operations"][name]
        assert sum(row[2] for row in rows) == book.tallies[name].count
        assert [row[0] for row in rows] == [float(T0 + s) for s in range(20)]  # oldest first, one per second


def test_the_bound_doubles_the_width_and_keeps_every_count() -> None:
    intervals = Intervals(max_intervals=8)
    book = Book()
    for flush in batches(3, 50):
        intervals.add_batches(flush)
        book.add_batches(flush)
    assert len(intervals.intervals) <= 8
    assert intervals.width_s == 8  # 50 seconds: 1, 2, 4 then 8 s wide
    assert all(key % 8 == 0 for key in intervals.intervals)
    document = intervals.document(T0)
    assert document["width_s"] == 8.0
    for name in NAMES:
        rows = document["operations"][name]
        assert sum(row[2] for row in rows) == book.tallies[name].count
        merged = HdrHistogram.decode(rows[0][4].encode())
        for row in rows[1:]:
            merged.add(HdrHistogram.decode(row[4].encode()))
        assert values(merged.encode().decode()) == values(book.tallies[name].histogram.encode().decode())
        # The rate's seconds: every interval's width but the last, which ends at its last event.
        assert sum(row[1] for row in rows) == pytest.approx(49.9, abs=1e-6)


def test_a_worker_at_a_wider_width_coarsens_the_master() -> None:
    worker, master = Intervals(max_intervals=4), Intervals()
    for flush in batches(4, 10):
        worker.add_batches(flush)
        master.add_batches([batch(b.name, b.second + 100, [5]) for b in flush])
    master.merge(shipped(worker))
    assert master.width_s == worker.width_s == 4
    assert sum(row[2] for row in master.document(T0)["operations"][NAMES[0]]) == 10 + sum(
        b.count for flush in batches(4, 10) for b in flush if b.name == NAMES[0]
    )


def test_old_intervals_are_kept_encoded_and_decode_to_the_same_histogram() -> None:
    intervals = Intervals()
    flushes = batches(5, SEAL_AFTER_S + 5)
    for flush in flushes:
        intervals.add_batches(flush)
    first = intervals.intervals[T0]
    assert first.sealed and not intervals.intervals[T0 + SEAL_AFTER_S + 4].sealed
    before = cells(intervals.document(T0))
    intervals.add_batches([batch(NAMES[0], T0, [7, 7])])  # late: the sealed interval decodes, takes it, seals again
    assert first.sealed
    after = cells(intervals.document(T0))
    assert after[NAMES[0]][0][2] == before[NAMES[0]][0][2] + 2
    assert after[NAMES[0]][1:] == before[NAMES[0]][1:]
    assert after[NAMES[1]] == before[NAMES[1]]


def test_request_events_fall_in_the_interval_of_their_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    intervals = Intervals()
    now = [T0 + 3.5]
    monkeypatch.setattr(hdrintervals.time, "time", lambda: now[0])
    intervals.on_request("STOMP", NAMES[1], 2.0, 10, RuntimeError("refused"))
    intervals.on_request("GET", "/api/x", 12.5, 10, None)
    intervals.recording = False  # a warm-up: not counted
    intervals.on_request("STOMP", NAMES[1], 2.0, 10, RuntimeError("refused"))
    document = intervals.document(T0)
    assert document["operations"][NAMES[1]][0][:4] == [T0 + 3.0, pytest.approx(0.5), 0, 1]
    (get,) = document["operations"]["GET /api/x"]
    histogram = HdrHistogram.decode(get[4].encode())
    assert get[2:4] == [1, 0] and histogram.get_total_count() == 1
    assert histogram.values_are_equivalent(histogram.get_max_value(), 12_500)


def test_the_interval_holding_measured_from_starts_there() -> None:
    intervals = Intervals()
    for flush in batches(6, 3):
        intervals.add_batches(flush)
    rows = intervals.document(T0 + 0.25)["operations"][NAMES[0]]
    assert [row[0] for row in rows] == [T0 + 0.25, T0 + 1.0, T0 + 2.0]
    assert [row[1] for row in rows] == [pytest.approx(0.75), 1.0, pytest.approx(0.9)]
    assert intervals.document(T0 + 0.25)["measured_from"] == T0 + 0.25


def test_dropped_histograms_are_freed_without_waiting_for_the_cycle_collector() -> None:
    """hdrh's histogram and its encoder refer to each other: each ~190 KB; an hour reached 1 GB unfreed."""
    gc.collect()
    gc.disable()
    try:
        intervals, master = Intervals(max_intervals=16), Intervals(max_intervals=16)
        for n, flush in enumerate(batches(8, 60)):
            intervals.add_batches(flush)
            if n % 3 == 2:
                master.merge(shipped(intervals))
        histograms = sum(isinstance(o, HdrHistogram) for o in gc.get_objects())
        live = sum(len(i.book.tallies) for i in [*intervals.intervals.values(), *master.intervals.values()]
                   if not i.sealed)  # fmt: skip
        assert histograms <= live + 4, (histograms, live)
    finally:
        gc.enable()


def test_a_byte_budget_stops_the_growth_of_fattening_intervals(monkeypatch: pytest.MonkeyPatch) -> None:
    # At a fixed count a merged interval holds more distinct latencies than either half, so each doubling
    # fattened the intervals: a one-hour soak's memory rose ~2 MB an hour after its warm-up. Under the budget the
    # bytes held stop growing once it is first reached, and no count is lost.
    monkeypatch.setattr(hdrintervals, "MIN_INTERVALS", 4)
    intervals, book, held = Intervals(max_intervals=10_000, max_bytes=40_000), Book(), []
    for flush in batches(7, 400):
        intervals.add_batches(flush)
        book.add_batches(flush)
        held.append(sum(i.size for i in intervals.intervals.values()))
    reached = next(i for i, size in enumerate(held) if size > 30_000)
    fattest = max(i.size for i in intervals.intervals.values())
    assert max(held[reached:]) <= 40_000 + fattest, (max(held[reached:]), fattest)
    assert intervals.width_s >= 8 and len(intervals.intervals) >= 4
    rows = intervals.document(T0)["operations"]
    assert all(sum(row[2] for row in rows[name]) == book.tallies[name].count for name in NAMES)


def test_the_byte_budget_keeps_enough_intervals_for_a_bootstrap() -> None:
    intervals = Intervals(max_bytes=1)  # every interval is over budget: only the floor holds the width back
    for flush in batches(8, 260):
        intervals.add_batches(flush)
    assert hdrintervals.MIN_INTERVALS <= len(intervals.intervals) <= 2 * hdrintervals.MIN_INTERVALS + 1
